"""Slider explorers, one per idea, that work in live Jupyter, in Colab and in the HTML book.

Each explorer draws what a function of :mod:`attncourse.explore` computes and returns an
ipywidgets widget (an :class:`Explorer`, which is a ``VBox``).  One module per explorer; the
shared machinery is in ``_core`` (controls, frames and live modes) and ``_paint`` (figures
repainted per frame):

=============================  ==============================  ================================
explorer                       controls                        picture
=============================  ==============================  ================================
``kernel_explorer``            kernel width, query             kernel regression, one query's
                                                               weights (chapter 0)
``softmax_explorer``           temperature, scores (editable   scores / T and the softmax
                               in live mode)                   weights
``dot_product_explorer``       query angle and length          a query among keys, scores,
                                                               weights
``scaling_explorer``           scaled/unscaled, d_k            the weights, entropy against d_k
``self_attention_explorer``    word order, token               the weights map and one row
``heads_explorer``             n_heads, which head             one attention map per head
``mask_explorer``              mask (causal, alignment),       mask, masked scores, weights
                               padding side and length, fill
``positional_explorer``        sinusoid/RoPE, d_model,         table or RoPE scores, one row,
                               position                        scores against offset
``transformer_explorer``       layer, head                     a trained model's attention
                                                               maps, head scores
``efficient_explorer``         block size, step                the online softmax block by
                                                               block, memory against steps
``vision_explorer``            image, patch size, layer or     a digit, its patch grid, [CLS]'s
                               rollout                         attention per head or rollout
``cross_explorer``             digit, decoder step, heads      where a captioner's letter reads
                                                               the image (chapter 12)
``state_explorer``             method, state size, pairs,      a random fixed state's heat map,
                               top-k                           saved recall, saved top-k runs
=============================  ==============================  ================================

``mode="frames"`` precomputes every picture and switches between them in the browser (the
HTML book; ipywidgets 8), ``mode="live"`` redraws from Python (ipywidgets 7, e.g. Colab),
``mode="auto"`` (the default) picks by the installed version: see :mod:`attncourse.widgets._core`.
"""

import ipywidgets as widgets  # noqa: F401  (the module the explorers are built from)

from ._core import DPI, MODES, Control, DependentControl, Explorer, Frame, ipywidgets_major, resolve_mode
from ._language import state_texts, translate_state
from .cross import cross_explorer, render_cross
from .dot_product import dot_product_explorer, render_dot_product
from .efficient import efficient_explorer, render_efficient
from .heads import heads_explorer, render_heads
from .kernel import kernel_explorer, render_kernel
from .mask import mask_explorer, render_mask
from .modern import modern_explorer, render_modern, render_rope_scaling, rope_scaling_explorer
from .positional import positional_explorer, render_positional
from .scaling import render_scaling, scaling_explorer
from .self_attention import render_self_attention, self_attention_explorer
from .softmax import render_softmax, softmax_explorer
from .state import render_state, state_explorer
from .transformer import render_transformer, transformer_explorer
from .vision import render_vision, vision_explorer

__all__ = [
    "state_texts",
    "translate_state",
    "DPI",
    "MODES",
    "Frame",
    "Control",
    "DependentControl",
    "Explorer",
    "ipywidgets_major",
    "resolve_mode",
    "render_kernel",
    "render_softmax",
    "render_dot_product",
    "render_scaling",
    "render_self_attention",
    "render_heads",
    "render_mask",
    "render_positional",
    "render_transformer",
    "render_vision",
    "render_cross",
    "render_state",
    "render_efficient",
    "kernel_explorer",
    "softmax_explorer",
    "dot_product_explorer",
    "scaling_explorer",
    "self_attention_explorer",
    "heads_explorer",
    "mask_explorer",
    "positional_explorer",
    "transformer_explorer",
    "vision_explorer",
    "cross_explorer",
    "state_explorer",
    "efficient_explorer",
    "render_modern",
    "modern_explorer",
    "render_rope_scaling",
    "rope_scaling_explorer",
]
