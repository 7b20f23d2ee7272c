"""linear_attention and elu_feature_map against written-out references.

Three forms of causal linear attention give one answer: the recurrence (a loop over positions that
keeps one state), the parallel form (the masked quadratic ``tril(phi(q) phi(k)^T) v``), and the
package's cumulative sum.  Also against flash-linear-attention's reference loop where fla is
installed, torch gradients, half precision, and the errors.
"""

import math

import numpy as np
import pytest
from fla_reference import naive

import attncourse as ac
from attncourse import elu_feature_map, linear_attention
from support import DEVICES, assert_close, torch


def loop_elu_feature_map(x):
    """elu(x) + 1, one element at a time."""
    flat = [xi + 1.0 if xi > 0 else math.exp(xi) for xi in np.asarray(x, dtype=np.float64).ravel()]
    return np.array(flat).reshape(np.shape(x))


def recurrent_linear_attention(q, k, v, phi, causal=True, normalize=True):
    """2-d ``q (L, E)``, ``k (S, E)``, ``v (S, Ev)``: the recurrence, state ``S_t`` and ``z_t`` in a loop."""
    q, k = phi(np.asarray(q, np.float64)), phi(np.asarray(k, np.float64))
    v = np.asarray(v, np.float64)
    L, S = q.shape[0], k.shape[0]
    E, Ev = q.shape[1], v.shape[1]
    out = np.zeros((L, Ev))
    state, z = np.zeros((E, Ev)), np.zeros(E)
    if not causal:  # every key, once
        for j in range(S):
            state += np.outer(k[j], v[j])
            z += k[j]
    for t in range(L):
        if causal:  # the new key and value join the state before query t reads it
            state += np.outer(k[t], v[t])
            z += k[t]
        num = [sum(q[t, e] * state[e, c] for e in range(E)) for c in range(Ev)]
        den = sum(q[t, e] * z[e] for e in range(E)) if normalize else 1.0
        out[t] = np.array(num) / den
    return out


def parallel_linear_attention(q, k, v, phi, causal=True, normalize=True):
    """2-d, the masked quadratic form: ``A = phi(q) phi(k)^T`` (lower triangle), ``A v / rowsum(A)``."""
    A = phi(np.asarray(q, np.float64)) @ phi(np.asarray(k, np.float64)).T  # (L, S)
    if causal:
        A = np.tril(A)
    out = A @ np.asarray(v, np.float64)
    return out / A.sum(-1, keepdims=True) if normalize else out


def identity(x):
    return x


# feature map, normalize: the identity normalises only with positive q and k (below), where its
# denominator is a sum of positive terms.
FEATURES = [("elu", True), ("elu", False), ("identity", False), ("identity", True)]


def _inputs(rng, feature, lead=(), L=6, S=None, E=4, Ev=3):
    S = L if S is None else S
    q, k, v = rng.normal(size=(*lead, L, E)), rng.normal(size=(*lead, S, E)), rng.normal(size=(*lead, S, Ev))
    if feature == "identity":
        q, k = np.abs(q) + 0.1, np.abs(k) + 0.1
    return q, k, v


