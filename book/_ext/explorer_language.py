"""Sphinx extension: a translated edition's explorers speak its language.

The translated editions reuse the widget state the English execution saved (every picture drawn
once): its control labels, option labels, alt texts and captions are English.  After a
translated build has written its pages, this extension rewrites each page's
``application/vnd.jupyter.widget-state+json`` through
:func:`attncourse.widgets.translate_state` (the package's catalog, with the numbers the English
execution printed).  It runs before ``fast_pages``, which moves the state out of the page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, Optional

__all__ = ["translate_page", "setup"]

STATE_TAG = re.compile(
    r'(<script type="application/vnd\.jupyter\.widget-state\+json">)(.*?)(</script>)', re.S
)


def translate_page(text: str, language: str) -> str:
    """A written page with its widget state's words in ``language`` (unchanged if it has none)."""
    from attncourse.widgets import translate_state

    def each(match: "re.Match") -> str:
        saved = json.loads(match.group(2))
        saved["state"] = translate_state(saved.get("state", {}), language)
        body = json.dumps(saved).replace("</script>", r"<\/script>")  # as myst-nb writes it
        return match.group(1) + body + match.group(3)

    return STATE_TAG.sub(each, text)


def _build_finished(app: Any, exception: Optional[BaseException]) -> None:
    language = app.config.language or "en"
    if exception is not None or app.builder.format != "html" or language == "en":
        return
    for path in sorted(Path(app.outdir).rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        if "widget-state+json" not in text:
            continue
        new = translate_page(text, language)
        if new != text:
            path.write_text(new, encoding="utf-8")


def setup(app: Any) -> Dict[str, Any]:
    app.connect("build-finished", _build_finished, priority=800)  # before fast_pages (900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
