"""The book: its table of contents, its offline configuration and the built HTML.

The toc and config tests run anywhere.  The tests on ``_build/html`` need the book built first
(``jupyter-book build . -W``) and skip, saying so, when it is not; the ``browser`` ones also need
Debian's Chromium (``apt-get install -y chromium``).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from built_book import book_pending

from browser import (  # noqa: F401  (chromium, book_server and book_browser are fixtures)
    BUILD_HTML,
    REPO_ROOT,
    BookBrowser,
    book_browser,
    book_pages,
    book_server,
    chromium,
    serve,
    skip_or_fail,
    wait_for_math,
    wait_for_widgets,
)

BOOK = REPO_ROOT / "book"
STATIC = BOOK / "_static"
CDN_HOSTS = ("cdn.jsdelivr.net", "unpkg.com", "cdnjs.cloudflare.com")


def load_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf8"))


def toc_entries(toc: dict) -> list:
    """Every ``file:`` of a jb-book toc, the root first, in reading order."""
    entries = [toc["root"]]

    def walk(items):
        for item in items or []:
            if "file" in item:
                entries.append(item["file"])
            walk(item.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return entries


def book_sources() -> set:
    """The pages under book/ (as toc entries: repo-relative, no suffix)."""
    return {
        path.relative_to(REPO_ROOT).with_suffix("").as_posix()
        for path in BOOK.rglob("*")
        if path.suffix in {".ipynb", ".md"}
        and not {"_static", "_build", ".ipynb_checkpoints"} & set(path.relative_to(BOOK).parts)
    }


@pytest.fixture(scope="module")
def toc() -> dict:
    return load_yaml(REPO_ROOT / "_toc.yml")


@pytest.fixture(scope="module")
def sphinx_config() -> dict:
    return load_yaml(REPO_ROOT / "_config.yml")["sphinx"]["config"]


# --- table of contents --------------------------------------------------------------------------


def test_toc_is_a_jupyter_book_with_the_intro_as_root(toc):
    assert toc["format"] == "jb-book"
    assert toc["root"] == "book/intro"


def test_toc_lists_no_page_twice(toc):
    entries = toc_entries(toc)
    twice = sorted({e for e in entries if entries.count(e) > 1})
    assert not twice, f"listed more than once in _toc.yml: {twice}"


def test_every_toc_entry_exists_once(toc):
    for entry in toc_entries(toc):
        found = [p.name for p in (REPO_ROOT / f"{entry}.ipynb", REPO_ROOT / f"{entry}.md") if p.is_file()]
        assert len(found) == 1, (
            f"_toc.yml lists {entry!r}: expected one of .ipynb/.md, found {found or 'none'}"
        )


def test_every_page_under_book_is_in_the_toc(toc):
    missing = sorted(book_sources() - set(toc_entries(toc)))
    assert not missing, (
        f"pages under book/ missing from _toc.yml (only_build_toc_files skips them): {missing}"
    )


def test_chapters_are_notebooks_in_reading_order(toc):
    chapters = [e for e in toc_entries(toc) if re.fullmatch(r"book/\d\d_\w+", e)]
    assert chapters == sorted(chapters)
    # Chapter 0 ("Why attention", unnumbered in the book) may come first; then 1, 2, ... in order.
    numbers = [int(c[5:7]) for c in chapters]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))) and numbers[0] in (0, 1)
    for chapter in chapters:  # Colab opens only notebooks
        assert (REPO_ROOT / f"{chapter}.ipynb").is_file(), f"{chapter} must be an .ipynb"


# --- offline configuration ----------------------------------------------------------------------


def test_config_points_katex_and_widgets_at_vendored_files(sphinx_config):
    assert sphinx_config["html_static_path"] == ["book/_static"]
    local = [sphinx_config["katex_css_path"], *sphinx_config["nb_ipywidgets_js"]]
    for path in local:
        assert "://" not in path and not path.startswith("//"), f"{path} is not a local file"
        assert (STATIC / path).is_file(), f"{STATIC / path} missing: run scripts/vendor_js.sh"
    # widgets-offline.js configures RequireJS, so it must load before require.js.
    assert list(sphinx_config["nb_ipywidgets_js"]) == [
        "widgets-offline.js",
        "vendor/requirejs/require.js",
        "vendor/jupyter-widgets/embed-amd.js",
    ]


@pytest.mark.slow
def test_printed_output_is_joined_as_the_kernel_wrote_it(sphinx_config):
    """A print cut in two by the kernel's flush timer reads as one line on the page."""
    pytest.importorskip("myst_nb")
    nbformat = pytest.importorskip("nbformat")
    sys.path.insert(0, str(BOOK / "_ext"))
    import stream_merge

    assert "stream_merge" in sphinx_config["extensions"]
    assert load_yaml(REPO_ROOT / "_config.yml")["sphinx"]["local_extensions"]["stream_merge"] == "book/_ext"
    out = nbformat.v4.new_output
    outputs = [
        out("stream", name="stdout", text="scores"),
        out("display_data", data={"text/plain": "<Figure>"}),
        out("stream", name="stderr", text="a warning\n"),
        out("stream", name="stdout", text=" (3, 4)\n[[1 2]]\r\n"),
    ]
    merged = stream_merge.join_streams(outputs)
    assert [(o["output_type"], o.get("name"), o.get("text")) for o in merged] == [
        ("stream", "stdout", "scores (3, 4)\n[[1 2]]\n"),
        ("display_data", None, None),
        ("stream", "stderr", "a warning\n"),
    ]
    assert outputs[0]["text"] == "scores"  # the executed notebook keeps its chunks