@pytest.mark.parametrize("feature,normalize", FEATURES)
@pytest.mark.parametrize("causal", [True, False])
def test_recurrent_parallel_and_package_agree(rng, feature, normalize, causal):
    q, k, v = _inputs(rng, feature)
    phi_ref = loop_elu_feature_map if feature == "elu" else identity
    phi = elu_feature_map if feature == "elu" else None
    recurrent = recurrent_linear_attention(q, k, v, phi_ref, causal, normalize)
    parallel = parallel_linear_attention(q, k, v, phi_ref, causal, normalize)
    ours = linear_attention(q, k, v, feature_map=phi, causal=causal, normalize=normalize)
    np.testing.assert_allclose(parallel, recurrent, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours, recurrent, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("feature,normalize", FEATURES[:3])
def test_leading_dims_broadcast_per_slice(rng, kind, dtype, causal, feature, normalize):
    # q has batch 2 and 3 heads; k one batch entry; v one head: every slice is its own 2-d problem.
    q, _, _ = _inputs(rng, feature, lead=(2, 3))
    k = _inputs(rng, feature, lead=(1, 3))[1]
    v = rng.normal(size=(2, 1, 6, 5))
    phi_ref = loop_elu_feature_map if feature == "elu" else identity
    args = [a.astype(dtype) for a in (q, k, v)]
    if kind == "torch":
        args = [torch.as_tensor(a) for a in args]
    out = linear_attention(
        *args, feature_map=elu_feature_map if feature == "elu" else None, causal=causal, normalize=normalize
    )
    assert type(out) is type(args[0]) and str(out.dtype).endswith(dtype) and tuple(out.shape) == (2, 3, 6, 5)
    assert kind == "torch" or out.flags.writeable  # a fresh array, not a read-only broadcast view
    for b in range(2):
        for h in range(3):
            ref = recurrent_linear_attention(q[b, h], k[0, h], v[b, 0], phi_ref, causal, normalize)
            assert_close(torch.as_tensor(np.asarray(out[b, h])), ref, dtype=getattr(torch, dtype))


def test_not_causal_reads_more_keys_than_queries(rng):
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 2))
    out = linear_attention(q, k, v, feature_map=elu_feature_map, causal=False)
    ref = recurrent_linear_attention(q, k, v, loop_elu_feature_map, causal=False)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    assert out.shape == (3, 2)


def test_causal_earlier_outputs_ignore_later_tokens(rng):
    q, k, v = rng.normal(size=(8, 4)), rng.normal(size=(8, 4)), rng.normal(size=(8, 3))
    out = linear_attention(q, k, v, feature_map=elu_feature_map)
    k2, v2 = k.copy(), v.copy()
    k2[5:], v2[5:] = rng.normal(size=(3, 4)), rng.normal(size=(3, 3))
    out2 = linear_attention(q, k2, v2, feature_map=elu_feature_map)
    np.testing.assert_array_equal(out2[:5], out[:5])
    assert not np.allclose(out2[5:], out[5:])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("causal", [True, False])
def test_torch_matches_numpy_and_gradients(rng, device, causal):
    q, k, v = _inputs(rng, "elu", lead=(2,), L=5)
    tq, tk, tv = (torch.tensor(a, device=device, requires_grad=True) for a in (q, k, v))
    out = linear_attention(tq, tk, tv, feature_map=elu_feature_map, causal=causal)
    assert out.device.type == device and out.dtype == torch.float64
    assert_close(out.cpu(), linear_attention(q, k, v, feature_map=elu_feature_map, causal=causal))
    if device == "cpu":
        assert torch.autograd.gradcheck(
            lambda a, b, c: linear_attention(a, b, c, feature_map=elu_feature_map, causal=causal),
            (tq, tk, tv),
        )


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_keeps_dtype_and_values(rng, dtype):
    q, k, v = (torch.tensor(a, dtype=getattr(torch, dtype)) for a in _inputs(rng, "elu", L=64, E=16, Ev=8))
    out = linear_attention(q, k, v, feature_map=elu_feature_map)
    ref = linear_attention(q.double(), k.double(), v.double(), feature_map=elu_feature_map)
    assert out.dtype == q.dtype and torch.isfinite(out).all()
    assert_close(out, ref)


