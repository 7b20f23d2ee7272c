"""The softmax explorer: the weights of a few candidate words against the temperature and their scores."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from .. import explore
from ..i18n import tr
from ._core import Control, DependentControl, Explorer, Frame, caption, resolve_mode
from ._paint import ACCENT, BAR_COLOUR, Painter, Renderer

__all__ = ["render_softmax", "softmax_explorer"]


@dataclass(frozen=True, eq=False)
class _Shown:
    """A softmax view, and which word's score the controls edit (frames mode; None in live mode)."""

    view: explore.SoftmaxView
    chosen: Optional[int] = None


class _SoftmaxPainter(Painter):
    size = (7.6, 2.5)
    constrained = False  # fixed margins: the score axis's tick labels change width with T and the scores

    def __init__(
        self, logits: Tuple[float, ...], labels: Tuple[str, ...], score_range: Tuple[float, float]
    ) -> None:
        super().__init__()
        self.fig.subplots_adjust(left=0.09, right=0.99, bottom=0.13, top=0.88, wspace=0.22)
        n = len(logits)
        # Scores in this range share one score axis per temperature (the background is drawn once
        # per temperature); scores outside it get their own axis.  The range depends on score_range
        # only, so a frame's picture depends on its scores and T, not on the explorer's defaults.
        self.score_range = (min(0.0, *score_range), max(0.0, *score_range))
        self.labels = list(labels) if len(labels) == n else [str(i) for i in range(n)]
        self.ax_scores, ax_weights = self.fig.subplots(1, 2)
        positions = np.arange(n)
        self.bars_scores = self.ax_scores.bar(positions, np.ones(n), color=BAR_COLOUR)
        self.ax_scores.axhline(0, color="0.3", lw=0.8)
        self.ax_scores.set_xticks(positions, labels=self.labels)
        self.bars_weights = ax_weights.bar(positions, np.ones(n) / n, color=BAR_COLOUR)
        ax_weights.axhline(1 / n, color="0.4", lw=1, ls="--", label="uniform")
        self.values = [ax_weights.text(i, 0, "", ha="center", va="bottom", fontsize=8) for i in range(n)]
        ax_weights.set_ylim(0, 1.12)
        ax_weights.set_xticks(positions, labels=self.labels)
        self.title_scores = self.ax_scores.set_title(" ", fontsize=9)
        self.title_weights = ax_weights.set_title(" ", fontsize=9)
        self._animate(
            *self.bars_scores, *self.bars_weights, *self.values, self.title_scores, self.title_weights
        )
        # Laid out for scores n-1, ..., 0 whatever the scores shown: the same layout for every frame.
        self._freeze(
            _Shown(explore.softmax_view(explore.DEFAULT_TEMPERATURE, [float(n - 1 - i) for i in range(n)]))
        )

    def _range(self, view: Any) -> Tuple[float, float]:
        lo, hi = self.score_range
        if view.logits.min() < lo or view.logits.max() > hi:
            lo, hi = min(0.0, float(view.logits.min())), max(0.0, float(view.logits.max()))
        return lo, hi

    def background_key(self, shown: Any) -> Any:
        return (shown.view.temperature, *self._range(shown.view))  # the score axis, in units of score / T

    def paint(self, shown: Any) -> str:
        view = shown.view
        scaled = view.scaled_logits
        for i, (bar, height) in enumerate(zip(self.bars_scores, scaled)):
            bar.set_height(height)
            bar.set_color(ACCENT if i == shown.chosen else BAR_COLOUR)
        lo, hi = (x / view.temperature for x in self._range(view))
        margin = 0.12 * (hi - lo)
        self.ax_scores.set_ylim(lo - (margin if lo < 0 else 0.0), hi + margin)
        for bar, text, w in zip(self.bars_weights, self.values, view.weights):
            bar.set_height(w)
            text.set_position((bar.get_x() + bar.get_width() / 2, w + 0.02))
            text.set_text(f"{w:.2f}")
        self.title_scores.set_text(f"scores / T   (T = {view.temperature:g})")
        self.title_weights.set_text(f"weights: entropy {view.entropy:.2f} of {view.max_entropy:.2f} nats")
        fields = dict(
            scores=", ".join(f"{label} {x:g}" for label, x in zip(self.labels, view.logits)),
            T=f"{view.temperature:g}",
            weights=", ".join(f"{label} {w:.3f}" for label, w in zip(self.labels, view.weights)),
        )
        if shown.chosen is None:
            first = tr("scores {scores}; T = {T}: weights {weights}", **fields)
        else:
            first = tr(
                "editing the score of '{word}' (red); scores {scores}; T = {T}: weights {weights}",
                word=self.labels[shown.chosen],
                **fields,
            )
        return caption(
            first,
            tr(
                "entropy {entropy} nats (uniform: {uniform}); top weight {top}",
                entropy=f"{view.entropy:.3f}",
                uniform=f"{view.max_entropy:.3f}",
                top=f"{view.max_weight:.3f}",
            ),
        )

    def alt(self, shown: Any) -> str:
        view = shown.view
        fields = dict(
            T=f"{view.temperature:g}",
            scores=", ".join(f"{label} {x:g}" for label, x in zip(self.labels, view.logits)),
            weights=", ".join(f"{label} {w:.2f}" for label, w in zip(self.labels, view.weights)),
            entropy=f"{view.entropy:.2f}",
            most=f"{view.max_entropy:.2f}",
        )
        if shown.chosen is None:
            return tr(
                "Two bar charts at temperature T = {T}: the scores ({scores}) divided by T, and the "
                "softmax weights ({weights}); entropy {entropy} of at most {most} nats.",
                **fields,
            )
        return tr(
            "Two bar charts at temperature T = {T}, the score of '{word}' in red: the scores ({scores}) "
            "divided by T, and the softmax weights ({weights}); entropy {entropy} of at most {most} nats.",
            word=self.labels[shown.chosen],
            **fields,
        )


