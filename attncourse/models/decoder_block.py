"""A Transformer decoder block: masked self-attention, cross-attention to a memory, an MLP (imports torch).

The decoder of the 2017 paper reads two sequences: its own (the target so far, causally) and the
encoder's output, the **memory**, which it reads through cross-attention: queries from the
decoder, keys and values from the memory.  Each sublayer has a residual and a layer norm:

* pre-norm (``norm_first=True``)::

      x = x + self_attn(LN1(x))               causal: position t sees targets 0..t
      x = x + cross_attn(LN2(x), memory)      every real source position
      x = x + mlp(LN3(x))

* post-norm (``norm_first=False``, the paper's and ``torch.nn.TransformerDecoderLayer``'s default)::

      x = LN1(x + self_attn(x))
      x = LN2(x + cross_attn(x, memory))
      x = LN3(x + mlp(x))

Both equal ``torch.nn.TransformerDecoderLayer(..., batch_first=True)`` with the same weights
(``DecoderBlock.from_torch`` copies them).  For decoding one token at a time, ``memory_kv`` projects
the memory to the cross-attention's keys and values once per source, and ``step`` reads them.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._backend import AttentionInputError, fmt_shape
from .._validation import positive_int, public
from ..flash import KVCache
from ..functional import merge_heads, scaled_dot_product_attention, split_heads
from ..multihead import MultiHeadAttention
from .layers import cached_self_attention, copy_weights, feed_forward, supported_activation

__all__ = ["DecoderBlock"]


class DecoderBlock(nn.Module):
    """One decoder block: causal self-attention, cross-attention to ``memory``, an MLP.

    Parameters are those of ``attncourse.TransformerBlock`` (``d_model``, ``n_heads``, ``d_ff``,
    ``dropout``, ``norm_first``, ``activation``, ``bias``, ``layer_norm_eps``), with the defaults of
    ``torch.nn.TransformerDecoderLayer`` for ``norm_first`` (False) and ``activation`` ("relu").

    ``forward(x, memory, *, memory_padding=None, is_causal=True)`` takes ``x (B, L, d_model)`` and
    ``memory (B, S, d_model)``, with ``memory_padding (B, S)`` boolean (True = a real source token),
    and returns ``out (B, L, d_model)``, the self-attention weights ``(B, H, L, L)`` and the
    cross-attention weights ``(B, H, L, S)``.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> block = DecoderBlock(d_model=8, n_heads=2)
    >>> out, self_w, cross_w = block(torch.randn(3, 5, 8), torch.randn(3, 7, 8))
    >>> tuple(out.shape), tuple(self_w.shape), tuple(cross_w.shape)
    ((3, 5, 8), (3, 2, 5, 5), (3, 2, 5, 7))
    """

    @public("DecoderBlock")
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
        bias: bool = True,
        layer_norm_eps: float = 1e-5,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        positive_int("d_model", d_model)
        d_ff = 4 * d_model if d_ff is None else positive_int("d_ff", d_ff)
        if not 0.0 <= dropout < 1.0:
            raise AttentionInputError(f"dropout must be in [0, 1); got {dropout}.")
        factory = {"device": device, "dtype": dtype}
        self.d_model, self.n_heads, self.d_ff, self.norm_first = d_model, n_heads, d_ff, norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout, **factory)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout, **factory)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)  # around self-attention
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)  # around cross-attention
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)  # around the MLP
        self.mlp = feed_forward(d_model, d_ff, activation, dropout, bias, **factory)
        self.drop1, self.drop2, self.drop3 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def _sublayers(self, x, self_attend, cross_attend):
        """The three sublayers with their residuals, in pre- or post-norm order."""
        if self.norm_first:
            a, self_weights = self_attend(self.norm1(x))
            x = x + self.drop1(a)
            c, cross_weights = cross_attend(self.norm2(x))
            x = x + self.drop2(c)
            x = x + self.drop3(self.mlp(self.norm3(x)))
        else:
            a, self_weights = self_attend(x)
            x = self.norm1(x + self.drop1(a))
            c, cross_weights = cross_attend(x)
            x = self.norm2(x + self.drop2(c))
            x = self.norm3(x + self.drop3(self.mlp(x)))
        return x, self_weights, cross_weights

    def _check(self, name: str, x) -> None:
        if not isinstance(x, torch.Tensor):
            raise AttentionInputError(f"{name} must be a torch tensor; got {type(x).__name__}.")
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            length = "S" if name == "memory" else "L"
            raise AttentionInputError(
                f"{name} must be (B, {length}, d_model={self.d_model}); got shape {fmt_shape(x)}."
            )

    @public("DecoderBlock")
    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        *,
        memory_padding: torch.Tensor | None = None,
        is_causal: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self._check("x", x)
        self._check("memory", memory)

        def self_attend(h):
            return self.self_attn(h, is_causal=is_causal)

        def cross_attend(h):  # queries from the decoder, keys and values from the memory
            return self.cross_attn(h, memory, key_padding_mask=memory_padding)

        return self._sublayers(x, self_attend, cross_attend)

    @public("DecoderBlock.memory_kv")
    def memory_kv(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The cross-attention's keys and values of ``memory (B, S, d_model)``: ``(B, H, S, d_head)`` each.

        They depend on the source alone, so a decoder computes them once per source and reuses
        them for every token it writes (``step``).
        """
        self._check("memory", memory)
        attn = self.cross_attn
        k = split_heads(attn.k_proj(memory), attn.n_heads)  # (B, S, d_model) -> (B, H, S, d_head)
        v = split_heads(attn.v_proj(memory), attn.n_heads)
        return k, v

    @public("DecoderBlock.step")
    def step(
        self,
        x: torch.Tensor,
        cache: KVCache,
        memory_kv: tuple[torch.Tensor, torch.Tensor],
        memory_padding: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The block on the ``n`` newest target positions ``x (B, n, d_model)``, with two caches.

        ``cache`` holds the self-attention's keys and values of the earlier target positions (the
        new ones are appended, see ``TransformerBlock.step``); ``memory_kv`` is ``memory_kv(memory)``,
        computed once per source.  The result equals the last ``n`` rows of
        ``forward(all positions, memory, is_causal=True)[0]``; no weights are returned, and a block
        in training mode with attention dropout refuses (the cached path does not apply it).
        """
        self._check("x", x)
        if not isinstance(cache, KVCache):
            raise AttentionInputError(f"cache must be a KVCache; got {type(cache).__name__}.")
        if self.training and self.self_attn.dropout.p > 0:
            raise AttentionInputError(
                "the block is in training mode with dropout on the attention weights "
                f"(p={self.self_attn.dropout.p}), which the cached path does not apply; call .eval() first."
            )
        k_mem, v_mem = memory_kv  # (B, H, S, d_head) each
        cross = self.cross_attn
        mask = None if memory_padding is None else memory_padding[:, None, None, :]  # (B, S) -> (B, 1, 1, S)

        def cross_attend(h):
            q = split_heads(cross.q_proj(h), cross.n_heads)  # (B, n, d_model) -> (B, H, n, d_head)
            out, _ = scaled_dot_product_attention(q, k_mem, v_mem, mask, scale=1.0 / math.sqrt(cross.d_head))
            return cross.out_proj(merge_heads(out)), None  # (B, H, n, d_head) -> (B, n, d_model)

        return self._sublayers(
            x, lambda h: (cached_self_attention(self.self_attn, h, cache), None), cross_attend
        )[0]

    @classmethod
    @public("DecoderBlock.from_torch")
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderBlock:
        """A copy of ``torch.nn.TransformerDecoderLayer`` ``layer`` (same weights, same outputs).

        ``layer`` must use ``activation="relu"`` or ``"gelu"`` (the exact GELU); call it with
        ``batch_first=True`` to compare outputs.
        """
        if not isinstance(layer, nn.TransformerDecoderLayer):
            raise AttentionInputError(
                f"expected torch.nn.TransformerDecoderLayer; got {type(layer).__name__}."
            )
        activation = supported_activation(layer, "DecoderBlock.from_torch")
        w = layer.linear1.weight
        bias = layer.linear1.bias is not None
        new = cls(
            layer.self_attn.embed_dim,
            layer.self_attn.num_heads,
            layer.linear1.out_features,
            dropout=layer.dropout.p,
            norm_first=layer.norm_first,
            activation=activation,
            bias=bias,
            layer_norm_eps=layer.norm1.eps,
            device=w.device,
            dtype=w.dtype,
        )
        new.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
        new.cross_attn = MultiHeadAttention.from_torch(layer.multihead_attn)
        pairs = [
            (new.norm1, layer.norm1),
            (new.norm2, layer.norm2),
            (new.norm3, layer.norm3),
            (new.mlp.up, layer.linear1),
            (new.mlp.down, layer.linear2),
        ]
        copy_weights(pairs, bias)
        new.train(layer.training)
        return new
