"""Sphinx extension: pages that show their text first, and load the rest when it is needed.

Runs once the HTML is written (``build-finished``) over every page of the book, so it applies to
any chapter without a list of pages.  On each page:

* **Explorers load when they come near the screen.**  myst-nb puts a notebook's widget state
  (every frame of every explorer, up to 1 MB) in the page and loads the widgets manager
  (``nb_ipywidgets_js``: RequireJS and the 3.5 MB ``embed-amd.js``) before any text is shown.
  Here the state moves to ``<page>.widgets.js`` beside the page, and those scripts are replaced
  by ``_static/lazy-widgets.js`` (deferred), which loads the state and then the scripts, in the
  configured order, when an explorer comes within a screen or two of the viewport, or when the
  reader touches one.  Until then each explorer shows a placeholder: the picture its first
  frame shows (a PNG in ``_images/``, with its size and alt text), its caption, and room for
  its controls, so the page does not jump when the live explorer replaces it.  The state is a
  script, not JSON fetched by ``fetch()``, so that the book also works opened from disk.
* **Scripts wait for the text.**  Every script file in the ``<head>`` gets ``defer`` (deferred
  scripts run in their order once the page is parsed), except a tiny one (under
  ``INLINE_BYTES``, e.g. Sphinx's ``documentation_options.js``), which is written into the page
  instead (no request at all), where it was.  Inline scripts stay as they are: they set the
  variables the files read, and the theme's light/dark choice must apply before the first paint.
* **One stylesheet.**  A page links a dozen stylesheets (the theme's, Sphinx's, each
  extension's), each a request that holds the first paint, and the theme's imports a further one.
  They are joined, in their order, into one ``_static/styles-<hash>.css`` (imports written in,
  ``url()``\ s rewritten to stay right), shared by every page that links the same set.
  Once every page is written, the bundle is cut to the rules the book's pages and scripts can
  match (570 kB to ~150 kB) and Font Awesome's fonts to the icons those rules draw (156 kB to
  3 kB): see ``css_prune``.  ``fast_pages_prune_css = False`` (conf) keeps them whole.
* **Nothing fetched early that the first paint does not need.**  The theme preloads its two
  scripts (``<link rel="preload" as="script">``) although they run deferred, after the text is
  shown; the preloads go.  On a page that does not search, the theme's search scripts and the
  whole search index (30 kB, more as the book grows) are left out: with
  ``search_as_you_type`` off (the default) the theme only uses them on ``search.html``, where
  its search box sends the reader.
* **No icon script.**  The theme's ``fontawesome.js`` (1.4 MB) turns each ``<i class="fa-...">``
  into an SVG; the theme's stylesheet already draws the same icons with its Font Awesome web
  font, so the script is dropped.  The brand icons (the GitHub button) are the only ones that
  need the 120 kB brands font: they are written in as inline SVG (their paths read from that
  same script at build time), so that font is never fetched.
* **Formula fonts before the first paint.**  A page with KaTeX formulas preloads KaTeX's two
  main fonts (``PRELOAD_FONTS``), so that they are there when its text is first drawn instead of
  arriving later and shifting every formula (and the lines around it) once more.
* **No whole-page measuring at load.**  pydata-sphinx-theme, once the page has loaded, reads
  the size of every code block, output, table and formula to decide which take keyboard focus,
  which lays out the whole page in one long task (0.8 s of main thread on a long chapter at 4x
  CPU slowdown).  Its start-up call is taken out of the theme's script here, and
  ``_static/scroll-focus.js`` does the same job for each region as it comes near the screen.
  Sections below the first screen are not laid out until they come near it either
  (``content-visibility: auto`` in ``course.css``).
* **Images by need.**  Every ``<img>`` of a PNG, JPEG or GIF in the page gets its pixel size
  (``width``/``height``, so the browser reserves the room before the file arrives) and
  ``decoding="async"``; all but the first in the article load lazily (``loading="lazy"``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import posixpath
import re
import shutil
import struct
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import css_prune
from sphinx.util import logging

logger = logging.getLogger(__name__)

__all__ = [
    "brand_svg",
    "defer_scripts",
    "image_size",
    "placeholder_parts",
    "process_page",
    "quiet_theme_focus_pass",
    "setup",
]

STATE_TAG = re.compile(r'\s*<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)
VIEW_TAG = re.compile(r'<script type="application/vnd\.jupyter\.widget-view\+json">(.*?)</script>', re.S)
FONTAWESOME_TAG = re.compile(
    r'\s*<script\b[^>]*\bsrc="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*></script>'
)
SEARCH_SCRIPT_TAG = re.compile(
    r'\s*<script\b[^>]*\bsrc="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)'
    r'(?:\?[^"]*)?"[^>]*></script>'
)
SCRIPT_PRELOAD = re.compile(r'\s*<link\b(?=[^>]*\brel="preload")(?=[^>]*\bas="script")[^>]*>')
ICON_SUBSET = re.compile(
    r'url\("(vendor/fontawesome/webfonts/fa-(?:solid-900|regular-400)-[0-9a-f]+\.woff)"\)'
)
# pydata-sphinx-theme's start-up of its keyboard-focus pass over every scrolling region (see the
# module's docstring): ``"complete"===document.readyState?F():window.addEventListener("load",F)``,
# where F sets ``tabIndex`` from ``scrollWidth``.
THEME_FOCUS_START = re.compile(
    r'"complete"===document\.readyState\?(\w+)\(\):window\.addEventListener\("load",\1\)'
)
THEME_FOCUS_BODY = "tabIndex=e.scrollWidth>e.clientWidth"
ICON_PRELOAD = re.compile(
    r'<link rel="preload" as="font" type="font/woff" crossorigin href="[^"]*fa-solid-900-[0-9a-f]+\.woff" />\n'
)
BRAND_ICON = re.compile(r'<i class="(?:fab|fa-brands) fa-([a-z0-9-]+)"></i>')
IMG_TAG = re.compile(r"<img\b[^>]*>")
DATA_PNG = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')
ARTICLE_START = re.compile(r'<article\b[^>]*class="[^"]*bd-article')
SCRIPT_TAG = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S)
STYLESHEET_TAG = re.compile(r"<link\b[^>]*>")
CSS_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?["']?([^"')\s]+)["']?\s*\)?\s*;""")
CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]+))\s*\)""")
SKIP_DIRS = {"_static", "_sources", "_images", "_sphinx_design_static"}
INLINE_BYTES = 1024  # a script file smaller than this is written into the page
PRELOAD_FONTS = ("KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2")  # beside katex.min.css, in fonts/
CONTROL_ROW_PX = 36  # the height of one row of ipywidgets' controls
_ICON_SOURCE: Dict[Path, str] = {}  # fontawesome.js, read once
_BUNDLES: Dict[tuple, str] = {}  # stylesheet files -> the bundle's name, for this build


def image_size(data: bytes) -> Optional[Tuple[int, int]]:
    """``(width, height)`` in pixels of a PNG, GIF or JPEG, or None for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", data[6:10])
    if data[:2] == b"\xff\xd8":  # JPEG: the first start-of-frame marker holds the size
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                return None
            marker, length = data[i + 1], struct.unpack(">H", data[i + 2 : i + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[i + 5 : i + 9])
                return width, height
            i += 2 + length
    return None


def _set_attr(tag: str, name: str, value: str) -> str:
    """``tag`` (an ``<img ...>``) with ``name="value"`` added, unless it has that attribute."""
    if re.search(rf"\s{name}=", tag):
        return tag
    end = -2 if tag.endswith("/>") else -1
    return f'{tag[:end].rstrip()} {name}="{value}"{tag[end:]}'


def placeholder_parts(state: Dict[str, Any], model_id: str) -> List[Tuple[str, str]]:
    """What a widget shows first, in order: ``("html", markup)`` for HTML and Label widgets,
    ``("control", description)`` for anything with a description (sliders, buttons, ...).
    Boxes show their children; a Stack, Tab or Accordion only its selected child."""
    parts: List[Tuple[str, str]] = []

    def walk(mid: str) -> None:
        model = state.get(mid)
        if model is None:
            return
        name, s = model.get("model_name", ""), model.get("state", {})
        if s.get("layout") and str(s.get("layout")).startswith("IPY_MODEL_"):
            layout = state.get(s["layout"][len("IPY_MODEL_") :], {}).get("state", {})
            if layout.get("display") == "none" or layout.get("visibility") == "hidden":
                return
        if name in ("HTMLModel", "HTMLMathModel"):
            parts.append(("html", s.get("value", "")))
        elif name == "LabelModel":
            parts.append(("html", html.escape(s.get("value", ""))))
        elif isinstance(s.get("children"), list):
            children = [c[len("IPY_MODEL_") :] for c in s["children"] if str(c).startswith("IPY_MODEL_")]
            if name in ("StackModel", "TabModel", "AccordionModel"):
                index = s.get("selected_index")
                children = [children[index]] if index is not None and 0 <= index < len(children) else []
            for child in children:
                walk(child)
        elif "description" in s:
            parts.append(("control", s.get("description", "")))

    walk(model_id)
    return parts


BUNDLE_OF = "fast_pages: the stylesheets"


def _bundle_sources(bundle: Path) -> Optional[List[Path]]:
    """The files a bundle joins (from its first line), or None if it is not one of ours."""
    with bundle.open(encoding="utf-8") as f:
        first = f.readline()
    if not first.startswith(f"/* {BUNDLE_OF} "):
        return None
    static = bundle.parent
    files = [(static / name).resolve() for name in first[len(BUNDLE_OF) + 4 : -3].split()]
    return files if all(f.is_file() for f in files) else None


def brand_svg(fontawesome_js: str, name: str) -> Optional[str]:
    """The Font Awesome brand icon ``name`` as an inline ``<svg>``, read from ``fontawesome.js``."""
    key = rf'(?:"{re.escape(name)}"|(?<![\w"-]){re.escape(name)})'
    found = re.search(key + r':\[(\d+),(\d+),\[[^\]]*\],"[0-9a-f]+","([^"]+)"\]', fontawesome_js)
    if not found:
        return None
    width, height, path = found.groups()
    return (
        f'<svg class="fast-pages-icon fa-{name}" viewBox="0 0 {width} {height}" aria-hidden="true" '
        f'focusable="false"><path fill="currentColor" d="{path}"/></svg>'
    )


def _css_text(file: Path, target_dir: Path, seen: set) -> str:
    """The stylesheet ``file`` with its ``@import``\ s written in and its relative ``url()``\ s
    rewritten to be relative to ``target_dir``."""
    if file in seen or not file.is_file():
        return ""
    seen.add(file)
    text = file.read_text(encoding="utf-8")
    text = re.sub(r"/\*#\s*sourceMappingURL=[^*]*\*/", "", text)
    text = re.sub(r"@charset\s+[^;]+;", "", text)

    imports: List[str] = []

    def imported(match: "re.Match") -> str:
        url = match.group(1)
        if url.startswith(("http:", "https:", "//", "data:")):
            return match.group(0)
        imports.append(_css_text((file.parent / url.split("?")[0]).resolve(), target_dir, seen))
        return f"\0{len(imports) - 1}\0"

    def moved(match: "re.Match") -> str:
        url = next(g for g in match.groups() if g is not None)
        if not url or url.startswith(("data:", "http:", "https:", "//", "/", "#")):
            return match.group(0)
        path, _, rest = url.partition("?")
        new = posixpath.relpath((file.parent / path).resolve().as_posix(), target_dir.resolve().as_posix())
        return f'url("{new}{"?" + rest if rest else ""}")'

    # This file's url()s first; then the imported files (already rewritten) go in.
    text = CSS_URL.sub(moved, CSS_IMPORT.sub(imported, text))
    return re.sub("\0([0-9]+)\0", lambda m: imports[int(m.group(1))], text)


def defer_scripts(head: str, read_local) -> str:
    """``head`` with its script files deferred or inlined (see the module's docstring);
    ``read_local(src)`` gives a local file's bytes, or None."""

    def each(match: "re.Match") -> str:
        attrs, body = match.group(1), match.group(2)
        kind = re.search(r'\stype="([^"]*)"', attrs)
        src = re.search(r'\ssrc="([^"]*)"', attrs)
        if (kind and kind.group(1) not in ("text/javascript", "application/javascript")) or not src:
            return match.group(0)
        if re.search(r"\s(defer|async)\b", attrs):
            return match.group(0)
        data = read_local(src.group(1))
        if data is not None and len(data) < INLINE_BYTES and b"</script" not in data.lower():
            rest = attrs.replace(src.group(0), "")
            return f"<script{rest}>\n{data.decode('utf-8').strip()}\n</script>"
        return f"<script defer{attrs}>{body}</script>"

    return SCRIPT_TAG.sub(each, head)


class _Page:
    """One HTML page being rewritten; ``images_dir`` is the build's ``_images``."""

    def __init__(self, path: Path, outdir: Path, widget_js: List[str], katex_css: str = ""):
        self.path, self.outdir, self.widget_js = path, outdir, widget_js
        self.katex_css = katex_css
        self.rel_root = posixpath.relpath(".", path.parent.relative_to(outdir).as_posix() or ".")
        self.images_dir = outdir / "_images"

    def url(self, target: Path) -> str:
        return posixpath.relpath(
            target.relative_to(self.outdir).as_posix(),
            self.path.parent.relative_to(self.outdir).as_posix() or ".",
        )

    def read_local(self, src: str) -> Optional[bytes]:
        """The bytes of the file a relative ``src`` names, or None."""
        if src.startswith(("data:", "http:", "https:", "//", "/")):
            return None
        file = (self.path.parent / src.split("?")[0]).resolve()
        return file.read_bytes() if file.is_file() else None

    def brand_icon(self, match: "re.Match") -> str:
        script = self.outdir / "_static" / "scripts" / "fontawesome.js"
        if script not in _ICON_SOURCE:
            _ICON_SOURCE[script] = script.read_text(encoding="utf-8") if script.is_file() else ""
        return brand_svg(_ICON_SOURCE[script], match.group(1)) or match.group(0)

    def font_preloads(self, text: str) -> str:
        """Preload links for KaTeX's main fonts on a page with formulas (and without them yet)."""
        if not self.katex_css or 'class="katex"' not in text or 'rel="preload" as="font"' in text:
            return ""
        fonts = (self.outdir / "_static" / self.katex_css).parent / "fonts"
        return "".join(
            f'<link rel="preload" as="font" type="font/woff2" crossorigin href="{self.url(fonts / name)}" />\n'
            for name in PRELOAD_FONTS
            if (fonts / name).is_file()
        )

    def bundle_styles(self, head: str) -> str:
        """``head`` with its local stylesheets joined into one (see the module's docstring).

        The bundle is named after the files it joins and starts with a comment listing them;
        a page already linking a bundle (an incremental build rewrites only changed pages) gets
        that bundle rebuilt from its files, so a changed stylesheet reaches every page.
        """
        static = self.outdir / "_static"
        links = []
        for match in STYLESHEET_TAG.finditer(head):
            tag = match.group(0)
            href = re.search(r'\shref="([^"]+)"', tag)
            media = re.search(r'\smedia="([^"]*)"', tag)
            if not re.search(r'\srel="stylesheet"', tag) or not href or (media and media.group(1) != "all"):
                continue
            if self.read_local(href.group(1)) is None:
                continue
            file = (self.path.parent / href.group(1).split("?")[0]).resolve()
            sources = _bundle_sources(file) if file.name.startswith("styles-") else None
            links.append((match, sources or [file]))
        files = tuple(f for _, group in links for f in group)
        if len(files) < 2:
            return head
        if files not in _BUNDLES:
            listed = [f.relative_to(static.resolve()).as_posix() for f in files]
            text = "\n".join(_css_text(f, static, set()) for f in files)
            name = f"styles-{hashlib.sha1(' '.join(listed).encode()).hexdigest()[:12]}.css"
            (static / name).write_text(f"/* {BUNDLE_OF} {' '.join(listed)} */\n{text}", encoding="utf-8")
            _BUNDLES[files] = f"{name}?v={hashlib.sha1(text.encode()).hexdigest()[:8]}"
        bundle = f'<link rel="stylesheet" href="{self.url(static / "_")[:-1]}{_BUNDLES[files]}" />'
        out, at = [], 0
        for i, (match, _) in enumerate(links):
            out.append(head[at : match.start()])
            if i == 0:
                out.append(bundle)
            at = match.end()
        out.append(head[at:])
        return "".join(out)

    def frame_file(self, png: bytes) -> str:
        """Write ``png`` once to ``_images/`` (named by its hash); its URL from this page."""
        name = f"widget-frame-{hashlib.sha1(png).hexdigest()[:16]}.png"
        self.images_dir.mkdir(exist_ok=True)
        target = self.images_dir / name
        if not target.exists():
            target.write_bytes(png)
        return self.url(target)

    def placeholder(self, state: Dict[str, Any], model_id: str) -> str:
        pieces = []
        for kind, content in placeholder_parts(state, model_id):
            if kind == "control":
                pieces.append(f'<div class="lazy-widget-control" style="height:{CONTROL_ROW_PX}px"></div>')
                continue

            def to_file(match: "re.Match") -> str:
                return f'src="{self.frame_file(base64.b64decode(match.group(1)))}"'

            pieces.append(f'<div class="lazy-widget-html">{DATA_PNG.sub(to_file, content)}</div>')
        return '<div class="lazy-widget-placeholder">' + "".join(pieces) + "</div>"

    def image(self, tag: str, lazy: bool) -> str:
        src = re.search(r'\ssrc="([^"]+)"', tag)
        if src and not re.search(r"\swidth=", tag):
            size = None
            if not src.group(1).startswith(("data:", "http:", "https:", "//")):
                file = (self.path.parent / src.group(1).split("?")[0]).resolve()
                if file.is_file() and file.suffix.lower() in (".png", ".gif", ".jpg", ".jpeg"):
                    size = image_size(file.read_bytes()[:65536])
            if size:
                tag = _set_attr(_set_attr(tag, "width", str(size[0])), "height", str(size[1]))
        tag = _set_attr(tag, "decoding", "async")
        return _set_attr(tag, "loading", "lazy") if lazy else tag

    def rewrite(self, text: str) -> str:
        text = FONTAWESOME_TAG.sub("", text)
        text = SCRIPT_PRELOAD.sub("", text)
        is_search_page = self.path.parent == self.outdir and self.path.name == "search.html"
        if not is_search_page and "DOCUMENTATION_OPTIONS.search_as_you_type = false" in text:
            text = SEARCH_SCRIPT_TAG.sub("", text)
        text = BRAND_ICON.sub(self.brand_icon, text)
        state_match = STATE_TAG.search(text)
        if state_match:
            text = self.defer_widgets(text, state_match)
        head_end = text.find("</head>")
        if head_end > 0:
            head = self.bundle_styles(defer_scripts(text[:head_end], self.read_local))
            text = head + self.font_preloads(text) + text[head_end:]
        start = ARTICLE_START.search(text)
        article_at = start.start() if start else 0
        first = [True]

        def each_image(match: "re.Match") -> str:
            in_article = match.start() >= article_at
            lazy = not (in_article and first[0])
            if in_article:
                first[0] = False
            return self.image(match.group(0), lazy)

        return IMG_TAG.sub(each_image, text)

    def defer_widgets(self, text: str, state_match: "re.Match") -> str:
        state_text = state_match.group(1)
        state = json.loads(state_text).get("state", {})
        stem = self.path.stem
        (self.path.parent / f"{stem}.widgets.js").write_text(
            f"window.attncourseWidgetState({state_text});\n", encoding="utf-8"
        )
        text = text[: state_match.start()] + text[state_match.end() :]
        scripts = []
        for name in self.widget_js:
            tag = re.compile(
                rf'\s*<script\b[^>]*\bsrc="([^"]*_static/{re.escape(name)}(?:\?[^"]*)?)"[^>]*></script>'
            )
            found = tag.search(text)
            if found:
                scripts.append(found.group(1))
                text = text[: found.start()] + text[found.end() :]
        loader = (
            f'<script defer src="{self.rel_root}/_static/lazy-widgets.js" '
            f'data-state="{html.escape(stem)}.widgets.js" '
            f"data-scripts='{html.escape(json.dumps(scripts), quote=False)}'></script>"
        )
        text = text.replace("</head>", f"    {loader}\n  </head>", 1)

        def each_view(match: "re.Match") -> str:
            try:
                model_id = json.loads(match.group(1))["model_id"]
            except (ValueError, KeyError):
                return match.group(0)
            return self.placeholder(state, model_id) + match.group(0)

        return VIEW_TAG.sub(each_view, text)


def process_page(path: Path, outdir: Path, widget_js: List[str], katex_css: str = "") -> None:
    """Rewrite one written page in place (see the module's docstring); ``katex_css`` is the
    KaTeX stylesheet's path under ``_static/`` (its fonts are preloaded), or ""."""
    text = path.read_text(encoding="utf-8")
    new = _Page(path, outdir, widget_js, katex_css).rewrite(text)
    if new != text:
        path.write_text(new, encoding="utf-8")


def _build_finished(app: Any, exception: Optional[BaseException]) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    _BUNDLES.clear()
    widget_js = list(getattr(app.config, "nb_ipywidgets_js", {}) or {})
    katex_css = str(getattr(app.config, "katex_css_path", "") or "")
    if "://" in katex_css or katex_css.startswith("//"):
        katex_css = ""
    # A folder with a _static of its own is another build's site (a translated edition, built into
    # the English one's folder afterwards): its pages are that build's to process.
    nested = {d.parent.name for d in outdir.glob("*/_static")}
    pages = [
        p
        for p in sorted(outdir.rglob("*.html"))
        if not SKIP_DIRS & set(p.relative_to(outdir).parts) and p.relative_to(outdir).parts[0] not in nested
    ]
    for path in pages:
        process_page(path, outdir, widget_js, katex_css)
    quiet_theme_focus_pass(outdir / "_static" / "scripts" / "pydata-sphinx-theme.js")
    if getattr(app.config, "fast_pages_prune_css", True):
        prune_bundles(outdir, pages)


def quiet_theme_focus_pass(script: Path) -> bool:
    """Take the theme's load-time focus pass (``THEME_FOCUS_START``) out of its script; True when
    it was there.  A theme whose script no longer has it (another version) gets a warning, which
    fails the book's build (``-W``): ``_static/scroll-focus.js`` must then be checked against it."""
    if not script.is_file():
        return False
    text = script.read_text(encoding="utf-8")
    match = THEME_FOCUS_START.search(text)
    body = (
        re.search(r"function %s\(\)\{[^}]*%s" % (match.group(1), re.escape(THEME_FOCUS_BODY)), text)
        if match
        else None
    )
    if match is None or body is None:
        if "/* fast_pages: focus pass removed */" not in text:
            logger.warning(
                f"fast_pages: {script.name} has no load-time focus pass to remove (theme changed?)"
            )
        return False
    script.write_text(
        text[: match.start()] + "/* fast_pages: focus pass removed */0" + text[match.end() :],
        encoding="utf-8",
    )
    return True


def prune_bundles(outdir: Path, pages: List[Path]) -> None:
    """Cut every stylesheet bundle of this build to the rules the pages can use and Font
    Awesome's fonts to the icons they draw (``css_prune``); the pages' links follow the new
    contents (``?v=``)."""
    static = outdir / "_static"
    texts = {p: p.read_text(encoding="utf-8") for p in pages}
    scripts = [f.read_bytes() for f in sorted(static.rglob("*.js")) if f.name not in css_prune.SKIP_SCRIPTS]
    # The explorers' frames (HTML in each page's widget state, shown once the widgets load).
    frames = [f.read_text(encoding="utf-8").replace('\\"', '"') for f in sorted(outdir.rglob("*.widgets.js"))]
    keep = css_prune.keeper(*css_prune.used_tokens([*texts.values(), *frames], scripts))
    links, icon_fonts = {}, {}
    for link in sorted(set(_BUNDLES.values())):
        name = link.partition("?v=")[0]
        file = static / name
        header, _, css = file.read_text(encoding="utf-8").partition("\n")
        pruned = css_prune.subset_icon_fonts(css_prune.prune_css(css, keep), static)
        file.write_text(f"{header}\n{pruned}", encoding="utf-8")
        new_link = links[link] = f"{name}?v={hashlib.sha1(pruned.encode()).hexdigest()[:8]}"
        icon_fonts[new_link] = ICON_SUBSET.findall(pruned)
        logger.info(f"fast_pages: {name} cut from {len(css) // 1024} to {len(pruned) // 1024} KiB")
    for path, text in texts.items():
        new = ICON_PRELOAD.sub("", text)
        for old, link in links.items():
            new = new.replace(old, link)
        # The icons' font, now a few kB, comes with the stylesheet: arriving after the first
        # paint, it would resize the header's icons and shift the page below them.
        fonts = [f for link, found in icon_fonts.items() if link in new for f in found]
        solid = [
            f for f in fonts if "fa-solid-900" in f and re.search(r'class="[^"]*\b(fa-solid|fas)\b', new)
        ]
        if solid and "</head>" in new:
            page = _Page(path, outdir, [])
            tags = "".join(
                f'<link rel="preload" as="font" type="font/woff" crossorigin href="{page.url(static / f)}" />\n'
                for f in solid
            )
            new = new.replace("</head>", tags + "</head>", 1)
        if new != text:
            path.write_text(new, encoding="utf-8")


def _config_inited(app: Any, config: Any) -> None:
    # sphinxcontrib-katex renders formulas at build time with Node; without Node, let the
    # browser render them (with the KaTeX it bundles, served locally) rather than fail.
    if getattr(config, "katex_prerender", False) and shutil.which("node") is None:
        config.katex_prerender = False
        logger.info("fast_pages: Node.js not found; KaTeX will render the formulas in the browser")


def setup(app: Any) -> Dict[str, Any]:
    app.add_config_value("fast_pages_prune_css", True, "html")
    app.connect("config-inited", _config_inited, priority=400)
    # After the theme's own build-finished work (pydata-sphinx-theme rewrites pygments.css
    # there, with its light and dark colours): the stylesheets must be final when joined.
    app.connect("build-finished", _build_finished, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
