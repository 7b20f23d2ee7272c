"""The explorers in the built HTML book, in headless Chromium, with no kernel.

For each chapter with an explorer: open its page from the built book (served on 127.0.0.1,
offline), wait for the embedded widgets to render, check that the picture shown first is the
default one, then move each control (ArrowRight on a slider's handle, a click on a toggle)
and check that the picture changed to the frame for the controls' new values (the same PNG
bytes and alt text as the explorer draws here in frames mode).  Chapter 8's explorer shows a
model the chapter trains, so there only the change is checked.  Every slider handle on screen
must carry its description as its accessible name, and every picture its alt text.

Skips, with the reason, when Chromium, playwright or the built page is missing, unless
``REQUIRE_BROWSER=1`` (then it fails).  ``ATTNCOURSE_BOOK_HTML`` points at another build
(default ``_build/html``); ``ATTNCOURSE_SCREENSHOTS`` names a folder for screenshots of each
explorer before and after each move (default: pytest's tmp_path).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest

from browser import BUILD_HTML, BookBrowser, serve, wait_for_widgets, why_no_browser

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.book]

REQUIRE = os.environ.get("REQUIRE_BROWSER") == "1"
HTML_DIR = Path(os.environ.get("ATTNCOURSE_BOOK_HTML", BUILD_HTML))

# explorer name -> (page, its controls in the order they are moved)
PAGES: Dict[str, Tuple[str, List[str]]] = {
    "kernel": ("book/00_why_attention.html", ["width", "query", "leave_one_out"]),
    "softmax": ("book/01_softmax.html", ["temperature", "word", "score"]),
    "dot_product": ("book/02_dot_product_attention.html", ["angle", "length"]),
    "scaling": ("book/03_scaling.html", ["variant", "d_k"]),
    "self_attention": ("book/04_self_attention.html", ["order", "token"]),
    "heads": ("book/05_multi_head_attention.html", ["n_heads", "head", "scale_by"]),
    "mask": ("book/06_masked_attention.html", ["mask", "pad_side", "fill"]),
    "positional": ("book/07_positional_encoding.html", ["encoding", "d_model", "position"]),
    "transformer": ("book/08_transformer_block.html", ["layer", "head"]),
    "efficient": ("book/09_efficient_attention.html", ["step", "block_size"]),  # block 5 has one step
}
NO_REFERENCE = {"transformer"}  # drawn from the chapter's trained model


def _unavailable(reason: str) -> None:
    if REQUIRE:
        pytest.fail(f"REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    reason = why_no_browser(HTML_DIR)
    if reason:
        _unavailable(reason)
    with serve(HTML_DIR) as base_url, BookBrowser(base_url, viewport=(1100, 1000)) as book_browser:
        yield book_browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = os.environ.get("ATTNCOURSE_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("explorer-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


# What is on screen: the one <img> of the explorer that is displayed (frames are in Stacks).
_VISIBLE_IMAGE_JS = """root => {
    const shown = Array.from(root.querySelectorAll('img')).filter(
        img => img.getClientRects().length > 0 && img.offsetWidth > 0);
    return shown.map(img => img.src);
}"""

_IMAGE_BYTES_JS = """async src => {
    const buffer = await (await fetch(src)).arrayBuffer();
    let text = '';
    const bytes = new Uint8Array(buffer);
    for (let i = 0; i < bytes.length; i++) text += String.fromCharCode(bytes[i]);
    return btoa(text);
}"""


_VISIBLE_ALT_JS = """root => Array.from(root.querySelectorAll('img')).filter(
    img => img.getClientRects().length > 0 && img.offsetWidth > 0).map(img => img.getAttribute('alt'))"""

# Every slider handle on screen: its accessible name and the label shown beside it.
_SLIDER_NAMES_JS = """root => Array.from(root.querySelectorAll('.widget-slider')).filter(
    s => s.getClientRects().length > 0).map(s => {
        const handle = s.querySelector('.noUi-handle');
        const label = s.querySelector('.widget-label');
        return [handle && handle.getAttribute('aria-label'), label && label.textContent.trim()];
    })"""


def _shown(page, explorer) -> Tuple[str, bytes]:
    import base64

    sources = explorer.evaluate(_VISIBLE_IMAGE_JS)
    assert len(sources) == 1, f"expected one visible picture, found {len(sources)}"
    return sources[0], base64.b64decode(page.evaluate(_IMAGE_BYTES_JS, sources[0]))


def _check_accessible(page, explorer) -> str:
    """Every slider on screen is named after its label; the picture has alt text; returns the alt."""
    page.wait_for_function(
        f"root => ({_SLIDER_NAMES_JS})(root).every(([name, label]) => name && name === label)",
        arg=explorer.element_handle(),
        timeout=5_000,
    )
    (alt,) = explorer.evaluate(_VISIBLE_ALT_JS)
    assert alt and len(alt) > 40, f"the picture's alt text is {alt!r}"
    return alt


def _value(spec, control) -> object:
    """The control's current value, read from the page (slider readout or active button)."""
    if spec.kind == "toggle":
        label = control.locator("button.mod-active").inner_text().strip()
    else:
        label = control.locator(".widget-readout").first.inner_text().strip()
    labels = spec.labels or tuple(f"{v:g}" if isinstance(v, float) else str(v) for v in spec.values)
    assert label in labels, f"{spec.name}: the page shows {label!r}, not one of {labels}"
    return spec.values[labels.index(label)]


