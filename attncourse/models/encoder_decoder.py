"""The Transformer encoder–decoder of "Attention Is All You Need" (2017), from the package's blocks (chapter 12).

::

    src (B, S, d_model) --> n_encoder_layers x TransformerBlock (no mask; padding hidden) --> LayerNorm
                         = memory (B, S, d_model)
    tgt (B, L, d_model) --> n_decoder_layers x DecoderBlock (causal self-attention,
                            cross-attention to memory) --> LayerNorm --> out (B, L, d_model)

It takes embeddings, not tokens (as ``torch.nn.Transformer`` does): a model around it adds token
embeddings, positions and a head.  With the same weights (``from_torch``) it equals
``torch.nn.Transformer(batch_first=True)``.

Decoding writes the target one token at a time.  The memory does not change while it does, so
each decoder layer's cross-attention keys and values are projected from it once (``start_decoding``)
instead of at every token, and the decoder's self-attention keeps a ``KVCache`` of the target so
far; ``decode_step`` then runs only the newest token(s).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from .._backend import AttentionInputError, fmt_shape
from .._validation import positive_int, public
from ..flash import KVCache
from .decoder_block import DecoderBlock
from .transformer import TransformerBlock

__all__ = ["TransformerEncoderDecoder", "DecodingCache"]


@dataclass
class DecodingCache:
    """What decoding keeps between tokens: per decoder layer, the memory's cross-attention keys and
    values ``(B, H, S, d_head)`` (fixed) and a ``KVCache`` of the target's self-attention (growing)."""

    memory_kv: list[tuple[torch.Tensor, torch.Tensor]]
    src_padding: torch.Tensor | None = None
    self_kv: list[KVCache] = field(default_factory=list)

    def __len__(self) -> int:
        """Target positions decoded so far."""
        return len(self.self_kv[0]) if self.self_kv else 0


