"""ALiBi: slopes written out from the paper's rule, the bias, and its use in attention."""

import math

import numpy as np
import pytest

import attncourse as ac
from attncourse.positional import alibi_bias, alibi_slopes
from support import DEVICES, F, assert_close, torch

# The paper's geometric sequence for 8 heads: 1/2, 1/4, ..., 1/256.
EIGHT = [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]
# 12 heads (not a power of two): the 8 slopes above, then the 1st, 3rd, 5th and 7th of the
# 16-head sequence 2^(-k/2): 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (BLOOM's and MPT's values too).
TWELVE = EIGHT + [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5]


def _paper_slopes(n):
    """The ALiBi repository's get_slopes, restated: start = ratio = 2^(-2^-(log2(n) - 3))."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _paper_slopes(2 * closest)[0::2][: n - closest]


def test_eight_heads_are_one_half_to_one_over_256():
    np.testing.assert_allclose(alibi_slopes(8), EIGHT, rtol=0, atol=0)


def test_twelve_heads_take_every_other_slope_of_sixteen():
    np.testing.assert_allclose(alibi_slopes(12), TWELVE, rtol=1e-15)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 16, 20, 24, 32, 40, 64, 96])
def test_every_head_count_follows_the_papers_recursion(n):
    np.testing.assert_allclose(alibi_slopes(n), _paper_slopes(n), rtol=1e-14)


def test_the_first_slope_is_two_to_the_minus_eight_over_n_for_powers_of_two():
    for n in (1, 2, 4, 8, 16, 32):
        assert alibi_slopes(n)[0] == pytest.approx(2 ** (-8 / n))


@pytest.mark.parametrize("L, S", [(5, None), (3, 6), (6, 2)])
def test_bias_is_minus_slope_times_distance(L, S):
    S_ = L if S is None else S
    bias = alibi_bias(12, L, S)
    assert bias.shape == (12, L, S_)
    for h, slope in enumerate(TWELVE):
        for i in range(L):
            for j in range(S_):
                assert bias[h, i, j] == pytest.approx(-slope * (i - j), abs=1e-15)


def test_bloom_style_key_position_bias_gives_the_same_softmax(rng):
    """BLOOM/MPT add slope * j; it differs from -slope * (i - j) by slope * i per row."""
    H, L = 4, 6
    scores = rng.normal(size=(H, L, L))
    causal = np.tril(np.ones((L, L), bool))
    bloom = np.asarray(alibi_slopes(H))[:, None, None] * np.arange(L)[None, None, :]
    a = ac.softmax(np.where(causal, scores + alibi_bias(H, L), -np.inf))
    b = ac.softmax(np.where(causal, scores + bloom, -np.inf))
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_the_bias_prefers_near_keys_more_in_steep_heads():
    """With equal raw scores, the weight on the farthest key falls as the slope grows."""
    L = 8
    w = ac.softmax(np.where(np.tril(np.ones((L, L), bool)), alibi_bias(8, L), -np.inf))
    far = w[:, -1, 0]  # last query, first key
    assert np.all(np.diff(far) > 0)  # slopes fall with h, so the far weight rises


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_bias_in_sdpa_equals_the_numpy_computation(rng, device, dtype):
    H, L, E = 6, 5, 4
    q, k, v = (rng.normal(size=(1, H, L, E)) for _ in range(3))
    bias = alibi_bias(H, L, like=torch.zeros(1, device=device, dtype=dtype))
    assert bias.dtype == dtype and bias.device.type == torch.device(device).type
    causal = torch.ones(L, L, dtype=torch.bool, device=device).tril()
    t = lambda a: torch.as_tensor(a, device=device, dtype=dtype)  # noqa: E731
    theirs = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=bias.masked_fill(~causal, -math.inf))
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(E) + alibi_bias(H, L)
    ours = ac.softmax(np.where(np.tril(np.ones((L, L), bool)), scores, -np.inf)) @ v
    assert_close(theirs.cpu(), torch.as_tensor(ours))


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: alibi_slopes(0), r"alibi_slopes: n_heads must be a positive integer; got 0"),
        (lambda: alibi_slopes(2.0), r"n_heads must be a positive integer; got 2.0"),
        (lambda: alibi_bias(4, 0), r"alibi_bias: L must be a positive integer; got 0"),
        (lambda: alibi_bias(4, 3, -1), r"S must be a positive integer; got -1"),
    ],
)
def test_errors(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
