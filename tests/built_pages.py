"""Every built page as a reader sees it: headless Chromium, offline, at one width.

The tests are collected from the modules that import them, one per width
(``test_built_pages_desktop.py``, ``test_built_pages_phone.py``, each setting ``VIEWPORT``), so
the two widths can run on two workers.  Each page of ``_build/html`` is loaded once per width:
the ``visits`` fixture records what that load showed (the page's log of errors and blocked
requests, the formulas (rendered by KaTeX when the book is built), the widget views, the images, any sideways scroll, and
axe-core's accessibility audit), and each test asserts one of those things over every page.

axe-core (the engine behind browsers' accessibility checkers) is a devDependency in
package.json, installed with ``npm ci`` (``scripts/test.sh`` does it where Node is present) and
injected into each page from ``node_modules``: nothing is fetched at run time.  A page fails on
any violation that axe rates *serious* or *critical*.

Everything here skips when the book, Chromium or axe-core is missing, unless ``REQUIRE_BROWSER=1``
(then it fails).  ``ATTNCOURSE_SCREENSHOTS`` names a folder for a screenshot of every page.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from browser import (  # noqa: F401  (book_server and chromium are fixtures)
    REPO_ROOT,
    BookBrowser,
    PageLog,
    book_pages,
    book_server,
    chromium,
    skip_or_fail,
    wait_for_math,
    wait_for_widgets,
)

AXE_JS = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")
# Sphinx's generated pages, not written by the course: loaded and checked, but not audited.
NOT_AUDITED = ("search.html", "genindex.html")
SHOTS = os.environ.get("ATTNCOURSE_SCREENSHOTS")

# Every rule axe runs by default (WCAG 2.0-2.2 A/AA and best practices), results as plain data;
# CONTEXT and OPTIONS are axe.run's (what to audit, null for the whole page; which rules).
AXE_RUN = """async ([context, options]) => {
    const results = await axe.run(context || document, {...options, resultTypes: ['violations']});
    return results.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        targets: v.nodes.map(n => n.target.join(' ')).slice(0, 5), count: v.nodes.length}));
}"""
# The tokens of highlighted code are most of a chapter's elements (8,900 of 13,600 in chapter 8)
# and most of axe's time, for a dozen looks.  axe's contrast verdict on a token depends on its
# colour, size, weight and opacity and on the background behind it: the first token of each such
# look is found, the code blocks that hold one keep their markup, and the others are audited
# with their text as plain text (the blocks themselves, their colours, scrolling and labels,
# stay), then put back.
SAMPLE_CODE_TOKENS = """() => {
    const seen = new Set();
    const opaque = (c) => c !== 'transparent' && !/^rgba\\(.*, 0\\)$/.test(c);
    for (const token of document.querySelectorAll('.highlight pre span')) {
        if (!token.textContent.trim()) continue;
        const style = getComputedStyle(token);
        let behind = 'none';
        for (let el = token; el; el = el.parentElement) {
            const c = getComputedStyle(el).backgroundColor;
            if (opaque(c)) { behind = c; break; }
        }
        const look = [style.color, style.fontSize, style.fontWeight, style.opacity, behind].join('|');
        if (!seen.has(look)) { seen.add(look); token.closest('pre').setAttribute('data-axe-keep', ''); }
    }
}"""
CODE_AS_TEXT = """() => {
    window.__codeMarkup = Array.from(document.querySelectorAll('.highlight pre:not([data-axe-keep])'), pre => {
        const markup = pre.innerHTML;
        pre.textContent = pre.textContent;
        return [pre, markup];
    });
}"""
CODE_AS_WAS = """() => {
    for (const [pre, markup] of window.__codeMarkup || []) pre.innerHTML = markup;
    delete window.__codeMarkup;
}"""
# Images load lazily (book/_ext/fast_pages.py): have them all load first, as scrolling would.
LOAD_LAZY_IMAGES = """async () => {
    const lazy = Array.from(document.querySelectorAll('img[loading="lazy"]'));
    lazy.forEach(img => { img.loading = 'eager'; });
    await Promise.all(lazy.map(img => img.decode().catch(() => null)));
}"""
# Every section drawn, as when the reader has reached it (sections off the screen are not laid
# out: content-visibility, book/_static/course.css), and back.
DRAW_EVERY_SECTION = """() => {
    const style = document.createElement('style');
    style.id = 'test-draw-every-section';
    style.textContent = '.bd-article section { content-visibility: visible !important; }';
    document.head.append(style);
}"""
DRAW_SECTIONS_BY_NEED = "() => document.getElementById('test-draw-every-section')?.remove()"
# How far the page scrolls sideways with every section drawn (a wide one would not show otherwise).
SIDEWAYS_OVERFLOW = """() => document.documentElement.scrollWidth - window.innerWidth"""
IMAGES = """() => Array.from(document.querySelectorAll('article img')).map(img => ({
    src: img.src.slice(0, 60), ok: img.complete && img.naturalWidth > 0,
    alt: img.getAttribute('alt') || '', inWidget: !!img.closest('.jupyter-widgets'),
    raster: /[.](png|jpe?g|gif)([?#]|$)/i.test(img.getAttribute('src') || ''),
    sized: img.hasAttribute('width') && img.hasAttribute('height')}))"""
VISIBLE_WIDGET_PICTURES = """() => Array.from(document.querySelectorAll('.jupyter-widgets img'))
    .filter(img => img.offsetParent !== null && img.naturalWidth > 0).length"""


@dataclass
class Visit:
    """What one page showed when it loaded at one width."""

    path: str
    width: int
    log: PageLog  # console errors, uncaught exceptions, failed or blocked requests, until it closed
    n_math: int
    n_typeset: int
    untypeset: int
    tex_errors: int
    n_widgets: int
    widget_error: bool
    visible_widget_pictures: int
    images: list
    overflow: int
    lang: str
    axe: Optional[list] = field(default=None)  # None: not audited


@contextlib.contextmanager
def _while(page, script: str, undo: str):
    """``script`` evaluated on the page for the ``with`` block, then ``undo``."""
    page.evaluate(script)
    try:
        yield
    finally:
        page.evaluate(undo)


def _overflow(page) -> int:
    with _while(page, DRAW_EVERY_SECTION, DRAW_SECTIONS_BY_NEED):
        return page.evaluate(SIDEWAYS_OVERFLOW)


def audit(page) -> list:
    """axe-core's violations on an open page, as dicts (id, impact, help, targets, count).

    Every section is drawn first, as it is when the reader reaches it: axe finds an element's
    background by what is drawn at its place, and a section off the screen is not drawn yet
    (content-visibility, book/_static/course.css).  Of the code blocks, those that hold the first
    token of each look keep their markup (``SAMPLE_CODE_TOKENS``)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    with _while(page, DRAW_EVERY_SECTION, DRAW_SECTIONS_BY_NEED):
        page.evaluate(SAMPLE_CODE_TOKENS)
        with _while(page, CODE_AS_TEXT, CODE_AS_WAS):
            return page.evaluate(AXE_RUN, [None, {}])


def visit(browser: BookBrowser, path: str, width: int, audited: bool = True) -> Visit:
    page, log = browser.open(path)
    n_math = page.locator(".math").count()
    n_typeset = wait_for_math(page)
    n_widgets = wait_for_widgets(page)
    result = Visit(
        path=path,
        width=width,
        log=log,
        n_math=n_math,
        n_typeset=n_typeset,
        untypeset=page.locator(".math:not(:has(.katex, mjx-container))").count() if n_math else 0,
        tex_errors=page.locator(".katex-error, mjx-merror").count(),
        n_widgets=n_widgets,
        widget_error=bool(n_widgets) and "Error displaying widget" in page.inner_text("body"),
        visible_widget_pictures=page.evaluate(VISIBLE_WIDGET_PICTURES) if n_widgets else 0,
        images=page.evaluate(LOAD_LAZY_IMAGES) or page.evaluate(IMAGES),
        overflow=_overflow(page),
        lang=page.evaluate("() => document.documentElement.lang"),
    )
    if audited and AXE_JS.is_file() and Path(path).name not in NOT_AUDITED:
        result.axe = audit(page)
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{Path(path).stem}-{width}.png"), full_page=False)
    return result


@pytest.fixture(scope="module")
def visits(request, book_server, chromium) -> list:  # noqa: F811
    """Every built page of the importing module's ``EDITION`` (English by default), loaded once at
    its ``VIEWPORT`` (each at that width from the start, as on a phone: the theme sets some
    attributes only at load); axe audits the pages its ``AUDITED`` names (default: all)."""
    width, height = request.module.VIEWPORT
    edition = getattr(request.module, "EDITION", "en")
    audited = getattr(request.module, "AUDITED", None)
    pages = book_pages(edition=edition)
    folder = "" if edition == "en" else f"{edition}/"
    assert f"{folder}book/intro.html" in pages, f"the {edition} edition is not built"
    with BookBrowser(book_server, chromium, viewport=(width, height)) as browser:
        return [
            visit(browser, path, width, audited is None or path.removeprefix(folder) in audited)
            for path in pages
        ]


@pytest.mark.browser
@pytest.mark.slow
def test_every_page_loads_offline_without_errors(visits):
    problems = [v.log.report() for v in visits if v.log.problems()]
    problems += [
        f"{v.path}: {v.untypeset} of {v.n_math} math elements not typeset, or a TeX error"
        for v in visits
        if v.untypeset or v.tex_errors
    ]
    problems += [f"{v.path}: a widget failed to display" for v in visits if v.widget_error]
    assert not problems, "\n".join(problems)
    typeset = {v.path: v.n_typeset for v in visits if v.n_math}
    assert typeset, "no built page has math: the formula check checked nothing"
    assert all(n > 0 for n in typeset.values()), typeset


@pytest.mark.browser
@pytest.mark.slow
def test_every_image_loads_and_has_alt_text(visits):
    problems = []
    for v in visits:
        for img in v.images:
            if img["inWidget"]:
                continue  # an explorer's frames: test_every_explorer_shows_a_picture
            if not img["ok"]:
                problems.append(f"{v.path}: image did not load: {img['src']}")
            if len(img["alt"].strip()) < 3:
                problems.append(f"{v.path}: image without alt text: {img['src']}")
            if img["raster"] and not img["sized"]:  # its room is not kept while it loads
                problems.append(f"{v.path}: image without width and height: {img['src']}")
    assert sum(len(v.images) for v in visits) > 0, "no image on any page: the check checked nothing"
    assert not problems, "\n".join(problems)


@pytest.mark.browser
@pytest.mark.slow
def test_every_explorer_shows_a_picture(visits):
    with_widgets = [v for v in visits if v.n_widgets]
    assert len(with_widgets) >= 10, [v.path for v in with_widgets]
    blank = [
        f"{v.path}: {v.n_widgets} widget views but no visible picture"
        for v in with_widgets
        if v.visible_widget_pictures < 1
    ]
    assert not blank, "\n".join(blank)


@pytest.mark.browser
@pytest.mark.slow
def test_no_page_scrolls_sideways(visits):
    wide = [
        f"{v.path}: scrolls sideways by {v.overflow}px at width {v.width}" for v in visits if v.overflow > 2
    ]
    assert not wide, "\n".join(wide)


@pytest.mark.browser
@pytest.mark.slow
def test_no_serious_or_critical_accessibility_violation(visits):
    if not AXE_JS.is_file():
        skip_or_fail(f"{AXE_JS} missing: run `npm ci`")
    audited = [v for v in visits if v.axe is not None]
    assert any(v.path.endswith("book/intro.html") for v in audited)
    blocking, minor = [], Counter()
    for v in audited:
        for violation in v.axe:
            if violation["impact"] in BLOCKING:
                blocking.append(
                    f"{violation['id']} ({violation['impact']}) on {v.path}: {violation['count']} "
                    f"element(s), e.g. {', '.join(violation['targets'][:3])}: {violation['help']}"
                )
            else:
                minor[violation["id"]] += violation["count"]
    width = visits[0].width
    print(f"width {width}: moderate/minor violations (not blocking): {dict(minor) or 'none'}")
    assert not blocking, f"{len(blocking)} serious/critical axe violations at width {width}:\n" + "\n".join(
        blocking
    )


# What <html lang> says on each edition's pages (book/_ext/language_switch.py).
HTML_LANG = {"": "en", "zh": "zh-Hans", "zh-tw": "zh-Hant"}


@pytest.mark.browser
@pytest.mark.slow
def test_every_page_says_its_language(visits):
    wrong = []
    for v in visits:
        folder = v.path.split("/")[0] if v.path.split("/")[0] in HTML_LANG else ""
        if v.lang != HTML_LANG[folder]:
            wrong.append(f"{v.path}: <html lang={v.lang!r}>, not {HTML_LANG[folder]!r}")
    assert not wrong, "\n".join(wrong)
