"""A small Vision Transformer (ViT, Dosovitskiy et al., 2021) built from ``TransformerBlock`` (imports torch).

::

    images (B, C, H, W)
      -> patchify                      (B, N, C*P*P)       N = (H/P)(W/P) patches
      -> linear patch embedding        (B, N, d_model)     the same map as Conv2d(C, d, P, stride=P)
      -> [CLS] token in front          (B, 1 + N, d_model) (pool="cls")
      -> + position embeddings         learned, 2-D sinusoidal, or none
      -> n_layers pre-norm blocks      no mask: every patch sees every other
      -> LayerNorm, pool ([CLS] or the mean of the patches), Linear -> logits (B, n_classes)
"""

from __future__ import annotations

import torch
from torch import nn

from .._backend import AttentionInputError, fmt_shape
from .._validation import positive_int, public
from ..positional import sinusoidal_positional_encoding
from ..vision import patchify
from .transformer import TransformerBlock

__all__ = ["VisionTransformer", "sinusoidal_positions_2d", "digits_split", "train_classifier", "accuracy"]

POOLS = ("cls", "mean")
POSITIONS = ("learned", "sinusoidal", "none")


@public("sinusoidal_positions_2d")
def sinusoidal_positions_2d(grid_h: int, grid_w: int, d_model: int) -> torch.Tensor:
    """2-D sinusoidal positions ``(grid_h * grid_w, d_model)``, row-major like ``patchify``.

    The first half of the features is chapter 7's 1-D encoding of the patch's row, the second
    half that of its column (as in MAE's ``get_2d_sincos_pos_embed``); ``d_model`` must be a
    multiple of 4.

    Examples
    --------
    >>> pe = sinusoidal_positions_2d(2, 3, 8)
    >>> tuple(pe.shape), bool((pe[0, :4] == pe[2, :4]).all())  # patches 0 and 2 share a row
    ((6, 8), True)
    """
    positive_int("grid_h", grid_h)
    positive_int("grid_w", grid_w)
    if positive_int("d_model", d_model) % 4:
        raise AttentionInputError(
            f"d_model must be a multiple of 4 for 2-D sinusoidal positions; got {d_model}."
        )
    rows = torch.as_tensor(sinusoidal_positional_encoding(grid_h, d_model // 2), dtype=torch.float32)
    cols = torch.as_tensor(sinusoidal_positional_encoding(grid_w, d_model // 2), dtype=torch.float32)
    rows = rows[:, None, :].expand(grid_h, grid_w, d_model // 2)  # (gh, d/2) -> (gh, gw, d/2)
    cols = cols[None, :, :].expand(grid_h, grid_w, d_model // 2)  # (gw, d/2) -> (gh, gw, d/2)
    return torch.cat([rows, cols], dim=-1).reshape(grid_h * grid_w, d_model)


class VisionTransformer(nn.Module):
    """A small ViT classifier: patches, a [CLS] token, positions, pre-norm blocks, a linear head.

    Parameters
    ----------
    image_size : int or (H, W)
    patch_size : int
        ``P``; must divide ``H`` and ``W``.
    in_channels, n_classes, d_model, n_heads, n_layers : int
    d_ff : int, optional
        The blocks' MLP width; default ``4 * d_model``.
    pool : {"cls", "mean"}
        Classify from a learned [CLS] token prepended to the patches, or from the mean of the
        patch tokens (no [CLS]).
    positions : {"learned", "sinusoidal", "none"}
        Learned position vectors (one per token, [CLS] included), fixed 2-D sinusoidal ones
        (:func:`sinusoidal_positions_2d`; [CLS] gets none), or none at all.
    dropout : float

    ``forward(images, *, keep=None, return_weights=False)`` takes ``images (B, C, H, W)`` (or
    ``(B, H, W)`` when ``in_channels == 1``) and returns ``logits (B, n_classes)``, and with
    ``return_weights=True`` also every layer's attention weights, each ``(B, n_heads, T, T)``
    with ``T = N + 1`` tokens ([CLS] first) or ``N``.  ``keep (B, N)`` (boolean, True = keep)
    removes patches: no token attends to a removed patch and mean pooling skips it.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> vit = VisionTransformer(8, 2, 1, 10, d_model=16, n_heads=2, n_layers=2)
    >>> logits, weights = vit(torch.randn(5, 1, 8, 8), return_weights=True)
    >>> tuple(logits.shape), len(weights), tuple(weights[0].shape)  # 16 patches + [CLS]
    ((5, 10), 2, (5, 2, 17, 17))
    """

    @public("VisionTransformer")
    def __init__(
        self,
        image_size,
        patch_size: int,
        in_channels: int,
        n_classes: int,
        d_model: int,
        n_heads: int,
        n_layers: int,
        d_ff: int | None = None,
        *,
        pool: str = "cls",
        positions: str = "learned",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        H, W = (image_size, image_size) if isinstance(image_size, int) else tuple(image_size)
        for name, n in (
            ("image H", H),
            ("image W", W),
            ("in_channels", in_channels),
            ("n_classes", n_classes),
        ):
            positive_int(name, n)
        P = positive_int("patch_size", patch_size)
        if H % P or W % P:
            raise AttentionInputError(f"image H={H} and W={W} must both be divisible by patch_size P={P}.")
        if pool not in POOLS:
            raise AttentionInputError(f"pool must be one of {POOLS}; got {pool!r}.")
        if positions not in POSITIONS:
            raise AttentionInputError(f"positions must be one of {POSITIONS}; got {positions!r}.")
        self.image_size, self.patch_size, self.in_channels = (H, W), P, in_channels
        self.grid = (H // P, W // P)
        self.n_patches = self.grid[0] * self.grid[1]
        self.pool, self.positions = pool, positions
        n_tokens = self.n_patches + (pool == "cls")
        self.patch_embed = nn.Linear(in_channels * P * P, d_model)  # = Conv2d(C, d, P, stride=P)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d_model)) if pool == "cls" else None
        if positions == "learned":
            self.pos_embed = nn.Parameter(0.02 * torch.randn(1, n_tokens, d_model))
        else:
            self.register_parameter("pos_embed", None)
        if positions == "sinusoidal":
            pe = sinusoidal_positions_2d(*self.grid, d_model)  # (N, d)
            if pool == "cls":
                pe = torch.cat([torch.zeros(1, d_model), pe])  # [CLS] has no place on the grid
            self.register_buffer("fixed_pos", pe[None], persistent=False)
        else:
            self.fixed_pos = None
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, d_ff, dropout=dropout) for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes)

    def _check(self, images: torch.Tensor) -> torch.Tensor:
        if not isinstance(images, torch.Tensor) or not images.dtype.is_floating_point:
            raise AttentionInputError(f"images must be a floating torch tensor; got {type(images).__name__}.")
        if images.ndim == 3 and self.in_channels == 1:
            images = images[:, None]  # (B, H, W) -> (B, 1, H, W)
        want = (self.in_channels, *self.image_size)
        if images.ndim != 4 or tuple(images.shape[1:]) != want:
            raise AttentionInputError(
                f"images must be (B, {', '.join(map(str, want))}); got {fmt_shape(images)}."
            )
        return images

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """The token sequence before the first block: ``(B, T, d_model)``, [CLS] first when pooling by it."""
        images = self._check(images)
        x = self.patch_embed(patchify(images, self.patch_size))  # (B, C, H, W) -> (B, N, C*P*P) -> (B, N, d)
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)  # -> (B, 1 + N, d)
        if self.pos_embed is not None:
            x = x + self.pos_embed
        elif self.fixed_pos is not None:
            x = x + self.fixed_pos
        return self.drop(x)

    @public("VisionTransformer")
    def forward(
        self, images: torch.Tensor, *, keep: torch.Tensor | None = None, return_weights: bool = False
    ):
        x = self.embed(images)
        B = x.shape[0]
        key_mask = None
        if keep is not None:
            if (
                not isinstance(keep, torch.Tensor)
                or keep.dtype != torch.bool
                or tuple(keep.shape) != (B, self.n_patches)
            ):
                raise AttentionInputError(
                    f"keep must be a boolean (B, N) = ({B}, {self.n_patches}) tensor, True = keep; got "
                    + (
                        f"{keep.dtype} {fmt_shape(keep)}."
                        if isinstance(keep, torch.Tensor)
                        else type(keep).__name__
                    )
                )
            key_mask = keep
            if self.cls_token is not None:
                key_mask = torch.cat([keep.new_ones(B, 1), keep], dim=1)  # [CLS] always stays
        weights = []
        for block in self.blocks:
            x, w = block(x, key_padding_mask=key_mask)  # no causal mask: every token sees the whole image
            weights.append(w)
        x = self.norm(x)
        if self.pool == "cls":
            pooled = x[:, 0]  # (B, T, d) -> (B, d): the [CLS] token
        elif key_mask is None:
            pooled = x.mean(dim=1)  # (B, N, d) -> (B, d)
        else:
            kept = key_mask[..., None].to(x.dtype)  # (B, N, 1)
            pooled = (x * kept).sum(1) / kept.sum(1)  # mean over the kept patches
        logits = self.head(pooled)  # (B, d) -> (B, n_classes)
        return (logits, weights) if return_weights else logits


def digits_split(n_test: int = 450, seed: int = 0):
    """scikit-learn's bundled 8 x 8 digits (1797 images, no download) as a seeded train / test split.

    Returns ``(x_train, y_train, x_test, y_test)``: images ``(n, 1, 8, 8)`` float32 scaled to
    ``[0, 1]`` and integer labels 0..9.  Needs scikit-learn.
    """
    import numpy as np
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = torch.tensor(digits.images / 16.0, dtype=torch.float32)[
        :, None
    ]  # (1797, 8, 8) -> (1797, 1, 8, 8)
    labels = torch.tensor(digits.target)
    order = torch.as_tensor(np.random.default_rng(seed).permutation(len(labels)))
    test, train = order[:n_test], order[n_test:]
    return images[train], labels[train], images[test], labels[test]


def train_classifier(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    epochs: int = 30,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 0.05,
    seed: int = 0,
) -> list:
    """Train ``model`` (images -> logits) with AdamW and a one-cycle learning rate; return the losses.

    Cross-entropy on shuffled mini-batches (the order seeded by ``seed``), the learning rate
    warming up over the first 10% of steps and annealing to zero.  Leaves the model in eval mode.
    """
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
            loss = nn.functional.cross_entropy(model(images[batch]), labels[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
            losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, **kwargs) -> float:
    """The fraction of ``images`` whose largest logit is the label (``kwargs`` go to the model)."""
    model.eval()
    return (model(images, **kwargs).argmax(-1) == labels).float().mean().item()