def test_elu_feature_map_matches_loop_and_torch(rng):
    x = np.concatenate([rng.normal(size=20) * 5, [-1000.0, 0.0, 1000.0]])
    np.testing.assert_allclose(elu_feature_map(x), loop_elu_feature_map(x), rtol=1e-15)
    t = torch.tensor(x, dtype=torch.float32)
    assert_close(elu_feature_map(t), torch.nn.functional.elu(t) + 1)
    assert (elu_feature_map(x) >= 0).all() and (
        elu_feature_map(x)[:-3] > 0
    ).all()  # exp(-1000) underflows to 0


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("normalize", [True, False])
def test_against_fla_reference_recurrence(rng, causal, normalize):
    """fla's naive_recurrent_linear_attn: layout (B, L, H, E), outputs scaled by ``scale`` (1 here).

    fla's recurrence is causal and has no feature map: it is given phi(q), phi(k); the non-causal
    case is its last state read by every query, which fla's loop gives as the final state.
    """
    fla = naive("linear_attn")
    q, k, v = _inputs(rng, "elu", lead=(2, 3), L=7, E=4, Ev=5)  # (B, H, L, .)
    phi_q, phi_k = elu_feature_map(q), elu_feature_map(k)
    to_fla = [torch.tensor(a).transpose(1, 2).contiguous() for a in (phi_q, phi_k, v)]  # (B, L, H, .)
    ours = linear_attention(q, k, v, feature_map=elu_feature_map, causal=causal, normalize=normalize)
    if causal:
        theirs, _ = fla.naive_recurrent_linear_attn(*to_fla, scale=1.0, normalize=normalize)
        theirs = theirs.transpose(1, 2)  # (B, L, H, Ev) -> (B, H, L, Ev)
    else:
        _, state = fla.naive_recurrent_linear_attn(*to_fla, scale=1.0, output_final_state=True)
        theirs = torch.tensor(phi_q, dtype=torch.float32) @ state  # (B, H, L, E) @ (B, H, E, Ev)
        if normalize:
            theirs = theirs / (torch.tensor(phi_q @ phi_k.sum(-2)[..., :, None], dtype=torch.float32))
    assert_close(torch.as_tensor(ours, dtype=torch.float32), theirs)


ERRORS = [
    ("causal L != S", dict(k=(5, 4), v=(5, 3)), {}, "causal=True needs one key and value per query"),
    ("E mismatch", dict(k=(6, 5)), {}, "q and k must share their last dimension E"),
    ("k, v lengths", dict(v=(5, 3)), {}, "k and v must have the same length S"),
    ("feature map not callable", {}, dict(feature_map="elu"), "feature_map must be a function"),
    ("feature map drops an axis", {}, dict(feature_map=lambda x: x.sum(-2)), "feature_map must map q"),
    (
        "feature map widths",
        dict(k=(5, 4), v=(5, 3)),
        dict(feature_map=lambda x: x[..., : x.shape[-2] - 3], causal=False),  # q -> width 3, k -> 2
        "feature_map must give q and k the same width",
    ),
    ("lead", dict(q=(2, 6, 4), k=(3, 6, 4), v=(3, 6, 3)), {}, "do not broadcast"),
]


@pytest.mark.parametrize("shapes,kwargs,match", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_name_the_argument(rng, shapes, kwargs, match):
    given = {"q": (6, 4), "k": (6, 4), "v": (6, 3), **shapes}
    q, k, v = (rng.normal(size=given[n]) for n in "qkv")
    with pytest.raises(ValueError, match=f"(?s)linear_attention: .*{match}"):
        linear_attention(q, k, v, **kwargs)


def test_mixing_numpy_and_torch_is_a_type_error(rng):
    q = rng.normal(size=(4, 3))
    with pytest.raises(TypeError, match="numpy arrays and torch tensors cannot be mixed"):
        linear_attention(q, torch.tensor(q), q)
    with pytest.raises(TypeError, match="q must be floating point"):
        linear_attention(np.ones((4, 3), dtype=int), q, q)


def test_exported_at_top_level():
    assert {"linear_attention", "elu_feature_map", "delta_rule", "topk_attention"} <= set(ac.__all__)
    assert ac.linear_attention is linear_attention and ac.elu_feature_map is elu_feature_map
