"""Chapter 0's reversal task for a Transformer encoder–decoder (chapter 12).

``TransformerSeq2Seq`` wraps ``TransformerEncoderDecoder`` with what a token model needs: symbol
embeddings for the source and the target (the target's last id is the start symbol, as in
``attncourse.seq2seq.Seq2Seq``), chapter 7's sinusoidal positions added to both, and a linear head.
``train_transformer_reversal`` trains it on the batches ``attncourse.seq2seq.train_reversal``
draws (the same generator seeds, batch size and number of steps), so chapter 0's GRU models and
this one see the same data; ``attncourse.seq2seq.evaluate_reversal`` scores it on the same
held-out sequences.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._validation import positive_int
from ..positional import sinusoidal_positional_encoding
from .encoder_decoder import TransformerEncoderDecoder
from .seq2seq import n_parameters, reversal_batch

__all__ = ["TransformerSeq2Seq", "train_transformer_reversal", "REVERSAL_CONFIG"]

# The width chosen so that the model has about as many parameters as chapter 0's GRU with
# additive attention (15,738 at d_hidden=32): 15,786 here.
REVERSAL_CONFIG = {"d_model": 24, "n_heads": 4, "n_layers": 1, "d_ff": 76}


class TransformerSeq2Seq(nn.Module):
    """Symbols in, symbol logits out: embeddings + positions -> ``TransformerEncoderDecoder`` -> a head.

    ``forward(source (B, n), target (B, T))`` decodes with teacher forcing (position ``t`` reads
    ``target[:, t-1]``, position 0 the start symbol) and returns ``logits (B, T, n_symbols)`` and
    the cross-attention weights of every decoder layer, each ``(B, H, T, n)``.
    ``greedy(source, steps)`` writes ``steps`` symbols one at a time with the decoding cache.
    """

    def __init__(
        self,
        n_symbols: int,
        d_model: int = 24,
        n_heads: int = 4,
        n_layers: int = 1,
        d_ff: int = 76,
        *,
        max_len: int = 64,
        norm_first: bool = True,
    ) -> None:
        super().__init__()
        self.n_symbols = positive_int("n_symbols", n_symbols)
        self.src_emb = nn.Embedding(n_symbols, d_model)
        self.tgt_emb = nn.Embedding(n_symbols + 1, d_model)  # the last id is the start symbol
        pe = torch.as_tensor(sinusoidal_positional_encoding(max_len, d_model), dtype=torch.float32)
        self.register_buffer("pe", pe, persistent=False)  # (max_len, d_model), no parameters
        self.model = TransformerEncoderDecoder(d_model, n_heads, n_layers, d_ff=d_ff, norm_first=norm_first)
        self.head = nn.Linear(d_model, n_symbols)

    def _embed_source(self, source: torch.Tensor) -> torch.Tensor:
        return self.src_emb(source) + self.pe[: source.shape[1]]  # (B, n) -> (B, n, d_model)

    def _embed_target(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        return self.tgt_emb(tokens) + self.pe[start : start + tokens.shape[1]]

    def _shifted(self, target: torch.Tensor) -> torch.Tensor:
        start = torch.full_like(target[:, :1], self.n_symbols)
        return torch.cat([start, target[:, :-1]], dim=1)  # (B, T): start, y_0 .. y_{T-2}

    def forward(self, source: torch.Tensor, target: torch.Tensor):
        memory = self.model.encode(self._embed_source(source))
        out, cross = self.model.decode(self._embed_target(self._shifted(target)), memory, return_weights=True)
        return self.head(out), cross  # (B, T, d_model) -> (B, T, n_symbols)

    @torch.no_grad()
    def greedy(self, source: torch.Tensor, steps: int | None = None):
        """Decode ``steps`` symbols (default: the source length), feeding back the argmax; returns
        ``(symbols (B, steps), None)`` like ``Seq2Seq.greedy``.  The encoder runs once and each
        decoder layer's cross-attention keys and values are projected once (``start_decoding``)."""
        steps = source.shape[1] if steps is None else steps
        cache = self.model.start_decoding(self.model.encode(self._embed_source(source)))
        previous = torch.full_like(source[:, :1], self.n_symbols)
        written = []
        for t in range(steps):
            out = self.model.decode_step(self._embed_target(previous, t), cache)  # (B, 1, d_model)
            previous = self.head(out).argmax(-1)  # (B, 1)
            written.append(previous)
        return torch.cat(written, dim=1), None


def train_transformer_reversal(
    n: int,
    *,
    n_symbols: int = 10,
    steps: int = 400,
    batch_size: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
    config: dict | None = None,
):
    """Train ``TransformerSeq2Seq`` on reversal of length ``n`` with chapter 0's batches.

    The data generator is seeded ``10_000 + seed`` as in ``train_reversal``; Adam, cross-entropy,
    gradients clipped to norm 1.  Returns ``(model, losses)``.
    """
    torch.manual_seed(seed)
    model = TransformerSeq2Seq(n_symbols, **(config or REVERSAL_CONFIG))
    data = torch.Generator().manual_seed(10_000 + seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        source, target = reversal_batch(batch_size, n, n_symbols, data)
        logits, _ = model(source, target)
        loss = nn.functional.cross_entropy(logits.reshape(-1, n_symbols), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return model.eval(), np.array(losses)


def parameter_count(config: dict | None = None, n_symbols: int = 10) -> int:
    return n_parameters(TransformerSeq2Seq(n_symbols, **(config or REVERSAL_CONFIG)))
