"""The run an instructor watches and reads: the progress line while grading and ``summary.html``
after it (escaped, histograms that count right, a page Chromium renders and axe passes)."""

from __future__ import annotations

import html
import io
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

from attncourse.grading.progress import ProgressLine
from attncourse.grading.summary import _svg_histogram, histogram_bins, render_summary
from browser import chromium  # noqa: F401  (the fixture)

HOSTILE = '<script>alert("x")</script>'


def student(name, status="ok", total=0.0, earned=None, notes=(), seconds=None, **extra):
    return {
        "student": name,
        "notebooks": [f"{name}.ipynb"] if status != "missing" else [],
        "status": status,
        "total": total,
        "seconds": seconds
        if seconds is not None
        else ({f"{name}.ipynb": 1.0} if status != "missing" else {}),
        "exercises": {k: {"earned": v, "passed": 0, "cases": 4} for k, v in (earned or {}).items()},
        "notes": list(notes),
        **extra,
    }


EXERCISES = [
    {"id": "ch01.stable_softmax", "number": "1.2", "title": "A stable softmax", "points": 2},
    {"id": "ch01.temperature_softmax", "number": "1.1", "title": "Temperature", "points": 3},
]


def run_data():
    a, b = "ch01.stable_softmax", "ch01.temperature_softmax"
    return {
        "chapters": ["ch01"],
        "points_possible": 5,
        "seconds": 12.5,
        "sandbox": "bwrap",
        "exercises": EXERCISES,
        "students": [
            student("ann", total=5, earned={a: 2, b: 3}, seconds={"ann.ipynb": 2.0}),
            student("bob", total=3, earned={a: 2, b: 1}, mistakes={b: ["wrong softmax axis"]}, late=True),
            student(
                HOSTILE,
                status="timeout",
                total=1,
                earned={a: 1, b: 0},
                notes=[f"stopped at the 60 s time limit while running cell 3 {HOSTILE}"],
                mistakes={b: ["wrong softmax axis", HOSTILE]},
                seconds={f"{HOSTILE}.ipynb": 60.2},
            ),
            student(
                "dee\udcf6",
                status="memory",
                notes=["ran out of memory (limit 2048 MiB) while running cell 2"],
            ),
            student("eve", status="missing"),
        ],
    }


class Collect(HTMLParser):
    """The page's elements (tag, attributes) and text, for assertions on structure."""

    def __init__(self):
        super().__init__()
        self.tags, self.text, self.stack = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parsed(page: str) -> Collect:
    c = Collect()
    c.feed(page)
    return c


def test_a_hostile_name_or_note_is_text_never_markup():
    page = render_summary(run_data())
    assert "<script" not in page.lower()  # not even the student's
    assert html.escape(HOSTILE) in page
    tags = {t for t, _ in parsed(page).tags}
    assert "script" not in tags and "link" not in tags and "img" not in tags
    assert "dee\\xf6" in page  # undecodable bytes shown, not an encoding error
    page.encode("utf-8")


def test_the_histograms_count_each_student_once_in_the_right_bar():
    assert histogram_bins([0, 0.5, 1, 2, 2, 3], 3) == [("0", 2), ("1", 1), ("2", 2), ("3", 1)]
    bins = histogram_bins([0, 17, 33.9, 34], 34)
    assert (
        len(bins) == 10
        and sum(n for _, n in bins) == 4
        and bins[-1][1] == 2
        and bins[5] == ("17–20.4", 1)
        and bins[4][1] == 0
    )
    page = render_summary(run_data())
    # the total's histogram: the four who handed in (the missing one is left out) over 0..5
    total = re.search(r'<div class="visually-hidden"><table><caption>Total, out of 5.*?</table>', page).group(
        0
    )
    counts = [int(n) for n in re.findall(r'<td class="n">(\d+)</td>', total)]
    assert counts == [1, 1, 0, 1, 0, 1]  # dee 0, the hostile name 1, bob 3, ann 5
    desc = re.search(r'<desc id="hist-total-d">(.*?)</desc>', page).group(1)
    assert "0 points: 1; 1 points: 1; 2 points: 0" in desc and "5 points: 1" in desc


@pytest.mark.parametrize("maximum", [5, 11, 13, 20, 23, 34, 10.5])
def test_a_histograms_axis_labels_are_evenly_spaced_and_increasing(maximum):
    svg = _svg_histogram("h", "Total", histogram_bins([0, maximum / 2, maximum], maximum), "points")
    ticks = re.findall(r'<text x="([0-9.]+)" y="126"(?: text-anchor="(\w+)")?>([0-9.]+)</text>', svg)
    edge = [(float(x), float(t)) for x, anchor, t in ticks if anchor != "end"]  # the right end aside
    xs, values = [x for x, _ in edge], [t for _, t in edge]
    assert len(edge) >= 3 and values == sorted(values) and values[0] in (0, 1)
    gaps = [b - a for a, b in zip(xs, xs[1:])]
    steps = {round(b - a, 3) for a, b in zip(values, values[1:])}
    assert max(gaps) - min(gaps) < 0.25 and len(steps) == 1, (maximum, ticks)  # 0.1 px rounding
    assert float(ticks[-1][2]) == pytest.approx(maximum, abs=0.05)  # the axis ends at full marks


def test_every_histogram_has_a_text_alternative_and_the_page_has_its_sections():
    page = render_summary(run_data())
    c = parsed(page)
    svgs = [a for t, a in c.tags if t == "svg"]
    assert len(svgs) == 1 + len(EXERCISES)
    ids = {a.get("id") for _, a in c.tags}
    for a in svgs:
        assert a["role"] == "img" and all(i in ids for i in a["aria-labelledby"].split())
    text = " ".join(c.text)
    assert "wrong softmax axis" in text and re.search(
        r"wrong softmax axis\s*ch01.temperature_softmax\s*2", text
    )
    assert "1 missing (no submission), 1 late" in text
    assert "time limit" in text and "memory limit" in text  # what the sandbox stopped
    slow = page[page.index('id="h-slow"') :]
    assert slow.index("60.2") < slow.index("2.0")  # slowest first