def _softmax_renderer(
    logits: Sequence[float], labels: Sequence[str], score_values: Sequence[float] = explore.SCORE_VALUES
) -> Renderer:
    logits, labels = tuple(float(x) for x in logits), tuple(labels)
    score_range = (min(score_values), max(score_values))

    def view(
        temperature: float,
        logits: Sequence[float] = logits,
        word: Optional[str] = None,
        score: Optional[float] = None,
    ) -> _Shown:
        scores = list(logits)
        if word is None:
            return _Shown(explore.softmax_view(temperature, scores))
        chosen = labels.index(word)  # frames mode: one word's score set, the others as given
        scores[chosen] = float(score)
        return _Shown(explore.softmax_view(temperature, scores), chosen)

    return Renderer(view, lambda: _SoftmaxPainter(logits, labels, score_range))


def render_softmax(
    temperature: float,
    logits: Sequence[float] = explore.LOGITS,
    labels: Sequence[str] = explore.LOGIT_LABELS,
    word: Optional[str] = None,
    score: Optional[float] = None,
) -> Frame:
    """Draw :func:`attncourse.explore.softmax_view`: bars of ``logits / T`` and of the weights.

    With ``word`` (one of ``labels``) that word's score is ``score`` instead of its ``logits`` entry.
    """
    if word is None:
        return _softmax_renderer(logits, labels)(
            temperature=temperature, logits=tuple(float(x) for x in logits)
        )
    return _softmax_renderer(logits, labels)(temperature=temperature, word=word, score=score)


def _scores_parser(n: int) -> Callable[[str], Tuple[float, ...]]:
    def parse(text: str) -> Tuple[float, ...]:
        try:
            scores = tuple(float(x) for x in text.replace(";", ",").split(",") if x.strip())
        except ValueError:
            raise ValueError(
                tr("scores: type {n} numbers separated by commas; got {text}.", n=n, text=repr(text))
            ) from None
        if len(scores) != n or not all(math.isfinite(x) for x in scores):
            raise ValueError(
                tr("scores: type {n} finite numbers separated by commas; got {text}.", n=n, text=repr(text))
            )
        return scores

    return parse


