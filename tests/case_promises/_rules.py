"""Checks that several chapters' promises share; each returns a list of problems (empty: obeyed)."""

from __future__ import annotations

from typing import Any, Iterable, List

import numpy as np


def _array(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        x = x.numpy()
    return np.asarray(x)


def dtype_in(name: str, x: Any, allowed: Iterable[str]) -> List[str]:
    """``x``'s dtype is one of ``allowed`` (numpy names: "float32", "float64", "bool", "int64" ...)."""
    allowed = tuple(allowed)
    got = str(x.dtype).replace("torch.", "") if hasattr(x, "dtype") else type(x).__name__
    return [] if got in allowed else [f"{name} has dtype {got}; the prompt allows {', '.join(allowed)}"]


def finite(name: str, x: Any) -> List[str]:
    """Every entry of ``x`` is finite (no inf, no NaN)."""
    a = _array(x)
    return (
        []
        if np.all(np.isfinite(a))
        else [f"{name} holds non-finite entries; the prompt promises finite values"]
    )


def no_nan(name: str, x: Any) -> List[str]:
    a = _array(x)
    return [] if not np.any(np.isnan(a)) else [f"{name} holds NaN; the prompt never mentions NaN"]


def shape_is(name: str, x: Any, shape: tuple) -> List[str]:
    """``x.shape == shape``; a ``None`` in ``shape`` matches any size."""
    got = tuple(_array(x).shape)
    ok = len(got) == len(shape) and all(s is None or s == g for s, g in zip(shape, got))
    return [] if ok else [f"{name} has shape {got}; the prompt promises {shape}"]


def ndim_in(name: str, x: Any, dims: Iterable[int]) -> List[str]:
    dims = tuple(dims)
    got = _array(x).ndim
    return [] if got in dims else [f"{name} has {got} dims; the prompt promises {dims}"]


def in_range(name: str, x: Any, lo: float = -np.inf, hi: float = np.inf) -> List[str]:
    """Every finite entry of ``x`` lies in ``[lo, hi]``."""
    a = _array(x).astype(np.float64)
    a = a[np.isfinite(a)]
    return (
        []
        if a.size == 0 or (a.min() >= lo and a.max() <= hi)
        else [f"{name} has entries outside [{lo}, {hi}]"]
    )


def integer(name: str, x: Any) -> List[str]:
    """``x`` is a Python int or an integer array."""
    if isinstance(x, (bool, np.bool_)):
        return [f"{name} is a bool; the prompt promises an integer"]
    if isinstance(x, (int, np.integer)):
        return []
    a = _array(x)
    return (
        []
        if np.issubdtype(a.dtype, np.integer)
        else [f"{name} has dtype {a.dtype}; the prompt promises integers"]
    )
