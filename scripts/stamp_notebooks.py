"""Stamp every chapter notebook with its Colab badge and its install cell.

The repository's address lives in one place, ``_config.yml`` (``repository.url`` and
``repository.branch``); the badge links and the install cells are generated from it.

    python scripts/stamp_notebooks.py          # rewrite what is out of date
    python scripts/stamp_notebooks.py --check  # exit 1 and list what is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
BADGE_RE = re.compile(r"^\[!\[Open in Colab\]\([^)]*\)\]\([^)]*\)[ \t]*$", re.MULTILINE)
INSTALL_TAG = "colab-install"


def repository() -> tuple[str, str]:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def colab_url(notebook: Path) -> str:
    url, branch = repository()
    github_path = url.split("github.com/", 1)[1]
    return f"https://colab.research.google.com/github/{github_path}/blob/{branch}/{notebook.relative_to(ROOT).as_posix()}"


def badge(notebook: Path) -> str:
    return f"[![Open in Colab](_static/colab-badge.svg)]({colab_url(notebook)})"


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


def stamp(nb, path: Path) -> bool:
    """Bring one notebook up to date in memory; True if anything changed."""
    changed = False
    first = nb.cells[0]
    if first.cell_type != "markdown" or not first.source.lstrip().startswith("# "):
        raise SystemExit(f"{path.name}: the first cell must be markdown starting with the '# Title' heading")
    wanted = badge(path)
    if BADGE_RE.search(first.source):
        new = BADGE_RE.sub(wanted, first.source, count=1)
    else:
        title, _, rest = first.source.partition("\n")
        new = f"{title}\n\n{wanted}\n{rest}" if rest.strip() else f"{title}\n\n{wanted}"
    if new != first.source:
        first.source, changed = new, True

    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    source = install_source()
    tagged = [c for c in code_cells if INSTALL_TAG in c.metadata.get("tags", [])]
    if tagged and tagged[0] is code_cells[0]:
        cell = tagged[0]
        if cell.source != source:
            cell.source, changed = source, True
    else:
        for cell in tagged:
            nb.cells.remove(cell)
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = [INSTALL_TAG, "nbval-ignore-output"]
        nb.cells.insert(nb.cells.index(code_cells[0]) if code_cells else 1, cell)
        changed = True
    tags = cell.metadata.setdefault("tags", [])
    for tag in ("nbval-ignore-output",):  # the device differs between machines
        if tag not in tags:
            tags.append(tag)
            changed = True
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report notebooks that are out of date")
    args = parser.parse_args(argv)
    stale = []
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        if stamp(nb, path):
            stale.append(path.relative_to(ROOT).as_posix())
            if not args.check:
                nbformat.write(nb, path)
    if args.check and stale:
        print("out of date (run python scripts/stamp_notebooks.py):\n  " + "\n  ".join(stale))
        return 1
    print(("stamped: " + ", ".join(stale)) if stale else "all notebooks are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
