"""RoPE context extension: apply_rope(..., scaling=...) and rope_frequencies against written-out formulas.

Each scaling is restated here pair by pair from its definition (position interpolation, NTK-aware
"dynamic" scaling, YaRN, Llama 3's wavelength bands), in the form Hugging Face transformers'
``modeling_rope_utils`` computes it.  A few frequencies are also written out as numbers: they were
computed with transformers 5.24 (``ROPE_INIT_FUNCTIONS[rope_type](config, "cpu")`` for a
``LlamaConfig`` with ``head_dim=16``, ``rope_theta=10000``) and agree with ours to float32 precision.
transformers itself is not needed to run these tests.
"""

import math

import numpy as np
import pytest

import attncourse as ac
from attncourse.positional import apply_rope, rope_angles, rope_frequencies
from support import DEVICES, assert_close, torch

E, BASE = 16, 10000.0


def _plain(E, base=BASE):
    return [base ** (-2 * i / E) for i in range(E // 2)]


def _rotate(x, angles, factor=1.0):
    """Half-split RoPE by given angles (..., L, E/2), times an attention factor; plain numpy."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = np.cos(angles) * factor, np.sin(angles) * factor
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)


# ----------------------------------------------------------------------------------------------
# linear: position interpolation
# ----------------------------------------------------------------------------------------------


def test_linear_is_position_interpolation(rng):
    """Dividing every frequency by s is the same as feeding positions / s."""
    x = rng.normal(size=(2, 12, E))
    pos = np.arange(12)
    got = apply_rope(x, pos, scaling={"rope_type": "linear", "factor": 4.0})
    np.testing.assert_allclose(got, apply_rope(x, pos / 4.0), atol=1e-12)
    inv, att = rope_frequencies(E, scaling={"rope_type": "linear", "factor": 4.0})
    np.testing.assert_allclose(inv, [f / 4 for f in _plain(E)], rtol=1e-14)
    assert att == 1.0


# ----------------------------------------------------------------------------------------------
# dynamic NTK: a larger base once the sequence outgrows the training length
# ----------------------------------------------------------------------------------------------

DYNAMIC = {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 64}


def _dynamic_base(seq_len, factor=4.0, n=64, E=E, base=BASE):
    seq_len = max(seq_len, n)
    return base * (factor * seq_len / n - (factor - 1)) ** (E / (E - 2))


@pytest.mark.parametrize("L", [1, 30, 64])
def test_dynamic_changes_nothing_up_to_the_training_length(rng, L):
    x = rng.normal(size=(L, E))
    np.testing.assert_allclose(apply_rope(x, scaling=DYNAMIC), apply_rope(x), atol=1e-12)


@pytest.mark.parametrize("L", [65, 100, 300])
def test_dynamic_uses_the_largest_position_plus_one(rng, L):
    x = rng.normal(size=(L, E))
    expected = apply_rope(x, base=_dynamic_base(L))
    np.testing.assert_allclose(apply_rope(x, scaling=DYNAMIC), expected, atol=1e-12)
    # the positions decide, not the number of rows: 10 queries at positions 200..209
    pos = np.arange(200, 210)
    np.testing.assert_allclose(
        apply_rope(x[:10], pos, scaling=DYNAMIC), apply_rope(x[:10], pos, base=_dynamic_base(210)), atol=1e-12
    )


def test_dynamic_frequencies_at_seq_len_100_verified_constants():
    inv, _ = rope_frequencies(E, scaling=DYNAMIC, seq_len=100)
    hf = [1.0, 0.26722300, 0.071408123, 0.019081892, 0.0050991201, 0.0013626020, 3.6411858e-4, 9.7300850e-5]
    np.testing.assert_allclose(inv, hf, rtol=1e-6)
    np.testing.assert_allclose(inv, _plain(E, _dynamic_base(100)), rtol=1e-14)


# ----------------------------------------------------------------------------------------------
# YaRN
# ----------------------------------------------------------------------------------------------


def _yarn_reference(E, base, factor, n, beta_fast=32, beta_slow=1, truncate=True):
    """Pair i turns n * f_i / (2 pi) times over the n training positions.  The pair index that
    turns r times is d(r) = E ln(n / (2 pi r)) / (2 ln base); pairs up to d(beta_fast) keep their
    frequency, pairs from d(beta_slow) on are divided by the factor, linear in the index between."""

    def d(r):
        return E * math.log(n / (2 * math.pi * r)) / (2 * math.log(base))

    lo, hi = d(beta_fast), d(beta_slow)
    if truncate:
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, E - 1)
    if lo == hi:
        hi += 0.001
    out = []
    for i, f in enumerate(_plain(E, base)):
        t = min(max((i - lo) / (hi - lo), 0.0), 1.0)  # 0 = keep (fast pairs), 1 = interpolate
        out.append((1 - t) * f + t * f / factor)
    return out


YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}


def test_yarn_frequencies_verified_constants():
    inv, att = rope_frequencies(E, scaling=YARN)
    hf = [1.0, 0.23717082, 0.049999997, 0.0079056947, 0.0025, 7.9056947e-4, 2.5000001e-4, 7.9056947e-5]
    np.testing.assert_allclose(inv, hf, rtol=1e-6)
    assert att == pytest.approx(1.1386294361, rel=1e-9)  # 0.1 ln 4 + 1


@pytest.mark.parametrize(
    "E_, base, params",
    [
        (16, BASE, YARN),
        (64, BASE, {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096}),
        (
            64,
            5e5,
            {
                "rope_type": "yarn",
                "factor": 16.0,
                "original_max_position_embeddings": 2048,
                "beta_fast": 16,
                "beta_slow": 2,
            },
        ),
        (
            32,
            BASE,
            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128, "truncate": False},
        ),
    ],
)
def test_yarn_frequencies_follow_the_written_out_ramp(E_, base, params):
    inv, _ = rope_frequencies(E_, base=base, scaling=params)
    keys = {k: params[k] for k in ("beta_fast", "beta_slow", "truncate") if k in params}
    expected = _yarn_reference(E_, base, params["factor"], params["original_max_position_embeddings"], **keys)
    np.testing.assert_allclose(inv, expected, rtol=1e-13)


def test_yarn_keeps_fast_pairs_and_interpolates_slow_ones():
    """The paper's point: pairs that turn many times within the training length keep their
    frequency (local order), pairs that turn less than once are interpolated by the factor."""
    n, s = 4096, 8.0
    inv, _ = rope_frequencies(
        128, scaling={"rope_type": "yarn", "factor": s, "original_max_position_embeddings": n}
    )
    plain = np.asarray(_plain(128))
    turns = n * plain / (2 * math.pi)
    np.testing.assert_allclose(inv[turns > 40], plain[turns > 40], rtol=1e-14)
    np.testing.assert_allclose(inv[turns < 0.5], plain[turns < 0.5] / s, rtol=1e-14)
    assert np.all(inv <= plain * (1 + 1e-12)) and np.all(inv >= plain / s * (1 - 1e-12))  # between the two


def test_yarn_attention_factor_multiplies_cos_and_sin(rng):
    x = rng.normal(size=(3, 20, E))
    inv, _ = rope_frequencies(E, scaling=YARN)
    angles = np.arange(20)[:, None] * inv
    factor = 0.1 * math.log(4.0) + 1
    np.testing.assert_allclose(apply_rope(x, scaling=YARN), _rotate(x, angles, factor), atol=1e-12)
    norms = np.linalg.norm(apply_rope(x, scaling=YARN), axis=-1) / np.linalg.norm(x, axis=-1)
    np.testing.assert_allclose(norms, factor)  # a rotation times the factor


@pytest.mark.parametrize(
    "extra, expected",
    [
        ({"attention_factor": 1.3}, 1.3),
        # DeepSeek-style: (0.1 * 1.0 * ln 40 + 1) / (0.1 * 0.707 * ln 40 + 1)
        ({"mscale": 1.0, "mscale_all_dim": 0.707}, (0.1 * math.log(40) + 1) / (0.0707 * math.log(40) + 1)),
        ({"mscale": 1.0}, 0.1 * math.log(40) + 1),  # only one of the pair: ignored
        ({}, 0.1 * math.log(40) + 1),
    ],
)
def test_yarn_attention_factor_rules(extra, expected):
    params = {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, **extra}
    _, att = rope_frequencies(64, scaling=params)
    assert att == pytest.approx(expected, rel=1e-12)
    if "mscale_all_dim" in extra:
        assert att == pytest.approx(1.0857263992561355, rel=1e-9)  # transformers' value


def test_yarn_factor_one_has_attention_factor_one():
    inv, att = rope_frequencies(E, scaling={**YARN, "factor": 1.0})
    np.testing.assert_allclose(inv, _plain(E), rtol=1e-14)
    assert att == 1.0


# ----------------------------------------------------------------------------------------------
# Llama 3
# ----------------------------------------------------------------------------------------------

LLAMA3 = {
    "rope_type": "llama3",
    "factor": 4.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 64,
}


def _llama3_reference(E, base, factor, low, high, n):
    out = []
    for f in _plain(E, base):
        wavelength = 2 * math.pi / f
        if wavelength < n / high:  # many turns in the training length: kept
            out.append(f)
        elif wavelength > n / low:  # less than `low` turns: divided by the factor
            out.append(f / factor)
        else:  # between: blend, weight of the kept frequency = (n / wavelength - low) / (high - low)
            w = (n / wavelength - low) / (high - low)
            out.append((1 - w) * f / factor + w * f)
    return out


def test_llama3_frequencies_verified_constants():
    inv, att = rope_frequencies(E, scaling=LLAMA3)
    hf = [1.0, 0.25464791, 0.02546479, 0.0079056947, 0.0025, 7.9056947e-4, 2.5000001e-4, 7.9056947e-5]
    np.testing.assert_allclose(inv, hf, rtol=1e-6)
    assert att == 1.0


@pytest.mark.parametrize(
    "E_, base, params",
    [
        (16, BASE, LLAMA3),
        (128, 5e5, {**LLAMA3, "factor": 8.0, "original_max_position_embeddings": 8192}),  # Llama 3.1's values
        (
            64,
            BASE,
            {
                **LLAMA3,
                "low_freq_factor": 2.0,
                "high_freq_factor": 8.0,
                "original_max_position_embeddings": 512,
            },
        ),
    ],
)
def test_llama3_frequencies_follow_the_written_out_bands(E_, base, params):
    inv, _ = rope_frequencies(E_, base=base, scaling=params)
    p = params
    expected = _llama3_reference(
        E_,
        base,
        p["factor"],
        p["low_freq_factor"],
        p["high_freq_factor"],
        p["original_max_position_embeddings"],
    )
    np.testing.assert_allclose(inv, expected, rtol=1e-13)


# ----------------------------------------------------------------------------------------------
# Every scaling: the rotation, both layouts, numpy and torch, rope_theta
# ----------------------------------------------------------------------------------------------

ALL = {"linear": {"rope_type": "linear", "factor": 4.0}, "dynamic": DYNAMIC, "yarn": YARN, "llama3": LLAMA3}


@pytest.mark.parametrize("name", list(ALL))
@pytest.mark.parametrize("interleaved", [False, True])
def test_rotation_uses_the_scaled_frequencies(rng, name, interleaved):
    L = 90  # past the training length of 64, so "dynamic" is active
    x = rng.normal(size=(2, L, E))
    inv, att = rope_frequencies(E, scaling=ALL[name], seq_len=L)
    angles = np.arange(L)[:, None] * inv
    got = apply_rope(x, scaling=ALL[name], interleaved=interleaved)
    if interleaved:  # pairs (2i, 2i+1): move them to the half-split layout and back
        perm = np.r_[0:E:2, 1:E:2]
        expected = np.empty_like(x)
        expected[..., perm] = _rotate(x[..., perm], angles, att)
    else:
        expected = _rotate(x, angles, att)
    np.testing.assert_allclose(got, expected, atol=1e-12)
    np.testing.assert_allclose(rope_angles(np.arange(L), E, scaling=ALL[name]), angles, rtol=1e-14)


@pytest.mark.parametrize("name", list(ALL))
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_numpy_and_torch_agree(rng, name, device, dtype):
    x = rng.normal(size=(2, 3, 80, E))
    want = apply_rope(x, scaling=ALL[name])
    got = apply_rope(torch.as_tensor(x, dtype=dtype, device=device), scaling=ALL[name])
    assert got.dtype == dtype and got.device.type == torch.device(device).type
    if (
        dtype == torch.float32
    ):  # angles are float32 for float32 input, as in transformers: ~1e-5 at position 80
        torch.testing.assert_close(got.cpu(), torch.as_tensor(want, dtype=dtype), rtol=1e-4, atol=1e-4)
    else:  # float64 x: float64 angles, with the default integer positions too
        assert_close(got.cpu(), torch.as_tensor(want))
    inv, att = rope_frequencies(E, scaling=ALL[name], like=torch.zeros(1, dtype=dtype, device=device))
    assert inv.dtype == dtype and inv.shape == (E // 2,)


def test_rope_theta_in_the_dict_is_the_base(rng):
    x = rng.normal(size=(5, E))
    scaled = {"rope_type": "linear", "factor": 2.0, "rope_theta": 500000.0}
    np.testing.assert_allclose(
        apply_rope(x, scaling=scaled), apply_rope(x, np.arange(5) / 2, base=5e5), atol=1e-12
    )
    np.testing.assert_allclose(
        apply_rope(x, scaling={"rope_type": "default", "rope_theta": 500.0}), apply_rope(x, base=500.0)
    )
    np.testing.assert_allclose(
        apply_rope(x, base=5e5, scaling=scaled), apply_rope(x, scaling=scaled)
    )  # agreeing: fine


def test_the_older_type_key_is_read():
    a, _ = rope_frequencies(E, scaling={"type": "linear", "factor": 2.0})
    np.testing.assert_allclose(a, np.asarray(_plain(E)) / 2)


def test_no_scaling_is_unchanged(rng):
    x = rng.normal(size=(4, 6, E))
    np.testing.assert_array_equal(apply_rope(x, scaling=None), apply_rope(x))
    np.testing.assert_array_equal(apply_rope(x, scaling={"rope_type": "default"}), apply_rope(x))


def test_exported_from_the_package():
    assert ac.rope_frequencies is rope_frequencies


ERRORS = [
    ({"rope_type": "ntk", "factor": 2.0}, r"scaling\['rope_type'\] must be one of .*got 'ntk'"),
    ({"rope_type": "longrope", "factor": 2.0}, r"got 'longrope'"),
    ({"rope_type": "linear"}, r"rope_type 'linear' needs the key\(s\) \['factor'\]"),
    (
        {"rope_type": "yarn", "factor": 4.0},
        r"needs the key\(s\) \['original_max_position_embeddings'\].*max_position_embeddings",
    ),
    ({"rope_type": "dynamic", "factor": 4.0}, r"needs the key\(s\) \['original_max_position_embeddings'\]"),
    ({"rope_type": "linear", "factor": 2.0, "beta_fast": 32}, r"does not use the key\(s\) \['beta_fast'\]"),
    ({"rope_type": "linear", "factor": 0.0}, r"scaling\['factor'\] must be a positive number; got 0.0"),
    (
        {"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5},
        r"partial_rotary_factor'\] must be 1.0.*got 0.5",
    ),
    (
        {**LLAMA3, "high_freq_factor": 1.0},
        r"high_freq_factor'\] must exceed.*high_freq_factor=1.0 and low_freq_factor=1.0",
    ),
    (
        {"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
        r"base=10000.0 and scaling\['rope_theta'\]=500.0 disagree",
    ),
    ([("rope_type", "linear")], r"scaling must be a dict.*got list"),
]


@pytest.mark.parametrize("scaling, pattern", ERRORS)
def test_errors_name_the_key_and_value(rng, scaling, pattern):
    base = 10000.0 if isinstance(scaling, dict) and "rope_theta" in scaling else None
    x = rng.normal(size=(3, E))
    with pytest.raises(ValueError, match=pattern) as err:
        apply_rope(x, base=base, scaling=scaling)
    assert str(err.value).startswith("apply_rope: ")
    with pytest.raises(ValueError, match=pattern):
        rope_frequencies(E, base=base, scaling=scaling)


def test_dynamic_needs_four_features_and_widths_must_be_even():
    with pytest.raises(ValueError, match=r"rope_frequencies: rope_type 'dynamic' needs E >= 4.*got E=2"):
        rope_frequencies(2, scaling=DYNAMIC)
    with pytest.raises(ValueError, match=r"rope_frequencies: E must be even.*got E=7"):
        rope_frequencies(7)