def softmax_explorer(
    *,
    temperature: float = explore.DEFAULT_TEMPERATURE,
    temperatures: Optional[Sequence[float]] = None,
    logits: Sequence[float] = explore.LOGITS,
    labels: Sequence[str] = explore.LOGIT_LABELS,
    score_values: Sequence[float] = explore.SCORE_VALUES,
    mode: str = "auto",
) -> Explorer:
    """A temperature slider and editable scores over ``softmax(logits / T)``: the weights and their entropy.

    Draws :func:`attncourse.explore.softmax_view`; its default view is chapter 1's six scores at
    ``T = 1``.  Low temperatures sharpen the distribution towards the largest score, high ones
    flatten it towards uniform.  Every score can be changed.  In live mode the scores are a text
    box (type any numbers, one per word).  In frames mode (the HTML book, where every picture is
    drawn in advance) pick a word, then its score: its own or one of ``score_values``, the other
    scores staying as given.

    Parameters
    ----------
    temperature : float
        The starting value; one of ``temperatures``.
    temperatures : sequence of float, optional
        The slider's values.  Default: ``explore.TEMPERATURES`` (9 values, 0.1 .. 10) in live
        mode, the five the chapter plots (``explore.FRAME_TEMPERATURES``) in frames mode.
    logits, labels : sequences of the same length
        The scores and their names (default: chapter 1's six scores, as candidate next words).
    score_values : sequence of float
        Frames mode: the values offered for each score besides its own (default -2, 2, 5).
    mode : {"auto", "frames", "live"}
        ``"frames"`` precomputes every picture and switches in the browser (the HTML book; needs
        ipywidgets 8); ``"live"`` redraws from Python (ipywidgets 7); ``"auto"`` picks by version.

    Returns
    -------
    Explorer
        An ipywidgets ``VBox``: display it (or leave it last in a cell).

    Examples
    --------
    >>> ex = softmax_explorer(mode="live")
    >>> ex.controls["temperature"].value, ex.mode
    (1.0, 'live')
    >>> ex.controls["logits"].value = "0, 0, 0, 0, 0, 9"
    >>> ex.values()["logits"]
    (0.0, 0.0, 0.0, 0.0, 0.0, 9.0)
    """
    logits, labels = tuple(float(x) for x in logits), tuple(labels)
    if len(labels) != len(logits):
        raise ValueError(f"labels: one per score; got {len(labels)} labels for {len(logits)} scores.")
    live = resolve_mode(mode) == "live"
    if temperatures is None:
        temperatures = explore.TEMPERATURES if live else explore.FRAME_TEMPERATURES
    temperature_control = Control(
        "temperature", tr("temperature T"), tuple(float(t) for t in temperatures), float(temperature)
    )
    if live:
        scores_controls: list = [
            Control(
                "logits",
                tr("scores ({words})", words=", ".join(labels)),
                (logits,),
                logits,
                kind="text",
                labels=(", ".join(f"{x:g}" for x in logits),),
                parse=_scores_parser(len(logits)),
            )
        ]
    else:

        def score_control(values: dict) -> Control:
            own = logits[labels.index(values["word"])]
            options = tuple(sorted({float(x) for x in score_values} | {own}))
            return Control("score", tr("score of '{word}'", word=values["word"]), options, own)

        scores_controls = [
            Control("word", tr("change the score of"), labels, labels[0], kind="toggle"),
            DependentControl("score", score_control),
        ]
    return Explorer(
        "softmax",
        [temperature_control, *scores_controls],
        _softmax_renderer(logits, labels, score_values),
        alt=tr("Bar charts of the scores divided by the temperature and of the softmax weights."),
        mode=mode,
    )
