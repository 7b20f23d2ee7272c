"""A captioner that looks (chapter 12): chapter 10's ViT reads an 8 x 8 digit, a small decoder spells its name.

::

    image (B, 1, 8, 8) -> ViT encoder (patches, positions, blocks; no head) -> memory (B, N, d_model)
    letters so far (B, T) -> embeddings + positions -> DecoderBlock(s): causal self-attention,
                             cross-attention to the memory -> LayerNorm -> letter logits (B, T, V)

The decoder writes "seven" one letter at a time and then ``END``; its cross-attention row for
each letter says which of the image's patches that letter read.  ``keep (B, N)`` (boolean, True =
keep) removes patches from both the encoder's self-attention and the decoder's cross-attention.
"""

from __future__ import annotations

import torch
from torch import nn

from .decoder_block import DecoderBlock
from .vit import VisionTransformer

__all__ = ["DIGIT_NAMES", "LETTERS", "DigitCaptioner", "encode_names", "decode_letters", "train_captioner"]

DIGIT_NAMES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
LETTERS = "".join(sorted(set("".join(DIGIT_NAMES))))  # the 15 letters the names use
END = len(LETTERS)  # written after the last letter
START = END + 1  # read before the first letter (never written)
MAX_LETTERS = max(map(len, DIGIT_NAMES)) + 1  # five letters and END


def encode_names(labels: torch.Tensor) -> torch.Tensor:
    """Digit labels ``(B,)`` -> letter ids ``(B, MAX_LETTERS)``: the name, then ``END`` to the end."""
    table = torch.full((10, MAX_LETTERS), END, dtype=torch.long)
    for digit, name in enumerate(DIGIT_NAMES):
        table[digit, : len(name)] = torch.tensor([LETTERS.index(c) for c in name])
    return table[labels]


def decode_letters(ids) -> list:
    """Letter ids ``(B, T)`` -> the words, each cut at its first ``END``."""
    words = []
    for row in ids.tolist():
        row = row[: row.index(END)] if END in row else row
        words.append("".join(LETTERS[i] if i < END else "?" for i in row))
    return words


class DigitCaptioner(nn.Module):
    """Chapter 10's ViT (mean pooling dropped: the decoder reads every patch) and a text decoder.

    ``forward(images, letters, *, keep=None)`` decodes with teacher forcing and returns the letter
    logits ``(B, T, V)``, the encoder's self-attention weights (per layer ``(B, H, N, N)``) and the
    decoder's cross-attention weights (per layer ``(B, H, T, N)``).
    """

    def __init__(
        self,
        d_model: int = 32,
        n_heads: int = 4,
        n_layers: int = 2,
        n_decoder_layers: int = 1,
        d_ff: int = 64,
    ):
        super().__init__()
        self.vit = VisionTransformer(
            8, 2, 1, 10, d_model=d_model, n_heads=n_heads, n_layers=n_layers, d_ff=d_ff, pool="mean"
        )
        self.vit.head = nn.Identity()  # the classifier's head is not used: the decoder reads the patches
        self.letter_emb = nn.Embedding(len(LETTERS) + 2, d_model)  # letters, END, START
        self.letter_pos = nn.Parameter(0.02 * torch.randn(MAX_LETTERS, d_model))
        self.decoder = nn.ModuleList(
            DecoderBlock(d_model, n_heads, d_ff, norm_first=True) for _ in range(n_decoder_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, len(LETTERS) + 1)  # letters and END

    def encode(self, images: torch.Tensor, keep: torch.Tensor | None = None):
        """``memory (B, N, d_model)`` and the encoder's self-attention weights, per layer ``(B, H, N, N)``."""
        x = self.vit.embed(images)  # (B, 1, 8, 8) -> (B, N, d_model), positions added
        weights = []
        for block in self.vit.blocks:
            x, w = block(x, key_padding_mask=keep)  # no causal mask; removed patches hidden
            weights.append(w)
        return self.vit.norm(x), weights

    def decode(self, letters_in: torch.Tensor, memory: torch.Tensor, keep: torch.Tensor | None = None):
        x = self.letter_emb(letters_in) + self.letter_pos[: letters_in.shape[1]]  # (B, T) -> (B, T, d)
        cross = []
        for block in self.decoder:
            x, _, w = block(x, memory, memory_padding=keep)  # causal over letters, every kept patch
            cross.append(w)
        return self.head(self.norm(x)), cross  # (B, T, d) -> (B, T, V)

    def forward(self, images: torch.Tensor, letters: torch.Tensor, *, keep: torch.Tensor | None = None):
        memory, self_weights = self.encode(images, keep)
        start = torch.full_like(letters[:, :1], START)
        logits, cross = self.decode(torch.cat([start, letters[:, :-1]], dim=1), memory, keep)
        return logits, self_weights, cross

    @torch.no_grad()
    def caption(self, images: torch.Tensor, *, keep: torch.Tensor | None = None):
        """Greedy decoding: ``(letter ids (B, MAX_LETTERS), cross-attention per layer (B, H, T, N))``."""
        memory, _ = self.encode(images, keep)
        written = torch.full((images.shape[0], 1), START, dtype=torch.long)
        for _ in range(MAX_LETTERS):
            logits, cross = self.decode(written, memory, keep)
            written = torch.cat([written, logits[:, -1:].argmax(-1)], dim=1)
        return written[:, 1:], cross


def train_captioner(
    model: DigitCaptioner,
    images,
    labels,
    *,
    epochs: int = 20,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 0.05,
    seed: int = 0,
) -> list:
    """Chapter 10's recipe (AdamW, one-cycle learning rate, shuffled mini-batches) on letter
    cross-entropy with teacher forcing; returns the losses and leaves the model in eval mode."""
    targets = encode_names(labels)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    steps_per_epoch = -(-len(labels) // batch_size)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        opt, lr, total_steps=epochs * steps_per_epoch, pct_start=0.1
    )
    g = torch.Generator().manual_seed(seed)
    losses = []
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(labels), generator=g)
        for i in range(0, len(order), batch_size):
            batch = order[i : i + batch_size]
            logits, _, _ = model(images[batch], targets[batch])
            loss = nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), targets[batch].reshape(-1)
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
            losses.append(loss.item())
    model.eval()
    return losses
