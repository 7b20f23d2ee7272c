"""Drive headless Chromium over the built HTML book, offline.

``serve(directory)`` serves a folder (normally ``_build/html``) on 127.0.0.1 from a thread;
``BookBrowser`` opens its pages in Debian's Chromium through playwright and records, per page,
what went wrong: JavaScript console errors and uncaught exceptions, requests that failed or got
an HTTP error, and any request to a host other than the local server (those are blocked, so a
page that would reach for a CDN fails fast instead of waiting for the network).

    with serve(BUILD_HTML) as base_url, BookBrowser(base_url) as browser:
        page, log = browser.open("book/01_softmax.html")
        assert not log.problems(), log.report()

The pytest fixtures ``book_server`` and ``book_browser`` wrap the same, once per test module,
and skip (with the reason) when the book is not built or Chromium is missing; with the
environment variable ``REQUIRE_BROWSER=1`` (as in CI) they fail instead.  Build the book
first with ``jupyter-book build . -W``; install Chromium with ``apt-get install -y chromium``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional
from urllib.parse import urljoin, urlsplit

import pytest
from built_book import book_pending

__all__ = [
    "REPO_ROOT",
    "BUILD_HTML",
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "PageLog",
    "BookBrowser",
    "launch_chromium",
    "serve",
    "book_pages",
    "TRANSLATED_EDITIONS",
    "why_no_chromium",
    "why_no_browser",
    "skip_or_fail",
    "wait_for_math",
    "wait_for_widgets",
    "chromium",
    "book_server",
    "book_browser",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
BUILD_HTML = REPO_ROOT / "_build" / "html"
# Debian's chromium by default; CHROMIUM_PATH (or chromium-browser on PATH) elsewhere.
CHROMIUM = Path(
    os.environ.get("CHROMIUM_PATH")
    or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
    or "/usr/bin/chromium"
)
# Debian's Chromium, headless, as root in a container, with every background call home off.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


# The translated editions' folders in the built site (scripts/build_translations.py).
TRANSLATED_EDITIONS = ("zh", "zh-tw")


def book_pages(html_dir: Path = BUILD_HTML, edition: Optional[str] = None) -> list:
    """The HTML pages of the built book, relative to ``html_dir``, sorted (assets left out).

    ``edition``: None for the pages of every edition; "en" for the English pages; "zh" or
    "zh-tw" for a translated edition's (their paths start with that folder)."""
    if edition not in (None, "en", *TRANSLATED_EDITIONS):
        raise ValueError(f"edition must be None, 'en' or one of {TRANSLATED_EDITIONS}; got {edition!r}")
    pages = []
    for p in Path(html_dir).rglob("*.html"):
        parts = p.relative_to(html_dir).parts
        if {"_static", "_sources", "_images"} & set(parts):
            continue
        folder = parts[0] if len(parts) > 1 and parts[0] in TRANSLATED_EDITIONS else "en"
        if edition is None or edition == folder:
            pages.append(p.relative_to(html_dir).as_posix())
    return sorted(pages)


def why_no_chromium() -> Optional[str]:
    """Why headless Chromium cannot be driven here, or None when it can."""
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} not found: run `apt-get install -y chromium`"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


def why_no_browser(html_dir: Path = BUILD_HTML) -> Optional[str]:
    """Why the browser tests over ``html_dir`` cannot run here, or None when they can."""
    if Path(html_dir) == BUILD_HTML:
        book_pending(html_dir)
    if not (Path(html_dir) / "index.html").is_file():
        return f"the book is not built ({html_dir}/index.html missing): run `jupyter-book build . -W`"
    return why_no_chromium()


def skip_or_fail(reason: str) -> None:
    """Skip the test, or fail it where ``REQUIRE_BROWSER=1`` (CI) says the checks must run."""
    if os.environ.get("REQUIRE_BROWSER", "") not in ("", "0"):
        pytest.fail(f"REQUIRE_BROWSER is set but {reason}", pytrace=False)
    pytest.skip(reason)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    # Explicit types for what the book serves; the platform's mimetypes table may lack them.
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".css": "text/css",
        ".svg": "image/svg+xml",
        ".woff": "font/woff",
        ".woff2": "font/woff2",
        ".json": "application/json",
        ".ipynb": "application/json",
    }

    def log_message(self, format, *args):  # keep pytest's output clean
        pass


@contextlib.contextmanager
def serve(directory: Path = BUILD_HTML) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="book-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@dataclass
class PageLog:
    """What one page did wrong while it loaded (and afterwards, until the next ``open``)."""

    url: str
    console_errors: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    failed_requests: list = field(default_factory=list)
    external_requests: list = field(default_factory=list)

    def problems(self) -> list:
        return [
            *(f"console error: {m}" for m in self.console_errors),
            *(f"uncaught exception: {m}" for m in self.page_errors),
            *(f"failed request: {m}" for m in self.failed_requests),
            *(f"request to a non-local host (blocked): {m}" for m in self.external_requests),
        ]

    def report(self) -> str:
        lines = self.problems()
        return f"{self.url}: " + ("no problems" if not lines else "\n  " + "\n  ".join(lines))


