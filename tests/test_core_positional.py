import math

import numpy as np
import pytest

import attncourse as ac
from support import DEVICES, torch


def test_sinusoidal_matches_the_paper_formula_term_by_term():
    P, d = 7, 10
    pe = ac.sinusoidal_positional_encoding(P, d)
    for pos in range(P):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_sinusoidal_odd_width_and_like_tensor():
    pe = ac.sinusoidal_positional_encoding(3, 5)
    assert pe.shape == (3, 5)
    assert pe[2, 4] == pytest.approx(math.sin(2 / 10000 ** (4 / 5)))
    t = ac.sinusoidal_positional_encoding(3, 6, like=torch.zeros(1, dtype=torch.float32))
    assert t.dtype == torch.float32 and t.shape == (3, 6)


def test_sinusoidal_shift_is_a_fixed_rotation():
    d, shift = 16, 5
    pe = ac.sinusoidal_positional_encoding(40, d)
    # For each frequency the pair (sin, cos) at pos+shift is a rotation of the pair at pos.
    for i in range(d // 2):
        w = 1 / 10000 ** (2 * i / d)
        c, s = math.cos(shift * w), math.sin(shift * w)
        rot = np.array([[c, -s], [s, c]])  # row (sin a, cos a) @ rot = (sin(a+b), cos(a+b))
        pairs = pe[:, 2 * i : 2 * i + 2]
        np.testing.assert_allclose(pairs[:-shift] @ rot, pairs[shift:], atol=1e-12)


def _rope_reference(x, positions, interleaved, base=10000.0):
    """Pair by pair with 2x2 rotation matrices."""
    L, E = x.shape
    out = np.zeros_like(x)
    for row in range(L):
        for i in range(E // 2):
            a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + E // 2)
            theta = positions[row] * base ** (-2 * i / E)
            out[row, a] = x[row, a] * math.cos(theta) - x[row, b] * math.sin(theta)
            out[row, b] = x[row, a] * math.sin(theta) + x[row, b] * math.cos(theta)
    return out


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_matches_pairwise_rotation(rng, interleaved):
    x = rng.normal(size=(5, 8))
    positions = [3, 0, 7, 1, 2]
    np.testing.assert_allclose(
        ac.apply_rope(x, positions, interleaved=interleaved),
        _rope_reference(x, positions, interleaved),
        atol=1e-12,
    )


def test_rope_half_split_matches_hugging_face_rotate_half(rng):
    # Hugging Face Llama: q * cos + rotate_half(q) * sin, with cos/sin = cat(freqs, freqs).
    x = torch.tensor(rng.normal(size=(2, 4, 6, 8)))
    pos = torch.arange(6, dtype=torch.float64)
    inv_freq = 1.0 / 10000 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat([freqs, freqs], -1)
    x1, x2 = x[..., :4], x[..., 4:]
    rotate_half = torch.cat([-x2, x1], -1)
    torch.testing.assert_close(ac.apply_rope(x), x * emb.cos() + rotate_half * emb.sin())


def test_rope_interleaved_matches_complex_multiplication(rng):
    # Meta's LLaMA: view pairs as complex numbers and multiply by e^{i theta}.
    x = rng.normal(size=(6, 8))
    theta = np.arange(6)[:, None] * 10000.0 ** (-np.arange(0, 8, 2) / 8)
    z = (x[:, 0::2] + 1j * x[:, 1::2]) * np.exp(1j * theta)
    expected = np.stack([z.real, z.imag], -1).reshape(6, 8)
    np.testing.assert_allclose(ac.apply_rope(x, interleaved=True), expected, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rope_torch_keeps_dtype_and_device(device, dtype):
    x = torch.randn(2, 5, 8, device=device).to(dtype)
    out = ac.apply_rope(x, torch.arange(5, device=device))
    assert out.dtype == dtype and out.device == x.device


def test_rope_batched_positions(rng):
    x = rng.normal(size=(2, 3, 4))
    positions = np.array([[0, 1, 2], [5, 6, 7]])
    out = ac.apply_rope(x, positions)
    np.testing.assert_allclose(out[1], ac.apply_rope(x[1], [5, 6, 7]))


def test_rope_errors():
    with pytest.raises(ValueError, match=r"E of x must be even.*got E=5 for x of shape \(3, 5\)"):
        ac.apply_rope(np.zeros((3, 5)))
    with pytest.raises(
        ValueError, match=r"positions of shape \(4,\) do not broadcast to x.shape\[:-1\] = \(3,\)"
    ):
        ac.apply_rope(np.zeros((3, 4)), np.arange(4))
    with pytest.raises(TypeError, match=r"cannot be mixed \(x is numpy, positions is torch\)"):
        ac.apply_rope(np.zeros((3, 4)), torch.arange(3))
