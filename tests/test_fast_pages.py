"""book/_ext/fast_pages.py and css_prune.py: what they do to a written page, on small pages
and stylesheets made here; and, over the built book in Chromium, that the cut icon font holds
every icon the pages draw.

The whole book, in a browser, is checked by tests/built_pages.py and tests/test_widgets_browser.py
(explorers load when scrolled to and still switch frames) and, for speed, by the Lighthouse
budget (scripts/lighthouse_budget.py, in the full tier).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import sys
import zlib
from pathlib import Path

import pytest

from browser import REPO_ROOT, book_browser, book_server, chromium  # noqa: F401  (fixtures)

sys.path.insert(0, str(REPO_ROOT / "book" / "_ext"))
fast_pages = pytest.importorskip("fast_pages")  # needs Sphinx (its logger)

WIDGET_JS = ["widgets-offline.js", "vendor/requirejs/require.js", "vendor/jupyter-widgets/embed-amd.js"]


def png(width: int, height: int) -> bytes:
    """A valid grey PNG of the given size."""
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def test_image_size_reads_png_gif_and_jpeg_headers():
    assert fast_pages.image_size(png(37, 11)) == (37, 11)
    assert fast_pages.image_size(b"GIF89a" + struct.pack("<HH", 5, 9) + b"\x00" * 8) == (5, 9)
    jpeg = b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 4) + b"\x00\x00"
    jpeg += b"\xff\xc0" + struct.pack(">HBHH", 11, 8, 30, 40) + b"\x00" * 6
    assert fast_pages.image_size(jpeg) == (40, 30)
    assert fast_pages.image_size(b"<svg xmlns='http://www.w3.org/2000/svg'/>") is None


def model(name, **state):
    return {"model_name": name, "state": state}


def explorer_state(frames):
    """An explorer's shape: a slider above a Stack of frames (the second one selected)."""
    state = {
        "slider": model("IntSliderModel", description="width", value=1),
        "stack": model(
            "StackModel", children=[f"IPY_MODEL_f{i}" for i in range(len(frames))], selected_index=1
        ),
        "box": model("VBoxModel", children=["IPY_MODEL_controls", "IPY_MODEL_stack"]),
        "controls": model("VBoxModel", children=["IPY_MODEL_slider"]),
    }
    for i, frame in enumerate(frames):
        state[f"f{i}"] = model("HTMLModel", value=frame)
    return state


def test_placeholder_shows_the_controls_and_only_the_selected_frame():
    state = explorer_state(["<p>zero</p>", "<p>one</p>", "<p>two</p>"])
    assert fast_pages.placeholder_parts(state, "box") == [("control", "width"), ("html", "<p>one</p>")]
    assert fast_pages.placeholder_parts(state, "missing") == []


def test_head_scripts_are_deferred_tiny_ones_inlined_inline_ones_kept():
    files = {"_static/tiny.js": b"var OPTIONS = {a: 1};", "_static/big.js": b"//" + b"x" * 5000}
    head = (
        '<head><script>document.documentElement.dataset.mode = "light";</script>'
        '<script src="_static/tiny.js?v=1"></script>'
        '<script src="_static/big.js?v=2"></script>'
        "<script>OPTIONS.page = 'p';</script>"
        '<script async src="_static/other.js"></script>'
        '<script type="application/json">{"a": 1}</script>'
    )
    out = fast_pages.defer_scripts(head, lambda src: files.get(src.split("?")[0]))
    assert "<script>\nvar OPTIONS = {a: 1};\n</script>" in out  # inlined where it was, before its user
    assert out.index("var OPTIONS") < out.index("OPTIONS.page")
    assert '<script defer src="_static/big.js?v=2"></script>' in out
    assert "<script>OPTIONS.page = 'p';</script>" in out  # inline scripts run where they are
    assert '<script async src="_static/other.js"></script>' in out
    assert '<script type="application/json">{"a": 1}</script>' in out
    assert out.count("defer") == 1