class TransformerEncoderDecoder(nn.Module):
    """An encoder of ``TransformerBlock`` s and a decoder of ``DecoderBlock`` s, each with a final LayerNorm.

    Parameters
    ----------
    d_model, n_heads : int
    n_encoder_layers : int
    n_decoder_layers : int, optional
        Default: ``n_encoder_layers``.
    d_ff : int, optional
        The MLPs' hidden width; default ``4 * d_model``.
    dropout : float
    norm_first : bool
        False (default, the paper's and ``torch.nn.Transformer``'s): post-norm; True: pre-norm.
    activation : str
        ``"relu"`` (default, the paper's) or ``"gelu"``.
    bias : bool
    layer_norm_eps : float

    ``forward(src, tgt, *, src_padding=None, tgt_is_causal=True)`` takes ``src (B, S, d_model)``,
    ``tgt (B, L, d_model)`` and ``src_padding (B, S)``, boolean, True = a real source token, and
    returns ``(B, L, d_model)``.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> model = TransformerEncoderDecoder(d_model=16, n_heads=2, n_encoder_layers=2).eval()
    >>> src, tgt = torch.randn(3, 7, 16), torch.randn(3, 5, 16)
    >>> src_padding = torch.arange(7) < torch.tensor([[7], [4], [2]])   # (B, S): lengths 7, 4, 2
    >>> out = model(src, tgt, src_padding=src_padding)
    >>> tuple(out.shape)
    (3, 5, 16)

    Decoding one target position at a time, the memory's keys and values projected once:

    >>> cache = model.start_decoding(model.encode(src, src_padding), src_padding)
    >>> steps = [model.decode_step(tgt[:, t : t + 1], cache) for t in range(5)]
    >>> torch.allclose(torch.cat(steps, dim=1), out, atol=1e-5), len(cache)
    (True, 5)
    """

    @public("TransformerEncoderDecoder")
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_encoder_layers: int,
        n_decoder_layers: int | None = None,
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
        n_encoder_layers = positive_int("n_encoder_layers", n_encoder_layers)
        n_decoder_layers = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
        n_decoder_layers = positive_int("n_decoder_layers", n_decoder_layers)
        factory = {"device": device, "dtype": dtype}
        layer = dict(
            dropout=dropout,
            norm_first=norm_first,
            activation=activation,
            bias=bias,
            layer_norm_eps=layer_norm_eps,
            **factory,
        )
        self.d_model = positive_int("d_model", d_model)
        self.encoder = nn.ModuleList(
            TransformerBlock(d_model, n_heads, d_ff, **layer) for _ in range(n_encoder_layers)
        )
        self.encoder_norm = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.decoder = nn.ModuleList(
            DecoderBlock(d_model, n_heads, d_ff, **layer) for _ in range(n_decoder_layers)
        )
        self.decoder_norm = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)

    def _check(self, name: str, x, length: str) -> None:
        if not isinstance(x, torch.Tensor):
            raise AttentionInputError(f"{name} must be a torch tensor; got {type(x).__name__}.")
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise AttentionInputError(
                f"{name} must be (B, {length}, d_model={self.d_model}); got shape {fmt_shape(x)}."
            )

    def _check_padding(self, src_padding, memory: torch.Tensor, name: str = "src") -> None:
        if src_padding is None:
            return
        B, S = memory.shape[:2]
        if not isinstance(src_padding, torch.Tensor) or src_padding.dtype != torch.bool:
            got = (
                f"dtype {src_padding.dtype}"
                if isinstance(src_padding, torch.Tensor)
                else type(src_padding).__name__
            )
            raise AttentionInputError(
                f"src_padding must be a boolean tensor (True = a real token); got {got}."
            )
        if tuple(src_padding.shape) != (B, S):
            raise AttentionInputError(
                f"src_padding must be (B, S) = ({B}, {S}) for {name} of shape {fmt_shape(memory)}; "
                f"got {fmt_shape(src_padding)}."
            )

    @public("TransformerEncoderDecoder.encode")
    def encode(self, src: torch.Tensor, src_padding: torch.Tensor | None = None) -> torch.Tensor:
        """The memory ``(B, S, d_model)``: ``src`` through the encoder, padded keys hidden from every query."""
        self._check("src", src, "S")
        self._check_padding(src_padding, src)
        x = src
        for block in self.encoder:
            x, _ = block(x, key_padding_mask=src_padding)  # no causal mask: each source token sees all
        return self.encoder_norm(x)

    @public("TransformerEncoderDecoder.decode")
    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        *,
        src_padding: torch.Tensor | None = None,
        tgt_is_causal: bool = True,
        return_weights: bool = False,
    ):
        """``tgt (B, L, d_model)`` through the decoder, reading ``memory (B, S, d_model)``: ``(B, L, d_model)``.

        With ``return_weights=True`` it returns ``(out, cross_weights)``: every decoder layer's
        cross-attention weights, each ``(B, H, L, S)`` (row ``t``: where target position ``t`` read
        the source).
        """
        self._check("tgt", tgt, "L")
        self._check("memory", memory, "S")
        if tgt.shape[0] != memory.shape[0]:
            raise AttentionInputError(
                f"tgt and memory must share the batch size B; got tgt {fmt_shape(tgt)} and memory {fmt_shape(memory)}."
            )
        self._check_padding(src_padding, memory, "memory")
        x, cross_weights = tgt, []
        for block in self.decoder:
            x, _, w = block(x, memory, memory_padding=src_padding, is_causal=tgt_is_causal)
            cross_weights.append(w)
        out = self.decoder_norm(x)
        return (out, cross_weights) if return_weights else out

    @public("TransformerEncoderDecoder")
    def forward(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        *,
        src_padding: torch.Tensor | None = None,
        tgt_is_causal: bool = True,
    ) -> torch.Tensor:
        self._check("src", src, "S")
        self._check("tgt", tgt, "L")
        if src.shape[0] != tgt.shape[0]:
            raise AttentionInputError(
                f"src and tgt must share the batch size B; got src {fmt_shape(src)} and tgt {fmt_shape(tgt)}."
            )
        memory = self.encode(src, src_padding)
        return self.decode(tgt, memory, src_padding=src_padding, tgt_is_causal=tgt_is_causal)

    @public("TransformerEncoderDecoder.start_decoding")
    def start_decoding(self, memory: torch.Tensor, src_padding: torch.Tensor | None = None) -> DecodingCache:
        """A ``DecodingCache`` for ``memory (B, S, d_model)``: each decoder layer's cross-attention keys
        and values, projected here once, and an empty self-attention cache per layer."""
        self._check("memory", memory, "S")
        self._check_padding(src_padding, memory, "memory")
        return DecodingCache(
            memory_kv=[block.memory_kv(memory) for block in self.decoder],
            src_padding=src_padding,
            self_kv=[KVCache() for _ in self.decoder],
        )

    @public("TransformerEncoderDecoder.decode_step")
    def decode_step(self, tgt: torch.Tensor, cache: DecodingCache) -> torch.Tensor:
        """The decoder on the ``n`` newest target positions ``tgt (B, n, d_model)``: ``(B, n, d_model)``.

        Equal to the last ``n`` rows of ``decode(all positions so far, memory)``; the positions are
        appended to ``cache``.  The model should be in eval mode (dropout is not applied here).
        """
        self._check("tgt", tgt, "n")
        if not isinstance(cache, DecodingCache):
            raise AttentionInputError(
                f"cache must be the DecodingCache of start_decoding(memory); got {type(cache).__name__}."
            )
        B = cache.memory_kv[0][0].shape[0]
        if tgt.shape[0] != B:
            raise AttentionInputError(
                f"tgt must have the batch size B={B} of the cached memory; got {fmt_shape(tgt)}."
            )
        x = tgt
        for block, memory_kv, self_kv in zip(self.decoder, cache.memory_kv, cache.self_kv):
            x = block.step(x, self_kv, memory_kv, cache.src_padding)
        return self.decoder_norm(x)

    @classmethod
    @public("TransformerEncoderDecoder.from_torch")
    def from_torch(cls, m: nn.Transformer) -> TransformerEncoderDecoder:
        """A copy of ``torch.nn.Transformer`` ``m`` built with ``batch_first=True`` (same weights, same outputs).

        Its layers must use ``activation="relu"`` or ``"gelu"`` (either ``norm_first``); it keeps the
        two final layer norms ``torch.nn.Transformer`` adds.
        """
        if not isinstance(m, nn.Transformer):
            raise AttentionInputError(f"expected torch.nn.Transformer; got {type(m).__name__}.")
        if not m.batch_first:
            raise AttentionInputError(
                "m must be built with batch_first=True (inputs (B, S, d_model)); got batch_first=False."
            )
        if m.encoder.norm is None or m.decoder.norm is None:
            raise AttentionInputError(
                "m's encoder and decoder must end in a LayerNorm, as nn.Transformer builds them."
            )
        first = m.encoder.layers[0]
        w = first.linear1.weight
        new = cls(
            m.d_model,
            m.nhead,
            len(m.encoder.layers),
            len(m.decoder.layers),
            first.linear1.out_features,
            norm_first=first.norm_first,
            bias=first.linear1.bias is not None,
            layer_norm_eps=m.encoder.norm.eps,
            device=w.device,
            dtype=w.dtype,
        )
        new.encoder = nn.ModuleList(TransformerBlock.from_torch(layer) for layer in m.encoder.layers)
        new.decoder = nn.ModuleList(DecoderBlock.from_torch(layer) for layer in m.decoder.layers)
        with torch.no_grad():
            for ours, theirs in ((new.encoder_norm, m.encoder.norm), (new.decoder_norm, m.decoder.norm)):
                ours.weight.copy_(theirs.weight)
                if theirs.bias is not None:
                    ours.bias.copy_(theirs.bias)
        new.train(m.training)
        return new
