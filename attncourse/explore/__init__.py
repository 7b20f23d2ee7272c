"""What each slider explorer shows, computed without any front end.

Every explorer in :mod:`attncourse.widgets` is a thin view over one function here: the function
takes the values of the explorer's controls and returns a frozen dataclass of plain numpy
arrays and numbers, which the widget draws.  So what a reader sees can be tested, and
recomputed in a chapter, with nothing but numpy and the attncourse core.  One module per
explorer:

=========================  ===========================  ======================================
function                   controls                     what it returns
=========================  ===========================  ======================================
``kernel_view``            kernel width, query          Nadaraya-Watson fit, one query's
                                                        weights
``softmax_view``           temperature, scores          the distribution and its entropy
``dot_product_view``       query angle and length       a 2-d query's scores, weights, output
``scaling_view``           d_k                          scaled vs unscaled scores, weights,
                                                        max weight, entropy, gradient norm
``self_attention_view``    token, word order            chapter 4's weights, one token's row
``heads_view``             n_heads                      one attention map per head, d_head,
                                                        the parameter count
``mask_view``              padding (side, length),      the mask, the masked scores, weights
                           causal, L, alignment, fill
``positional_view``        d_model, position            the sinusoidal table, one row, dot
                                                        product against offset, RoPE scores
``extrapolation_view``     d_model, position            the table past the training length,
                                                        dimensions outside the range seen
``transformer_view``       layer, head (given maps)     one head's map; previous-token and
                                                        induction scores of every head
``efficient_view``         block size, step             the online softmax's running state
``vision_view``            image, patch size, layer or  [CLS]'s attention per head, or the
                           rollout (given saved maps)   rollout, laid on the patch grid
``cross_view``             image, decoder step, heads   a captioner letter's cross-attention
                           (given saved maps)           over the patches, per head
``state_view``             method, state size, pairs,   a random linear/delta state's heat
                           top-k (given saved runs)     map, saved recall, saved top-k runs
=========================  ===========================  ======================================

The tuples ``TEMPERATURES``, ``D_K_VALUES``, ``POSITIONS`` and ``D_MODEL_VALUES`` (and the
divisors from :func:`divisors`) are the values the explorers' sliders offer; the ``DEFAULT_*``
names are the values they start at.  Entropies are in nats.
"""

from ._common import TOKENS, divisors, entropy, softmax_jacobian
from .cross import CROSS_HEADS, CROSS_STEPS, CrossView, cross_view
from .dot_product import DotProductView, dot_product_view
from .efficient import EfficientView, efficient_view
from .heads import DEFAULT_D_MODEL_HEADS, DEFAULT_N_HEADS, HeadsView, heads_view
from .kernel import KernelView, kernel_view
from .mask import (
    ALIGNMENTS,
    DEFAULT_CAUSAL,
    DEFAULT_PAD_LENGTH,
    FILLS,
    MASK_LENGTH,
    PAD_SIDES,
    MaskView,
    mask_view,
)
from .positional import (
    D_MODEL_VALUES,
    DEFAULT_D_MODEL,
    DEFAULT_POSITION,
    EXTRAPOLATION_POSITIONS,
    N_POSITIONS,
    POSITIONS,
    ExtrapolationView,
    PositionalView,
    extrapolation_view,
    positional_view,
)
from .scaling import D_K_VALUES, DEFAULT_D_K, VARIANTS, ScalingStats, ScalingView, scaling_view
from .self_attention import SelfAttentionView, self_attention_view
from .softmax import (
    DEFAULT_TEMPERATURE,
    FRAME_TEMPERATURES,
    LOGIT_LABELS,
    LOGITS,
    SCORE_VALUES,
    TEMPERATURES,
    SoftmaxView,
    softmax_view,
)
from .state import STATE_METHODS, STATE_PAIRS, STATE_SIZES, STATE_TOP_K, StateView, state_view
from .transformer import TransformerView, transformer_view
from .vision import VISION_VIEWS, VisionView, vision_view

__all__ = [
    "TOKENS",
    "LOGITS",
    "LOGIT_LABELS",
    "TEMPERATURES",
    "FRAME_TEMPERATURES",
    "SCORE_VALUES",
    "DEFAULT_TEMPERATURE",
    "D_K_VALUES",
    "DEFAULT_D_K",
    "VARIANTS",
    "DEFAULT_D_MODEL_HEADS",
    "DEFAULT_N_HEADS",
    "MASK_LENGTH",
    "DEFAULT_PAD_LENGTH",
    "DEFAULT_CAUSAL",
    "ALIGNMENTS",
    "PAD_SIDES",
    "FILLS",
    "D_MODEL_VALUES",
    "POSITIONS",
    "N_POSITIONS",
    "DEFAULT_D_MODEL",
    "DEFAULT_POSITION",
    "EXTRAPOLATION_POSITIONS",
    "entropy",
    "softmax_jacobian",
    "divisors",
    "SoftmaxView",
    "ScalingStats",
    "ScalingView",
    "HeadsView",
    "MaskView",
    "PositionalView",
    "ExtrapolationView",
    "DotProductView",
    "EfficientView",
    "KernelView",
    "SelfAttentionView",
    "TransformerView",
    "kernel_view",
    "softmax_view",
    "dot_product_view",
    "self_attention_view",
    "scaling_view",
    "heads_view",
    "mask_view",
    "positional_view",
    "extrapolation_view",
    "transformer_view",
    "VISION_VIEWS",
    "VisionView",
    "vision_view",
    "CrossView",
    "cross_view",
    "CROSS_HEADS",
    "CROSS_STEPS",
    "StateView",
    "state_view",
    "STATE_METHODS",
    "STATE_SIZES",
    "STATE_PAIRS",
    "STATE_TOP_K",
    "efficient_view",
]