PAGE = """<html><head>
<script defer src="../_static/scripts/fontawesome.js?digest=abc"></script>
<script type="application/vnd.jupyter.widget-state+json">{STATE}</script>
<script src="../_static/widgets-offline.js?v=1"></script>
<script src="../_static/vendor/requirejs/require.js?v=2"></script>
<script src="../_static/vendor/jupyter-widgets/embed-amd.js?v=3"></script>
</head><body>
<img alt="logo in the header" src="../_static/logo.png" />
<article class="bd-article"><p>Text</p>
<img alt="the first figure" src="../_images/first.png" />
<img alt="a later figure" src="../_images/later.png" />
<div class="cell_output"><script type="application/vnd.jupyter.widget-view+json">{"version_major": 2, "version_minor": 0, "model_id": "box"}</script></div>
</article></body></html>
"""


def test_a_page_with_an_explorer_is_rewritten_to_load_it_by_need(tmp_path):
    out = tmp_path / "html"
    (out / "book").mkdir(parents=True)
    (out / "_images").mkdir()
    (out / "_static").mkdir()
    (out / "_static" / "logo.png").write_bytes(png(20, 10))
    (out / "_images" / "first.png").write_bytes(png(300, 200))
    (out / "_images" / "later.png").write_bytes(png(640, 480))
    frames = [
        f'<img class="attncourse-picture" src="data:image/png;base64,{base64.b64encode(png(70 + i, 50)).decode()}" '
        f'alt="frame {i}">'
        for i in range(3)
    ]
    state = {"version_major": 2, "version_minor": 0, "state": explorer_state(frames)}
    page = out / "book" / "chapter.html"
    page.write_text(PAGE.replace("{STATE}", json.dumps(state)))

    fast_pages.process_page(page, out, WIDGET_JS)
    text = page.read_text()

    assert "fontawesome.js" not in text
    assert "widget-state+json" not in text and "data:image/png" not in text
    saved = (out / "book" / "chapter.widgets.js").read_text()
    assert saved.startswith("window.attncourseWidgetState(") and json.loads(saved[29:-3]) == state
    loader = text[text.index("lazy-widgets.js") - 40 : text.index("</head>")]
    assert 'defer src="../_static/lazy-widgets.js"' in loader and 'data-state="chapter.widgets.js"' in loader
    assert json.loads(loader.split("data-scripts='")[1].split("'")[0]) == [
        "../_static/widgets-offline.js?v=1",
        "../_static/vendor/requirejs/require.js?v=2",
        "../_static/vendor/jupyter-widgets/embed-amd.js?v=3",
    ]
    for name in WIDGET_JS:  # no longer loaded by the page itself
        assert f'<script src="../_static/{name}' not in text

    # The placeholder: room for the slider, then the selected frame (frame 1) as a file.
    placeholder = text[text.index('<div class="lazy-widget-placeholder">') : text.index("widget-view+json")]
    assert placeholder.index("lazy-widget-control") < placeholder.index("<img")
    assert 'alt="frame 1"' in placeholder and 'width="71" height="50"' in placeholder
    src = placeholder.split('src="')[1].split('"')[0]
    assert src.startswith("../_images/widget-frame-")
    assert (out / "book" / src).resolve().read_bytes() == png(71, 50)

    # Images: sized; the first in the article loads at once, the others lazily.
    first = text[text.index('alt="the first figure"') - 5 :].split(">")[0]
    later = text[text.index('alt="a later figure"') - 5 :].split(">")[0]
    logo = text[text.index('alt="logo in the header"') - 5 :].split(">")[0]
    assert 'width="300" height="200"' in first and "loading=" not in first
    assert 'width="640" height="480"' in later and 'loading="lazy"' in later
    assert 'width="20" height="10"' in logo and 'loading="lazy"' in logo

    fast_pages.process_page(page, out, WIDGET_JS)  # a second pass changes nothing
    assert page.read_text() == text


def test_a_page_without_widgets_keeps_its_text(tmp_path):
    out = tmp_path / "html"
    out.mkdir()
    page = out / "plain.html"
    body = "<html><head><title>t</title></head><body><article class='bd-article'><p>Words</p></article></body></html>"
    page.write_text(body)
    fast_pages.process_page(page, out, WIDGET_JS)
    assert page.read_text() == body
    assert not list(out.glob("*.widgets.js"))


