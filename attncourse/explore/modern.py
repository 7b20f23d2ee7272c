"""Chapter 11's explorer views: a model's KV cache against its weights, the window-with-sinks
pattern, and RoPE's per-pair frequencies under each context-extension scaling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import public
from ..kv_cache import MODEL_CONFIGS, kv_cache_bytes, window_sink_mask
from ..positional import rope_frequencies
from ..toy_data import ROPE_HEAD_DIM, ROPE_TRAIN_LENGTH, rope_scalings

__all__ = [
    "BASE_MODEL",
    "ATTENTION_KINDS",
    "DEFAULT_KIND",
    "WINDOWS",
    "SINKS",
    "SCALINGS",
    "FACTORS",
    "CacheView",
    "cache_view",
    "RopeScalingView",
    "rope_scaling_view",
]

# Every kind is Llama-3-8B (32 layers of 32 query heads of 128, bfloat16) with that attention; its own,
# GQA with 8 KV heads, is the default.  The weights stay at Llama-3-8B's parameter count for every
# kind: the key/value projections' own size would change it by at most a tenth (MHA: +0.8e9).
BASE_MODEL = "Llama-3-8B"
_BASE, _MLA = MODEL_CONFIGS[BASE_MODEL], MODEL_CONFIGS["DeepSeek-V3"]
N_LAYERS, N_HEADS, HEAD_DIM = int(_BASE["n_layers"]), int(_BASE["n_heads"]), int(_BASE["head_dim"])
PARAMS = float(_BASE["params"])
# attention kind -> (KV heads, MLA latent rank or None, MLA RoPE key width); MLA's from DeepSeek-V3
ATTENTION_KINDS: Dict[str, Tuple[int, Optional[int], int]] = {
    "MHA": (N_HEADS, None, 0),
    "GQA-8": (int(_BASE["n_kv_heads"]), None, 0),
    "MQA": (1, None, 0),
    "MLA-512": (N_HEADS, int(_MLA["kv_lora_rank"]), int(_MLA["rope_head_dim"])),
}
DEFAULT_KIND = "GQA-8"  # Llama-3-8B's own attention
WINDOWS: Tuple[int, ...] = (0, int(MODEL_CONFIGS["Mistral-7B-v0.1"]["window"]))  # 0 = no window
SINKS: Tuple[int, ...] = (0, 4)
CONTEXTS = np.array([1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072])
MASK_LEN, MASK_WINDOW = 16, 4  # the pattern drawn: 16 tokens, a window of 4 (scaled down)
SCALINGS: Tuple[str, ...] = ("linear", "dynamic", "yarn", "llama3")
FACTORS: Tuple[int, ...] = (2, 4, 8)
# head width and training length of the frequency view: chapter 11's context-extension model
ROPE_E, ROPE_TRAIN = ROPE_HEAD_DIM, ROPE_TRAIN_LENGTH


@dataclass(frozen=True, eq=False)
class CacheView:
    """What the cache explorer shows (see :func:`cache_view`)."""

    kind: str
    window: int
    sinks: int
    contexts: np.ndarray  # (n,) sequence lengths
    cache_gib: np.ndarray  # (n,) one sequence's cache at each length
    weights_gib: float
    per_token_kib: float
    crossover: Optional[int]  # tokens at which the cache equals the weights (None: never)
    mask: np.ndarray  # (MASK_LEN, MASK_LEN) the pattern, scaled down


@public("cache_view")
def cache_view(kind: str = DEFAULT_KIND, window: int = 0, sinks: int = 0) -> CacheView:
    """Llama-3-8B's KV cache against its weights, with its attention replaced by ``kind``.

    The model is ``kv_cache.MODEL_CONFIGS["Llama-3-8B"]`` (32 layers, 32 query heads of 128,
    8.03e9 parameters, bfloat16), the row of chapter 11's table.  ``kind`` is one of
    ``ATTENTION_KINDS``: GQA with 8 KV heads (the model's own, the default), or the same model with
    MHA (32 KV heads), MQA (1) or MLA with DeepSeek-V3's rank 512 and 64-wide RoPE key.  The weights
    stay at 8.03e9 parameters for every kind.  ``window`` (0 = none; 4096 is Mistral-7B's) caps the
    cache at that many tokens plus ``sinks``.  The mask is the same rule drawn for 16 tokens with a
    window of 4.

    >>> v = cache_view()
    >>> v.per_token_kib, v.crossover
    (128.0, 122529)
    >>> cache_view("MHA").crossover
    30633
    >>> cache_view("GQA-8", 4096, 4).crossover is None
    True
    """
    if kind not in ATTENTION_KINDS:
        raise AttentionInputError(f"kind must be one of {sorted(ATTENTION_KINDS)}; got {kind!r}.")
    if window not in WINDOWS or sinks not in SINKS:
        raise AttentionInputError(
            f"window must be one of {WINDOWS} and sinks one of {SINKS}; got {window}, {sinks}."
        )
    kv, rank, rope = ATTENTION_KINDS[kind]

    def size(tokens: int) -> int:
        kept = tokens if not window else min(tokens, window + sinks)
        return kv_cache_bytes(N_LAYERS, kv, HEAD_DIM, kept, kv_lora_rank=rank, rope_head_dim=rope)

    weights = 2 * PARAMS
    per_token = size(1)
    capped = window and size(10**9) < weights
    crossover = None if capped else int(np.ceil(weights / per_token))
    if window:
        mask = window_sink_mask(MASK_LEN, MASK_WINDOW, sinks)
    else:
        mask = np.tril(np.ones((MASK_LEN, MASK_LEN), dtype=bool))
    return CacheView(
        kind=kind,
        window=window,
        sinks=sinks,
        contexts=CONTEXTS,
        cache_gib=np.array([size(int(n)) for n in CONTEXTS]) / 2**30,
        weights_gib=weights / 2**30,
        per_token_kib=per_token / 2**10,
        crossover=crossover,
        mask=mask,
    )


@dataclass(frozen=True, eq=False)
class RopeScalingView:
    """What the RoPE-scaling explorer shows (see :func:`rope_scaling_view`)."""

    scaling: str
    factor: int
    wavelengths: np.ndarray  # (E/2,) unscaled wavelength of each pair, in tokens
    ratio: np.ndarray  # (E/2,) scaled frequency / unscaled frequency
    attention_factor: float


@public("rope_scaling_view")
def rope_scaling_view(scaling: str = "yarn", factor: int = 4) -> RopeScalingView:
    """Per-pair frequency ratios (scaled / unscaled) of chapter 11's context-extension model.

    Its heads are 16 wide (8 pairs) and it was trained on 32 tokens (``toy_data.ROPE_HEAD_DIM``,
    ``ROPE_TRAIN_LENGTH``).  ``scaling`` is one of ``toy_data.rope_scalings(factor)``, Hugging
    Face ``rope_type`` dicts (linear, dynamic, yarn, llama3); "dynamic" is evaluated at ``factor``
    times the training length, as the chapter's plot is.

    >>> v = rope_scaling_view("linear", 4)
    >>> float(v.ratio.min()), float(v.ratio.max())
    (0.25, 0.25)
    >>> np.round(rope_scaling_view("yarn", 4).ratio, 3)
    array([1.   , 0.625, 0.25 , 0.25 , 0.25 , 0.25 , 0.25 , 0.25 ])
    """
    if scaling not in SCALINGS or factor not in FACTORS:
        raise AttentionInputError(
            f"scaling must be one of {SCALINGS} and factor one of {FACTORS}; got {scaling!r}, {factor}."
        )
    params = rope_scalings(factor, ROPE_TRAIN)[scaling]
    base, _ = rope_frequencies(ROPE_E)
    scaled, attention = rope_frequencies(ROPE_E, scaling=params, seq_len=factor * ROPE_TRAIN)
    return RopeScalingView(
        scaling=scaling,
        factor=factor,
        wavelengths=2 * np.pi / base,
        ratio=scaled / base,
        attention_factor=float(attention),
    )
