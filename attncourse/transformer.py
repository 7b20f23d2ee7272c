"""A Transformer block and a tiny causal language model built from it (this module imports torch).

``TransformerBlock`` is attention + MLP, each wrapped in a residual connection and a layer norm:

* pre-norm (``norm_first=True``, GPT-2 and most models since)::

      h = x + attn(LN1(x))
      y = h + mlp(LN2(h))

* post-norm (``norm_first=False``, the 2017 paper)::

      h = LN1(x + attn(x))
      y = LN2(h + mlp(h))

Both equal ``torch.nn.TransformerEncoderLayer(..., activation="gelu", batch_first=True)`` with the
same ``norm_first`` and the same weights (``TransformerBlock.from_torch`` copies them).

``TinyTransformer`` stacks the blocks into a decoder-only (causal) language model: token embeddings
plus learned position embeddings, ``n_layers`` blocks under a causal mask, a final layer norm and a
linear head to one logit per vocabulary entry.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ._backend import AttentionInputError, fmt_shape
from .multihead import MultiHeadAttention

__all__ = ["TransformerBlock", "TinyTransformer"]


def _positive_int(owner: str, name: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise AttentionInputError(f"{owner}: {name} must be a positive integer; got {n!r}.")
    return n


class TransformerBlock(nn.Module):
    """One Transformer block: multi-head self-attention and an MLP, with residuals and layer norms.

    Parameters
    ----------
    d_model : int
        Width of the residual stream (the features of every position).
    n_heads : int
        Number of attention heads; must divide ``d_model``.
    d_ff : int, optional
        Hidden width of the MLP; default ``4 * d_model``.
    dropout : float
        Dropout on the attention weights, after each sublayer and inside the MLP (as
        ``nn.TransformerEncoderLayer`` places it); 0 by default.
    norm_first : bool
        True (default): pre-norm, ``x + attn(LN(x))``. False: post-norm, ``LN(x + attn(x))``.
    bias : bool
        Biases in the linear layers and the layer norms.

    ``forward(x, mask=None, *, is_causal=False, key_padding_mask=None)`` takes ``x (B, L, d_model)``
    and returns ``out (B, L, d_model)`` and the attention weights ``(B, H, L, L)``. ``mask`` is
    boolean, True = may attend, as in ``attncourse.scaled_dot_product_attention``.

    Examples
    --------
    >>> import torch
    >>> block = TransformerBlock(d_model=8, n_heads=2)
    >>> out, weights = block(torch.randn(3, 5, 8), is_causal=True)
    >>> tuple(out.shape), tuple(weights.shape)
    ((3, 5, 8), (3, 2, 5, 5))
    >>> bool(weights[0, 0].triu(1).eq(0).all())  # causal: nothing above the diagonal
    True
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: Optional[int] = None,
        *,
        dropout: float = 0.0,
        norm_first: bool = True,
        bias: bool = True,
        layer_norm_eps: float = 1e-5,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _positive_int("TransformerBlock", "d_model", d_model)
        d_ff = 4 * d_model if d_ff is None else _positive_int("TransformerBlock", "d_ff", d_ff)
        if not 0.0 <= dropout < 1.0:
            raise AttentionInputError(f"TransformerBlock: dropout must be in [0, 1); got {dropout}.")
        factory = {"device": device, "dtype": dtype}
        self.d_model, self.n_heads, self.d_ff, self.norm_first = d_model, n_heads, d_ff, norm_first
        self.attn = MultiHeadAttention(d_model, n_heads, bias=bias, dropout=dropout, **factory)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)  # around attention
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)  # around the MLP
        # The MLP works on each position on its own: (B, L, d_model) -> (B, L, d_ff) -> (B, L, d_model).
        self.mlp = nn.Sequential(
            OrderedDict(
                up=nn.Linear(d_model, d_ff, bias=bias, **factory),
                act=nn.GELU(),
                drop=nn.Dropout(dropout),
                down=nn.Linear(d_ff, d_model, bias=bias, **factory),
            )
        )
        self.drop1 = nn.Dropout(dropout)  # on the attention sublayer's output
        self.drop2 = nn.Dropout(dropout)  # on the MLP sublayer's output

    def _attention(self, x, mask, is_causal, key_padding_mask):
        out, weights = self.attn(x, mask=mask, is_causal=is_causal, key_padding_mask=key_padding_mask)
        return self.drop1(out), weights

    def forward(
        self,
        x: torch.Tensor,
        mask: Optional[torch.Tensor] = None,
        *,
        is_causal: bool = False,
        key_padding_mask: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        if not isinstance(x, torch.Tensor):
            raise AttentionInputError(f"TransformerBlock: x must be a torch tensor; got {type(x).__name__}.")
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise AttentionInputError(
                f"TransformerBlock: x must be (B, L, d_model={self.d_model}); got shape {fmt_shape(x)}."
            )
        if self.norm_first:
            a, weights = self._attention(self.norm1(x), mask, is_causal, key_padding_mask)
            x = x + a  # the residual stream itself is never normalised
            x = x + self.drop2(self.mlp(self.norm2(x)))
        else:
            a, weights = self._attention(x, mask, is_causal, key_padding_mask)
            x = self.norm1(x + a)  # normalise the sum: the stream is normalised after every sublayer
            x = self.norm2(x + self.drop2(self.mlp(x)))
        return x, weights

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> "TransformerBlock":
        """A copy of ``torch.nn.TransformerEncoderLayer`` ``layer`` (same weights, same outputs).

        ``layer`` must use ``activation="gelu"`` (the exact, erf-based GELU); call it with
        ``batch_first=True`` to compare outputs.
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise AttentionInputError(
                "TransformerBlock.from_torch: expected torch.nn.TransformerEncoderLayer; "
                f"got {type(layer).__name__}."
            )
        act = layer.activation
        if not (act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none")):
            raise AttentionInputError(
                "TransformerBlock.from_torch: only activation='gelu' is supported (the block's MLP uses "
                f"the exact GELU); got {act!r}."
            )
        attn = MultiHeadAttention.from_torch(layer.self_attn)
        w = layer.linear1.weight
        bias = layer.linear1.bias is not None
        new = cls(
            attn.d_model, attn.n_heads, layer.linear1.out_features, dropout=layer.dropout.p,
            norm_first=layer.norm_first, bias=bias, layer_norm_eps=layer.norm1.eps,
            device=w.device, dtype=w.dtype,
        )
        new.attn = attn
        pairs = [(new.norm1, layer.norm1), (new.norm2, layer.norm2),
                 (new.mlp.up, layer.linear1), (new.mlp.down, layer.linear2)]
        with torch.no_grad():
            for ours, theirs in pairs:
                ours.weight.copy_(theirs.weight)
                if bias:
                    ours.bias.copy_(theirs.bias)
        new.train(layer.training)
        return new


class TinyTransformer(nn.Module):
    """A small decoder-only (causal) language model made of ``TransformerBlock`` s.

    ``tokens (B, L)`` (integers in ``[0, vocab_size)``, ``L <= max_len``) go through a token
    embedding plus a learned position embedding, ``n_layers`` blocks under a causal mask, a final
    ``LayerNorm`` and a linear head. ``forward`` returns ``logits (B, L, vocab_size)``, where
    ``logits[:, t]`` predicts the token at ``t + 1`` from tokens ``0..t`` only, and a list of the
    ``n_layers`` attention weights, each ``(B, n_heads, L, L)``.

    Positions are learned vectors added to the token embeddings (as in GPT-2), so the blocks stay
    exactly ``nn.TransformerEncoderLayer``'s computation; RoPE would rotate q and k inside every
    attention layer instead.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> model = TinyTransformer(vocab_size=10, d_model=16, n_heads=2, n_layers=2, max_len=8)
    >>> logits, weights = model(torch.tensor([[1, 2, 3, 4]]))
    >>> tuple(logits.shape), len(weights), tuple(weights[0].shape)
    ((1, 4, 10), 2, (1, 2, 4, 4))
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_heads: int,
        n_layers: int,
        max_len: int,
        d_ff: Optional[int] = None,
        *,
        dropout: float = 0.0,
        norm_first: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        for name, n in (("vocab_size", vocab_size), ("n_layers", n_layers), ("max_len", max_len)):
            _positive_int("TinyTransformer", name, n)
        factory = {"device": device, "dtype": dtype}
        self.vocab_size, self.max_len = vocab_size, max_len
        self.tok_emb = nn.Embedding(vocab_size, d_model, **factory)
        self.pos_emb = nn.Embedding(max_len, d_model, **factory)  # one learned vector per position
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(
                d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first, bias=bias, **factory
            )
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model, bias=bias, **factory)
        self.head = nn.Linear(d_model, vocab_size, bias=bias, **factory)

    def _check(self, tokens) -> None:
        if not isinstance(tokens, torch.Tensor):
            raise AttentionInputError(
                f"TinyTransformer: tokens must be a torch tensor of token ids; got {type(tokens).__name__}."
            )
        if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
            raise AttentionInputError(
                f"TinyTransformer: tokens must hold integer token ids; got dtype {tokens.dtype}."
            )
        if tokens.ndim != 2 or tokens.shape[1] == 0:
            raise AttentionInputError(
                f"TinyTransformer: tokens must be (B, L) with L >= 1; got shape {fmt_shape(tokens)}. "
                "Add a batch dimension with tokens[None] for a single sequence."
            )
        if tokens.shape[1] > self.max_len:
            raise AttentionInputError(
                f"TinyTransformer: the sequence has L={tokens.shape[1]} tokens but max_len={self.max_len} "
                "(there is no learned position embedding beyond it); shorten it or build the model "
                "with a larger max_len."
            )
        lo, hi = int(tokens.min()), int(tokens.max())
        if lo < 0 or hi >= self.vocab_size:
            raise AttentionInputError(
                f"TinyTransformer: token ids must be in [0, vocab_size={self.vocab_size}); "
                f"got values from {lo} to {hi}."
            )

    def forward(self, tokens: torch.Tensor) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        self._check(tokens)
        L = tokens.shape[1]
        positions = torch.arange(L, device=tokens.device)
        x = self.drop(self.tok_emb(tokens) + self.pos_emb(positions))  # (B, L, d) + (L, d) -> (B, L, d)
        weights = []
        for block in self.blocks:
            x, w = block(x, is_causal=True)  # w: (B, H, L, L), zero above the diagonal
            weights.append(w)
        logits = self.head(self.norm(x))  # (B, L, d_model) -> (B, L, vocab_size)
        return logits, weights
