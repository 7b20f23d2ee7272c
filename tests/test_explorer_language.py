"""Explorers in Chinese: drawn in a Chinese notebook, and rewritten from the English book's state.

The translated books reuse the widget state the English execution saved, rewritten by
``translate_state`` (the package's catalog matched against each English line).  The strongest
check of that rewrite is that it gives exactly what the explorer says when drawn in Chinese from
the start: the same words, the same numbers.  Those tests compare words alone, so the explorers
are drawn without their pictures (``Painter.frame`` writes the caption and the alt text and no
PNG: the pictures are the English run's in every edition, and tests/test_widgets.py checks them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("matplotlib")

import ipywidgets  # noqa: E402
from built_book import built_file  # noqa: E402
from test_cross_explorer import fake_captions  # noqa: E402
from test_feedback_language import NAMES  # noqa: E402
from test_state_explorer import fake_recall, fake_topk  # noqa: E402
from test_vision_explorer import fake_maps  # noqa: E402
from test_widgets import MAP_TOKENS, MAPS  # noqa: E402

from attncourse import i18n, toy_data  # noqa: E402
from attncourse import widgets as aw  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = ("zh_CN", "zh_TW")

FACTORIES = {
    "softmax": lambda mode: aw.softmax_explorer(mode=mode),
    "scaling": lambda mode: aw.scaling_explorer(mode=mode),
    "heads": lambda mode: aw.heads_explorer(mode=mode),
    "mask": lambda mode: aw.mask_explorer(mode=mode),
    "positional": lambda mode: aw.positional_explorer(mode=mode),
    "kernel": lambda mode: aw.kernel_explorer(mode=mode),
    "dot_product": lambda mode: aw.dot_product_explorer(mode=mode),
    "self_attention": lambda mode: aw.self_attention_explorer(mode=mode),
    "transformer": lambda mode: aw.transformer_explorer(MAPS, MAP_TOKENS, mode=mode),
    "efficient": lambda mode: aw.efficient_explorer(mode=mode),
    "vision": lambda mode: aw.vision_explorer(fake_maps(), mode=mode),
    "cross": lambda mode: aw.cross_explorer(fake_captions(), mode=mode),
    "state": lambda mode: aw.state_explorer(fake_recall(sizes=(4, 8, 16)), fake_topk(), mode=mode),
    "modern": lambda mode: aw.modern_explorer(mode=mode),
    "rope_scaling": lambda mode: aw.rope_scaling_explorer(mode=mode),
}
QUICK = ("self_attention", "zh_CN")
PARAMS = [
    pytest.param(name, language, marks=() if (name, language) == QUICK else pytest.mark.slow)
    for name in FACTORIES
    for language in LANGUAGES
]

# Data an explorer shows as it is, in any language: the toy sentences' words (quoted, or not: "mat,
# rug, sofa"), a label before its number in a list ("mat 0.12"), nan, model and method names,
# units, and the names of code.
TOY_WORDS = sorted({*toy_data.SENTENCE, *toy_data.SOFTMAX_WORDS}, key=len, reverse=True)
DATA = re.compile(
    r"'[^']*'|\b(?:"
    + "|".join(TOY_WORDS)
    + r"|nan)\b|[^\s,;:()（）]+ -?\d[\d.]*(?:e[+-]?\d+)?|\[CLS\]|\b(?:GQA|MQA|MHA|MLA|RoPE|YaRN|NTK|ALiBi|llama3|Mistral|Llama|DeepSeek|"
    r"elu|exp|sqrt|nats|fp16|bf16|float\d*|KiB|MiB|GiB|top_k|rank)\b[-\w.]*"
)
ENGLISH_RUN = re.compile(r"\b[A-Za-z]{3,}\b(?:[\s,;:]+\b[A-Za-z]{2,}\b){1,}")


def english_left(text: str) -> list:
    """Runs of two or more English words outside data, code and names."""
    return ENGLISH_RUN.findall(NAMES.sub(" ", DATA.sub(" ", text)))


def _state(name: str, mode: str, language: str = "en") -> dict:
    ipywidgets.Widget.close_all()
    with i18n.using(language):
        FACTORIES[name](mode)  # its widgets stay registered until the next close_all
    state = ipywidgets.Widget.get_manager_state()["state"]
    ipywidgets.Widget.close_all()
    return state


@pytest.fixture
def words_only(monkeypatch):
    """Explorers drawn with every caption and alt text, and an empty picture for each frame."""
    from attncourse.widgets import _core, _paint

    def frame(self, view):
        caption = self.paint(view)
        return _core.Frame(b"", caption, self.alt(view))

    monkeypatch.setattr(_paint.Painter, "frame", frame)


_ENGLISH: dict = {}  # an explorer's English frames, drawn once for both languages (one worker runs a file)


def _english_frames(name: str) -> dict:
    if name not in _ENGLISH:
        _ENGLISH[name] = _state(name, "frames")
    return _ENGLISH[name]


def _skip_without_stack():
    if not hasattr(ipywidgets, "Stack"):
        pytest.skip(f"frames mode needs ipywidgets 8 (this is {ipywidgets.__version__})")


@pytest.mark.parametrize("name, language", PARAMS)
def test_the_english_state_rewritten_is_the_explorer_drawn_in_chinese(name, language, words_only):
    _skip_without_stack()
    english = aw.state_texts(_english_frames(name))
    drawn = aw.state_texts(_state(name, "frames", language))
    rewritten = aw.state_texts(aw.translate_state(_english_frames(name), language))
    assert len(english) == len(drawn) == len(rewritten)
    differ = [(e, d, r) for e, d, r in zip(english, drawn, rewritten) if d != r]
    assert not differ, f"{len(differ)} of {len(drawn)} lines; the first: {differ[0]}"
    left = {text: english_left(text) for text in drawn if english_left(text)}
    assert not left, f"English left in {len(left)} lines, e.g. {next(iter(left.items()))}"


@pytest.mark.parametrize("name, language", PARAMS)
def test_a_live_explorer_in_a_chinese_notebook_speaks_chinese(name, language, words_only):
    texts = aw.state_texts(_state(name, "live", language))
    assert texts
    left = {text: english_left(text) for text in texts if english_left(text)}
    assert not left, f"English left in {len(left)} lines, e.g. {next(iter(left.items()))}"


def test_a_line_the_catalog_does_not_know_stays_as_it_was():
    state = {
        "a": {
            "model_name": "HTMLModel",
            "state": {"value": '<div class="attncourse-caption">no such line<br>x</div>'},
        },
        "b": {
            "model_name": "SelectionSliderModel",
            "state": {"description": "temperature T", "_options_labels": ["1"]},
        },
    }
    out = aw.translate_state(state, "zh_CN")
    assert out["a"]["state"]["value"] == state["a"]["state"]["value"]
    assert out["b"]["state"]["description"] == i18n.catalog("zh_CN")["temperature T"]
    assert state["b"]["state"]["description"] == "temperature T"  # a copy: the input is unchanged


def test_an_alt_text_is_unescaped_translated_and_escaped_again():
    with i18n.using("zh_CN"):
        want = aw.render_softmax(1.0, word="mat", score=5.0).alt
    frame = aw.render_softmax(1.0, word="mat", score=5.0)
    state = {"p": {"model_name": "HTMLModel", "state": {"value": frame.img_html()}}}
    assert "&#x27;mat&#x27;" in frame.img_html()  # the quotes are escaped in the attribute
    out = aw.translate_state(state, "zh_CN")["p"]["state"]["value"]
    assert aw.state_texts({"p": {"model_name": "HTMLModel", "state": {"value": out}}}) == [want]


def _built_states(folder: str) -> dict:
    book = built_file(ROOT / "_build" / "html" / folder / "book" / "01_softmax.widgets.js").parent
    out = {}
    for path in sorted(book.glob("*.widgets.js")):
        text = path.read_text(encoding="utf-8")
        out[path.name] = json.loads(text[text.index("(") + 1 : text.rindex(")")])["state"]
    return out


@pytest.mark.book
@pytest.mark.parametrize("folder", ["zh", "zh-tw"])
def test_the_translated_books_explorers_speak_their_language(folder):
    """Every explorer of the built zh and zh-tw books: no English line left, and the same number of
    lines as the English book's (the pictures and numbers are the English execution's)."""
    english = {name: aw.state_texts(state) for name, state in _built_states("").items()}
    translated = {name: aw.state_texts(state) for name, state in _built_states(folder).items()}
    assert translated.keys() == english.keys() and len(english) == 14
    for name, texts in translated.items():
        assert len(texts) == len(english[name]), name
        left = {text: english_left(text) for text in texts if english_left(text)}
        assert not left, (
            f"{folder}/{name}: English left in {len(left)} lines, e.g. {next(iter(left.items()))}"
        )
