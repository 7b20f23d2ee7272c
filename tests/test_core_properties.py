"""Property tests: invariants that must hold for every input hypothesis can think of."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attncourse as ac

finite = st.floats(-30, 30, allow_nan=False, width=64)
dims = st.integers(1, 6)


@st.composite
def qkv(draw):
    L, S, E, Ev = draw(dims), draw(dims), draw(dims), draw(dims)
    q = draw(arrays(np.float64, (L, E), elements=finite))
    k = draw(arrays(np.float64, (S, E), elements=finite))
    v = draw(arrays(np.float64, (S, Ev), elements=finite))
    return q, k, v


@settings(max_examples=80, deadline=None)
@given(qkv(), st.data())
def test_weight_rows_sum_to_one_or_zero(inputs, data):
    q, k, v = inputs
    mask = data.draw(arrays(bool, (q.shape[0], k.shape[0])))
    _, w = ac.scaled_dot_product_attention(q, k, v, mask)
    sums = w.sum(-1)
    has_any = mask.any(-1)
    np.testing.assert_allclose(sums[has_any], 1.0, rtol=1e-12)
    assert (sums[~has_any] == 0).all() and (w >= 0).all() and (w[~mask] == 0).all()


@settings(max_examples=60, deadline=None)
@given(qkv(), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_together_changes_nothing(inputs, random):
    q, k, v = inputs
    perm = list(range(k.shape[0]))
    random.shuffle(perm)
    out, _ = ac.scaled_dot_product_attention(q, k, v)
    out_p, _ = ac.scaled_dot_product_attention(q, k[perm], v[perm])
    np.testing.assert_allclose(out_p, out, rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7), st.integers(1, 5), st.randoms(use_true_random=False), st.integers(0, 2**32 - 1))
def test_self_attention_without_positions_is_permutation_equivariant(n, d, random, seed):
    x = np.random.default_rng(seed).normal(size=(n, d))
    perm = list(range(n))
    random.shuffle(perm)
    out, _ = ac.scaled_dot_product_attention(x, x, x)
    out_p, _ = ac.scaled_dot_product_attention(x[perm], x[perm], x[perm])
    np.testing.assert_allclose(out_p, out[perm], rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7), st.integers(0, 6), st.integers(0, 2**32 - 1))
def test_causality_changing_a_future_token_changes_no_earlier_output(n, t, seed):
    t = t % n
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    y = x.copy()
    y[t:] = rng.normal(size=(n - t, 4))
    out_x, _ = ac.scaled_dot_product_attention(x, x, x, is_causal=True)
    out_y, _ = ac.scaled_dot_product_attention(y, y, y, is_causal=True)
    np.testing.assert_allclose(out_x[:t], out_y[:t], rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4).map(lambda h: 2 * h),
    st.integers(-50, 50),
    st.integers(-50, 50),
    st.integers(-20, 20),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_rope_score_depends_only_on_the_offset(E, m, n, shift, interleaved, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, E)), rng.normal(size=(1, E))
    score = (
        ac.apply_rope(q, [m], interleaved=interleaved) @ ac.apply_rope(k, [n], interleaved=interleaved).T
    ).item()
    shifted = (
        ac.apply_rope(q, [m + shift], interleaved=interleaved)
        @ ac.apply_rope(k, [n + shift], interleaved=interleaved).T
    ).item()
    assert np.isclose(score, shifted, rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.tuples(dims, st.integers(1, 4).map(lambda h: 2 * h)), elements=finite),
    st.booleans(),
)
def test_rope_preserves_norms(x, interleaved):
    out = ac.apply_rope(x, interleaved=interleaved)
    np.testing.assert_allclose(
        np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-9, atol=1e-12
    )


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(dims, dims), elements=st.floats(-1e300, 1e300, allow_nan=False)))
def test_softmax_is_a_distribution_even_for_huge_values(x):
    out = ac.softmax(x)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-12)
