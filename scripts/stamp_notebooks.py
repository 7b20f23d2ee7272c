"""Stamp every chapter notebook with its Colab badge and its install cell.

The repository's address lives in one place, ``_config.yml`` (``repository.url`` and
``repository.branch``); the badge links and the install cells are generated from it.

The badge of a chapter with exercises opens its student edition, ``student/<stem>.ipynb`` (made by
``scripts/make_student_notebooks.py``); a chapter without exercises opens itself.  The install
cell is tagged ``remove-cell``: it runs in Colab, in local Jupyter and when the book is built, but
the HTML book does not show it.

    python scripts/stamp_notebooks.py          # rewrite what is out of date
    python scripts/stamp_notebooks.py --check  # exit 1 and list what is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BADGE_RE = re.compile(r"^\[!\[Open in Colab\]\([^)]*\)\]\([^)]*\)[ \t]*$", re.MULTILINE)
INSTALL_TAG = "colab-install"
INSTALL_TAGS = (INSTALL_TAG, "nbval-ignore-output", "remove-cell")  # the device differs; not in the HTML


def repository() -> tuple[str, str]:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def colab_target(notebook: Path) -> Path:
    """What the badge of ``notebook`` opens: its student edition if the chapter has exercises."""
    sys.path.insert(0, str(ROOT))
    from attncourse.exercises import CHAPTERS, all_exercises

    with_exercises = {stem for key, (_, stem) in CHAPTERS.items() if all_exercises(key)}
    if notebook.parent == ROOT / "book" and notebook.stem in with_exercises:
        return ROOT / "student" / notebook.name
    return notebook


def colab_url(notebook: Path) -> str:
    url, branch = repository()
    github_path = url.split("github.com/", 1)[1]
    target = colab_target(notebook).relative_to(ROOT).as_posix()
    return f"https://colab.research.google.com/github/{github_path}/blob/{branch}/{target}"


def badge(notebook: Path) -> str:
    sys.path.insert(0, str(ROOT))
    from attncourse.grading.assets import colab_badge

    return colab_badge(colab_url(notebook))


def install_source() -> str:
    url, branch = repository()
    return (
        "# In Colab, install attncourse and nothing else (--no-deps keeps Colab's own torch, numpy,\n"
        "# matplotlib and ipywidgets); anywhere else this cell only reports the device.\n"
        "import importlib\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    %pip install -q --no-deps "attncourse @ git+{url}@{branch}"\n'
        "    importlib.invalidate_caches()\n"
        "\n"
        "import attncourse as ac\n"
        "\n"
        'print("This chapter runs on:", ac.best_device())'
    )


def notebooks() -> list[Path]:
    return sorted(p for p in (ROOT / "book").glob("*.ipynb"))


def _get(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def _set(cell, text: str) -> None:
    """Write ``text`` in the layout the cell already uses (a list of lines in a .ipynb file)."""
    cell["source"] = text.splitlines(True) if isinstance(cell["source"], list) else text


def stamp(nb, path: Path) -> bool:
    """Bring one notebook (a dict or an nbformat node) up to date in memory; True if anything changed."""
    changed = False
    cells = nb["cells"]
    first = cells[0]
    if first["cell_type"] != "markdown" or not _get(first).lstrip().startswith("# "):
        raise SystemExit(f"{path.name}: the first cell must be markdown starting with the '# Title' heading")
    wanted = badge(path)
    text = _get(first)
    if BADGE_RE.search(text):
        new = BADGE_RE.sub(wanted, text, count=1)
    else:
        title, _, rest = text.partition("\n")
        new = f"{title}\n\n{wanted}\n{rest}" if rest.strip() else f"{title}\n\n{wanted}"
    if new != text:
        _set(first, new)
        changed = True

    code_cells = [c for c in cells if c["cell_type"] == "code"]
    source = install_source()
    tagged = [c for c in code_cells if INSTALL_TAG in c.get("metadata", {}).get("tags", [])]
    if tagged and tagged[0] is code_cells[0]:
        cell = tagged[0]
        if _get(cell) != source:
            _set(cell, source)
            changed = True
    else:
        for cell in tagged:
            cells.remove(cell)
        cell = {
            "cell_type": "code",
            "execution_count": None,
            "id": f"{path.stem.replace('_', '-')}-colab-install"[:64],
            "metadata": {"tags": list(INSTALL_TAGS)},
            "outputs": [],
            "source": source.splitlines(True),
        }
        cells.insert(cells.index(code_cells[0]) if code_cells else 1, cell)
        changed = True
    tags = cell.setdefault("metadata", {}).setdefault("tags", [])
    for tag in INSTALL_TAGS:
        if tag not in tags:
            tags.append(tag)
            changed = True
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only report notebooks that are out of date")
    args = parser.parse_args(argv)
    stale = []
    for path in notebooks():
        nb = json.loads(path.read_text(encoding="utf-8"))
        if stamp(nb, path):
            stale.append(path.relative_to(ROOT).as_posix())
            if not args.check:
                path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.check and stale:
        print("out of date (run python scripts/stamp_notebooks.py):\n  " + "\n  ".join(stale))
        return 1
    print(("stamped: " + ", ".join(stale)) if stale else "all notebooks are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