def test_vendored_files_are_complete():
    vendor = STATIC / "vendor"
    assert len(list(vendor.glob("katex/fonts/*.woff2"))) >= 20
    assert len(list(vendor.glob("jupyter-widgets/*.woff2"))) == 3
    versions = (vendor / "VERSIONS.txt").read_text()
    pinned = json.loads((REPO_ROOT / "package.json").read_text())["dependencies"]
    for package, version in pinned.items():
        assert f"{package} {version}" in versions, f"vendored {package} is not the pinned {version}"


# --- built HTML (no browser) --------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_book() -> Path:
    """``_build/html``; skips (fails under REQUIRE_BROWSER=1) when the book is not built."""
    book_pending(BUILD_HTML)
    if not (BUILD_HTML / "index.html").is_file():
        skip_or_fail(f"the book is not built ({BUILD_HTML}): run `jupyter-book build . -W`")
    return BUILD_HTML


ASSET = re.compile(r"<(?:script|link|img|iframe)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"[^>]*>", re.I)


def test_built_pages_load_no_script_or_style_from_another_host(built_book):
    offenders = []
    for page in book_pages():
        text = (BUILD_HTML / page).read_text(encoding="utf8")
        for match in ASSET.finditer(text):
            tag, url = match.group(0), html.unescape(match.group(1))
            is_link = tag.lower().startswith("<link")
            if is_link and not re.search(r"rel=\"(stylesheet|preload|modulepreload|icon)\"", tag):
                continue  # <link rel="next"> etc. are navigation, not loads
            if urlsplit(url).netloc:
                offenders.append(f"{page}: {tag}")
        offenders += [f"{page}: mentions {host}" for host in CDN_HOSTS if host in text]
    assert not offenders, "built pages load from other hosts:\n" + "\n".join(offenders)


def test_colab_button_opens_the_student_edition_on_github(built_book):
    text = (BUILD_HTML / "book" / "01_softmax.html").read_text(encoding="utf8")
    links = set(re.findall(r'href="(https://colab[^"]*)"', text))
    # the badge and the launch button: both open the student edition, never the solved chapter
    assert links == {
        "https://colab.research.google.com/github/attncourse/attention-course/blob/main/student/01_softmax.ipynb"
    }


def test_no_top_navbar_above_the_article_header(built_book):
    # pydata-sphinx-theme's top navbar would add a second header bar, holding only a search field,
    # above every page; the book theme's sidebar and article header are the only header.
    offenders = [page for page in book_pages() if "bd-header__inner" in (BUILD_HTML / page).read_text("utf8")]
    assert not offenders, f"pages with the extra top navbar: {offenders}"


# --- built HTML in headless Chromium -------------------------------------------------------------


WIDGET_NOTEBOOK = """\
import io

import ipywidgets as widgets
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def frame(k):
    fig, ax = plt.subplots(figsize=(2, 1.5), dpi=50)
    ax.plot(np.sin(k * np.linspace(0, 2 * np.pi, 50)))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


stack = widgets.Stack([widgets.Image(value=frame(k), format="png") for k in (1, 2, 3)], selected_index=0)
slider = widgets.IntSlider(value=0, min=0, max=2, description=r"$d_k$")
play = widgets.Play(value=0, min=0, max=2, interval=100)
widgets.jslink((slider, "value"), (stack, "selected_index"))
widgets.jslink((play, "value"), (slider, "value"))
widgets.VBox([widgets.HBox([play, slider]), stack])
"""


@pytest.fixture(scope="module")
def widget_book(tmp_path_factory, chromium) -> Path:
    """A scratch book with the real _config.yml and book/_static/, and one widget notebook."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    root = tmp_path_factory.mktemp("widget_book")
    (root / "book").mkdir()
    (root / "_config.yml").write_text((REPO_ROOT / "_config.yml").read_text())
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/widgets\n")
    (root / "book" / "intro.md").write_text("# Scratch\n\nWith math: $\\sqrt{d_k}$.\n")
    (root / "book" / "_static").symlink_to(STATIC, target_is_directory=True)
    (root / "book" / "_ext").symlink_to(REPO_ROOT / "book" / "_ext", target_is_directory=True)
    nb = new_notebook(
        cells=[new_markdown_cell("# Widgets\n\n$a^2$"), new_code_cell(WIDGET_NOTEBOOK)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, root / "book" / "widgets.ipynb")
    build = subprocess.run(
        [sys.executable, "-c", "from jupyter_book.cli.main import main; main()"]
        + ["build", str(root), "-W", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return root / "_build" / "html"


@pytest.mark.browser
@pytest.mark.slow
def test_embedded_slider_drives_a_stack_of_images_without_a_kernel(widget_book, chromium):
    state = widget_book / "book" / "widgets.widgets.js"  # the page loads it when the widget is near
    assert (
        "application/vnd.jupyter.widget-state+json" not in (widget_book / "book" / "widgets.html").read_text()
    )
    assert state.is_file() and '"state"' in state.read_text(encoding="utf8"), "widget state was not saved"

    def shown_image(page) -> str:
        srcs = page.evaluate(
            """() => Array.from(document.querySelectorAll('.widget-subarea img'))
                     .filter(img => img.offsetParent !== null).map(img => img.src)"""
        )
        assert len(srcs) == 1, srcs
        return srcs[0]

    with serve(widget_book) as base_url, BookBrowser(base_url, chromium) as browser:
        page, log = browser.open("book/widgets.html")
        assert wait_for_widgets(page) == 1
        assert wait_for_math(page) >= 1  # the page's $a^2$
        # The slider's description "$d_k$" is typeset too (MathJax 2's API answered with KaTeX).
        page.wait_for_selector(".widget-slider .widget-label .katex", timeout=10_000)
        before = shown_image(page)
        page.locator(".widget-slider .noUi-handle").focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "() => document.querySelector('.widget-slider .widget-readout').textContent.trim() === '1'"
        )
        page.wait_for_timeout(200)
        after = shown_image(page)
        assert after != before, "moving the slider did not change the image shown"
        page.locator(".widget-play button").first.click()  # Play: icons swap, values advance
        page.wait_for_function(
            "() => document.querySelector('.widget-slider .widget-readout').textContent.trim() === '2'"
        )
        assert not log.problems(), log.report()


SEARCH_CONTROLS = """() => Array.from(document.querySelectorAll('.search-button-field, .search-button'))
    .filter(el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden').length"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_one_search_control_and_no_empty_header_bar(book_browser, width, height):  # noqa: F811
    page, log = book_browser.open("book/01_softmax.html")
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(200)
    assert page.evaluate(SEARCH_CONTROLS) == 1
    assert page.locator("#pst-header").count() == 0 or not page.locator("#pst-header").is_visible()
    # The article header is the first thing on the page: nothing sits above it.
    top = page.evaluate("() => document.querySelector('.bd-header-article').getBoundingClientRect().top")
    assert top < 1, f"the article header starts {top}px down the page at width {width}"
    assert not log.problems(), log.report()
