"""sliding_window_mask against written-out windows, Hugging Face's rule, and windowed attention."""

import numpy as np
import pytest

import attncourse as ac
from attncourse.masks import causal_mask, sliding_window_mask
from support import DEVICES, torch


def _written_out(L, window, S):
    """Query i may see key j when j <= i and j is one of the `window` positions ending at i."""
    allowed = np.zeros((L, S), bool)
    for i in range(L):
        for j in range(max(0, i - window + 1), min(i, S - 1) + 1):
            allowed[i, j] = True
    return allowed


@pytest.mark.parametrize("L", [1, 2, 5, 9])
@pytest.mark.parametrize("S", [None, 1, 4, 12])
@pytest.mark.parametrize("window", [1, 2, 3, 8, 50])
def test_matches_the_written_out_window(L, S, window):
    got = sliding_window_mask(L, window, S)
    assert got.dtype == np.bool_ and got.shape == (L, L if S is None else S)
    np.testing.assert_array_equal(got, _written_out(L, window, L if S is None else S))


@pytest.mark.parametrize("window", [1, 3, 6])
def test_hugging_face_rule_kv_after_q_minus_window_and_causal(window):
    """transformers.masking_utils: and_masks(kv_idx > q_idx - sliding_window, kv_idx <= q_idx)."""
    L = 7
    q_idx, kv_idx = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    hf = (kv_idx > q_idx - window) & (kv_idx <= q_idx)
    np.testing.assert_array_equal(sliding_window_mask(L, window), hf)


def test_each_row_sees_min_of_window_and_position_plus_one_keys():
    m = sliding_window_mask(10, 4)
    assert m.sum(-1).tolist() == [1, 2, 3, 4, 4, 4, 4, 4, 4, 4]


def test_window_one_is_the_diagonal_and_a_wide_window_is_causal():
    np.testing.assert_array_equal(sliding_window_mask(6, 1), np.eye(6, dtype=bool))
    np.testing.assert_array_equal(sliding_window_mask(6, 6), causal_mask(6))
    np.testing.assert_array_equal(sliding_window_mask(4, 9, 7), causal_mask(4, 7))


def test_cache_rows_are_the_last_rows_of_the_square_mask():
    """For the last L of S positions the recipe is sliding_window_mask(S, w)[-L:]: each row still
    holds exactly w keys, ending at its own position S - L + r."""
    S, L, w = 9, 3, 4
    rows = sliding_window_mask(S, w)[-L:]
    for r in range(L):
        assert np.flatnonzero(rows[r]).tolist() == list(range(S - L + r - w + 1, S - L + r + 1))


def test_windowed_attention_equals_attention_over_the_window_only(rng):
    """Attention under the mask equals, row by row, plain attention over the w keys of the window."""
    L, w, E = 8, 3, 4
    q, k, v = rng.normal(size=(L, E)), rng.normal(size=(L, E)), rng.normal(size=(L, 5))
    out, weights = ac.scaled_dot_product_attention(q, k, v, sliding_window_mask(L, w))
    for i in range(L):
        lo = max(0, i - w + 1)
        ref, _ = ac.scaled_dot_product_attention(q[i : i + 1], k[lo : i + 1], v[lo : i + 1])
        np.testing.assert_allclose(out[i], ref[0], atol=1e-12)
        assert np.all(weights[i, :lo] == 0) and np.all(weights[i, i + 1 :] == 0)
    flash = ac.flash_attention(q, k, v, sliding_window_mask(L, w), block_size=3)
    np.testing.assert_allclose(flash, out, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_like_gives_a_tensor_on_its_device(device):
    like = torch.zeros(1, device=device)
    got = sliding_window_mask(5, 2, 7, like=like)
    assert got.dtype == torch.bool and got.device.type == torch.device(device).type
    np.testing.assert_array_equal(got.cpu().numpy(), sliding_window_mask(5, 2, 7))


@pytest.mark.parametrize(
    "args, pattern",
    [
        ((4, 0), r"sliding_window_mask: window must be a positive integer; got 0"),
        ((4, -2), r"window must be a positive integer; got -2"),
        ((4, 2.5), r"window must be a positive integer; got 2.5"),
        ((4, True), r"window must be a positive integer; got True"),
        ((0, 2), r"L must be a positive integer; got 0"),
        ((4, 2, 0), r"S must be a positive integer; got 0"),
    ],
)
def test_errors_name_the_argument_and_value(args, pattern):
    with pytest.raises(ValueError, match=pattern):
        sliding_window_mask(*args)


def test_exported_from_the_package():
    assert ac.sliding_window_mask is sliding_window_mask