def test_the_book_config_uses_the_extension_and_katex_at_build_time():
    import yaml

    config = yaml.safe_load((REPO_ROOT / "_config.yml").read_text())["sphinx"]
    assert config["local_extensions"]["fast_pages"] == "book/_ext"
    assert {"fast_pages", "sphinxcontrib.katex"} <= set(config["config"]["extensions"])
    assert config["config"]["katex_prerender"] is True
    assert "://" not in config["config"]["katex_css_path"]
    assert (REPO_ROOT / "book" / "_static" / config["config"]["katex_css_path"]).is_file()


def test_brand_icons_become_inline_svg_read_from_the_theme_script():
    js = 'var a={"github-alt":[480,512,[],"f113","M1 1z"],github:[496,512,[],"f09b","M2 2z"],"x":[1,2,[],"f1","M3"]};'
    svg = fast_pages.brand_svg(js, "github")
    assert 'viewBox="0 0 496 512"' in svg and 'd="M2 2z"' in svg and 'aria-hidden="true"' in svg
    assert 'd="M1 1z"' in fast_pages.brand_svg(js, "github-alt")
    assert fast_pages.brand_svg(js, "gitlab") is None


def test_stylesheets_are_joined_in_order_and_the_bundle_follows_its_sources(tmp_path):
    out = tmp_path / "html"
    (out / "_static" / "styles").mkdir(parents=True)
    (out / "book").mkdir()
    (out / "_static" / "basic.css").write_text(".basic{background:url(file.png)}")
    (out / "_static" / "styles" / "theme.css").write_text(
        '@import "../basic.css";\n.theme{src:url(../fonts/a.woff2)}'
    )
    (out / "_static" / "course.css").write_text(".course{color:red}")
    head = (
        '<html><head><link href="../_static/styles/theme.css?digest=1" rel="stylesheet" />'
        '<link rel="stylesheet" type="text/css" href="../_static/course.css?v=2" />'
        '<link rel="next" href="other.html" /></head><body></body></html>'
    )
    page = out / "book" / "page.html"
    page.write_text(head)
    fast_pages._BUNDLES.clear()
    fast_pages.process_page(page, out, WIDGET_JS)
    text = page.read_text()
    (bundle,) = (out / "_static").glob("styles-*.css")
    assert text.count('rel="stylesheet"') == 1 and f"../_static/{bundle.name}?v=" in text
    assert '<link rel="next" href="other.html" />' in text
    css = bundle.read_text()
    assert "@import" not in css
    assert css.index(".basic") < css.index(".theme") < css.index(".course")
    assert 'url("file.png")' in css and 'url("fonts/a.woff2")' in css  # relative to _static/

    # A stylesheet changes; the page is not rewritten (an incremental build): the bundle is.
    (out / "_static" / "course.css").write_text(".course{color:blue}")
    fast_pages._BUNDLES.clear()
    fast_pages.process_page(page, out, WIDGET_JS)
    assert "color:blue" in bundle.read_text() and page.read_text() != text


def test_a_page_with_formulas_preloads_katex_main_fonts(tmp_path):
    out = tmp_path / "html"
    fonts = out / "_static" / "vendor" / "katex" / "fonts"
    fonts.mkdir(parents=True)
    for name in fast_pages.PRELOAD_FONTS:
        (fonts / name).write_bytes(b"wOF2")
    (out / "book").mkdir()
    with_math, without = out / "book" / "math.html", out / "book" / "plain.html"
    with_math.write_text('<html><head></head><body><span class="katex">x</span></body></html>')
    without.write_text("<html><head></head><body><p>x</p></body></html>")
    for page in (with_math, without):
        fast_pages.process_page(page, out, WIDGET_JS, "vendor/katex/katex.min.css")
    text = with_math.read_text()
    head = text[: text.index("</head>")]
    for name in fast_pages.PRELOAD_FONTS:
        assert (
            f'rel="preload" as="font" type="font/woff2" crossorigin href="../_static/vendor/katex/fonts/{name}"'
            in head
        )
    assert "preload" not in without.read_text()
    fast_pages.process_page(with_math, out, WIDGET_JS, "vendor/katex/katex.min.css")
    assert with_math.read_text() == text  # once only