def _move(page, spec, control) -> None:
    if spec.kind == "toggle":
        control.locator("button:not(.mod-active)").first.click()
        return
    handle = control.locator(".noUi-handle").first
    at_end = _value(spec, control) == spec.values[-1]
    handle.focus()
    handle.press("ArrowLeft" if at_end else "ArrowRight")


@pytest.mark.parametrize("name", list(PAGES))
def test_explorer_in_the_built_book(browser, shots, name):
    from attncourse import widgets as aw

    page_path, control_names = PAGES[name]
    if not (HTML_DIR / page_path).is_file():
        _unavailable(f"{HTML_DIR / page_path} is not built")
    page, log = browser.open(page_path)
    n_views = wait_for_widgets(page)
    explorer = page.locator(f".attncourse-explorer.attncourse-{name}")
    if n_views == 0 or explorer.count() == 0:
        _unavailable(f"{page_path} has no {name} explorer: run scripts/insert_explorers.py, then rebuild")
    assert explorer.count() == 1
    explorer.scroll_into_view_if_needed()

    # The Python side: the same explorer in frames mode, to know what each frame must be.
    if name in NO_REFERENCE:
        maps = [np.full((1, 4, 16, 16), 1 / 16)] * 2  # the chapter's shape: 2 layers of 4 heads
        reference = aw.transformer_explorer(maps, list(range(16)), mode="frames")
    else:
        reference = getattr(aw, f"{name}_explorer")(mode="frames")
    values = reference.default_values()

    def spec_of(control_name: str):
        so_far = {}
        for c in reference.control_specs:
            if c.name == control_name:
                return reference._spec(c, so_far)
            so_far[c.name] = values[c.name]
        raise KeyError(control_name)

    src, png = _shown(page, explorer)
    alt = _check_accessible(page, explorer)
    if name not in NO_REFERENCE:
        frame = reference.frames[tuple(values.values())]
        assert png == frame.png, "the first picture is not the default frame"
        assert alt == frame.alt
    explorer.screenshot(path=str(shots / f"{name}-0-default.png"))

    for step, control_name in enumerate(control_names, start=1):
        spec = spec_of(control_name)
        control = explorer.locator(f".attncourse-control-{control_name}:visible")
        assert control.count() == 1, f"no control {control_name!r} on the page"
        before = values[control_name]
        _move(page, spec, control)
        page.wait_for_function(
            f"([root, old]) => ({_VISIBLE_IMAGE_JS})(root).some(s => s !== old)",
            arg=[explorer.element_handle(), src],
            timeout=10_000,
        )
        values[control_name] = _value(spec, control)
        assert values[control_name] != before, f"{control_name} did not move"
        names = [c.name for c in reference.control_specs]
        for later in reference.control_specs[names.index(control_name) + 1 :]:
            if isinstance(later, aw.DependentControl):  # the one now on screen is at its default
                values[later.name] = spec_of(later.name).default
        src, png = _shown(page, explorer)
        alt = _check_accessible(page, explorer)
        if name not in NO_REFERENCE:
            frame = reference.frames[tuple(values.values())]
            assert png == frame.png, f"after moving {control_name}: not the frame for {values}"
            assert alt == frame.alt
        explorer.screenshot(path=str(shots / f"{name}-{step}-{control_name}.png"))

    assert not log.problems(), log.report()
