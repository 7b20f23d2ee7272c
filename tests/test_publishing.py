"""Publishing: Colab badges and install cells in sync, accessible sources, and links that resolve.

Every built page in a browser, as a reader sees it, is tests/built_pages.py."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from built_book import book_pending

from browser import BUILD_HTML, book_pages, skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
PAGES_MD = sorted((ROOT / "book").glob("*.md"))
COLAB = re.compile(
    r"https://colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/([^/]+)/([^\"')\s]+\.ipynb)"
)

sys.path.insert(0, str(ROOT / "scripts"))
import stamp_notebooks  # noqa: E402


def _nb(path: Path) -> dict:
    return json.loads(path.read_text())


# --- Colab -----------------------------------------------------------------------------------


def test_notebooks_are_stamped_from_the_one_repository_url():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "stamp_notebooks.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_badge_and_install_cell(path):
    nb = _nb(path)
    first = "".join(nb["cells"][0]["source"])
    repo_url, branch = stamp_notebooks.repository()
    links = COLAB.findall(first)
    target = (
        stamp_notebooks.colab_target(path).relative_to(ROOT).as_posix()
    )  # student/ where it has exercises
    assert links == [(repo_url.split("github.com/")[1], branch, target)], links
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    install = "".join(code[0]["source"])
    assert "colab-install" in code[0]["metadata"]["tags"]
    assert 'if "google.colab" in sys.modules:' in install
    pip_lines = [line for line in install.splitlines() if "pip install" in line]
    # Only attncourse, never an upgrade of what Colab ships.
    assert len(pip_lines) == 1 and "--no-deps" in pip_lines[0] and "-U" not in pip_lines[0].split()
    assert f"git+{repo_url}@{branch}" in pip_lines[0]
    assert "best_device()" in install


def test_stamping_is_idempotent_and_repairs_a_wrong_url(tmp_path):
    nb = _nb(NOTEBOOKS[0])
    nb["cells"][0]["source"] = "".join(nb["cells"][0]["source"]).replace("attention-course", "old-name")
    import nbformat

    node = nbformat.from_dict(nb)
    assert stamp_notebooks.stamp(node, NOTEBOOKS[0]) is True
    assert "old-name" not in node.cells[0].source
    assert stamp_notebooks.stamp(node, NOTEBOOKS[0]) is False


# --- accessibility (sources; the built pages are audited by tests/built_pages.py) ---------------


def test_axe_core_is_pinned_as_a_test_dependency():
    package = json.loads((ROOT / "package.json").read_text())
    lock = json.loads((ROOT / "package-lock.json").read_text())
    version = package["devDependencies"]["axe-core"]
    assert version[0].isdigit(), f"pin an exact axe-core version, not {version!r}"
    assert lock["packages"]["node_modules/axe-core"]["version"] == version
    assert "axe-core" not in package["dependencies"]  # not vendored into the book


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_figure_has_alt_text(path):
    missing = []
    for i, cell in enumerate(_nb(path)["cells"]):
        makes_image = any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
        if makes_image and len(alt.strip()) < 10:
            missing.append(i)
    assert not missing, f"{path.name}: code cells {missing} draw a figure without alt text"


def _headings(path: Path) -> list:
    if path.suffix == ".ipynb":
        text = "\n".join("".join(c["source"]) for c in _nb(path)["cells"] if c["cell_type"] == "markdown")
    else:
        text = path.read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # not inside code blocks
    return [len(m.group(1)) for m in re.finditer(r"^(#{1,6}) ", text, flags=re.M)]


@pytest.mark.parametrize("path", NOTEBOOKS + PAGES_MD, ids=[p.name for p in NOTEBOOKS + PAGES_MD])
def test_headings_are_in_order(path):
    levels = _headings(path)
    assert levels and levels[0] == 1 and levels.count(1) == 1, levels
    jumps = [(a, b) for a, b in zip(levels, levels[1:]) if b > a + 1]
    assert not jumps, f"{path.name}: heading levels skip: {jumps}"


def test_no_colour_map_that_fails_in_grey_scale():
    sources = [p.read_text() for p in (ROOT / "attncourse").rglob("*.py")]
    sources += ["".join(c["source"]) for p in NOTEBOOKS for c in _nb(p)["cells"] if c["cell_type"] == "code"]
    bad = [
        name
        for name in ("jet", "rainbow", "hsv", "gist_rainbow", "nipy_spectral")
        for s in sources
        if re.search(rf"cmap\s*=\s*[\"']{name}[\"']", s)
    ]
    assert not bad, bad


# --- the built book in a browser ----------------------------------------------------------------


@pytest.fixture(scope="module")
def built_pages():
    book_pending(BUILD_HTML)
    if not (BUILD_HTML / "index.html").is_file():
        skip_or_fail(f"the book is not built ({BUILD_HTML})")
    return book_pages()


HREF = re.compile(r"<a\b[^>]*?\bhref=\"([^\"]+)\"", re.I)


def test_internal_links_resolve_and_colab_links_name_real_notebooks(built_pages):
    broken, colab = [], 0
    for page in built_pages:
        text = (BUILD_HTML / page).read_text(encoding="utf8")
        for url in map(html.unescape, HREF.findall(text)):
            parts = urlsplit(url)
            if parts.scheme in ("mailto", "javascript"):
                continue
            if "colab.research.google.com" in url:
                colab += 1
                match = COLAB.search(url)
                if not match or not (ROOT / match.group(3)).is_file():
                    broken.append(f"{page}: Colab link to a notebook that does not exist: {url}")
                continue
            if parts.scheme or parts.netloc or not parts.path:
                continue  # other sites, or an anchor on the same page
            target = (BUILD_HTML / page).parent / parts.path
            if not target.resolve().exists():
                broken.append(f"{page}: {url}")
    assert colab >= 9, f"only {colab} Colab links in the built book"
    assert not broken, "\n".join(broken)
