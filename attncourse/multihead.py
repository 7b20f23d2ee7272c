"""Multi-head attention as a ``torch.nn.Module`` (this module imports torch)."""

from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
from torch import nn

from ._backend import AttentionInputError, fmt_shape
from ._validation import positive_int, public
from .functional import merge_heads, scaled_dot_product_attention, split_heads

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with ``n_heads`` heads of width ``d_head = d_model // n_heads``.

    Each head attends with its own slice of the projected q, k, v and scales its scores by
    ``1/sqrt(d_head)`` (not ``1/sqrt(d_model)``); the heads' outputs are concatenated and mixed
    by ``out_proj`` (W_O).  The parameter count, ``4 * d_model**2`` (+ ``4 * d_model`` biases),
    does not depend on ``n_heads``.

    ``n_kv_heads`` (default ``n_heads``) gives grouped-query attention: ``k_proj`` and ``v_proj``
    make only ``n_kv_heads`` heads of keys and values, and query head ``h`` attends with key/value
    head ``h // (n_heads // n_kv_heads)`` (``n_kv_heads=1`` is multi-query attention).  A KV cache
    then holds ``n_kv_heads / n_heads`` of the keys and values of multi-head attention.

    ``forward(query, key=None, value=None, mask=None, *, is_causal=False, key_padding_mask=None)``
    takes ``query (B, L, d_model)`` and ``key``/``value (B, S, d_model)`` (default: ``query``,
    i.e. self-attention) and returns ``out (B, L, d_model)`` and ``weights (B, H, L, S)``.
    ``mask`` is boolean, True = may attend, broadcastable to ``(B, H, L, S)``;
    ``key_padding_mask`` is boolean ``(B, S)``, True = a real token.
    """

    @public("MultiHeadAttention")
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        n_kv_heads: Optional[int] = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        d_model, n_heads = positive_int("d_model", d_model), positive_int("n_heads", n_heads)
        n_kv_heads = n_heads if n_kv_heads is None else positive_int("n_kv_heads", n_kv_heads)
        if n_heads % n_kv_heads:
            raise AttentionInputError(
                f"n_heads={n_heads} is not a multiple of n_kv_heads={n_kv_heads}: every key/value "
                "head must serve the same number of query heads."
            )
        if d_model % n_heads:
            divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
            raise AttentionInputError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}, so the "
                f"heads cannot share it equally. n_heads must be one of {divisors}."
            )
        if not 0.0 <= dropout < 1.0:
            raise AttentionInputError(f"dropout must be in [0, 1); got {dropout}.")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.n_kv_heads = n_kv_heads
        d_kv = n_kv_heads * self.d_head  # d_model for multi-head attention, less when grouped
        factory = {"device": device, "dtype": dtype}
        self.q_proj = nn.Linear(d_model, d_model, bias=bias, **factory)  # W_Q for all heads at once
        self.k_proj = nn.Linear(d_model, d_kv, bias=bias, **factory)  # W_K
        self.v_proj = nn.Linear(d_model, d_kv, bias=bias, **factory)  # W_V
        self.out_proj = nn.Linear(d_model, d_model, bias=bias, **factory)  # W_O
        self.dropout = nn.Dropout(dropout)

    def _check(self, name: str, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor):
            raise AttentionInputError(f"{name} must be a torch tensor; got {type(x).__name__}.")
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise AttentionInputError(
                f"{name} must be (B, {'L' if name == 'query' else 'S'}, d_model={self.d_model}); "
                f"got shape {fmt_shape(x)}."
            )

    @public("MultiHeadAttention")
    def forward(
        self,
        query: torch.Tensor,
        key: Optional[torch.Tensor] = None,
        value: Optional[torch.Tensor] = None,
        mask: Optional[torch.Tensor] = None,
        *,
        is_causal: bool = False,
        key_padding_mask: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        key = query if key is None else key
        value = key if value is None else value
        for name, x in (("query", query), ("key", key), ("value", value)):
            self._check(name, x)
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise AttentionInputError(
                "query (B, L, d), key and value (B, S, d) must share B, and key and "
                f"value must share S; got query {fmt_shape(query)}, key {fmt_shape(key)}, value {fmt_shape(value)}."
            )
        if key_padding_mask is not None:
            B, S = key.shape[:2]
            if key_padding_mask.shape != (B, S):
                raise AttentionInputError(
                    f"key_padding_mask must be (B, S) = ({B}, {S}); got {fmt_shape(key_padding_mask)}."
                )
            if key_padding_mask.dtype != torch.bool:
                raise AttentionInputError(
                    "key_padding_mask must be boolean (True = real token); "
                    f"got dtype {key_padding_mask.dtype}."
                )
            kpm = key_padding_mask[:, None, None, :]  # (B, S) -> (B, 1, 1, S)
            mask = kpm if mask is None else mask & kpm

        q = split_heads(self.q_proj(query), self.n_heads)  # (B, L, d_model) -> (B, H, L, d_head)
        k = split_heads(self.k_proj(key), self.n_kv_heads)  # (B, S, d_kv) -> (B, H_kv, S, d_head)
        v = split_heads(self.v_proj(value), self.n_kv_heads)  # (B, S, d_kv) -> (B, H_kv, S, d_head)
        # Each head scales by 1/sqrt(d_head): its dot products sum d_head terms, not d_model.
        # With fewer KV heads, query head h reads KV head h // (H / H_kv) (enable_gqa).
        out, weights = scaled_dot_product_attention(
            q,
            k,
            v,
            mask,
            is_causal=is_causal,
            scale=1.0 / math.sqrt(self.d_head),
            enable_gqa=self.n_kv_heads != self.n_heads,
        )  # out (B, H, L, d_head), weights (B, H, L, S)
        if self.training and self.dropout.p > 0:
            # Dropout on the weights, as nn.MultiheadAttention does; like it, return the dropped
            # (rescaled) weights, so training-mode rows need not sum to 1.
            weights = self.dropout(weights)
            out = weights @ self.expand_kv(v)
        return self.out_proj(merge_heads(out)), weights  # (B, H, L, d_head) -> (B, L, d_model)

    def expand_kv(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, H_kv, S, d_head) -> (B, H, S, d_head)``: each KV head repeated for its query heads."""
        group = self.n_heads // self.n_kv_heads
        return x if group == 1 else x.repeat_interleave(group, dim=-3)  # heads 0,0,1,1,...

    @classmethod
    @public("MultiHeadAttention.from_torch")
    def from_torch(cls, m: nn.MultiheadAttention) -> "MultiHeadAttention":
        """A copy of ``torch.nn.MultiheadAttention`` ``m`` (same weights, same outputs).

        ``m`` must project q, k and v from ``embed_dim`` features (no ``kdim``/``vdim``), without
        ``add_bias_kv`` or ``add_zero_attn``; call the original with ``batch_first=True`` to
        compare outputs.
        """
        if not isinstance(m, nn.MultiheadAttention):
            raise AttentionInputError(f"expected torch.nn.MultiheadAttention; got {type(m).__name__}.")
        if not m._qkv_same_embed_dim:
            raise AttentionInputError(
                "kdim/vdim different from embed_dim are not supported "
                f"(embed_dim={m.embed_dim}, kdim={m.kdim}, vdim={m.vdim})."
            )
        if m.bias_k is not None or m.add_zero_attn:
            raise AttentionInputError("add_bias_kv and add_zero_attn are not supported.")
        w = m.in_proj_weight
        bias = m.in_proj_bias is not None
        new = cls(m.embed_dim, m.num_heads, bias=bias, dropout=m.dropout, device=w.device, dtype=w.dtype)
        d = m.embed_dim
        with torch.no_grad():
            # in_proj_weight stacks W_Q, W_K, W_V: (3 * d_model, d_model).
            for i, proj in enumerate((new.q_proj, new.k_proj, new.v_proj)):
                proj.weight.copy_(w[i * d : (i + 1) * d])
                if bias:
                    proj.bias.copy_(m.in_proj_bias[i * d : (i + 1) * d])
            new.out_proj.weight.copy_(m.out_proj.weight)
            if bias:
                new.out_proj.bias.copy_(m.out_proj.bias)
        new.train(m.training)
        return new