@contextlib.contextmanager
def launch_chromium():
    """Start playwright and Debian's headless Chromium; yields the playwright ``Browser``.

    Playwright's sync API allows one instance per thread at a time: share it (the ``chromium``
    fixture) rather than nesting a second one.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class BookBrowser:
    """One browser context over a served book; ``open`` gives a fresh page and its ``PageLog``.

    Pass ``browser`` (from ``launch_chromium`` or the ``chromium`` fixture) to share one
    Chromium; without it, the ``with`` block launches its own.
    """

    def __init__(
        self,
        base_url: str,
        browser=None,
        *,
        viewport: tuple = (1280, 900),
        timeout_ms: int = 30_000,
    ):
        self.base_url = base_url
        self.viewport = {"width": viewport[0], "height": viewport[1]}
        self.timeout_ms = timeout_ms
        self._browser = browser
        self._stack = contextlib.ExitStack()
        self._context = self._page = None

    def __enter__(self) -> "BookBrowser":
        try:
            if self._browser is None:
                self._browser = self._stack.enter_context(launch_chromium())
            self._context = self._browser.new_context(viewport=self.viewport)
            self._stack.callback(self._context.close)
            self._context.set_default_timeout(self.timeout_ms)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._context = self._page = None
        self._stack.close()

    def url(self, path: str) -> str:
        return urljoin(self.base_url, path)

    def open(self, path: str, *, wait_until: str = "networkidle"):
        """Load ``path`` (relative to the served root); returns ``(page, log)``.

        The log keeps filling while the page lives, so check it after interacting too.
        """
        if self._context is None:
            raise RuntimeError("BookBrowser.open() outside its `with` block")
        if self._page is not None:
            self._page.close()
        url = self.url(path)
        log = PageLog(url)
        page = self._page = self._context.new_page()
        external: set = set()

        def route(route):
            request_url = route.request.url
            if urlsplit(request_url).hostname in LOCAL_HOSTS:
                route.continue_()
            else:
                external.add(request_url)
                log.external_requests.append(f"{route.request.method} {request_url}")
                route.abort("blockedbyclient")

        def on_console(msg):
            if msg.type == "error":
                where = msg.location or {}
                source = f"{where.get('url', '?')}:{where.get('lineNumber', '?')}"
                log.console_errors.append(f"{msg.text} ({source})")

        def on_request_failed(request):
            if request.url not in external:  # already reported as external
                log.failed_requests.append(f"{request.method} {request.url} ({request.failure})")

        def on_response(response):
            if response.status >= 400:
                log.failed_requests.append(
                    f"{response.request.method} {response.url} (HTTP {response.status})"
                )

        page.route("**/*", route)
        page.on("console", on_console)
        page.on("pageerror", lambda exc: log.page_errors.append(str(exc)))
        page.on("requestfailed", on_request_failed)
        page.on("response", on_response)
        page.goto(url, wait_until=wait_until)
        return page, log


def wait_for_math(page, timeout_ms: int = 20_000) -> int:
    """Wait until the page's formulas are rendered; returns how many are.

    The book's formulas are rendered to KaTeX's HTML when it is built (or, without Node, by
    KaTeX in the browser): each ``.math`` element gets a ``.katex`` inside.  A page that loads
    MathJax instead (``mjx-container``) is waited for too.  Returns 0 at once on a page
    without formulas.
    """
    if page.locator(".math").count() == 0:
        return 0
    loads_mathjax = page.evaluate("() => Array.from(document.scripts).some(s => /mathjax/i.test(s.src))")
    if loads_mathjax:
        page.wait_for_function(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=timeout_ms
        )
        page.evaluate("() => MathJax.startup.promise")
        return page.locator("mjx-container").count()
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.math')).every(m => m.querySelector('.katex'))",
        timeout=timeout_ms,
    )
    return page.locator(".math .katex").count()


WIDGET_VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'
WIDGET_STATE = 'script[type="application/vnd.jupyter.widget-state+json"]'


def wait_for_widgets(page, timeout_ms: int = 20_000) -> int:
    """Wait until every embedded widget view is rendered; returns how many there are.

    The widgets manager (embed-amd.js) puts a ``div.widget-subarea`` before each view's
    ``<script>``; a page without widget state returns 0 at once.  The book loads the manager
    and the state only when an explorer comes near the screen (``_static/lazy-widgets.js``):
    this scrolls to the first view, as a reader would, and back to the top once the state is in.
    """
    n_views = page.locator(WIDGET_VIEW).count()
    lazy = page.locator("script[src*='lazy-widgets.js']").count() > 0
    if n_views == 0 or (page.locator(WIDGET_STATE).count() == 0 and not lazy):
        return 0
    if lazy:
        page.evaluate(f"() => document.querySelector('{WIDGET_VIEW}').parentElement.scrollIntoView()")
        page.wait_for_function(f"() => document.querySelector('{WIDGET_STATE}')", timeout=timeout_ms)
        page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_function(
        f"""() => Array.from(document.querySelectorAll('{WIDGET_VIEW}')).every(
                s => s.previousElementSibling &&
                     s.previousElementSibling.classList.contains('widget-subarea') &&
                     s.previousElementSibling.childElementCount > 0)""",
        timeout=timeout_ms,
    )
    return n_views


@pytest.fixture(scope="module")
def chromium():
    """Headless Chromium (a playwright ``Browser``), shared by one test module.

    Skips when Chromium or playwright is missing; fails instead under ``REQUIRE_BROWSER=1``.
    """
    reason = why_no_chromium()
    if reason:
        skip_or_fail(reason)
    with launch_chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def book_server() -> Iterator[str]:
    """Base URL of ``_build/html`` served locally; skips when the book or Chromium is missing."""
    reason = why_no_browser(BUILD_HTML)
    if reason:
        skip_or_fail(reason)
    with serve(BUILD_HTML) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def book_browser(book_server: str, chromium) -> Iterator[BookBrowser]:
    """A ``BookBrowser`` over the locally served ``_build/html``, shared by one test module."""
    with BookBrowser(book_server, chromium) as browser:
        yield browser
