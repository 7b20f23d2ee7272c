"""Array-kind dispatch shared by every numerical module.

A function in ``attncourse`` accepts numpy arrays or torch tensors and gives back the same
kind, on the same device, in the same dtype.  This module answers "which kind is this?"
without importing torch (so the numpy path works where torch is absent) and offers the
handful of operations whose spelling differs between the two libraries.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = [
    "AttentionInputError",
    "AttentionTypeError",
    "is_torch",
    "kind_of",
    "common_kind",
    "ops_for",
    "fmt_shape",
]


class AttentionInputError(ValueError):
    """Bad input to an ``attncourse`` function: wrong shapes, lengths or values."""


class AttentionTypeError(AttentionInputError, TypeError):
    """Bad kind or dtype of input (numpy mixed with torch, an integer mask, ...).

    It is both a ``TypeError`` and a ``ValueError``, so either ``except`` catches it.
    """


def is_torch(x: Any) -> bool:
    """True if ``x`` is a torch tensor.  Never imports torch."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def kind_of(x: Any) -> str:
    """``"torch"`` for a torch tensor, ``"numpy"`` for anything else (arrays, lists, scalars)."""
    return "torch" if is_torch(x) else "numpy"


def fmt_shape(x: Any) -> str:
    """A shape as ``(2, 5, 8)``: the same text for numpy and torch."""
    return str(tuple(int(n) for n in x.shape))


def common_kind(func: str, **arrays: Any) -> str:
    """The one kind shared by the named arguments (``None`` values are skipped).

    Raises ``AttentionTypeError`` naming each argument's kind when numpy and torch are mixed.
    """
    kinds = {name: kind_of(a) for name, a in arrays.items() if a is not None}
    if len(set(kinds.values())) > 1:
        listed = ", ".join(f"{name} is {kind}" for name, kind in kinds.items())
        raise AttentionTypeError(
            f"{func}: numpy arrays and torch tensors cannot be mixed ({listed}).\n"
            "Convert them to one kind first: torch.as_tensor(x, device=q.device) or t.numpy(force=True)."
        )
    return next(iter(kinds.values()), "numpy")


class _NumpyOps:
    """The operations below, spelled for numpy."""

    name = "numpy"
    inf = np.inf

    @staticmethod
    def asarray(x):
        return np.asarray(x)

    @staticmethod
    def is_floating(x) -> bool:
        return np.issubdtype(x.dtype, np.floating)

    @staticmethod
    def is_bool(x) -> bool:
        return x.dtype == np.bool_

    @staticmethod
    def is_integer(x) -> bool:
        return np.issubdtype(x.dtype, np.integer)

    @staticmethod
    def compute_dtype(x):
        # Half precision is computed in float32 and cast back at the end.
        return np.float32 if x.dtype == np.float16 else x.dtype

    @staticmethod
    def astype(x, dtype):
        return x.astype(dtype, copy=False)

    @staticmethod
    def amax(x, axis, keepdims=True):
        return np.max(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def sum(x, axis, keepdims=True):
        return np.sum(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def detach(x):
        return x

    exp = staticmethod(np.exp)
    tanh = staticmethod(np.tanh)

    @staticmethod
    def exp_(x):
        # In place when x is an array (not a numpy scalar); x must be a fresh temporary.
        return np.exp(x, out=x) if isinstance(x, np.ndarray) else np.exp(x)

    where = staticmethod(np.where)
    logical_and = staticmethod(np.logical_and)
    logical_not = staticmethod(np.logical_not)
    isneginf = staticmethod(np.isneginf)

    @staticmethod
    def swap_last(x):
        return np.swapaxes(x, -1, -2)

    @staticmethod
    def tril_mask(L: int, S: int, like=None):
        return np.tril(np.ones((L, S), dtype=bool))

    @staticmethod
    def arange(n: int, like=None):
        return np.arange(n)

    @staticmethod
    def zeros_like(x):
        return np.zeros_like(x)

    @staticmethod
    def concatenate(xs, axis):
        return np.concatenate(xs, axis=axis)

    @staticmethod
    def stack(xs, axis):
        return np.stack(xs, axis=axis)

    @staticmethod
    def float_dtype_for(like):
        return np.float64


class _TorchOps:
    """The same operations, spelled for torch (imported only when a tensor arrives)."""

    name = "torch"
    inf = float("inf")

    def __init__(self):
        import torch

        self.torch = torch
        self.exp = torch.exp
        self.tanh = torch.tanh
        self.where = torch.where
        self.logical_and = torch.logical_and
        self.logical_not = torch.logical_not
        self.isneginf = torch.isneginf

    def asarray(self, x):
        return x if isinstance(x, self.torch.Tensor) else self.torch.as_tensor(x)

    @staticmethod
    def exp_(x):
        # In place on a fresh temporary; autograd allows it (exp saves its output, not its input).
        return x.exp_()

    def is_floating(self, x) -> bool:
        return x.dtype.is_floating_point

    def is_bool(self, x) -> bool:
        return x.dtype == self.torch.bool

    def is_integer(self, x) -> bool:
        return not x.dtype.is_floating_point and not x.dtype.is_complex and x.dtype != self.torch.bool

    def compute_dtype(self, x):
        # float16 / bfloat16 are computed in float32 and cast back at the end.
        return self.torch.float32 if x.dtype in (self.torch.float16, self.torch.bfloat16) else x.dtype

    def astype(self, x, dtype):
        return x.to(dtype)

    def amax(self, x, axis, keepdims=True):
        return self.torch.amax(x, dim=axis, keepdim=keepdims)

    def sum(self, x, axis, keepdims=True):
        return self.torch.sum(x, dim=axis, keepdim=keepdims)

    def detach(self, x):
        return x.detach()

    def swap_last(self, x):
        return x.transpose(-1, -2)

    def tril_mask(self, L: int, S: int, like=None):
        device = like.device if like is not None else None
        return self.torch.ones((L, S), dtype=self.torch.bool, device=device).tril()

    def arange(self, n: int, like=None):
        device = like.device if like is not None else None
        return self.torch.arange(n, device=device)

    def zeros_like(self, x):
        return self.torch.zeros_like(x)

    def concatenate(self, xs, axis):
        return self.torch.cat(list(xs), dim=axis)

    def stack(self, xs, axis):
        return self.torch.stack(list(xs), dim=axis)

    def float_dtype_for(self, like):
        return like.dtype if like is not None and like.dtype.is_floating_point else self.torch.get_default_dtype()


_NUMPY_OPS = _NumpyOps()
_TORCH_OPS: _TorchOps | None = None


def ops_for(kind: str):
    """The operation table for ``"numpy"`` or ``"torch"``."""
    global _TORCH_OPS
    if kind == "numpy":
        return _NUMPY_OPS
    if _TORCH_OPS is None:
        _TORCH_OPS = _TorchOps()
    return _TORCH_OPS
