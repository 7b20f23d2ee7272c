"""Array-kind dispatch shared by every numerical module.

A function in ``attncourse`` accepts numpy arrays or torch tensors and gives back the same
kind, on the same device, in the same dtype.  This module answers "which kind is this?"
without importing torch (so the numpy path works where torch is absent) and offers the
handful of operations whose spelling differs between the two libraries.

Why a table of our own and not the array-API standard (``array-api-compat``): the tiled loop of
``flash.py`` meets its memory budget by working in place on one reused tile (``fast_exp_``,
``sub_``, ``masked_fill_``), and the standard has no in-place or ``out=`` operations; it would
also add a dependency to a package that needs only numpy.  The table holds just the operations
the algorithms use, each a line or two, so a reader sees at once what differs between numpy and
torch.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Optional

import numpy as np

# exp(x) = 2 ** (x * LOG2_E)
LOG2_E = 1.0 / math.log(2.0)

__all__ = [
    "AttentionInputError",
    "AttentionTypeError",
    "is_torch",
    "kind_of",
    "common_kind",
    "ops_for",
    "namespace",
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


def common_kind(func: Optional[str] = None, /, **arrays: Any) -> str:
    """The one kind shared by the named arguments (``None`` values are skipped).

    Raises ``AttentionTypeError`` naming each argument's kind when numpy and torch are mixed.
    Inside a function decorated with ``_validation.public`` leave out ``func``: the boundary
    adds the public name.
    """
    kinds = {name: kind_of(a) for name, a in arrays.items() if a is not None}
    if len(set(kinds.values())) > 1:
        listed = ", ".join(f"{name} is {kind}" for name, kind in kinds.items())
        raise AttentionTypeError(
            f"{func + ': ' if func else ''}numpy arrays and torch tensors cannot be mixed ({listed}).\n"
            "Convert them to one kind first: torch.as_tensor(x, device=q.device) or t.numpy(force=True)."
        )
    return next(iter(kinds.values()), "numpy")


def namespace(**arrays: Any):
    """The operation table for the one kind shared by the named arguments (see ``common_kind``)."""
    return ops_for(common_kind(**arrays))


class _NumpyOps:
    """The operations the algorithms need, spelled for numpy.

    Methods ending in ``_`` work in place on their first argument, which must be a fresh
    temporary (never a caller's array); they return it.
    """

    name = "numpy"
    inf = np.inf

    @staticmethod
    def asarray(x):
        return np.asarray(x)

    @staticmethod
    def device(x) -> str:
        return "cpu"

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
    def float_dtype_for(like):
        return np.float64

    @staticmethod
    def from_numpy(a, like=None):
        """A numpy array as this kind, with ``like``'s float dtype and device (numpy: as is)."""
        return a

    @staticmethod
    def to_device_of(x, like):
        return x

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
    cos = staticmethod(np.cos)
    sin = staticmethod(np.sin)
    tanh = staticmethod(np.tanh)
    maximum = staticmethod(np.maximum)
    matmul = staticmethod(np.matmul)
    where = staticmethod(np.where)
    logical_and = staticmethod(np.logical_and)
    logical_not = staticmethod(np.logical_not)
    isneginf = staticmethod(np.isneginf)
    broadcast_to = staticmethod(np.broadcast_to)
    moveaxis = staticmethod(np.moveaxis)

    @staticmethod
    def exp_(x):
        return np.exp(x, out=x) if isinstance(x, np.ndarray) else np.exp(x)

    # The tiled loop's exponential, ``fast_exp(x * FAST_EXP_SCALE) == exp(x)``.  numpy's exp2 on
    # float32 runs at one of two speeds from one process to the next (about 55 or 175 us for a
    # 1 MiB tile on the machine the course is tested on), its exp steadily at about 95 us: exp.
    FAST_EXP_SCALE = 1.0
    fast_exp = staticmethod(np.exp)

    @staticmethod
    def fast_exp_(x):
        return np.exp(x, out=x)

    @staticmethod
    def sub_(x, y):
        return np.subtract(x, y, out=x)

    @staticmethod
    def mul_(x, y):
        return np.multiply(x, y, out=x)

    @staticmethod
    def add_(x, y):
        return np.add(x, y, out=x)

    @staticmethod
    def masked_fill_(x, blocked, value):
        np.copyto(x, value, where=blocked)
        return x

    @staticmethod
    def swap_last(x):
        return np.swapaxes(x, -1, -2)

    @staticmethod
    def swap_axes(x, a, b):
        return np.swapaxes(x, a, b)

    @staticmethod
    def tril_mask(L: int, S: int, like=None):
        return np.tril(np.ones((L, S), dtype=bool))

    @staticmethod
    def arange(n: int, like=None, dtype=None):
        return np.arange(n, dtype=dtype)

    @staticmethod
    def zeros(shape, like):
        return np.zeros(shape, dtype=like.dtype)

    @staticmethod
    def empty(shape, like):
        return np.empty(shape, dtype=like.dtype)

    @staticmethod
    def requires_grad(*arrays) -> bool:
        return False

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
    def cumsum(x, axis):
        return np.cumsum(x, axis=axis)

    @staticmethod
    def argsort_descending(x):
        """Indices that sort the last axis from largest to smallest; ties keep the lower index first."""
        return np.argsort(-x, axis=-1, kind="stable")

    @staticmethod
    def take_along_axis(x, indices, axis):
        return np.take_along_axis(x, indices, axis=axis)

    @staticmethod
    def scatter_along_axis(x, indices, values, axis):
        """A copy of ``x`` with ``values`` written at ``indices`` along ``axis``."""
        out = x.copy()
        np.put_along_axis(out, indices, values, axis=axis)
        return out


class _TorchOps:
    """The same operations, spelled for torch (imported only when a tensor arrives).

    The in-place methods are safe under autograd here: each is applied to a fresh result that
    no backward formula has saved (matmul saves its inputs, exp2 its output, which is never
    changed afterwards).

    The tiled loop's exponential is exp2, cheaper than exp, with log2(e) folded into the scores
    (FlashAttention's kernels do the same): ``fast_exp(x * FAST_EXP_SCALE) == exp(x)``.
    """

    name = "torch"
    inf = float("inf")
    FAST_EXP_SCALE = LOG2_E

    def __init__(self):
        import torch

        self.torch = torch
        self.exp = torch.exp
        self.fast_exp = torch.exp2
        self.cos = torch.cos
        self.sin = torch.sin
        self.tanh = torch.tanh
        self.maximum = torch.maximum
        self.matmul = torch.matmul
        self.where = torch.where
        self.logical_and = torch.logical_and
        self.logical_not = torch.logical_not
        self.isneginf = torch.isneginf
        self.broadcast_to = torch.broadcast_to
        self.moveaxis = torch.movedim

    def asarray(self, x):
        return x if isinstance(x, self.torch.Tensor) else self.torch.as_tensor(x)

    @staticmethod
    def device(x):
        return x.device

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

    def from_numpy(self, a, like=None):
        dtype = self.float_dtype_for(like) if a.dtype.kind == "f" else None
        return self.torch.as_tensor(a, dtype=dtype, device=None if like is None else like.device)

    @staticmethod
    def to_device_of(x, like):
        return x.to(like.device)

    def float_dtype_for(self, like):
        return (
            like.dtype
            if like is not None and like.dtype.is_floating_point
            else self.torch.get_default_dtype()
        )

    def amax(self, x, axis, keepdims=True):
        return self.torch.amax(x, dim=axis, keepdim=keepdims)

    def sum(self, x, axis, keepdims=True):
        return self.torch.sum(x, dim=axis, keepdim=keepdims)

    @staticmethod
    def detach(x):
        return x.detach()

    @staticmethod
    def exp_(x):
        return x.exp_()

    @staticmethod
    def fast_exp_(x):
        return x.exp2_()

    @staticmethod
    def sub_(x, y):
        return x.sub_(y)

    @staticmethod
    def mul_(x, y):
        return x.mul_(y)

    @staticmethod
    def add_(x, y):
        return x.add_(y)

    @staticmethod
    def masked_fill_(x, blocked, value):
        return x.masked_fill_(blocked, value)

    @staticmethod
    def swap_last(x):
        return x.transpose(-1, -2)

    @staticmethod
    def swap_axes(x, a, b):
        return x.transpose(a, b)

    def tril_mask(self, L: int, S: int, like=None):
        device = like.device if like is not None else None
        return self.torch.ones((L, S), dtype=self.torch.bool, device=device).tril()

    def arange(self, n: int, like=None, dtype=None):
        device = like.device if like is not None else None
        return self.torch.arange(n, device=device, dtype=dtype)

    def zeros(self, shape, like):
        return self.torch.zeros(shape, dtype=like.dtype, device=like.device)

    def empty(self, shape, like):
        return self.torch.empty(shape, dtype=like.dtype, device=like.device)

    def requires_grad(self, *arrays) -> bool:
        """True when autograd would record an operation on these tensors."""
        return self.torch.is_grad_enabled() and any(a.requires_grad for a in arrays)

    def zeros_like(self, x):
        return self.torch.zeros_like(x)

    def concatenate(self, xs, axis):
        return self.torch.cat(list(xs), dim=axis)

    def stack(self, xs, axis):
        return self.torch.stack(list(xs), dim=axis)

    def cumsum(self, x, axis):
        return self.torch.cumsum(x, dim=axis)

    def argsort_descending(self, x):
        """Indices that sort the last axis from largest to smallest; ties keep the lower index first."""
        return self.torch.sort(x, dim=-1, descending=True, stable=True).indices

    def take_along_axis(self, x, indices, axis):
        return self.torch.take_along_dim(x, indices, dim=axis)

    @staticmethod
    def scatter_along_axis(x, indices, values, axis):
        """A copy of ``x`` with ``values`` written at ``indices`` along ``axis`` (differentiable)."""
        return x.scatter(axis, indices, values)


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