def test_a_run_without_optional_fields_still_renders():
    data = {"students": [{"student": "x", "status": "ok", "total": 0, "exercises": {}}]}
    page = render_summary(data)
    assert "No named mistake" in page and "0 missing (no submission), 0 late" in page


def test_the_progress_line_says_done_total_elapsed_and_the_slowest():
    now = [100.0]
    out = io.StringIO()
    line = ProgressLine(out, tty=False, clock=lambda: now[0])
    rows = [SimpleNamespace(student=f"s{i}", seconds={"n.ipynb": float(i)}) for i in range(20)]
    rows[3].student = "evil\x1b[2J"
    rows[3].seconds = {"n.ipynb": 99.0}
    for i, row in enumerate(rows):
        now[0] += 0.5
        line(row, 1, 20)
    printed = out.getvalue().splitlines()
    assert len(printed) == 10  # every tenth of 20 notebooks, none in between (under 10 s apart)
    assert printed[-1].startswith("graded 20/20 notebooks · 0:10 elapsed")
    assert "slowest so far: evil?[2J/n.ipynb 99.0 s" in printed[-1]  # no escape sequence reaches it
    # on a terminal: one line, rewritten in place, ended once at the end
    tty = io.StringIO()
    line = ProgressLine(tty, tty=True, clock=lambda: now[0])
    for row in rows[:3]:
        line(row, 1, 3)
    assert (
        tty.getvalue().count("\r") == 3 and tty.getvalue().endswith("\n") and tty.getvalue().count("\n") == 1
    )


def test_a_slow_run_prints_every_ten_seconds_without_a_terminal():
    now = [0.0]
    out = io.StringIO()
    line = ProgressLine(out, tty=False, clock=lambda: now[0])
    for i in range(3):
        now[0] += 11
        line(SimpleNamespace(student="s", seconds={}), 1, 1000)
    assert len(out.getvalue().splitlines()) == 3


@pytest.mark.slow
@pytest.mark.browser
def test_the_summary_renders_in_chromium_at_phone_width_and_passes_axe(tmp_path, chromium):  # noqa: F811
    from built_pages import AXE_JS, BLOCKING, audit

    from browser import BookBrowser, serve

    if not AXE_JS.is_file():
        pytest.skip(f"{AXE_JS} missing: run `npm ci`")
    (tmp_path / "summary.html").write_text(render_summary(run_data()), encoding="utf-8")
    with serve(tmp_path) as base, BookBrowser(base, chromium, viewport=(390, 844)) as browser:
        page, log = browser.open("summary.html")
        assert not log.problems(), log.report()
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
        bars = page.evaluate(
            """() => Array.from(document.querySelectorAll('svg[role=img]')).map(s => ({
                name: s.querySelector('title').textContent, h: s.getBoundingClientRect().height,
                bars: s.querySelectorAll('rect.bar').length}))"""
        )
        assert len(bars) == 3 and all(b["h"] > 50 and b["bars"] > 0 and b["name"] for b in bars)
        assert page.locator("text=" + HOSTILE).count() >= 1  # shown as text
        assert page.evaluate("() => document.scripts.length") == 0
        blocking = [v for v in audit(page) if v["impact"] in BLOCKING]
        assert not blocking, blocking
        shots = Path(os.environ.get("ATTNCOURSE_SCREENSHOTS", tmp_path))
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "summary-390.png"), full_page=True)


HEADINGS = ["Needs a look", "Integrity flags", "Most common mistakes", "Slowest notebooks"]


def run_in(languages):
    """The run's data with each student's ``language`` (``None``: not given)."""
    data = run_data()
    for s, language in zip(data["students"], languages):
        if language:
            s["language"] = language
    return data


def test_the_page_speaks_the_language_most_of_its_students_wrote_in(monkeypatch):
    from attncourse import i18n

    data = run_in(["zh_CN", "zh_CN", "zh_CN", "en", "zh_TW"])
    page = render_summary(data)
    assert '<html lang="zh-CN">' in page and i18n.language() == "en"  # the page's language, then back
    with i18n.using("zh_CN"):
        said = {english: i18n.tr(english) for english in HEADINGS}
    for english, chinese in said.items():
        if chinese != english:  # translated in the catalog (a new message may not be yet)
            assert f">{html.escape(chinese)}</h2>" in page and f">{english}</h2>" not in page
    # the headings go through the catalog: with stand-ins for the ones not translated yet, every one
    stand_ins = i18n.catalog("zh_CN")
    for english in HEADINGS:
        if said[english] == english:
            monkeypatch.setitem(stand_ins, english, f"（译）{english}")
    page = render_summary(data)
    with i18n.using("zh_CN"):
        assert all(f">{html.escape(i18n.tr(h))}</h2>" in page and f">{h}</h2>" not in page for h in HEADINGS)
    assert '<html lang="zh-TW">' in render_summary(run_in(["zh_TW", "zh_TW", "zh_TW", "en", "zh_CN"]))
    # English: an all-English run, one that names no language, and a tie with English
    for languages in (["en"] * 5, [None] * 5, ["zh_TW", "zh_TW", "en", None, "zh_CN"]):
        page = render_summary(run_in(languages))
        assert '<html lang="en">' in page and all(f">{h}</h2>" in page for h in HEADINGS), languages