css_prune = pytest.importorskip("css_prune")

CSS = """/*! Font Awesome Free - licence kept */
/* an ordinary comment goes */
:root{--pst-icon-note:"\\f05a"}
html[data-theme=dark] .used{color:#fff}
.used,.unused{color:red}
.unused{color:blue}
.menu.show{display:block}
div.used > p:not(.nowhere)::before{content:"a{b}"}
.fa-bars:before{content:"\\f0c9"}
.fa-music:before{content:"\\f001"}
#main-id{margin:0}
#other-id{margin:1px}
.sm\\:flex{display:flex}
@font-face{font-family:X;src:url(x.woff2)}
@keyframes spin{0%{transform:none}to{transform:rotate(1turn)}}
@media (min-width:960px){.unused{width:1px}.used{width:2px}}
@media print{.unused{display:none}}
@supports (display:grid){@media screen{.unused{a:b}}}
table{border:0}
marquee{speed:1}
"""


def test_the_stylesheet_keeps_the_rules_the_pages_can_match_and_only_those():
    page = '<html><body><div class="used fa-bars" id="main-id"><p>x</p></div><table></table></body></html>'
    keep = css_prune.keeper(*css_prune.used_tokens([page], [b'el.classList.add("show"); x.className="menu"']))
    out = css_prune.prune_css(CSS, keep)
    assert out.startswith("/*! Font Awesome Free - licence kept */") and "ordinary comment" not in out
    for kept in (
        ':root{--pst-icon-note:"\\f05a"}',
        "html[data-theme=dark] .used{color:#fff}",
        ".used{color:red}",  # the selector list loses its unused half
        ".menu.show{display:block}",  # classes a script adds
        'div.used > p:not(.nowhere)::before{content:"a{b}"}',  # :not() and strings are not read
        '.fa-bars:before{content:"\\f0c9"}',
        "#main-id{margin:0}",
        ".sm\\:flex{display:flex}",  # escaped: cannot be read, so kept
        "@font-face{font-family:X;src:url(x.woff2)}",
        "@keyframes spin{0%{transform:none}to{transform:rotate(1turn)}}",
        "@media (min-width:960px){.used{width:2px}}",
        "table{border:0}",
    ):
        assert kept in out, kept
    for dropped in ("color:blue", "\\f001", "other-id", "width:1px", "@media print", "@supports", "marquee"):
        assert dropped not in out, dropped


def test_split_rules_reads_strings_comments_and_nested_blocks():
    rules = css_prune.split_rules('@import "a;b.css";\n.a{content:"}"}/* } */@media x{.b{c:d}}')
    assert rules == [('@import "a;b.css";', None), (".a", 'content:"}"'), ("@media x", ".b{c:d}")]


