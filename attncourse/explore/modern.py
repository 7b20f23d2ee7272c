"""Chapter 11's explorer views: a model's KV cache against its weights, the window-with-sinks
pattern, and RoPE's per-pair frequencies under each context-extension scaling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np

from .._backend import AttentionInputError
from .._validation import public
from ..kv_cache import kv_cache_bytes, window_sink_mask
from ..positional import rope_frequencies

__all__ = [
    "ATTENTION_KINDS",
    "WINDOWS",
    "SINKS",
    "SCALINGS",
    "FACTORS",
    "CacheView",
    "cache_view",
    "RopeScalingView",
    "rope_scaling_view",
]

# A Llama-like model: 32 layers, 32 query heads of width 128, 7 billion parameters, bfloat16.
N_LAYERS, N_HEADS, HEAD_DIM, PARAMS = 32, 32, 128, 7.0e9
# attention kind -> (KV heads, MLA latent rank or None, MLA RoPE key width)
ATTENTION_KINDS: Dict[str, Tuple[int, Optional[int], int]] = {
    "MHA": (32, None, 0),
    "GQA-8": (8, None, 0),
    "MQA": (1, None, 0),
    "MLA-512": (32, 512, 64),
}
WINDOWS: Tuple[int, ...] = (0, 4096)  # 0 = no window
SINKS: Tuple[int, ...] = (0, 4)
CONTEXTS = np.array([1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072])
MASK_LEN, MASK_WINDOW = 16, 4  # the pattern drawn: 16 tokens, a window of 4 (scaled down)
SCALINGS: Tuple[str, ...] = ("linear", "dynamic", "yarn", "llama3")
FACTORS: Tuple[int, ...] = (2, 4, 8)
ROPE_E, ROPE_TRAIN = 128, 8192  # head width and training length of the frequency view


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
def cache_view(kind: str = "GQA-8", window: int = 0, sinks: int = 0) -> CacheView:
    """A 32-layer model with 32 query heads of 128 (7B parameters, bfloat16) under ``kind``.

    ``kind`` is one of ``ATTENTION_KINDS`` (MHA, GQA with 8 KV heads, MQA, MLA with rank 512 and a
    64-wide RoPE key); ``window`` (0 = none) caps the cache at that many tokens plus ``sinks``.
    The mask is the same rule drawn for 16 tokens with a window of 4.

    >>> v = cache_view("MHA")
    >>> v.per_token_kib, v.crossover
    (512.0, 26703)
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
    """Per-pair frequency ratios (scaled / unscaled) of a head of width 128 trained on 8192 tokens.

    ``scaling`` is a Hugging Face ``rope_type`` (linear, dynamic, yarn, llama3) with ``factor``;
    "dynamic" is evaluated at ``factor`` times the training length.

    >>> v = rope_scaling_view("linear", 4)
    >>> float(v.ratio.min()), float(v.ratio.max())
    (0.25, 0.25)
    """
    if scaling not in SCALINGS or factor not in FACTORS:
        raise AttentionInputError(
            f"scaling must be one of {SCALINGS} and factor one of {FACTORS}; got {scaling!r}, {factor}."
        )
    params = {"rope_type": scaling, "factor": float(factor)}
    if scaling != "linear":
        params["original_max_position_embeddings"] = ROPE_TRAIN
    if scaling == "llama3":
        params.update(low_freq_factor=1.0, high_freq_factor=4.0)
    base, _ = rope_frequencies(ROPE_E)
    scaled, attention = rope_frequencies(ROPE_E, scaling=params, seq_len=factor * ROPE_TRAIN)
    return RopeScalingView(
        scaling=scaling,
        factor=factor,
        wavelengths=2 * np.pi / base,
        ratio=scaled / base,
        attention_factor=float(attention),
    )
