"""Every bad input gets an error that names the argument, shows what came, and what was expected."""

import numpy as np
import pytest

import attncourse as ac
from support import torch

sdpa = ac.scaled_dot_product_attention


def z(*shape, dtype=np.float64):
    return np.zeros(shape, dtype=dtype)


def test_mismatched_query_and_key_width():
    with pytest.raises(
        ValueError, match=r"q and k must share their last dimension E.*got E=8 for q and E=6 for k"
    ) as e:
        sdpa(z(2, 5, 8), z(2, 7, 6), z(2, 7, 3))
    assert "q: (2, 5, 8)  expected (..., L, E)" in str(e.value)
    assert "k: (2, 7, 6)  expected (..., S, E)" in str(e.value)


def test_keys_and_values_of_different_length():
    with pytest.raises(ValueError, match=r"k and v must have the same length S.*got S=7 keys and S=6 values"):
        sdpa(z(5, 8), z(7, 8), z(6, 3))


def test_leading_dims_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"leading .* do not broadcast"):
        sdpa(z(2, 5, 8), z(3, 7, 8), z(3, 7, 4))


def test_too_few_dims():
    with pytest.raises(ValueError, match=r"(?s)need at least 2 dimensions.*q: \(8,\)"):
        sdpa(z(8), z(7, 8), z(7, 4))


def test_mask_that_does_not_broadcast():
    with pytest.raises(
        ValueError, match=r"mask of shape \(5, 6\) does not broadcast to the scores' shape \(2, 5, 7\)"
    ):
        sdpa(z(2, 5, 8), z(2, 7, 8), z(2, 7, 4), np.ones((5, 6), bool))


def test_mask_that_would_enlarge_the_output():
    # A (B, S) padding mask given to (B, H, L, S) scores with B != L would broadcast wrongly or fail.
    with pytest.raises(ValueError, match=r"mask\[:, None, None, :\] for \(B, H, L, S\)"):
        sdpa(z(2, 3, 5, 8), z(2, 3, 7, 8), z(2, 3, 7, 4), np.ones((4, 1, 1, 7), bool))


@pytest.mark.parametrize("bad", [np.ones((5, 7)), np.ones((5, 7), dtype=np.int64)])
def test_zero_one_masks_are_refused_with_the_polarity_explained(bad):
    with pytest.raises(
        TypeError, match=r"mask must be boolean \(True = may attend\); got dtype (float64|int64)"
    ) as e:
        sdpa(z(5, 8), z(7, 8), z(7, 4), bad)
    assert "from_hf_attention_mask" in str(e.value) and "from_blocked_mask" in str(e.value)
    assert isinstance(e.value, ValueError)  # catchable as either


def test_numpy_and_torch_mixed():
    with pytest.raises(TypeError, match=r"cannot be mixed \(q is numpy, k is torch, v is numpy\)"):
        sdpa(z(5, 8), torch.zeros(7, 8), z(7, 4))
    with pytest.raises(TypeError, match=r"mask is numpy"):
        sdpa(torch.zeros(5, 8), torch.zeros(7, 8), torch.zeros(7, 4), np.ones((5, 7), bool))


def test_integer_or_mixed_dtypes():
    with pytest.raises(TypeError, match="q must be floating point; got dtype int64"):
        sdpa(z(5, 8, dtype=np.int64), z(7, 8), z(7, 4))
    with pytest.raises(
        TypeError, match="q, k and v must share one dtype; got q: float32, k: float64, v: float64"
    ):
        sdpa(z(5, 8, dtype=np.float32), z(7, 8), z(7, 4))
    with pytest.raises(TypeError, match=r"must share one dtype; got q: torch.float16"):
        sdpa(torch.zeros(5, 8, dtype=torch.float16), torch.zeros(7, 8), torch.zeros(7, 4))


def test_bad_scale():
    with pytest.raises(TypeError, match="scale must be a Python number or None; got ndarray"):
        sdpa(z(5, 8), z(7, 8), z(7, 4), scale=np.ones(3))


def test_d_model_not_divisible_by_heads():
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"MultiHeadAttention: d_model=12 is not divisible by n_heads=5"):
        ac.MultiHeadAttention(12, 5)


def test_split_heads_needs_a_divisor_of_d_model():
    with pytest.raises(
        ValueError, match=r"split_heads: d_model=12 is not divisible by n_heads=5; x has shape \(2, 3, 12\)"
    ):
        ac.split_heads(z(2, 3, 12), 5)


def test_odd_head_dim_for_rope():
    with pytest.raises(ValueError, match=r"apply_rope: the last dimension E of x must be even.*got E=7"):
        ac.apply_rope(z(2, 4, 7))


def test_padding_lengths_longer_than_the_sequence():
    with pytest.raises(
        ValueError, match=r"padding_mask: lengths \[6\] exceed the sequence length S=5; got lengths=\[3, 6\]"
    ):
        ac.padding_mask([3, 6], 5)
    with pytest.raises(ValueError, match=r"lengths must be >= 0; got \[-1\]"):
        ac.padding_mask([-1, 2], 5)
    with pytest.raises(TypeError, match="lengths must be integers; got dtype float64"):
        ac.padding_mask([1.5, 2.0], 5)
    with pytest.raises(ValueError, match=r"lengths must be 1-d \(B,\); got shape \(1, 2\)"):
        ac.padding_mask([[1, 2]], 5)


def test_bad_sizes_for_mask_and_encoding_builders():
    with pytest.raises(ValueError, match="causal_mask: L must be a positive integer; got 0"):
        ac.causal_mask(0)
    with pytest.raises(ValueError, match=r"causal_mask: S must be a positive integer; got 2.5"):
        ac.causal_mask(3, 2.5)
    with pytest.raises(
        ValueError, match="sinusoidal_positional_encoding: d_model must be a positive integer"
    ):
        ac.sinusoidal_positional_encoding(4, -2)


def test_errors_are_valueerror_subclasses():
    assert issubclass(ac.AttentionInputError, ValueError)
    assert issubclass(ac.AttentionTypeError, TypeError) and issubclass(ac.AttentionTypeError, ValueError)
