"""Sphinx extension: the Colab launch button opens a chapter's student edition.

sphinx-book-theme builds the launch buttons in an ``html-page-context`` handler (priority 501)
from the page's own path, ``book/<stem>.ipynb``.  For a chapter that has a student edition,
``student/<stem>.ipynb`` (``student/<language>/<stem>.ipynb`` on a translated page, where the
chapter's translation is complete) (made by ``scripts/make_student_notebooks.py``), this handler runs just
after it and points the Colab button there, so a learner who launches a chapter gets the
exercises to write, not their solutions.  The page itself, with its worked solutions, is unchanged.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List

__all__ = ["point_colab_at_student", "setup"]

COLAB_BLOB = re.compile(r"^(https://colab\.research\.google\.com/github/[^/]+/[^/]+/blob/[^/]+/).+\.ipynb$")


TOOLTIP = {
    "en": "Open the student edition in Colab (exercises to write, no solutions)",
    "zh_CN": "在 Colab 中打开学生版（要完成的练习，不含解答）",
    "zh_TW": "在 Colab 中開啟學生版（要完成的練習，不含解答）",
}


def _buttons(context: Dict[str, Any]) -> List[dict]:
    out = []
    for item in context.get("header_buttons") or []:
        if isinstance(item, dict):
            out.append(item)
            out.extend(b for b in item.get("buttons", []) if isinstance(b, dict))
    return out


def point_colab_at_student(
    app: Any, pagename: str, templatename: str, context: Dict[str, Any], doctree: Any
) -> None:
    """Rewrite the Colab launch URL of ``pagename`` to ``student/<stem>.ipynb`` when that file exists."""
    stem = Path(pagename).name
    language = app.config.language or "en"
    edition = f"student/{stem}.ipynb" if language == "en" else f"student/{language}/{stem}.ipynb"
    if not (Path(app.confdir) / edition).exists():
        # a translated page whose chapter has no student edition in its language yet: the English one
        edition = f"student/{stem}.ipynb"
        if not (Path(app.confdir) / edition).exists():
            return
    for button in _buttons(context):
        match = COLAB_BLOB.match(str(button.get("url", "")))
        if match:
            button["url"] = f"{match.group(1)}{edition}"
            button["tooltip"] = TOOLTIP.get(language, TOOLTIP["en"])


def setup(app: Any) -> Dict[str, Any]:
    app.connect("html-page-context", point_colab_at_student, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
