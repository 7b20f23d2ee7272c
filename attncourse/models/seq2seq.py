"""A tiny RNN encoder-decoder with learned cross-attention (Bahdanau et al., 2014), for chapter 0.

The task is a toy translation, **reversal**: the source is ``n`` random symbols from
``0..n_symbols-1`` and the target is the same symbols in reverse order.  Output step ``t`` needs
source position ``n - 1 - t``, so a decoder that learns where to look should draw an anti-diagonal.

``Seq2Seq(n_symbols, d_hidden, attention=...)`` has a GRU encoder and a GRU decoder.  At output
step ``t`` the decoder gets a **context** ``c_t`` beside the previous target symbol:

* ``attention="additive"``: ``c_t = sum_s alpha_{t,s} h_s`` with
  ``alpha_t = softmax_s(w_v . tanh(W_q z_{t-1} + W_k h_s))`` (Bahdanau's score);
* ``attention="dot"``: the same with the score ``(W_q z_{t-1}) . h_s / sqrt(d_hidden)``;
* ``attention=None``: ``c_t = h_n``, the encoder's final state, at every step (the fixed-size
  state of the encoder-decoders before attention; Cho et al., 2014).

Nothing else differs, so the comparison is between the two kinds of context.  The encoder is a
trained GRU: whatever it forgets, it forgets because its state is too small for the task (or
training found no better), not because of a fixed decaying recurrence.  ``matched_hidden``
picks the fixed-state model's width so that it has as many parameters as an attention model.

``train_reversal`` trains one model with Adam on fresh batches and returns it with its loss
curve; ``evaluate_reversal`` scores greedy decoding on held-out sequences.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch
from torch import nn

__all__ = [
    "Seq2Seq",
    "evaluate_reversal",
    "matched_hidden",
    "n_parameters",
    "reversal_batch",
    "train_reversal",
]

_ATTENTION = (None, "additive", "dot")


def reversal_batch(batch_size: int, n: int, n_symbols: int, generator: torch.Generator):
    """``(source, target)``, each ``(batch_size, n)`` int64: random symbols and their reversal."""
    for name, value in (("batch_size", batch_size), ("n", n), ("n_symbols", n_symbols)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"reversal_batch: {name} must be a positive integer; got {value!r}.")
    source = torch.randint(0, n_symbols, (batch_size, n), generator=generator)
    return source, source.flip(1)


class Seq2Seq(nn.Module):
    """GRU encoder-decoder; the decoder's context is attention over all encoder states or ``h_n``.

    ``forward(source (B, n), target (B, T))`` runs the decoder with teacher forcing (step ``t``
    reads ``target[:, t-1]``, step 0 a start symbol) and returns ``logits (B, T, n_symbols)``
    and ``weights (B, T, n)`` (the attention weights; ``None`` for ``attention=None``).
    ``greedy(source, T)`` decodes without the target, feeding back its own most likely symbol.
    """

    def __init__(self, n_symbols: int, d_hidden: int, attention: Optional[str] = "additive", d_emb: int = 16):
        super().__init__()
        if attention not in _ATTENTION:
            raise ValueError(f"Seq2Seq: attention must be one of {_ATTENTION}; got {attention!r}.")
        for name, value in (("n_symbols", n_symbols), ("d_hidden", d_hidden), ("d_emb", d_emb)):
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"Seq2Seq: {name} must be a positive integer; got {value!r}.")
        self.n_symbols, self.d_hidden, self.attention = n_symbols, d_hidden, attention
        self.src_emb = nn.Embedding(n_symbols, d_emb)
        self.tgt_emb = nn.Embedding(n_symbols + 1, d_emb)  # the last id is the start symbol
        self.encoder = nn.GRU(d_emb, d_hidden, batch_first=True)
        self.decoder = nn.GRUCell(d_emb + d_hidden, d_hidden)  # input: [previous symbol; context]
        self.out = nn.Linear(2 * d_hidden, n_symbols)  # reads [decoder state; context]
        if attention is not None:
            self.W_q = nn.Linear(d_hidden, d_hidden, bias=False)
        if attention == "additive":
            self.W_k = nn.Linear(d_hidden, d_hidden, bias=False)
            self.w_v = nn.Linear(d_hidden, 1, bias=False)

    def _check(self, name: str, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.dtype.is_floating_point:
            raise ValueError(f"Seq2Seq: {name} must be an integer tensor (B, length); got {x!r:.60}.")
        if x.numel() and (int(x.min()) < 0 or int(x.max()) >= self.n_symbols):
            raise ValueError(
                f"Seq2Seq: {name} must hold symbols in [0, {self.n_symbols}); "
                f"got values from {int(x.min())} to {int(x.max())}."
            )

    def encode(self, source: torch.Tensor):
        """Every encoder state ``(B, n, d_hidden)`` and the final one ``(B, d_hidden)``."""
        states, final = self.encoder(self.src_emb(source))  # (B, n, d), (1, B, d)
        return states, final[0]

    def _context(self, s, states, keys):
        # s (B, d): the decoder state, the query; states (B, n, d): the values (and keys)
        if self.attention is None:
            return None, None
        if self.attention == "additive":
            # (B, 1, d) + (B, n, d) -> (B, n, d) -> (B, n)
            scores = self.w_v(torch.tanh(self.W_q(s)[:, None, :] + keys)).squeeze(-1)
        else:
            # (B, n, d) @ (B, d, 1) -> (B, n)
            scores = (states @ self.W_q(s)[:, :, None]).squeeze(-1) / math.sqrt(self.d_hidden)
        weights = torch.softmax(scores, dim=-1)  # over the source positions
        return (weights[:, :, None] * states).sum(1), weights  # (B, d), (B, n)

    def _step(self, previous, s, states, keys, final):
        context, weights = self._context(s, states, keys)
        if context is None:
            context = final  # the fixed-size state, the same at every step
        s = self.decoder(torch.cat([self.tgt_emb(previous), context], dim=-1), s)
        return self.out(torch.cat([s, context], dim=-1)), s, weights

    def _run(self, source, steps, target=None):
        self._check("source", source)
        states, final = self.encode(source)
        keys = self.W_k(states) if self.attention == "additive" else None  # once per sequence
        previous = torch.full((source.shape[0],), self.n_symbols, dtype=torch.long, device=source.device)
        s, logits, weights = final, [], []
        for t in range(steps):
            step_logits, s, w = self._step(previous, s, states, keys, final)
            logits.append(step_logits)
            weights.append(w)
            previous = target[:, t] if target is not None else step_logits.argmax(-1)
        weights = None if self.attention is None else torch.stack(weights, dim=1)
        return torch.stack(logits, dim=1), weights

    def forward(self, source: torch.Tensor, target: torch.Tensor):
        self._check("target", target)
        if target.shape[0] != source.shape[0]:
            raise ValueError(
                f"Seq2Seq: source (B, n) and target (B, T) must share B; got {tuple(source.shape)} "
                f"and {tuple(target.shape)}."
            )
        return self._run(source, target.shape[1], target)

    @torch.no_grad()
    def greedy(self, source: torch.Tensor, steps: Optional[int] = None):
        """Decode ``steps`` symbols (default: the source length) feeding back the argmax."""
        logits, weights = self._run(source, source.shape[1] if steps is None else steps)
        return logits.argmax(-1), weights


def n_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def matched_hidden(n_symbols: int, d_hidden: int, attention: str = "additive", d_emb: int = 16) -> int:
    """The width of a fixed-state ``Seq2Seq`` whose parameter count is closest to the attention
    model ``Seq2Seq(n_symbols, d_hidden, attention)``'s."""
    target = n_parameters(Seq2Seq(n_symbols, d_hidden, attention, d_emb))
    counts = {d: n_parameters(Seq2Seq(n_symbols, d, None, d_emb)) for d in range(d_hidden, 4 * d_hidden)}
    return min(counts, key=lambda d: abs(counts[d] - target))


def train_reversal(
    n: int,
    attention: Optional[str] = "additive",
    *,
    d_hidden: int = 32,
    n_symbols: int = 10,
    steps: int = 400,
    batch_size: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
):
    """Train ``Seq2Seq`` on reversal of length ``n``: fresh batches, Adam, cross-entropy.

    ``d_hidden`` is the attention models' width; ``attention=None`` gets ``matched_hidden``
    instead, so all three kinds have about the same number of parameters.  Returns
    ``(model, losses)`` with one loss per step.
    """
    torch.manual_seed(seed)
    width = d_hidden if attention is not None else matched_hidden(n_symbols, d_hidden, "additive")
    model = Seq2Seq(n_symbols, width, attention)
    data = torch.Generator().manual_seed(10_000 + seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
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


def evaluate_reversal(model: Seq2Seq, n: int, n_test: int = 1000, seed: int = 12345):
    """Greedy decoding on ``n_test`` held-out sequences: ``(symbol accuracy, sequence accuracy)``."""
    source, target = reversal_batch(n_test, n, model.n_symbols, torch.Generator().manual_seed(seed))
    predicted, _ = model.greedy(source)
    right = predicted == target
    return right.float().mean().item(), right.all(dim=1).float().mean().item()
