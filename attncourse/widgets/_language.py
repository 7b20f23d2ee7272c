"""The words of an explorer, and the same explorer in another language after it was drawn.

An explorer says things in four places, all through :func:`attncourse.i18n.tr`: each control's
label (``description``), each option's label (``_options_labels``), each picture's alt text (the
``alt`` of its ``<img>``) and each caption line (``<br>``-separated in the caption's ``<div>``).
Drawn in a Chinese notebook, an explorer speaks Chinese.  The translated books reuse the
pictures the English execution drew: :func:`translate_state` rewrites a saved widget state's words
into another language through :func:`attncourse.i18n.retranslate`, which matches each English
line against the catalog's templates and fills the translation with the same numbers.
"""

from __future__ import annotations

import copy
import html
import re
from typing import Any, Callable, Dict, List

from ..i18n import retranslate, using

__all__ = ["state_texts", "translate_state"]

_CAPTION = re.compile(r'(<div class="attncourse-caption">)(.*?)(</div>)', re.S)
_ALT = re.compile(r'(<img class="attncourse-picture"[^>]*?\balt=")([^"]*)(")')
_BREAK = "<br>"
_HTML_MODELS = ("HTMLModel", "HTMLMathModel", "LabelModel")


def _rewrite_html(value: str, each: Callable[[str], str]) -> str:
    """``value`` with every caption line and alt text passed through ``each`` (plain text in and out
    for the alt, the line's own markup for a caption line)."""

    def caption(m: "re.Match") -> str:
        return m.group(1) + _BREAK.join(each(line) for line in m.group(2).split(_BREAK)) + m.group(3)

    def alt(m: "re.Match") -> str:
        return m.group(1) + html.escape(each(html.unescape(m.group(2))), quote=True) + m.group(3)

    return _ALT.sub(alt, _CAPTION.sub(caption, value))


def _walk(state: Dict[str, Any], each: Callable[[str], str]) -> None:
    """Pass every word an explorer's widget state shows a reader through ``each``, in place."""
    for model in state.values():
        name, values = model.get("model_name", ""), model.get("state", {})
        if isinstance(values.get("description"), str) and values["description"]:
            values["description"] = each(values["description"])
        if isinstance(values.get("_options_labels"), (list, tuple)):  # a list saved, a tuple live
            values["_options_labels"] = [each(label) for label in values["_options_labels"]]
        if name in _HTML_MODELS and isinstance(values.get("value"), str):
            values["value"] = _rewrite_html(values["value"], each)


def state_texts(state: Dict[str, Any]) -> List[str]:
    """Every label, option label, alt text and caption line in a widget state (the ``state``
    mapping of ``application/vnd.jupyter.widget-state+json``), in the order they are stored."""
    found: List[str] = []

    def keep(text: str) -> str:
        found.append(text)
        return text

    _walk(copy.deepcopy(state), keep)
    return found


def translate_state(state: Dict[str, Any], language: str) -> Dict[str, Any]:
    """A copy of a widget state with its words in ``language`` (numbers and pictures unchanged).

    A line that matches no message in the catalog stays as it was.
    """
    out = copy.deepcopy(state)
    with using(language):
        _walk(out, lambda text: retranslate(text, nested=False))
    return out
