"""Sphinx extension: every page links to the same page in the book's other languages.

The English book is built at the site's root and each translation in a folder of its own
(``EDITIONS``: ``zh/`` for simplified Chinese, ``zh-tw/`` for traditional), from the same
executed notebooks (``scripts/build_translations.py``).  On every page this extension

* writes a short switch above the article, a link per other edition, each labelled in its own
  language (``lang`` and ``hreflang`` set, so a screen reader reads it in that language);
* adds ``<link rel="alternate" hreflang=...>`` for each edition to the page's head;
* sets ``<html lang>`` to the BCP 47 tag (``zh-Hans``), not Sphinx's ``zh_CN``.

A page's address is the same in every edition below the edition's folder, so a link is the
relative way up to the site's root followed by the other edition's folder and the page's name.
"""

from __future__ import annotations

import html
from typing import Any, Dict, NamedTuple

__all__ = ["EDITIONS", "edition_of", "switch_html", "setup"]


class Edition(NamedTuple):
    language: str  # Sphinx's ``language`` ("en", "zh_CN", "zh_TW")
    folder: str  # below the site's root: "" for English
    tag: str  # BCP 47, for lang and hreflang
    label: str  # the edition's name, in its own language


EDITIONS = (
    Edition("en", "", "en", "English"),
    Edition("zh_CN", "zh/", "zh-Hans", "简体中文"),
    Edition("zh_TW", "zh-tw/", "zh-Hant", "繁體中文"),
)


def edition_of(language: str | None) -> Edition:
    """The edition built with Sphinx's ``language`` (``None`` is English)."""
    for edition in EDITIONS:
        if edition.language == (language or "en"):
            return edition
    raise ValueError(f"no edition for language {language!r}; known: {[e.language for e in EDITIONS]}")


def _to_root(pagename: str, edition: Edition) -> str:
    """The relative way from ``pagename``'s HTML file up to the site's root."""
    depth = pagename.count("/") + edition.folder.count("/")
    return "../" * depth


def switch_html(pagename: str, language: str | None) -> tuple[str, str]:
    """(the visible switch, the head's alternate links) for ``pagename`` in ``language``'s edition."""
    here = edition_of(language)
    root = _to_root(pagename, here)
    links, alternates = [], []
    for edition in EDITIONS:
        href = html.escape(f"{root}{edition.folder}{pagename}.html")
        alternates.append(f'<link rel="alternate" hreflang="{edition.tag}" href="{href}">')
        if edition != here:
            links.append(
                f'<a href="{href}" hreflang="{edition.tag}" lang="{edition.tag}">{edition.label}</a>'
            )
    label = {"en": "Language", "zh_CN": "语言", "zh_TW": "語言"}[here.language]
    switch = f'<nav class="language-switch" aria-label="{label}">' + " · ".join(links) + "</nav>"
    return switch, "\n".join(alternates)


def _add_switch(app: Any, pagename: str, templatename: str, context: Dict[str, Any], doctree: Any) -> None:
    context["language"] = edition_of(app.config.language).tag  # <html lang="zh-Hans">, every page
    if "body" not in context:  # search, genindex: no article to put the switch above
        return
    switch, alternates = switch_html(pagename, app.config.language)
    context["body"] = switch + context["body"]
    context["metatags"] = context.get("metatags", "") + alternates


def _translate_toctree_captions(app: Any, doctree: Any) -> None:
    """The part captions of the table of contents ("Core", ...) from the page's catalog: Sphinx
    extracts them as messages but leaves the captions sphinx-external-toc sets untranslated."""
    if edition_of(app.config.language).language == "en":
        return
    from pathlib import Path

    from sphinx import addnodes
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    domain = docname_to_domain(app.env.docname, app.config.gettext_compact)
    dirs = [str(Path(app.srcdir) / d) for d in app.config.locale_dirs]
    catalog, found = init_locale(dirs, app.config.language, domain)
    if not found:
        return
    for toctree in doctree.findall(addnodes.toctree):
        if toctree.get("caption"):
            toctree["caption"] = catalog.gettext(toctree["caption"])


def setup(app: Any) -> Dict[str, Any]:
    app.connect("doctree-read", _translate_toctree_captions)
    app.connect("html-page-context", _add_switch)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
