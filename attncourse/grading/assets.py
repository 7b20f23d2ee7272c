"""A handout whose images and Colab badges work wherever it is opened.

The book's notebooks point to images beside them (``_static/colab-badge.svg``, ``figures/x.svg``),
which a handed-out notebook does not have, and their Colab badge opens the public repository's
student edition.  ``inline_images`` puts every local image of a markdown cell into the cell
itself (a Markdown image becomes a cell attachment, an HTML ``<img>`` a ``data:`` URI), so it
shows in Jupyter, VS Code and Colab alike; an image that cannot be found is an error, never a
broken picture.  ``set_badges`` points each Colab badge at the notebook where the instructor will
host the handout (``--host``), or removes the badge when no host is given: no badge rather than
a wrong one.
"""

from __future__ import annotations

import base64
import mimetypes
import re
from pathlib import Path
from typing import List, Optional, Tuple

from .limits import GradingError

__all__ = ["inline_images", "colab_base", "HOST_FORMS", "colab_badge", "set_badges", "image_refs", "BADGE"]

MD_IMAGE = re.compile(r"(!\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
HTML_IMAGE = re.compile(r"(<img\b[^>]*?\bsrc=\")([^\"]+)(\")")
# a Colab badge, whatever its alt text says ("Open in Colab", a translated edition's "在 Colab 中打开")
BADGE = re.compile(
    r"^\[!\[([^\]]*)\]\([^)]*\)\]\(https://colab\.research\.google\.com/[^)]*\)[ \t]*\n?", re.MULTILINE
)
_REMOTE = ("http://", "https://", "data:", "attachment:")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _mime(path: Path) -> str:
    return mimetypes.guess_type(path.name)[0] or (
        "image/svg+xml" if path.suffix == ".svg" else "application/octet-stream"
    )


def image_refs(nb: dict) -> List[Tuple[int, str]]:
    """(cell number, target) of every image of the markdown cells."""
    refs = []
    for i, cell in enumerate(nb.get("cells", []), 1):
        if cell.get("cell_type") == "markdown":
            text = _source(cell)
            refs += [(i, m.group(2)) for m in MD_IMAGE.finditer(text)]
            refs += [(i, m.group(2)) for m in HTML_IMAGE.finditer(text)]
    return refs


def inline_images(nb: dict, folder: Path, name: str) -> int:
    """Put every local image of ``nb`` (read from ``folder``) into its cell; returns how many."""
    count = 0
    for index, cell in enumerate(nb.get("cells", []), 1):
        if cell.get("cell_type") != "markdown":
            continue
        text = _source(cell)
        attachments = dict(cell.get("attachments") or {})

        def read(target: str) -> Tuple[Path, bytes]:
            path = (folder / target).resolve()
            try:
                return path, path.read_bytes()
            except OSError:
                raise GradingError(f"{name}, cell {index}: the image {target} is not in {folder}") from None

        def markdown(m: re.Match) -> str:
            nonlocal count
            target = m.group(2)
            if target.startswith(_REMOTE):
                return m.group(0)
            path, data = read(target)
            key = re.sub(r"[^A-Za-z0-9._-]", "_", target)
            attachments[key] = {_mime(path): base64.b64encode(data).decode("ascii")}
            count += 1
            return f"{m.group(1)}attachment:{key}{m.group(3)}"

        def html(m: re.Match) -> str:
            nonlocal count
            target = m.group(2)
            if target.startswith(_REMOTE):
                return m.group(0)
            path, data = read(target)
            count += 1
            return (
                f"{m.group(1)}data:{_mime(path)};base64,{base64.b64encode(data).decode('ascii')}{m.group(3)}"
            )

        new = HTML_IMAGE.sub(html, MD_IMAGE.sub(markdown, text))
        if new != text:
            cell["source"] = new.splitlines(True)
            if attachments:
                cell["attachments"] = attachments
    return count


HOST_FORMS = (
    "github:OWNER/REPO[/FOLDER][@BRANCH], or a GitHub folder address "
    "https://github.com/OWNER/REPO[/tree/BRANCH[/FOLDER]]"
)


def _file_refusal(host: str, fixed: str) -> GradingError:
    return GradingError(
        f"--host {host!r} names a notebook, not the folder the student notebooks will be in: give the "
        f"folder, {fixed} (each badge then opens its own notebook there); the forms are {HOST_FORMS}"
    )


def colab_base(host: str) -> str:
    """The Colab address of the folder ``host`` names: ``github:OWNER/REPO[/FOLDER][@BRANCH]`` or a
    GitHub folder address ``https://github.com/OWNER/REPO[/tree/BRANCH[/FOLDER]]`` (``https://``,
    ``www.`` and a ``.git`` ending may be left out or added; ``blob`` is read as ``tree``).  An
    address of a notebook (``….ipynb``) is refused with the folder's address in the message.

    >>> colab_base("github:uni/ml-course/week3@fall")
    'https://colab.research.google.com/github/uni/ml-course/blob/fall/week3'
    >>> colab_base("https://github.com/uni/ml-course/tree/main/handout/student")
    'https://colab.research.google.com/github/uni/ml-course/blob/main/handout/student'
    >>> colab_base("github.com/uni/ml-course.git")
    'https://colab.research.google.com/github/uni/ml-course/blob/main'
    """
    text = host.strip().rstrip("/")
    m = re.fullmatch(r"github:([\w.-]+)/([\w.-]+?)(?:\.git)?((?:/[^@]+)?)(?:@([\w./-]+))?", text)
    if m:
        owner, repo, folder, branch = m.group(1), m.group(2), m.group(3) or "", m.group(4) or "main"
        if folder.lower().endswith(".ipynb"):
            at = f"@{m.group(4)}" if m.group(4) else ""
            raise _file_refusal(host, f"github:{owner}/{repo}{folder.rsplit('/', 1)[0]}{at}")
        return f"https://colab.research.google.com/github/{owner}/{repo}/blob/{branch}{folder}"
    m = re.fullmatch(
        r"(?:https?://)?(?:www\.)?github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?"
        r"(?:/(tree|blob)/([\w.-]+)((?:/[^?#]+)?))?",
        text,
    )
    if m:
        owner, repo, branch, folder = m.group(1), m.group(2), m.group(4) or "main", m.group(5) or ""
        if folder.lower().endswith(".ipynb"):
            up = folder.rsplit("/", 1)[0]
            raise _file_refusal(host, f"https://github.com/{owner}/{repo}/tree/{branch}{up}")
        return f"https://colab.research.google.com/github/{owner}/{repo}/blob/{branch}{folder}"
    raise GradingError(f"--host {host!r}: give {HOST_FORMS} (the folder where the student notebooks will be)")


def colab_badge(url: str) -> str:
    """The chapters' Colab badge, as markdown, opening ``url`` (also written by scripts/stamp_notebooks.py).

    >>> colab_badge("https://colab.research.google.com/github/o/r/blob/main/x.ipynb")
    '[![Open in Colab](_static/colab-badge.svg)](https://colab.research.google.com/github/o/r/blob/main/x.ipynb)'
    """
    return f"[![Open in Colab](_static/colab-badge.svg)]({url})"


def set_badges(nb: dict, notebook_name: str, base: Optional[str]) -> int:
    """Point every Colab badge of ``nb`` at ``base/notebook_name`` (or remove it if ``base`` is None)."""
    changed = 0

    def badge(m: re.Match) -> str:  # its image is inlined next; a translated alt text is kept
        return (
            colab_badge(f"{base}/{notebook_name}").replace("Open in Colab", m.group(1) or "Open in Colab")
            + "\n"
        )

    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        text = _source(cell)
        new, n = BADGE.subn(badge if base else "", text)
        if n:
            changed += n
            cell["source"] = new.splitlines(True)
    return changed
