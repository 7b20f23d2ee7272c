"""``summary.html``: a grading run's report for the instructor, one self-contained page.

``render_summary(data)`` turns the run's ``results.json`` (a dict: the run's summary and its
``students``) into HTML: a banner when the run's numbers do not add up (submissions that match no
student of the roster, everyone late, no sandbox), the mean and median total, a "needs a look" list
(not graded, another chapter, blank, cell errors, failing only hidden cases, several notebooks, a
lateness from file times), integrity flags (shortcuts, reaching for the network, files or
processes), one row per student (total, status, late by how much, penalty, flags, a link to the
feedback file), the statuses, late and missing counts, each exercise's score
distribution (an inline SVG histogram with a text alternative and a table of its counts), the
most common named mistakes (``Diagnosis`` names of the failed cases) with how many students made
them, what the sandbox stopped (time, memory, output, killed runs), and the slowest notebooks.
Plain data in, HTML out: no scripts, no external files; every string from a run (a student's
name, a file name, a note) is escaped.  Optional entries are read when present: per student
``mistakes`` (exercise id -> names, added by ``write_summary`` from the run), ``late`` and a
late ``penalty``; the run's ``exercises`` (id, number, title, points).
The page speaks the language most of the run's students wrote in (their ``language``; English when
none is given or on a tie with English): its sentences through ``i18n.tr``, the grader's notes (kept
in English in ``results.json``) through ``i18n.retranslate``; statuses, ids and names stay as they are.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ..i18n import LANGUAGES, known_language, retranslate, tr, using
from .gradebook import display_name, shown_note

__all__ = [
    "render_summary",
    "write_summary",
    "histogram_bins",
    "sandbox_notes",
    "mistakes_of",
    "page_language",
]

# What the sandbox stopped, found in a student's notes: (heading, pattern); shown through ``_caught``
CAUGHT: Tuple[Tuple[str, "re.Pattern[str]"], ...] = (
    ("time limit", re.compile(r"time limit|cell limit|s limit of one call|ran past")),
    ("memory limit", re.compile(r"out of memory")),
    ("output cap", re.compile(r"printed more than")),
    ("process ended or killed", re.compile(r"ended the grading process|killed by signal")),
    ("sys.exit()", re.compile(r"sys\.exit\(\)")),
)
SLOWEST = 5
MISTAKES = 10

CSS = """
:root{color-scheme:light dark;--fg:#1b1b1b;--bg:#fff;--muted:#555;--bar:#2f6db5;--line:#ccc}
@media (prefers-color-scheme:dark){:root{--fg:#e8e8e8;--bg:#121212;--muted:#b0b0b0;--bar:#7fb0ef;--line:#444}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{text-align:left;padding:.3rem .4rem;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:anywhere}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.muted{color:var(--muted)}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(16rem,1fr));gap:1rem}
figure{position:relative;margin:0;border:1px solid var(--line);border-radius:.4rem;padding:.5rem}
figcaption{font-weight:600;overflow-wrap:anywhere}
svg{display:block;width:100%;height:auto}
svg .bar{fill:var(--bar)}svg text{fill:var(--fg);font:11px system-ui,sans-serif}
svg .axis{stroke:var(--line)}
.visually-hidden{position:absolute!important;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
ul{padding-left:1.2rem}li{overflow-wrap:anywhere}
.banner{border:3px solid #b00020;background:#fde8ea;color:#5c0010;padding:.6rem .8rem;border-radius:.4rem;font-weight:600}
@media (prefers-color-scheme:dark){.banner{background:#3a0d14;color:#ffd7dc}}
@media (max-width:40rem){
 table.cards thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
 table.cards tr{display:block;border:1px solid var(--line);border-radius:.4rem;margin:.5rem 0;padding:.3rem}
 table.cards td{display:flex;gap:.5rem;border:0;padding:.15rem .3rem;text-align:left}
 table.cards td.n{white-space:normal;text-align:left}
 table.cards td::before{content:attr(data-label);font-weight:600;min-width:6.5rem;flex:none}
 table.cards td:empty{display:none}
}
table.cards td.nw,table.cards th.nw{white-space:nowrap;overflow-wrap:normal}
"""

NOT_GRADED = ("missing", "ambiguous", "error", "malformed", "not_a_notebook", "other_chapter")
INTEGRITY = re.compile(r"reaches for [^;]*|used [^;]*\(noted, not marked\)|shortcut[^;]*")


def _t(value: object) -> str:
    """Any value from a run as escaped, printable text (undecodable bytes as ``\\xNN``)."""
    text = display_name(str(value))
    text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group(0)):02x}", text)
    return html.escape(text, quote=True)


def _pts(x: float) -> str:
    return f"{x:g}" if abs(x - round(x)) > 1e-9 else str(int(round(x)))


def histogram_bins(scores: Sequence[float], maximum: float) -> List[Tuple[str, int]]:
    """(label, count) of the scores' histogram: one bar per whole point up to 20 points (a score
    counts under the whole points it reached), else ten equal bars, the last holding the maximum.

    >>> histogram_bins([0, 1, 1.5, 2], 2)
    [('0', 1), ('1', 2), ('2', 1)]
    >>> [n for _, n in histogram_bins([0, 5, 34, 34], 34)]
    [1, 1, 0, 0, 0, 0, 0, 0, 0, 2]
    """
    maximum = float(maximum)
    if maximum <= 0:
        return [("0", len(scores))]
    if maximum <= 20 and maximum == int(maximum):
        counts = [0] * (int(maximum) + 1)
        for s in scores:
            counts[min(max(int(s + 1e-9), 0), int(maximum))] += 1
        return [(str(i), n) for i, n in enumerate(counts)]
    width = maximum / 10
    counts = [0] * 10
    for s in scores:
        counts[min(max(int(s / width + 1e-9), 0), 9)] += 1
    return [
        (f"{_pts(round(i * width, 1))}–{_pts(round((i + 1) * width, 1))}", n) for i, n in enumerate(counts)
    ]


def _svg_histogram(uid: str, title: str, bins: List[Tuple[str, int]], unit: str) -> str:
    """An SVG bar chart with ``<title>``/``<desc>`` (its text alternative), and the counts as a table
    for screen readers.  ``unit`` labels the axis and the table's column; the bins count points."""
    w, h, pad, base = 320, 140, 4, 112
    top = max((n for _, n in bins), default=0) or 1
    step = (w - 2 * pad) / max(len(bins), 1)
    parts = []
    for i, (label, n) in enumerate(bins):
        bh = 0 if n == 0 else max(2.0, (base - 16) * n / top)
        x = pad + i * step
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{base - bh:.1f}" width="{max(step - 2, 1):.1f}" height="{bh:.1f}"/>'
        )
        if n:
            parts.append(
                f'<text x="{x + step / 2:.1f}" y="{base - bh - 3:.1f}" text-anchor="middle">{n}</text>'
            )
        if "–" not in label and (len(bins) <= 11 or (len(bins) - 1 - i) % 2 == 0):
            # whole points: each bar's number, or every other one counted back from full marks
            parts.append(
                f'<text x="{x + step / 2:.1f}" y="{base + 14}" text-anchor="middle">{_t(label)}</text>'
            )
        elif "–" in label and i % 2 == 0:  # ranges: every other bar's lower edge, at its left (evenly spaced)
            parts.append(f'<text x="{x:.1f}" y="{base + 14}">{_t(label.split("–")[0])}</text>')
    if bins and "–" in bins[-1][0]:
        end = bins[-1][0].split("–")[1]
        parts.append(f'<text x="{w - pad}" y="{base + 14}" text-anchor="end">{_t(end)}</text>')
    desc = tr(
        "Students by score: {counts}",
        counts="; ".join(tr("{score} points: {n}", score=label, n=n) for label, n in bins),
    )
    svg = (
        f'<svg viewBox="0 0 {w} {h}" role="img" aria-labelledby="{uid}-t {uid}-d">'
        f'<title id="{uid}-t">{_t(title)}</title><desc id="{uid}-d">{_t(desc)}</desc>'
        f'<line class="axis" x1="{pad}" y1="{base + 0.5}" x2="{w - pad}" y2="{base + 0.5}"/>'
        + "".join(parts)
        + f'<text x="{w / 2}" y="{h - 2}" text-anchor="middle">{_t(unit)}</text></svg>'
    )
    rows = "".join(f'<tr><td>{_t(label)}</td><td class="n">{n}</td></tr>' for label, n in bins)
    table = (
        f'<div class="visually-hidden"><table><caption>{_t(tr("{title}: students by score", title=title))}</caption>'
        f'<thead><tr><th scope="col">{_t(unit)}</th><th scope="col">{_t(tr("students"))}</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )
    return svg + table


def _caught(kind: str) -> str:
    """The heading of what the sandbox stopped (a ``CAUGHT`` kind), in the page's language."""
    said = {
        "time limit": tr("time limit"),
        "memory limit": tr("memory limit"),
        "output cap": tr("output cap"),
        "process ended or killed": tr("process ended or killed"),
    }
    return said.get(kind, kind)  # sys.exit() is code


def sandbox_notes(students: Iterable[dict]) -> List[Tuple[str, str, str]]:
    """(kind, student, note) of every note that says the sandbox stopped something."""
    found = []
    for s in students:
        for note in s.get("notes") or []:
            for kind, pattern in CAUGHT:
                if pattern.search(str(note)):
                    found.append((kind, _who(s), str(note)))
                    break
    return found


def mistakes_of(results: Iterable[object]) -> Dict[str, Dict[str, List[str]]]:
    """student -> exercise id -> the named mistakes (``CaseResult.diagnosis``) of its failed cases."""
    out: Dict[str, Dict[str, List[str]]] = {}
    for sg in results:
        named = {}
        for g in getattr(sg, "grades", []):
            names = sorted({c.diagnosis for c in g.cases if not c.passed and c.diagnosis})
            if names:
                named[g.exercise.id] = names
        out[sg.student] = named
    return out


def _who(s: dict) -> str:
    name = s.get("name") or s.get("student") or "?"
    return str(name) if str(name) == str(s.get("student", name)) else f"{name} ({s.get('student')})"


def _penalty(s: dict) -> dict:
    """The late penalty results.json records for a student (``late_penalty``), or an empty dict."""
    penalty = s.get("late_penalty") or s.get("penalty") or {}
    return penalty if isinstance(penalty, dict) else {}


def _late(s: dict) -> bool:
    return bool(s.get("late")) or bool(s.get("days_late")) or bool(_penalty(s))


def _exercises(data: dict) -> List[dict]:
    listed = data.get("exercises")
    if isinstance(listed, list) and listed:
        return [e for e in listed if isinstance(e, dict) and "id" in e]
    ids: List[str] = []
    for s in data.get("students", []):
        ids += [i for i in (s.get("exercises") or {}) if i not in ids]
    out = []
    for ex_id in ids:
        try:
            from ..exercises.engine.registry import get

            ex = get(ex_id)
            out.append({"id": ex.id, "number": ex.number, "title": ex.title, "points": ex.points})
        except KeyError:
            earned = [
                float((s.get("exercises") or {}).get(ex_id, {}).get("earned", 0)) for s in data["students"]
            ]
            out.append({"id": ex_id, "number": "", "title": ex_id, "points": max(earned, default=0)})
    return out


def _median(xs: Sequence[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count).

    >>> _median([3, 1, 2]), _median([1, 2, 3, 4])
    (2, 2.5)
    """
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2


def banner(data: dict, students: List[dict]) -> List[str]:
    """What does not add up in the run, each a sentence for the banner (empty when all is well)."""
    out = []
    unmatched = (data.get("roster") or {}).get("unmatched") or []
    if unmatched:
        out.append(
            tr(
                "{n} submission(s) match no student of the roster: their grades cannot be imported and no LMS "
                "file was written unless --allow-unmatched was given: {names}",
                n=len(unmatched),
                names=", ".join(display_name(str(k)) for k in unmatched[:10]),
            )
        )
    handed = [s for s in students if s.get("status") not in NOT_GRADED]
    late = [s for s in handed if _late(s)]
    if len(handed) >= 2 and len(late) == len(handed):
        out.append(
            tr(
                "every one of the {n} graded submissions is late: check --due, and where the submission times "
                "come from (a Moodle zip stamps every file with the download's time; give Moodle's grading "
                "worksheet as --roster)",
                n=len(handed),
            )
        )
    if data.get("sandbox_warning"):
        out.append(retranslate(str(data["sandbox_warning"])))
    return out


def needs_a_look(s: dict) -> List[str]:
    """Why a student's row needs the instructor's look (empty when it does not), in the page's language."""
    why = []
    status = str(s.get("status", ""))
    notes = [str(n) for n in s.get("notes") or []]
    if status in NOT_GRADED and status != "missing":
        why.append(
            f"{status}: {shown_note(notes[0])}" if notes else status
        )  # a status keyword, then the note
    elif status in ("timeout", "crashed", "memory"):
        why.append(status)
    exercises = s.get("exercises") or {}
    results = [c for e in exercises.values() for c in e.get("results") or []]
    if (
        status not in NOT_GRADED
        and results
        and all(c.get("status") in ("not attempted", "missing", "not run") for c in results)
    ):
        why.append(tr("blank: no exercise attempted"))
    elif (
        status not in NOT_GRADED
        and exercises
        and not any(float(e.get("earned") or 0) for e in exercises.values())
    ):
        why.append(tr("0 points: blank, or nothing right"))
    if any(re.search(r"\b(syntax )?errors in ", n) for n in notes):
        why.append(tr("cell errors"))
    hidden_only = [
        ex_id
        for ex_id, e in exercises.items()
        if any(not c.get("passed") and c.get("hidden") for c in e.get("results") or [])
        and all(c.get("passed") for c in e.get("results") or [] if not c.get("hidden"))
    ]
    if hidden_only:
        why.append(tr("fails only hidden cases: {exercises}", exercises=", ".join(hidden_only)))
    if any("matches no student" in n or "more than one student" in n for n in notes):
        why.append(tr("matches no student of the roster"))
    why += [shown_note(str(f)) for f in s.get("flags") or []]
    return why


def integrity(s: dict) -> List[str]:
    """Shortcuts and reaching for the network, files or processes, as the notes and marks say (found
    in the English notes, said in the page's language)."""
    found = [retranslate(m.group(0)) for n in s.get("notes") or [] for m in INTEGRITY.finditer(str(n))]
    for ex_id, e in (s.get("exercises") or {}).items():
        if e.get("shortcut"):
            found.append(tr("{exercise}: used {name}", exercise=ex_id, name=e["shortcut"]))
    return found


def _late_by(s: dict) -> str:
    p = _penalty(s)
    if p.get("late_by"):
        return retranslate(str(p["late_by"]))
    if p.get("days_late") is not None:
        return tr("{n} days", n=str(p["days_late"]))
    return tr("flagged late") if _late(s) else ""


# The per-student table's columns: (key, class)
_COLUMNS = (
    ("student", ""),
    ("total", ' class="n"'),
    ("status", ' class="nw"'),
    ("late by", ' class="nw"'),
    ("penalty", ' class="nw"'),
    ("flags", ""),
    ("feedback", ' class="nw"'),
)


def _column(key: str) -> str:
    """A column's heading in the page's language."""
    said = {
        "student": tr("student"),
        "total": tr("total"),
        "status": tr("status"),
        "late by": tr("late by"),
        "penalty": tr("penalty"),
        "flags": tr("flags"),
        "feedback": tr("feedback"),
    }
    return said[key]


def student_rows(students: List[dict], possible: float) -> str:
    """The per-student table (cards on a narrow screen)."""
    head = [(_t(_column(key)), cls) for key, cls in _COLUMNS]
    rows = []
    for s in sorted(students, key=lambda s: str(s.get("name") or s.get("student"))):
        p = _penalty(s)
        flags = needs_a_look(s) + integrity(s)
        link = str(s.get("feedback") or "")
        cells = [
            f"<bdi>{_t(_who(s))}</bdi>",
            f"{_t(_pts(float(s.get('total') or 0)))} / {_t(_pts(possible))}",
            _t(s.get("status", "")),  # a status keyword
            _t(_late_by(s)),
            _t(f"-{p['percent']:g}%") if p.get("percent") else "",
            _t("; ".join(flags)),
            f'<a href="{_t(link)}" title="{_t(link)}">{_t(tr("feedback"))}</a>' if link else "",
        ]
        rows.append(
            "<tr>"
            + "".join(f'<td data-label="{h}"{cls}>{c}</td>' for (h, cls), c in zip(head, cells))
            + "</tr>"
        )
    th = "".join(f'<th scope="col"{cls}>{h}</th>' for h, cls in head)
    return f'<table class="cards"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _table(head: Sequence[str], rows: List[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    """A table; ``head`` is plain text (escaped here), ``rows`` HTML."""
    th = "".join(
        f'<th scope="col"{" class=n" if i in numeric else ""}>{_t(h)}</th>' for i, h in enumerate(head)
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=n' if i in numeric else ''}>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


HTML_LANG = {"en": "en", "zh_CN": "zh-CN", "zh_TW": "zh-TW"}


def page_language(data: dict) -> str:
    """The language most of the run's students wrote in (``language`` of each, "en" where not given);
    English when there are none, or where English ties for the most; between two others that tie, the
    first of ``i18n.LANGUAGES``.

    >>> page_language({"students": [{"language": "zh_CN"}, {"language": "zh_CN"}, {}]})
    'zh_CN'
    >>> page_language({"students": [{"language": "zh_TW"}, {}]}), page_language({"students": []})
    ('en', 'en')
    """
    counts: Counter = Counter()
    for s in data.get("students") or []:
        if isinstance(s, dict):
            try:
                counts[known_language(str(s.get("language") or "en"))] += 1
            except ValueError:
                counts["en"] += 1
    if not counts:
        return "en"
    most = max(counts.values())
    return next(name for name in LANGUAGES if counts[name] == most)  # LANGUAGES starts with "en"


def render_summary(data: dict, title: Optional[str] = None) -> str:
    """The summary page of a run's ``results.json`` data (see the module's docstring), in the language
    of most of its students (``page_language``)."""
    language = page_language(data)
    with using(language):
        return _render_summary(data, title, HTML_LANG[language])


def _render_summary(data: dict, title: Optional[str], lang: str) -> str:
    students = [s for s in data.get("students", []) if isinstance(s, dict)]
    handed_in = [s for s in students if s.get("status") != "missing"]
    chapters = ", ".join(str(c) for c in data.get("chapters", []))
    if not title:
        title = tr("Grading summary: {chapters}", chapters=chapters) if chapters else tr("Grading summary")
    possible = float(data.get("points_possible") or 0)
    out = [
        "<!doctype html>",
        f'<html lang="{lang}"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_t(title)}</title><style>{CSS}</style></head><body><main>",
        f"<h1>{_t(title)}</h1>",
    ]
    facts = [
        tr("{n} students", n=len(students)),
        tr("{n} notebooks", n=sum(len(s.get("notebooks") or []) for s in students)),
    ]
    if possible:
        facts.append(tr("out of {points} points", points=_pts(possible)))
    if data.get("seconds") is not None:
        facts.append(tr("graded in {seconds} s", seconds=f"{float(data['seconds']):.1f}"))
    if data.get("sandbox"):
        facts.append(tr("sandbox: {sandbox}", sandbox=data["sandbox"]))
    out.append(f'<p class="muted">{_t(" · ".join(facts))}</p>')
    for line in banner(data, students):
        out.append(f'<p class="banner" role="alert">{_t(tr("Warning: {warning}", warning=line))}</p>')
    totals = [float(s.get("total") or 0) for s in handed_in]
    if totals:
        label = tr("Totals of the {n} who handed in:", n=len(totals))
        stats = tr(
            "mean {mean} · median {median}",
            mean=f"{sum(totals) / len(totals):.2f}",
            median=_pts(round(_median(totals), 2)),
        )
        out.append(f"<p><strong>{_t(label)}</strong> {_t(stats)}</p>")

    look = [(s, needs_a_look(s)) for s in students]
    look = [(s, why) for s, why in look if why]
    out.append(f'<section aria-labelledby="h-look"><h2 id="h-look">{_t(tr("Needs a look"))}</h2>')
    if look:
        out.append("<ul>")
        out += [f"<li><bdi>{_t(_who(s))}</bdi>: {_t('; '.join(why))}</li>" for s, why in look]
        out.append("</ul>")
    else:
        out.append(f"<p>{_t(tr('Nothing: every submission was graded as handed in.'))}</p>")
    out.append("</section>")
    flagged = [(s, integrity(s)) for s in students]
    flagged = [(s, what) for s, what in flagged if what]
    out.append(
        f'<section aria-labelledby="h-integrity"><h2 id="h-integrity">{_t(tr("Integrity flags"))}</h2>'
    )
    if flagged:
        out.append("<ul>")
        out += [f"<li><bdi>{_t(_who(s))}</bdi>: {_t('; '.join(what))}</li>" for s, what in flagged]
        out.append("</ul>")
    else:
        none = tr("None: no shortcut, and no reaching for the network, files or processes.")
        out.append(f"<p>{_t(none)}</p>")
    out.append("</section>")
    out.append(f'<section aria-labelledby="h-students"><h2 id="h-students">{_t(tr("Students"))}</h2>')
    out.append(student_rows(students, possible))
    out.append("</section>")

    # statuses, late, missing
    statuses = Counter(str(s.get("status", "?")) for s in students)
    rows = [[_t(k), str(n)] for k, n in sorted(statuses.items(), key=lambda kv: (-kv[1], kv[0]))]
    late = [s for s in students if _late(s)]
    penalised = [s for s in students if _penalty(s).get("percent")]
    out.append(f'<section aria-labelledby="h-status"><h2 id="h-status">{_t(tr("Statuses"))}</h2>')
    out.append(_table([tr("status"), tr("students")], rows, numeric=(1,)))
    if penalised:
        counts = tr(
            "{missing} missing (no submission), {late} late, {penalised} with a late penalty.",
            missing=statuses.get("missing", 0),
            late=len(late),
            penalised=len(penalised),
        )
    else:
        counts = tr(
            "{missing} missing (no submission), {late} late.",
            missing=statuses.get("missing", 0),
            late=len(late),
        )
    out.append(f"<p>{_t(counts)}</p></section>")

    # distributions
    out.append(f'<section aria-labelledby="h-scores"><h2 id="h-scores">{_t(tr("Scores"))}</h2>')
    unit = tr("points")
    who = tr("{n} students who handed something in; bars count students.", n=len(handed_in))
    out.append(f'<p class="muted">{_t(who)}</p>')
    out.append('<div class="grid">')
    if possible:
        caption = tr("Total, out of {points}", points=_pts(possible))
        out.append(
            f"<figure><figcaption>{_t(caption)}</figcaption>"
            + _svg_histogram("hist-total", caption, histogram_bins(totals, possible), unit)
            + "</figure>"
        )
    for i, ex in enumerate(_exercises(data)):
        scores = [float((s.get("exercises") or {}).get(ex["id"], {}).get("earned", 0)) for s in handed_in]
        full = sum(1 for x in scores if x >= float(ex.get("points") or 0) > 0)
        name, points = tr(str(ex.get("title") or ex["id"])), _pts(float(ex.get("points") or 0))
        if ex.get("number"):
            caption = tr(
                "Exercise {number} · {title} ({points} pt)", number=ex["number"], title=name, points=points
            )
        else:
            caption = tr("{title} ({points} pt)", title=name, points=points)
        marks = tr("{n} of {total} full marks · {id}", n=full, total=len(scores), id=ex["id"])
        out.append(
            f"<figure><figcaption>{_t(caption)}</figcaption>"
            + _svg_histogram(f"hist-{i}", caption, histogram_bins(scores, float(ex.get("points") or 0)), unit)
            + f'<p class="muted">{_t(marks)}</p></figure>'
        )
    out.append("</div></section>")

    # mistakes
    made: Counter = Counter()
    for s in students:
        for ex_id, names in (s.get("mistakes") or {}).items():
            for name in set(names):
                made[(str(ex_id), str(name))] += 1
    out.append(
        f'<section aria-labelledby="h-mistakes"><h2 id="h-mistakes">{_t(tr("Most common mistakes"))}</h2>'
    )
    if made:
        rows = [[_t(tr(name)), _t(ex_id), str(n)] for (ex_id, name), n in made.most_common(MISTAKES)]
        out.append(_table([tr("mistake"), tr("exercise"), tr("students")], rows, numeric=(2,)))
    else:
        out.append(f"<p>{_t(tr('No named mistake was recognised.'))}</p>")
    out.append("</section>")

    # the sandbox
    caught = sandbox_notes(students)
    out.append(
        f'<section aria-labelledby="h-sandbox"><h2 id="h-sandbox">{_t(tr("Stopped by the sandbox"))}</h2>'
    )
    if caught:
        out.append("<ul>")
        out += [
            f"<li><strong>{_t(_caught(kind))}</strong>: <bdi>{_t(who)}</bdi>: {_t(shown_note(note))}</li>"
            for kind, who, note in caught
        ]
        out.append("</ul>")
    else:
        nothing = tr("Nothing: no notebook hit a time, memory or output limit or ended its run.")
        out.append(f"<p>{_t(nothing)}</p>")
    out.append("</section>")

    # slowest
    timed = [
        (float(sec), _who(s), str(nb))
        for s in students
        for nb, sec in (s.get("seconds") or {}).items()
        if isinstance(sec, (int, float))
    ]
    timed.sort(key=lambda t: -t[0])
    out.append(f'<section aria-labelledby="h-slow"><h2 id="h-slow">{_t(tr("Slowest notebooks"))}</h2>')
    if timed:
        rows = [[f"<bdi>{_t(who)}</bdi>", _t(nb), f"{sec:.1f}"] for sec, who, nb in timed[:SLOWEST]]
        out.append(_table([tr("student"), tr("notebook"), tr("seconds")], rows, numeric=(2,)))
    else:
        out.append(f"<p>{_t(tr('No notebook was run.'))}</p>")
    out.append("</section></main></body></html>")
    return "\n".join(out) + "\n"


def write_summary(out_dir: Path, results: Sequence[object] = (), exercises: Sequence[object] = ()) -> Path:
    """Write ``out_dir/summary.html`` from ``out_dir/results.json``, with the named mistakes of
    ``results`` (the run's ``StudentGrade`` rows) and the run's ``exercises``, in the language of
    most of the students (``page_language``)."""
    out_dir = Path(out_dir)
    data = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    mistakes = mistakes_of(results)
    languages = {sg.student: sg.language for sg in results if getattr(sg, "language", None)}
    for s in data.get("students", []):
        s.setdefault("mistakes", mistakes.get(s.get("student"), {}))
        if s.get("student") in languages:
            s.setdefault("language", languages[s.get("student")])
    if exercises:
        data["exercises"] = [
            {"id": ex.id, "number": ex.number, "title": ex.title, "points": ex.points} for ex in exercises
        ]
    path = out_dir / "summary.html"
    path.write_text(render_summary(data), encoding="utf-8", errors="backslashreplace")
    return path
