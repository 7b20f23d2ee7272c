"""Feedback in the notebook's language: the package's catalogs hold every message it shows a learner,
translations keep their fields and code, and ``check``'s feedback in Chinese has no English left in
it but names (code, identifiers, numbers, exception types)."""

from __future__ import annotations

import html
import re
import sys
import warnings

import numpy as np
import pytest
from exercise_support import ROOT, load_hidden_cases

from attncourse import i18n
from attncourse.exercises import all_exercises, check
from attncourse.exercises.engine.check import CheckResult
from attncourse.exercises.engine.compare import Outcome, expected_outputs, judge_all
from attncourse.exercises.engine.outputs import to_arrays
from attncourse.grading.marking import _number_hidden, hide

sys.path.insert(0, str(ROOT / "scripts"))

import package_messages  # noqa: E402

LANGUAGES = ("zh_CN", "zh_TW")
FIELD = re.compile(r"\{(\w*)\}")
CODE = re.compile(r"`[^`]+`")


@pytest.fixture(scope="module")
def messages():
    return package_messages.messages()


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_message_the_package_shows_is_translated(messages, language):
    # A new or changed English message: run `python scripts/i18n.py update` (or
    # scripts/package_messages.py, then `i18n.py update` for the traditional edition) and translate it.
    catalog = i18n.read_po((i18n.CATALOGS / f"{language}.po").read_text(encoding="utf-8"))
    missing = [m for m in messages if m not in catalog]
    assert not missing, f"{len(missing)} messages untranslated in {language}, first: {missing[:3]}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_translations_keep_their_fields_and_code(language):
    catalog = i18n.read_po((i18n.CATALOGS / f"{language}.po").read_text(encoding="utf-8"))
    bad = []
    for english, translated in catalog.items():
        if sorted(FIELD.findall(english)) != sorted(FIELD.findall(translated)):
            bad.append(f"fields: {english!r} -> {translated!r}")
        for span in CODE.findall(english):
            if span not in translated:
                bad.append(f"code {span}: {english!r} -> {translated!r}")
    assert not bad, "\n".join(bad[:10])


def test_the_catalogs_are_package_data():
    # Colab installs the package from git: the catalogs must travel with it
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'attncourse = \[[^\]]*"locales/\*\.po"', text)
    assert sorted(p.name for p in i18n.CATALOGS.glob("*.po")) == ["zh_CN.po", "zh_TW.po"]


def test_a_message_is_looked_up_then_formatted_and_english_is_the_default():
    assert i18n.language() == "en"
    assert i18n.tr("{n} of {total} cases passed", n=1, total=3) == "1 of 3 cases passed"
    with i18n.using("zh_CN"):
        assert i18n.tr("{n} of {total} cases passed", n=1, total=3) != "1 of 3 cases passed"
        assert "1" in i18n.tr("{n} of {total} cases passed", n=1, total=3)
        assert i18n.tr("a sentence no catalog has") == "a sentence no catalog has"
    assert i18n.language() == "en"
    with pytest.raises(ValueError, match="unknown language"):
        i18n.set_language("klingon")


# What may stay in English in Chinese feedback: code and names, not sentences.
NAMES = re.compile(
    r"`[^`]*`|\b\w+Error\b|\b\w*_\w*\b|\b\w+\.\w+(?:\.\w+)*\b|\b(?:float|int|bool|bfloat)\d*\b|"
    r"check\([^)]*\)|\bhint=True\b|\blog[ -]?sum[ -]?exp\b|\b(?:rtol|atol|NaN|inf|dtype|KiB|MiB|softmax|token|torch|numpy)\b"
)
ENGLISH_RUN = re.compile(r"\b[A-Za-z]{3,}\b(?:[\s,;:]+\b[A-Za-z]{2,}\b){2,}")


def english_left(text: str) -> list:
    """Runs of three or more English words outside code and names."""
    return ENGLISH_RUN.findall(NAMES.sub(" ", text))


HIDDEN = load_hidden_cases(ROOT / "hidden_cases")


def _judged(ex, answer):
    cases = list(ex.public_cases()) + (list(HIDDEN[ex.id]()) if ex.id in HIDDEN else [])
    hidden = [False] * len(list(ex.public_cases()))
    hidden += [True] * (len(cases) - len(hidden))
    outcomes = []
    for case in cases:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                outcomes.append(Outcome("returned", to_arrays(answer(*case.args()), ex.outputs)))
        except Exception:
            return None  # an answer that raises reports the exception's own (English) message
    expected = [expected_outputs(ex, c) for c in cases]
    return judge_all(ex, cases, expected, outcomes, hidden)


