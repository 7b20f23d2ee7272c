"""The pieces a Transformer layer is made of, shared by the encoder and the decoder blocks (imports torch).

* ``feed_forward``: the position-wise MLP, ``Linear -> activation -> Dropout -> Linear``;
* ``activation_name``: which of its activations a ``torch.nn`` layer uses, for ``from_torch``;
* ``supported_activation`` and ``copy_weights``: the checks and copying both ``from_torch`` share;
* ``cached_self_attention``: causal self-attention of the newest positions with a KV cache
  (decoding), for ``TransformerBlock.step`` and ``DecoderBlock.step``.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from .._backend import AttentionInputError
from ..flash import KVCache, cached_attention
from ..functional import merge_heads, split_heads
from ..multihead import MultiHeadAttention

__all__ = [
    "ACTIVATIONS",
    "feed_forward",
    "activation_name",
    "supported_activation",
    "copy_weights",
    "cached_self_attention",
]

ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU}  # the MLP's nonlinearity, by name


def feed_forward(
    d_model: int, d_ff: int, activation: str, dropout: float, bias: bool, **factory
) -> nn.Sequential:
    """The position-wise MLP of a Transformer layer, ``(B, L, d_model) -> (B, L, d_ff) -> (B, L, d_model)``."""
    if activation not in ACTIVATIONS:
        raise AttentionInputError(f"activation must be one of {sorted(ACTIVATIONS)}; got {activation!r}.")
    return nn.Sequential(
        OrderedDict(
            up=nn.Linear(d_model, d_ff, bias=bias, **factory),
            act=ACTIVATIONS[activation](),
            drop=nn.Dropout(dropout),
            down=nn.Linear(d_ff, d_model, bias=bias, **factory),
        )
    )


def supported_activation(layer: nn.Module, who: str) -> str:
    """The name of ``layer.activation`` (a ``torch.nn`` Transformer layer), or a named error if ours has none."""
    name = activation_name(layer.activation)
    if name is None:
        raise AttentionInputError(
            f"{who}: only activation='relu' or 'gelu' (the exact GELU) is supported; got {layer.activation!r}."
        )
    return name


def copy_weights(pairs, bias: bool) -> None:
    """Copy each ``(ours, theirs)`` pair's weight, and bias when ``bias``, from ``theirs`` into ``ours``."""
    with torch.no_grad():
        for ours, theirs in pairs:
            ours.weight.copy_(theirs.weight)
            if bias:
                ours.bias.copy_(theirs.bias)


def cached_self_attention(attn: MultiHeadAttention, h: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """``attn``'s causal self-attention of the ``n`` newest positions ``h (B, n, d_model)``, with a KV cache.

    Their keys and values are appended to ``cache`` and their queries attend to all ``S`` cached
    positions under the bottom-right causal mask (``attncourse.cached_attention``).
    """
    q = split_heads(attn.q_proj(h), attn.n_heads)  # (B, n, d_model) -> (B, H, n, d_head)
    k = split_heads(attn.k_proj(h), attn.n_kv_heads)  # (B, n, d_kv) -> (B, H_kv, n, d_head)
    v = split_heads(attn.v_proj(h), attn.n_kv_heads)
    # The n new queries are the last n of S = len(cache) positions: (B, H, n, d_head);
    # the cache keeps the H_kv key/value heads only.
    out = cached_attention(
        q, k, v, cache, scale=1.0 / math.sqrt(attn.d_head), enable_gqa=attn.n_kv_heads != attn.n_heads
    )
    return attn.out_proj(merge_heads(out))  # (B, H, n, d_head) -> (B, n, d_model)


def activation_name(act) -> str | None:
    """``"gelu"`` or ``"relu"`` for a torch layer's ``activation`` (a function or a module), else None."""
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        return "gelu"  # the exact, erf-based GELU only
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    return None
