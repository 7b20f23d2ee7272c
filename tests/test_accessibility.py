"""Accessibility: an axe-core audit of every built page, at desktop and at phone width.

axe-core (the engine behind browsers' accessibility checkers) is a devDependency in
package.json, installed with ``npm ci`` (``scripts/test.sh`` does it where Node is present) and
injected into each page from ``node_modules``: nothing is fetched at run time.  A page fails on
any violation that axe rates *serious* or *critical*; the assertion lists rule, page and the
number of elements.  Skips when the book, Chromium or axe-core is missing, unless
``REQUIRE_BROWSER=1`` (then it fails).
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from browser import (  # noqa: F401  (book_server and chromium are fixtures)
    BUILD_HTML,
    REPO_ROOT,
    BookBrowser,
    book_server,
    chromium,
    skip_or_fail,
    wait_for_mathjax,
    wait_for_widgets,
)

AXE_JS = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")

# Every rule axe runs by default (WCAG 2.0-2.2 A/AA and best practices), results as plain data.
AXE_RUN = """async () => {
    const results = await axe.run(document, {resultTypes: ['violations']});
    return results.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        targets: v.nodes.map(n => n.target.join(' ')).slice(0, 5), count: v.nodes.length}));
}"""


def test_axe_core_is_pinned_as_a_test_dependency():
    package = json.loads((REPO_ROOT / "package.json").read_text())
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    version = package["devDependencies"]["axe-core"]
    assert version[0].isdigit(), f"pin an exact axe-core version, not {version!r}"
    assert lock["packages"]["node_modules/axe-core"]["version"] == version
    assert "axe-core" not in package["dependencies"]  # not vendored into the book


def _pages() -> list:
    return sorted(
        p.relative_to(BUILD_HTML).as_posix()
        for p in BUILD_HTML.rglob("*.html")
        if not {"_static", "_sources", "_images"} & set(p.relative_to(BUILD_HTML).parts)
        and p.name not in ("search.html", "genindex.html")
    )


def audit(page) -> list:
    """axe-core's violations on an open page, as dicts (id, impact, help, targets, count)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    return page.evaluate(AXE_RUN)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_no_serious_or_critical_violation_on_any_page(book_server, chromium, width, height):  # noqa: F811
    if not AXE_JS.is_file():
        skip_or_fail(f"{AXE_JS} missing: run `npm ci`")
    pages = _pages()
    assert "book/intro.html" in pages
    blocking, minor = [], Counter()
    # Each page loads at the width under test, as on a phone (the theme sets some attributes,
    # such as tab stops on scrolling code, at load and only 300 ms after a resize).
    with BookBrowser(book_server, chromium, viewport=(width, height)) as browser:
        for path in pages:
            page, _ = browser.open(path)
            wait_for_mathjax(page)
            wait_for_widgets(page)
            for v in audit(page):
                if v["impact"] in BLOCKING:
                    blocking.append(
                        f"{v['id']} ({v['impact']}) on {path}: {v['count']} element(s), e.g. "
                        f"{', '.join(v['targets'][:3])}: {v['help']}"
                    )
                else:
                    minor[v["id"]] += v["count"]
    print(f"width {width}: moderate/minor violations (not blocking): {dict(minor) or 'none'}")
    assert not blocking, f"{len(blocking)} serious/critical axe violations at width {width}:\n" + "\n".join(
        blocking
    )