def _icon_font(path, points):
    """A TrueType font with a square glyph for each code point."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    names = [".notdef"] + [f"icon{p:x}" for p in points]
    fb = FontBuilder(1000, isTTF=True)
    fb.setupGlyphOrder(names)
    fb.setupCharacterMap({p: f"icon{p:x}" for p in points})
    glyphs = {}
    for name in names:
        pen = TTGlyphPen(None)
        pen.moveTo((0, 0))
        pen.lineTo((0, 500))
        pen.lineTo((500, 500))
        pen.closePath()
        glyphs[name] = pen.glyph()
    fb.setupGlyf(glyphs)
    fb.setupHorizontalMetrics({n: (600, 0) for n in names})
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupNameTable({"familyName": "Icons", "styleName": "Solid"})
    fb.setupOS2()
    fb.setupPost()
    fb.save(str(path))


def test_the_icon_font_is_cut_to_the_icons_the_stylesheet_draws(tmp_path):
    pytest.importorskip("fontTools")
    from fontTools.ttLib import TTFont

    fonts = tmp_path / "vendor" / "fontawesome" / "webfonts"
    fonts.mkdir(parents=True)
    _icon_font(fonts / "fa-solid-900.ttf", [0xF0C9, 0xF001, 0xF05A])
    (fonts / "fa-solid-900.woff2").write_bytes(b"wOF2 (the full font)")
    css = (
        '@font-face{font-family:"Font Awesome 6 Free";font-weight:900;'
        'src:url("vendor/fontawesome/webfonts/fa-solid-900.woff2") format("woff2"),'
        'url("vendor/fontawesome/webfonts/fa-solid-900.ttf") format("truetype")}'
        # pydata-sphinx-theme writes its icons as the characters themselves, Font Awesome escaped
        ':root{--pst-icon-note:"\uf05a"}.fa-bars:before{content:"\\f0c9"}'
    )
    out = css_prune.subset_icon_fonts(css, tmp_path)
    url = out.split('url("')[1].split('"')[0]
    assert url.startswith("vendor/fontawesome/webfonts/fa-solid-900-") and url.endswith(".woff")
    assert 'format("woff")' in out and "fa-solid-900.woff2" not in out
    subset = TTFont(str(tmp_path / url))
    assert set(subset.getBestCmap()) == {0xF0C9, 0xF05A}  # the music icon is not drawn: gone
    assert css_prune.subset_icon_fonts(css, tmp_path) == out  # the same font, the same name
    assert css_prune.subset_icon_fonts(".a{color:red}", tmp_path) == ".a{color:red}"


def test_pages_that_do_not_search_load_no_search_index_nor_script_preloads(tmp_path):
    out = tmp_path / "html"
    (out / "book").mkdir(parents=True)
    head = (
        '<html><head><link rel="preload" as="script" href="{r}_static/scripts/bootstrap.js?digest=1" />'
        '<link rel="preload" as="font" type="font/woff2" crossorigin href="{r}_static/f.woff2" />'
        "<script>DOCUMENTATION_OPTIONS.search_as_you_type = false;</script>"
        '<script defer src="{r}_static/searchtools.js"></script>'
        '<script defer src="{r}_static/language_data.js"></script>'
        '<script defer src="{r}searchindex.js"></script>'
        '</head><body><script defer src="{r}_static/scripts/bootstrap.js?digest=1"></script></body></html>'
    )
    chapter, search = out / "book" / "chapter.html", out / "search.html"
    chapter.write_text(head.replace("{r}", "../"))
    search.write_text(head.replace("{r}", ""))
    for page in (chapter, search):
        fast_pages.process_page(page, out, WIDGET_JS)
    text = chapter.read_text()
    assert "searchindex.js" not in text and "searchtools.js" not in text and "language_data" not in text
    assert 'as="script"' not in text and 'as="font"' in text
    assert 'defer src="../_static/scripts/bootstrap.js' in text
    assert "searchindex.js" in search.read_text() and "searchtools.js" in search.read_text()
    # A book whose search runs as the reader types needs the index on every page.
    chapter.write_text(head.replace("{r}", "../").replace("= false", "= true"))
    fast_pages.process_page(chapter, out, WIDGET_JS)
    assert "searchindex.js" in chapter.read_text()


def test_prune_bundles_cuts_the_bundle_and_the_links_follow(tmp_path):
    pytest.importorskip("fontTools")
    out = tmp_path / "html"
    fonts = out / "_static" / "vendor" / "fontawesome" / "webfonts"
    fonts.mkdir(parents=True)
    _icon_font(fonts / "fa-solid-900.ttf", [0xF0C9, 0xF001])
    (out / "_static" / "a.css").write_text(
        '@font-face{font-weight:900;src:url("vendor/fontawesome/webfonts/fa-solid-900.woff2") format("woff2")}'
        '.used{color:red}.fa-bars:before{content:"\\f0c9"}'
    )
    (out / "_static" / "b.css").write_text(".unused{color:blue}.in-a-frame{color:green}")
    (out / "book").mkdir()
    # A class only an explorer's later frame uses (in the page's widget state, not its HTML).
    (out / "book" / "index.widgets.js").write_text(
        'window.attncourseWidgetState({"state": {"f": {"state": {"value": "<p class=\\"in-a-frame\\">2</p>"}}}});'
    )
    page, plain = out / "book" / "index.html", out / "book" / "plain.html"
    for path, body in ((page, '<i class="fa-solid fa-bars"></i>'), (plain, "")):
        path.write_text(
            '<html><head><link rel="stylesheet" href="../_static/a.css" />'
            '<link rel="stylesheet" href="../_static/b.css" />'
            f'</head><body><p class="used">x</p>{body}</body></html>'
        )
    fast_pages._BUNDLES.clear()
    for path in (page, plain):
        fast_pages.process_page(path, out, WIDGET_JS)
    before = page.read_text()
    fast_pages.prune_bundles(out, [page, plain])
    (bundle,) = (out / "_static").glob("styles-*.css")
    css = bundle.read_text()
    assert css.startswith("/* fast_pages: the stylesheets a.css b.css */")
    assert ".used{color:red}" in css and ".in-a-frame{color:green}" in css and "unused" not in css
    text = page.read_text()
    link = text.split('rel="stylesheet" href="../_static/')[1].split('"')[0]
    assert link != before.split('rel="stylesheet" href="../_static/')[1].split('"')[0]
    assert link.startswith(bundle.name + "?v=")
    # The page that shows an icon preloads the icons' (cut) font; the other does not.
    (font,) = fonts.glob("fa-solid-900-*.woff")
    assert (
        f'rel="preload" as="font" type="font/woff" crossorigin href="../_static/vendor/fontawesome/webfonts/{font.name}"'
        in text
    )
    assert "preload" not in plain.read_text()
    fast_pages.prune_bundles(out, [page, plain])  # once only
    assert page.read_text().count('rel="preload"') == 1


# The built book, in Chromium: every icon a page draws is in the cut icon font.
ICONS_DRAWN = """() => { const out = new Set(); for (const el of document.querySelectorAll('*')) {
  for (const pseudo of [null, '::before', '::after']) { const cs = getComputedStyle(el, pseudo);
    if (!/Font Awesome/.test(cs.fontFamily)) continue;
    const text = pseudo ? cs.content : (el.children.length ? '' : el.textContent);
    for (const ch of text) { const c = ch.codePointAt(0); if (c >= 0xE000 && c <= 0xF8FF) out.add(c); } } }
  return [...out]; }"""


@pytest.mark.slow
def test_every_icon_the_built_pages_draw_is_in_the_cut_icon_font(book_browser):
    from fontTools.ttLib import TTFont

    from browser import BUILD_HTML

    (bundle,) = (BUILD_HTML / "_static").glob("styles-*.css")
    css = bundle.read_text(encoding="utf-8")
    font = re.search(r"vendor/fontawesome/webfonts/fa-solid-900-[0-9a-f]+\.woff", css)
    assert font, "the book's stylesheet does not use the cut icon font"
    cmap = set(TTFont(str(BUILD_HTML / "_static" / font.group(0))).getBestCmap())
    assert len(cmap) < 100 and len(css) < 300_000  # cut, not the whole font and theme
    # An exercise page (admonition icons), the glossary, the search page: header, sidebar,
    # dropdowns, theme switch, admonitions.
    drawn = set()
    for path in ("book/01_softmax.html", "book/appendix_glossary.html", "search.html"):
        page, log = book_browser.open(path, wait_until="load")
        found = set(page.evaluate(ICONS_DRAWN))
        assert found, f"{path}: no Font Awesome icon drawn"
        assert found <= cmap, f"{path}: icons missing from the cut font: {sorted(map(hex, found - cmap))}"
        drawn |= found
        page.close()
    assert 0xF0F3 in drawn  # the admonitions' bell, which the theme writes as the character itself


def _theme_script() -> Path:
    pydata_sphinx_theme = pytest.importorskip("pydata_sphinx_theme")
    script = (
        Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / "scripts"
    )
    return script / "pydata-sphinx-theme.js"


def test_the_themes_load_time_focus_pass_is_taken_out_once(tmp_path):
    source = _theme_script()
    if not source.is_file():
        pytest.skip(f"no theme script at {source}")
    script = tmp_path / "pydata-sphinx-theme.js"
    script.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    before = script.read_text(encoding="utf-8")
    assert fast_pages.THEME_FOCUS_START.search(before), "the installed theme starts no focus pass at load"
    assert fast_pages.quiet_theme_focus_pass(script) is True
    after = script.read_text(encoding="utf-8")
    assert not fast_pages.THEME_FOCUS_START.search(after)
    # Only the start-up call goes: the function itself and everything else stay.
    assert len(before) - len(after) < 80 and fast_pages.THEME_FOCUS_BODY in after
    assert fast_pages.quiet_theme_focus_pass(script) is False  # already done: no second edit
    assert script.read_text(encoding="utf-8") == after


def test_a_theme_script_without_the_focus_pass_is_left_alone(tmp_path):
    script = tmp_path / "pydata-sphinx-theme.js"
    text = '(()=>{function I(){}"complete"===document.readyState?I():window.addEventListener("load",I)})();'
    script.write_text(text, encoding="utf-8")
    # The start-up call is there, but its function does not set tabIndex: not the focus pass.
    assert fast_pages.quiet_theme_focus_pass(script) is False
    assert script.read_text(encoding="utf-8") == text


# Which regions take focus, at phone width, and whether the browser has rendered a section.
FOCUS_STATE = """() => {
  const regions = Array.from(document.querySelectorAll('pre, div.math, .cell_output > .output'));
  const sections = Array.from(document.querySelectorAll('.bd-article section > section'));
  // A skipped section's own box is there; what it holds is not drawn.  (Read before the regions'
  // sizes below, which lay them out.)
  const rendered = sections.map(el => el.firstElementChild.checkVisibility({contentVisibilityAuto: true}));
  return {
    rendered,
    regions: regions.map(el => ({
      tab: el.getAttribute('tabindex'),
      top: el.getBoundingClientRect().top,
      bottom: el.getBoundingClientRect().bottom,
      overflows: el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1})),
  };
}"""


@pytest.mark.slow
def test_regions_are_measured_for_focus_as_they_come_near_and_far_sections_wait(book_server, chromium):
    from browser import BookBrowser

    with BookBrowser(book_server, chromium, viewport=(360, 740)) as browser:
        page, log = browser.open("book/07_positional_encoding.html", wait_until="load")
        page.wait_for_timeout(500)
        first = page.evaluate(FOCUS_STATE)
        # The page's last sections are not rendered yet, the first is.
        assert first["rendered"][0] is True and first["rendered"][-1] is False, first["rendered"]
        regions = first["regions"]
        assert len(regions) > 20
        # Every region is focusable or measured: none is left out of reach.
        assert all(r["tab"] in ("0", "-1") for r in regions)
        # Near the screen: measured (focus only where it scrolls).  Far below: the safe default.
        near = [r for r in regions if r["top"] < 740 * 2]
        far = [r for r in regions if r["top"] > 740 * 4]
        assert near and far
        assert all(r["tab"] == ("0" if r["overflows"] else "-1") for r in near), near
        assert all(r["tab"] == "0" for r in far)
        # Scrolled to the page's last region, the regions there are measured too, and a region
        # that scrolls (a wide formula or a long output at 360 px) keeps its focus.
        scroll_to_last = (
            "() => { const all = document.querySelectorAll('pre, div.math, .cell_output > .output');"
            " all[all.length - 1].scrollIntoView({block: 'center'}); }"
        )
        for _ in range(2):  # sections above it are drawn as it comes: scroll again once they are
            page.evaluate(scroll_to_last)
            page.wait_for_timeout(800)
        last = page.evaluate(FOCUS_STATE)
        assert last["rendered"][-1] is True
        height = page.evaluate("() => window.innerHeight")
        shown = [r for r in last["regions"] if r["bottom"] > 0 and r["top"] < height]
        assert shown and all(r["tab"] == ("0" if r["overflows"] else "-1") for r in shown), shown
        assert any(r["tab"] == "-1" for r in last["regions"])
        assert not log.problems(), log.report()
