"""The one tolerance table and device list used by every parity test, and torch as an optional import.

``from support import torch, F`` gives the real modules when PyTorch is installed.  Without it
they are stand-ins: naming an attribute (``torch.float32`` in a ``parametrize`` list) still
works at import time, but *using* one (calling it, as every test that builds a tensor does)
skips the running test.  So a numpy-only environment runs every numpy test and skips each
torch test on its own, without a list of which is which.
"""

from __future__ import annotations

import pytest

__all__ = ["DEVICES", "HAS_TORCH", "TOLERANCES", "F", "assert_close", "torch"]


class _Missing:
    """A stand-in for an attribute of a module that is not installed; using it skips the test."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> "_Missing":
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        pytest.skip(f"needs PyTorch ({self._name}); it is not installed")

    def __repr__(self) -> str:
        return self._name


try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch, F = _Missing("torch"), _Missing("torch.nn.functional")  # type: ignore[assignment]
    HAS_TORCH = False
else:
    HAS_TORCH = True

# One tolerance table by dtype, stated once: (rtol, atol).
TOLERANCES = {
    torch.float64: (1e-10, 1e-12),
    torch.float32: (1e-5, 1e-5),
    torch.bfloat16: (5e-2, 5e-2),
    torch.float16: (1e-2, 1e-2),
}


def assert_close(actual, expected, dtype=None):
    """``torch.testing.assert_close`` with the tolerance of ``dtype`` (default: actual's)."""
    actual = torch.as_tensor(actual)
    expected = torch.as_tensor(expected)
    rtol, atol = TOLERANCES[dtype or actual.dtype]
    torch.testing.assert_close(actual, expected.to(actual.dtype), rtol=rtol, atol=atol)


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]
