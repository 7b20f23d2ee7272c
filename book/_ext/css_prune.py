"""Stylesheets cut to the rules the built book can use, and the icon font to the icons it shows.

Used by ``fast_pages`` once every page is written.  The theme's joined stylesheet is ~570 kB:
pydata-sphinx-theme with all of Bootstrap and all of Font Awesome's ~2,000 icon classes, of which
a page uses a small part; every rule is parsed and matched against every element of the page
under the phone's 4x slower CPU before the first paint.

* **Rules by need** (``prune_css``): a style rule is kept when one of its selectors can match
  the book: every class, id and element name it needs (outside ``:not()``, ``:is()``... and
  attribute tests, which are not looked at) is *used* somewhere: in a built page, or as a word
  in one of the theme's or the book's scripts (they add classes when a reader opens the
  sidebar, the search, a dropdown, dark mode...; ``used_tokens``).  Class names that scripts
  build from pieces, or that the widgets manager's own styles bring, are kept by prefix
  (``SAFE_CLASS``).  The test is the one PurgeCSS makes: it may keep a rule that cannot match,
  never drop one that can.  At-rules other than ``@media``/``@supports``/``@layer``/
  ``@container`` (fonts, keyframes, ...) are kept whole; a conditional block left empty goes.
* **Icons by need** (``subset_icon_fonts``): Font Awesome's solid font (156 kB) holds ~1,400
  icons; the pruned stylesheet names the few the book shows (``content``/``--fa`` of the kept
  ``fa-*`` rules), and the font is cut to those (fontTools, WOFF) under a new name.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import re
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Set, Tuple

__all__ = ["prune_css", "selector_needs", "split_rules", "subset_icon_fonts", "used_tokens"]

# Classes that scripts build from parts or that come with the widgets manager's own styles.
SAFE_CLASS = re.compile(r"^(widget|jupyter|jp-|lm-|p-|mod-|katex|lazy-widget|cell_output|output)")
CONDITIONAL = ("@media", "@supports", "@layer", "@container", "@document", "@-moz-document")
FUNCTIONAL_PSEUDO = re.compile(r":{1,2}[\w-]+\(")
WORD = re.compile(rb"[A-Za-z_][\w-]*")
CLASS_ATTR = re.compile(r'\sclass\s*=\s*(?:"([^"]*)"|\'([^\']*)\'|([^\s>]+))')
ID_ATTR = re.compile(r'\sid\s*=\s*(?:"([^"]*)"|\'([^\']*)\'|([^\s>]+))')
TAG = re.compile(r"<([A-Za-z][\w-]*)")
# Scripts whose words are not the book's classes: Font Awesome's icon script (dropped from the
# pages) and the widgets manager (its words include Font Awesome 4's icon names; the classes it
# uses are kept by SAFE_CLASS).
SKIP_SCRIPTS = ("fontawesome.js", "embed-amd.js", "tex-chtml-full.js")


def _skip_string_or_comment(css: str, i: int) -> int:
    """The index after the string or comment starting at ``i``, or ``i`` if none starts there."""
    if css.startswith("/*", i):
        end = css.find("*/", i + 2)
        return len(css) if end < 0 else end + 2
    if css[i] in "\"'":
        quote, j = css[i], i + 1
        while j < len(css) and css[j] != quote:
            j += 2 if css[j] == "\\" else 1
        return j + 1
    return i


def split_rules(css: str) -> List[Tuple[str, Optional[str]]]:
    """The top-level rules of ``css`` as ``(prelude, block)``: ``block`` is the text between the
    braces, or None for a statement such as ``@import ...;`` (then ``prelude`` holds it all)."""
    rules: List[Tuple[str, Optional[str]]] = []
    i, n = 0, len(css)
    while i < n:
        while i < n and (css[i].isspace() or css.startswith("/*", i)):
            if css.startswith("/*!", i):  # a licence notice: kept
                end = _skip_string_or_comment(css, i)
                rules.append((css[i:end], None))
                i = end
            else:
                i = _skip_string_or_comment(css, i) if css.startswith("/*", i) else i + 1
        if i >= n:
            break
        start, depth = i, 0
        while i < n:
            j = _skip_string_or_comment(css, i)
            if j != i:
                i = j
                continue
            c = css[i]
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif depth <= 0 and c in "{;}":
                break
            i += 1
        prelude = css[start:i].strip()
        if i >= n or css[i] in ";}":
            if prelude:
                rules.append((prelude + ";", None))
            i += 1
            continue
        i += 1
        body_start, level = i, 1
        while i < n and level:
            j = _skip_string_or_comment(css, i)
            if j != i:
                i = j
                continue
            level += {"{": 1, "}": -1}.get(css[i], 0)
            i += 1
        rules.append((prelude, css[body_start : i - 1]))
    return rules


def _split_top(text: str, sep: str = ",") -> List[str]:
    """``text`` split at ``sep`` outside brackets and strings."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        j = _skip_string_or_comment(text, i)
        if j != i:
            i = j
            continue
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _drop_functional(selector: str) -> str:
    """``selector`` without functional pseudo-classes and their arguments (``:not(...)`` ...)."""
    while True:
        found = FUNCTIONAL_PSEUDO.search(selector)
        if not found:
            return selector
        depth, i = 1, found.end()
        while i < len(selector) and depth:
            depth += {"(": 1, ")": -1}.get(selector[i], 0)
            i += 1
        selector = selector[: found.start()] + selector[i:]


