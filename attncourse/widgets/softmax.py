"""The softmax explorer: the weights of a few candidate words against the temperature and their scores."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence, Tuple

import numpy as np

from .. import explore
from ._core import Control, Explorer, Frame, caption, resolve_mode
from ._paint import BAR_COLOUR, Painter, Renderer

__all__ = ["render_softmax", "softmax_explorer"]


class _SoftmaxPainter(Painter):
    size = (7.6, 2.5)

    def __init__(self, logits: Tuple[float, ...], labels: Tuple[str, ...]) -> None:
        super().__init__()
        n = len(logits)
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
        ax_weights.legend(loc="upper right", fontsize=8, frameon=False)
        self.title_scores = self.ax_scores.set_title(" ")
        self.title_weights = ax_weights.set_title(" ")
        # Laid out for scores n-1, ..., 0 whatever the scores shown: the same layout for every frame.
        self._freeze(explore.softmax_view(explore.DEFAULT_TEMPERATURE, [float(n - 1 - i) for i in range(n)]))

    def background_key(self, view: Any) -> Any:
        return view.temperature, tuple(view.logits)  # the score axis rescales: everything is redrawn

    def paint(self, view: Any) -> str:
        scaled = view.scaled_logits
        for bar, height in zip(self.bars_scores, scaled):
            bar.set_height(height)
        lo, hi = min(0.0, float(scaled.min())), max(0.0, float(scaled.max()))
        margin = 0.12 * (hi - lo)
        self.ax_scores.set_ylim(lo - (margin if lo < 0 else 0.0), hi + margin)
        for bar, text, w in zip(self.bars_weights, self.values, view.weights):
            bar.set_height(w)
            text.set_position((bar.get_x() + bar.get_width() / 2, w + 0.02))
            text.set_text(f"{w:.2f}")
        self.title_scores.set_text(f"scores / T   (T = {view.temperature:g})")
        self.title_weights.set_text(f"softmax: entropy {view.entropy:.2f} of {view.max_entropy:.2f} nats")
        return caption(
            "scores " + ", ".join(f"{label} {x:g}" for label, x in zip(self.labels, view.logits)) + "; "
            f"T = {view.temperature:g}: weights "
            + ", ".join(f"{label} {w:.3f}" for label, w in zip(self.labels, view.weights)),
            f"entropy {view.entropy:.3f} nats (uniform: {view.max_entropy:.3f}); "
            f"top weight {view.max_weight:.3f}",
        )

    def alt(self, view: Any) -> str:
        weights = ", ".join(f"{label} {w:.2f}" for label, w in zip(self.labels, view.weights))
        return (
            f"Two bar charts at temperature T = {view.temperature:g}: the scores ("
            + ", ".join(f"{label} {x:g}" for label, x in zip(self.labels, view.logits))
            + ") divided by T, and the "
            f"softmax weights ({weights}); entropy {view.entropy:.2f} of at most {view.max_entropy:.2f} nats."
        )


def _softmax_renderer(logits: Sequence[float], labels: Sequence[str]) -> Renderer:
    logits, labels = tuple(float(x) for x in logits), tuple(labels)
    return Renderer(
        lambda temperature, logits=logits: explore.softmax_view(temperature, logits),
        lambda: _SoftmaxPainter(logits, labels),
    )


def render_softmax(
    temperature: float, logits: Sequence[float] = explore.LOGITS, labels: Sequence[str] = explore.LOGIT_LABELS
) -> Frame:
    """Draw :func:`attncourse.explore.softmax_view`: bars of ``logits / T`` and of the weights."""
    return _softmax_renderer(logits, labels)(temperature=temperature, logits=tuple(float(x) for x in logits))


FIRST_SCORES: Tuple[float, ...] = (0.0, 1.0, 2.0, 3.0, 5.0)


def _scores_parser(n: int) -> Callable[[str], Tuple[float, ...]]:
    def parse(text: str) -> Tuple[float, ...]:
        try:
            scores = tuple(float(x) for x in text.replace(";", ",").split(",") if x.strip())
        except ValueError:
            raise ValueError(f"scores: type {n} numbers separated by commas; got {text!r}.") from None
        if len(scores) != n or not all(math.isfinite(x) for x in scores):
            raise ValueError(f"scores: type {n} finite numbers separated by commas; got {text!r}.")
        return scores

    return parse


def softmax_explorer(
    *,
    temperature: float = explore.DEFAULT_TEMPERATURE,
    temperatures: Sequence[float] = explore.TEMPERATURES,
    logits: Sequence[float] = explore.LOGITS,
    labels: Sequence[str] = explore.LOGIT_LABELS,
    first_scores: Sequence[float] = FIRST_SCORES,
    mode: str = "auto",
) -> Explorer:
    """A temperature slider and editable scores over ``softmax(logits / T)``: the weights and their entropy.

    Draws :func:`attncourse.explore.softmax_view`.  Low temperatures sharpen the distribution
    towards the largest score, high ones flatten it towards uniform.  In live mode the scores
    are a text box (type any numbers, one per label); in frames mode (the HTML book, where
    every picture is drawn in advance) a second slider sets the first word's score to each of
    ``first_scores``, the others staying as given.

    Parameters
    ----------
    temperature : float
        The starting value; one of ``temperatures``.
    temperatures : sequence of float
        The slider's values (default ``0.1 .. 10``, 9 values).
    logits, labels : sequences of the same length
        The scores and their names (default: five candidate next words).
    first_scores : sequence of float
        Frames mode: the values offered for the first score (``logits[0]`` is added if missing).
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
    >>> ex.controls["logits"].value = "0, 0, 0, 0, 9"
    >>> ex.values()["logits"]
    (0.0, 0.0, 0.0, 0.0, 9.0)
    """
    logits, labels = tuple(float(x) for x in logits), tuple(labels)
    if len(labels) != len(logits):
        raise ValueError(f"labels: one per score; got {len(labels)} labels for {len(logits)} scores.")
    temperature_control = Control(
        "temperature", "temperature T", tuple(float(t) for t in temperatures), float(temperature)
    )
    if resolve_mode(mode) == "live":
        scores_control = Control(
            "logits",
            "scores (" + ", ".join(labels) + ")",
            (logits,),
            logits,
            kind="text",
            labels=(", ".join(f"{x:g}" for x in logits),),
            parse=_scores_parser(len(logits)),
        )
    else:
        firsts = sorted({float(x) for x in first_scores} | {logits[0]})
        scores_control = Control(
            "logits",
            f"score of '{labels[0]}'",
            tuple((x,) + logits[1:] for x in firsts),
            logits,
            labels=tuple(f"{x:g}" for x in firsts),
        )
    return Explorer(
        "softmax",
        [temperature_control, scores_control],
        _softmax_renderer(logits, labels),
        alt="Bar charts of the scores divided by the temperature and of the softmax weights.",
        mode=mode,
    )
