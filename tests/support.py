"""The one tolerance table and device list used by every parity test."""

from __future__ import annotations

import pytest
import torch

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