def selector_needs(selector: str) -> Optional[Tuple[Set[str], Set[str], Set[str]]]:
    """The classes, ids and element names one selector needs, or None when it cannot be read
    (escapes: such a selector is kept)."""
    if "\\" in selector:
        return None
    s = _drop_functional(selector)
    s = re.sub(r"\[[^\]]*\]", " [] ", s)
    s = re.sub(r"::?[\w-]+", "", s)
    classes = set(re.findall(r"\.(-?[_a-zA-Z][\w-]*)", s))
    ids = set(re.findall(r"#(-?[_a-zA-Z][\w-]*)", s))
    tags = set()
    for compound in re.split(r"[\s>+~]+", s):
        head = re.match(r"[A-Za-z][\w-]*", compound)
        if head:
            tags.add(head.group(0).lower())
    return classes, ids, tags


def used_tokens(pages: Iterable[str], scripts: Iterable[bytes]) -> Tuple[Set[str], Set[str], Set[str]]:
    """Classes, ids and element names in ``pages`` (HTML text); every word of ``scripts`` counts
    as all three."""
    classes: Set[str] = set()
    ids: Set[str] = set()
    tags: Set[str] = set()
    for page in pages:
        for m in CLASS_ATTR.finditer(page):
            classes.update((m.group(1) or m.group(2) or m.group(3) or "").split())
        for m in ID_ATTR.finditer(page):
            ids.add(m.group(1) or m.group(2) or m.group(3) or "")
        tags.update(t.lower() for t in TAG.findall(page))
    words: Set[str] = set()
    for script in scripts:
        words.update(w.decode("ascii") for w in WORD.findall(script))
    return classes | words, ids | words, tags | {w.lower() for w in words}


def keeper(classes: Set[str], ids: Set[str], tags: Set[str]) -> Callable[[str], bool]:
    """``keep(selector)``: whether the selector may match, given what is used."""

    def keep(selector: str) -> bool:
        needs = selector_needs(selector)
        if needs is None:
            return True
        cls, idents, names = needs
        return (
            all(c in classes or SAFE_CLASS.match(c) for c in cls)
            and idents <= ids
            and all(t in tags or t in ("html", "body", "svg") for t in names)
        )

    return keep


def prune_css(css: str, keep: Callable[[str], bool]) -> str:
    """``css`` with the style rules none of whose selectors ``keep`` accepts left out."""
    out: List[str] = []
    for prelude, block in split_rules(css):
        if block is None:
            out.append(prelude)
        elif prelude.startswith("@"):
            if prelude.lower().startswith(CONDITIONAL) and "{" in block:
                inner = prune_css(block, keep)
                if inner.strip():
                    out.append(f"{prelude}{{{inner}}}")
            elif prelude.lower().startswith(CONDITIONAL):
                out.append(f"{prelude}{{{block}}}")  # an @layer block of declarations, or empty
            else:
                out.append(f"{prelude}{{{block}}}")
        elif "{" in block:  # nested rules: left as they are
            out.append(f"{prelude}{{{block}}}")
        else:
            kept = [s.strip() for s in _split_top(prelude) if keep(s.strip())]
            if kept:
                out.append(f"{','.join(kept)}{{{block}}}")
    return "\n".join(out)


SHORT_STRING = re.compile(r"""(["'])((?:\\[0-9a-fA-F]{1,6}\s?|[^"'\\\n]){1,3})\1""")
CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?")
ICON_FONT_URL = re.compile(
    r"""url\(\s*["']?([^"')]*/(fa-(?:solid-900|regular-400))\.woff2)["']?\s*\)\s*format\(["']?woff2["']?\)"""
)


def icon_codepoints(css: str) -> Set[int]:
    """Every character of the stylesheet's short strings (one to three characters, escaped as
    ``"\\f0c9"`` or written as they are, as pydata-sphinx-theme writes its ``--pst-icon-*``):
    the icons its rules can draw (``content``, ``--fa``...), and a few letters besides."""
    points: Set[int] = set()
    for match in SHORT_STRING.finditer(css):
        text = CSS_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), match.group(2))
        points.update(ord(c) for c in text)
    return points


def subset_icon_fonts(css: str, css_dir: Path) -> str:
    """``css`` (a stylesheet written in ``css_dir``) with Font Awesome's solid and regular fonts
    replaced by subsets holding only the icons the stylesheet can draw (WOFF, cut from the
    TrueType file beside each); unchanged without fontTools or without those files."""
    try:
        from fontTools import subset
        from fontTools.ttLib import TTFont
    except ImportError:
        return css
    points = icon_codepoints(css)
    if not points:
        return css

    def each(match: "re.Match") -> str:
        url, stem = match.group(1), match.group(2)
        source = (css_dir / url).resolve().with_suffix(".ttf")
        if not source.is_file():
            return match.group(0)
        font = TTFont(str(source), recalcTimestamp=False)  # the same bytes (and name) every build
        options = subset.Options()
        options.flavor = "woff"  # zlib: woff2 would need brotli
        options.notdef_outline = True
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=sorted(points))
        subsetter.subset(font)
        buffer = io.BytesIO()
        font.flavor = "woff"
        font.save(buffer)
        data = buffer.getvalue()
        name = f"{stem}-{hashlib.sha1(data).hexdigest()[:10]}.woff"
        target = source.parent / name
        if not target.exists():
            target.write_bytes(data)
        return f'url("{posixpath.join(posixpath.dirname(url), name)}") format("woff")'

    return ICON_FONT_URL.sub(each, css)