def _wrong_answers(ex):
    """The registry's own wrong variants, and an answer that is a little off everywhere."""
    for d in ex.diagnoses:
        if d.variant is not None:

            def wrong(*args, d=d):
                out = d.variant(*args)
                return ex.reference(*args) if out is None else out

            yield wrong

    def off(*args):
        out = ex.reference(*args)
        outs = out if isinstance(out, tuple) else (out,)
        moved = tuple(np.asarray(o) * 1.5 + 0.25 if np.asarray(o).dtype.kind == "f" else o for o in outs)
        return moved if isinstance(out, tuple) else moved[0]

    yield off


def _sweep():
    """Every exercise in both scripts; the quick tier keeps the first exercise of each chapter in 简体."""
    seen = set()
    for ex in all_exercises():
        for language in LANGUAGES:
            quick = language == "zh_CN" and ex.chapter not in seen
            seen.add(ex.chapter)
            yield pytest.param(
                ex, language, id=f"{ex.id}-{language}", marks=() if quick else pytest.mark.slow
            )


@pytest.mark.parametrize("ex, language", list(_sweep()))
def test_check_feedback_in_chinese_has_no_english_sentence_left(ex, language):
    if ex.array_kind == "torch":
        pytest.importorskip("torch")
    shown = []
    with i18n.using(language):
        stub = check(ex.id, lambda *a: (_ for _ in ()).throw(NotImplementedError()), show=False)
        shown.append(stub.text())
        for answer in _wrong_answers(ex):
            try:
                cases = _judged(ex, answer)
            except Exception:  # a variant that needs torch inputs, say: nothing to judge here
                continue
            if cases is None:
                continue
            result = CheckResult(ex.id, ex.number, ex.title, ex.points, cases=cases)
            result.hints = [ex.hint] + [d.hint or d.message for d in ex.diagnoses]
            shown += [result.text(), html.unescape(re.sub(r"<[^>]+>", " ", result.html()))]
            shown += [c.message for c in _number_hidden([hide(c) for c in cases])]
    left = [run for text in shown for run in english_left(text)]
    assert not left, f"English left in the {language} feedback of {ex.id}: {left[:5]}"


@pytest.mark.slow
def test_a_chinese_notebook_is_graded_with_chinese_feedback_beside_an_english_one(tmp_path):
    import json

    from grader_support import exercise_cell, needs_bwrap

    from attncourse.cli import main
    from attncourse.exercises import get

    needs_bwrap()
    hand = tmp_path / "handout"
    assert main(["assign", str(ROOT / "book"), str(hand), "--chapter", "ch01", "--language", "zh_CN"]) == 0
    zh = json.loads((hand / "student" / "01_softmax.ipynb").read_text(encoding="utf-8"))
    assert i18n.language_of_notebook(zh) == "zh_CN"
    ex = get("ch01.stable_softmax")
    naive = f"{ex.header}\ndef {ex.function}(x):\n    e = np.exp(x)\n    return e / e.sum(axis=-1, keepdims=True)\n"
    exercise_cell(zh, ex.id)["source"] = naive
    en = json.loads(json.dumps(zh))
    for cell in en["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cell["source"] = re.sub(r"ac\.set_language\([^)]*\).*", "", source)
    assert i18n.language_of_notebook(en) == "en"
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "li.ipynb").write_text(json.dumps(zh, ensure_ascii=False), encoding="utf-8")
    (subs / "lee.ipynb").write_text(json.dumps(en), encoding="utf-8")
    out = tmp_path / "graded"
    fast = ["--timeout", "120", "--cell-timeout", "30", "--case-timeout", "5", "--jobs", "2"]
    assert main(["grade", str(hand / "grading"), str(subs), str(out), *fast]) == 0

    chinese = (out / "feedback" / "li.txt").read_text(encoding="utf-8")
    english = (out / "feedback" / "lee.txt").read_text(encoding="utf-8")
    missing_max = next(d for d in ex.diagnoses if d.name == "missing max subtraction")
    with i18n.using("zh_CN"):
        heading = i18n.tr("Exercise {number} · {title}", number=ex.number, title=i18n.tr(ex.title))
        diagnosis = i18n.tr(missing_max.message)
    assert heading in chinese and diagnosis in chinese
    assert not english_left(chinese), english_left(chinese)
    assert f"Exercise {ex.number} · {ex.title}" in english and missing_max.message in english
    results = json.loads((out / "results.json").read_text())
    assert {s["student"]: s["language"] for s in results["students"]} == {"li": "zh_CN", "lee": "en"}
