"""Chapter 11's explorers: what a model's KV cache costs under MHA, GQA, MQA, MLA and a window with
sinks; and RoPE's per-pair frequencies under each context-extension scaling."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..explore import modern as view_of
from ..i18n import tr
from ._core import Control, Explorer, Frame, caption
from ._paint import ACCENT, LINE_COLOURS, Painter, Renderer

__all__ = ["render_modern", "modern_explorer", "render_rope_scaling", "rope_scaling_explorer"]


class _CachePainter(Painter):
    size = (9.8, 3.4)
    blit = False

    def __init__(self) -> None:
        super().__init__()
        self.ax_cache, self.ax_mask = self.fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
        ref = view_of.cache_view("MHA")
        (self.line,) = self.ax_cache.plot(ref.contexts, ref.cache_gib, "o-", color=LINE_COLOURS[0], ms=3)
        self.ax_cache.axhline(
            ref.weights_gib, color="0.3", ls="--", lw=1, label=f"weights ({view_of.BASE_MODEL}, bfloat16)"
        )
        (self.cross,) = self.ax_cache.plot([], [], "o", ms=9, mfc="none", mec=ACCENT, mew=2)
        self.ax_cache.set(
            xscale="log", yscale="log", xlabel="tokens in one sequence", ylabel="KV cache (GiB)"
        )
        self.ax_cache.set_xticks(ref.contexts, labels=[f"{n // 1024}k" for n in ref.contexts])
        self.ax_cache.minorticks_off()
        self.ax_cache.set_ylim(1e-3, 200)
        self.ax_cache.legend(fontsize=7, loc="upper left", frameon=False)
        self.title_cache = self.ax_cache.set_title(" ", fontsize=9)
        self.image = self.ax_mask.imshow(ref.mask, cmap="Greys", vmin=0, vmax=1.6)
        self.ax_mask.set(xlabel="key", ylabel="query")
        self.title_mask = self.ax_mask.set_title(" ", fontsize=9)
        self._freeze(ref)

    def paint(self, view: Any) -> str:
        self.line.set_ydata(view.cache_gib)
        if view.crossover is None:
            self.cross.set_data([], [])
            when = None
        else:
            self.cross.set_data([view.crossover], [view.weights_gib])
            when = f"{view.crossover:,} tokens"
        reach = "never reaches the weights (window)" if when is None else f"= weights at {when}"
        self.title_cache.set_text(f"{_model(view.kind)}: {view.per_token_kib:.1f} KiB a token; {reach}")
        self.image.set_data(view.mask)
        pattern = (
            f"window {view_of.MASK_WINDOW} + {view.sinks} sinks (scaled down)"
            if view.window
            else "full causal"
        )
        self.title_mask.set_text(pattern)
        if view.crossover is None:
            second = tr("The window caps the cache below the weights.")
        else:
            second = tr("The cache equals the weights at {tokens} tokens.", tokens=f"{view.crossover:,}")
        return caption(_cache_summary(view), second)

    def alt(self, view: Any) -> str:
        fields = dict(
            model=view_of.BASE_MODEL,
            kind=view.kind,
            kib=f"{view.per_token_kib:.1f}",
            window=str(view.window),
            sinks=str(view.sinks),
        )
        own = view.kind == view_of.DEFAULT_KIND  # the model as published: no "with <kind>"
        if view.window and not view.sinks and own:
            return tr(
                "KV cache of {model} with a window of {window} and no sinks: a log-log line of GiB against "
                "tokens, {kib} KiB per token, next to a dashed line at the weights; and the attention pattern "
                "of 16 tokens (window of 4, no sinks).",
                **fields,
            )
        if view.window and not view.sinks:
            return tr(
                "KV cache of {model} with {kind} with a window of {window} and no sinks: a log-log line of GiB "
                "against tokens, {kib} KiB per token, next to a dashed line at the weights; and the attention "
                "pattern of 16 tokens (window of 4, no sinks).",
                **fields,
            )
        if view.window and own:
            return tr(
                "KV cache of {model} with a window of {window} and {sinks} sinks: a log-log line of GiB "
                "against tokens, {kib} KiB per token, next to a dashed line at the weights; and the attention "
                "pattern of 16 tokens (window of 4 with sinks).",
                **fields,
            )
        if view.window:
            return tr(
                "KV cache of {model} with {kind} with a window of {window} and {sinks} sinks: a log-log line of "
                "GiB against tokens, {kib} KiB per token, next to a dashed line at the weights; and the "
                "attention pattern of 16 tokens (window of 4 with sinks).",
                **fields,
            )
        if view.sinks and own:
            return tr(
                "KV cache of {model} without a window (sinks change nothing then): a log-log line of GiB "
                "against tokens, {kib} KiB per token, next to a dashed line at the weights; and the attention "
                "pattern of 16 tokens (causal).",
                **fields,
            )
        if view.sinks:
            return tr(
                "KV cache of {model} with {kind} without a window (sinks change nothing then): a log-log line "
                "of GiB against tokens, {kib} KiB per token, next to a dashed line at the weights; and the "
                "attention pattern of 16 tokens (causal).",
                **fields,
            )
        if own:
            return tr(
                "KV cache of {model} without a window: a log-log line of GiB against tokens, {kib} KiB per "
                "token, next to a dashed line at the weights; and the attention pattern of 16 tokens (causal).",
                **fields,
            )
        return tr(
            "KV cache of {model} with {kind} without a window: a log-log line of GiB against tokens, {kib} KiB "
            "per token, next to a dashed line at the weights; and the attention pattern of 16 tokens (causal).",
            **fields,
        )


def _model(kind: str) -> str:
    """Llama-3-8B as published (GQA-8), or "Llama-3-8B with MHA" for the others (the plot's title)."""
    return view_of.BASE_MODEL if kind == view_of.DEFAULT_KIND else f"{view_of.BASE_MODEL} with {kind}"


def _cache_summary(view: Any) -> str:
    """The caption's first line: the model, its window, and what its cache holds."""
    fields = dict(
        model=view_of.BASE_MODEL,
        kind=view.kind,
        kib=f"{view.per_token_kib:.1f}",
        gib=f"{view.cache_gib[-1]:.2f}",
        weights=f"{view.weights_gib:.1f}",
        window=str(view.window),
        sinks=str(view.sinks),
    )
    own = view.kind == view_of.DEFAULT_KIND  # the model as published: no "with <kind>"
    if view.window and own:
        return tr(
            "{model}, a window of {window} tokens + {sinks} sinks: {kib} KiB of keys and values per token; "
            "{gib} GiB for one sequence of 128k tokens (weights {weights} GiB).",
            **fields,
        )
    if view.window:
        return tr(
            "{model} with {kind}, a window of {window} tokens + {sinks} sinks: {kib} KiB of keys and values "
            "per token; {gib} GiB for one sequence of 128k tokens (weights {weights} GiB).",
            **fields,
        )
    if view.sinks and own:
        return tr(
            "{model}, no window (the {sinks} sinks count only beside a window: every token is kept anyway): "
            "{kib} KiB of keys and values per token; {gib} GiB for one sequence of 128k tokens (weights "
            "{weights} GiB).",
            **fields,
        )
    if view.sinks:
        return tr(
            "{model} with {kind}, no window (the {sinks} sinks count only beside a window: every token is "
            "kept anyway): {kib} KiB of keys and values per token; {gib} GiB for one sequence of 128k tokens "
            "(weights {weights} GiB).",
            **fields,
        )
    if own:
        return tr(
            "{model}, no window: {kib} KiB of keys and values per token; {gib} GiB for one sequence of 128k "
            "tokens (weights {weights} GiB).",
            **fields,
        )
    return tr(
        "{model} with {kind}, no window: {kib} KiB of keys and values per token; {gib} GiB for one sequence "
        "of 128k tokens (weights {weights} GiB).",
        **fields,
    )


def _cache_renderer() -> Renderer:
    return Renderer(lambda kind, window, sinks: view_of.cache_view(kind, window, sinks), _CachePainter)


def render_modern(kind: str = view_of.DEFAULT_KIND, window: int = 0, sinks: int = 0) -> Frame:
    """Draw :func:`attncourse.explore.modern.cache_view`."""
    return _cache_renderer()(kind=kind, window=window, sinks=sinks)


def modern_explorer(*, mode: str = "auto") -> Explorer:
    """Attention kind, window and sinks: Llama-3-8B's KV cache against its weights, and the mask.

    The default, GQA with 8 key/value heads, is Llama-3-8B as published (chapter 11's table); MHA,
    MQA and MLA are the same model with that attention instead, its weights kept at 8.03e9
    parameters.  Draws :func:`attncourse.explore.modern.cache_view`.

    Examples
    --------
    >>> ex = modern_explorer(mode="live")
    >>> ex.values()
    {'kind': 'GQA-8', 'window': 0, 'sinks': 0}
    """
    return Explorer(
        "modern",
        [
            Control(
                "kind", tr("attention"), tuple(view_of.ATTENTION_KINDS), view_of.DEFAULT_KIND, kind="toggle"
            ),
            Control("window", tr("window"), view_of.WINDOWS, 0, kind="toggle", labels=(tr("none"), "4096")),
            Control("sinks", tr("sinks"), view_of.SINKS, 0, kind="toggle"),
        ],
        _cache_renderer(),
        alt=tr(
            "Llama-3-8B's KV cache against its weights with its own GQA or with MHA, MQA or MLA, and the "
            "window-with-sinks mask."
        ),
        mode=mode,
    )


class _RopePainter(Painter):
    size = (9.8, 3.2)
    blit = False

    def __init__(self) -> None:
        super().__init__()
        self.ax = self.fig.subplots(1, 1)
        ref = view_of.rope_scaling_view("linear", 4)
        (self.line,) = self.ax.plot(ref.wavelengths, ref.ratio, "o-", color=LINE_COLOURS[0], ms=3)
        self.ax.axvline(
            view_of.ROPE_TRAIN, color="0.4", ls=":", lw=1, label=f"training length ({view_of.ROPE_TRAIN})"
        )
        self.ax.axhline(1.0, color="0.6", lw=0.8)
        self.ax.set(xscale="log", yscale="log", xlabel="unscaled wavelength of the pair (tokens)")
        self.ax.set_ylabel("scaled / unscaled frequency")
        self.ax.set_ylim(0.01, 1.5)
        self.ax.legend(fontsize=7, loc="lower left", frameon=False)
        self.title = self.ax.set_title(" ", fontsize=9)
        self._freeze(ref)

    def paint(self, view: Any) -> str:
        self.line.set_ydata(view.ratio)
        kept = int(np.sum(np.isclose(view.ratio, 1.0)))
        divided = int(np.sum(np.isclose(view.ratio, 1.0 / view.factor)))
        pairs = len(view.ratio)
        self.title.set_text(
            f"{view.scaling}, factor {view.factor}: {pairs} pairs of a head of width {view_of.ROPE_E}, "
            f"trained on {view_of.ROPE_TRAIN}"
        )
        return caption(
            _rope_summary(view, kept, divided),
            tr("Ratio per pair, fast to slow: {ratios}.", ratios=", ".join(f"{r:.3f}" for r in view.ratio)),
            tr(
                "Attention factor {factor} (scores grow by its square).",
                factor=f"{view.attention_factor:.3f}",
            ),
        )

    def alt(self, view: Any) -> str:
        fields = dict(
            scaling=view.scaling,
            factor=str(view.factor),
            pairs=str(len(view.ratio)),
            highest=f"{view.ratio.max():.2f}",
            lowest=f"{view.ratio.min():.3f}",
        )
        if view.scaling == "linear":
            return tr(
                "RoPE frequencies under linear scaling with factor {factor}: the ratio of scaled to unscaled "
                "frequency for each of {pairs} pairs against the pair's wavelength, from {highest} for the "
                "fastest pairs to {lowest} for the slowest.",
                **fields,
            )
        if view.scaling == "dynamic":
            return tr(
                "RoPE frequencies under dynamic scaling with factor {factor}: the ratio of scaled to unscaled "
                "frequency for each of {pairs} pairs against the pair's wavelength, from {highest} for the "
                "fastest pairs to {lowest} for the slowest.",
                **fields,
            )
        return tr(  # yarn, llama3: names, shown as they are
            "RoPE frequencies under {scaling} scaling with factor {factor}: the ratio of scaled to unscaled "
            "frequency for each of {pairs} pairs against the pair's wavelength, from {highest} for the "
            "fastest pairs to {lowest} for the slowest.",
            **fields,
        )


def _rope_summary(view: Any, kept: int, divided: int) -> str:
    """The caption's first line: how many pairs keep their frequency and how many are divided by the factor."""
    fields = dict(
        scaling=view.scaling,
        factor=str(view.factor),
        kept=str(kept),
        pairs=str(len(view.ratio)),
        divided=str(divided),
        divisor=str(view.factor),
        lowest=f"{view.ratio.min():.4f}",
    )
    if view.scaling == "linear":
        return tr(
            "linear, factor {factor}: {kept} of {pairs} pairs keep their frequency, {divided} are divided by "
            "{divisor}, the rest lie between or beyond; lowest ratio {lowest}.",
            **fields,
        )
    if view.scaling == "dynamic":
        return tr(
            "dynamic, factor {factor}: {kept} of {pairs} pairs keep their frequency, {divided} are divided by "
            "{divisor}, the rest lie between or beyond; lowest ratio {lowest}.",
            **fields,
        )
    return tr(  # yarn, llama3: names, shown as they are
        "{scaling}, factor {factor}: {kept} of {pairs} pairs keep their frequency, {divided} are divided by "
        "{divisor}, the rest lie between or beyond; lowest ratio {lowest}.",
        **fields,
    )


def _scaling_label(scaling: str) -> str:
    """One of ``SCALINGS`` as an option label: the English words translated, "yarn" and "llama3" as is."""
    if scaling == "linear":
        return tr("linear")
    if scaling == "dynamic":
        return tr("dynamic")
    return scaling


def _rope_renderer() -> Renderer:
    return Renderer(lambda scaling, factor: view_of.rope_scaling_view(scaling, factor), _RopePainter)


def render_rope_scaling(scaling: str = "yarn", factor: int = 4) -> Frame:
    """Draw :func:`attncourse.explore.modern.rope_scaling_view`."""
    return _rope_renderer()(scaling=scaling, factor=factor)


def rope_scaling_explorer(*, mode: str = "auto") -> Explorer:
    """Scaling type and factor: how much each RoPE pair is slowed, against its wavelength.

    The head is chapter 11's context-extension model's (width 16, trained on 32 tokens); at factor 4
    the ratios are the rows the chapter prints.  Draws
    :func:`attncourse.explore.modern.rope_scaling_view`.

    Examples
    --------
    >>> ex = rope_scaling_explorer(mode="live")
    >>> ex.values()
    {'scaling': 'yarn', 'factor': 4}
    """
    return Explorer(
        "rope_scaling",
        [
            Control(
                "scaling",
                tr("scaling"),
                view_of.SCALINGS,
                "yarn",
                kind="toggle",
                labels=tuple(_scaling_label(s) for s in view_of.SCALINGS),
            ),
            Control("factor", tr("factor"), view_of.FACTORS, 4, kind="toggle"),
        ],
        _rope_renderer(),
        alt=tr("RoPE's per-pair frequencies under linear, dynamic, YaRN and Llama-3 scaling."),
        mode=mode,
    )
