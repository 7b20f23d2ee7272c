"""Hidden cases, chapter 3 (scaling)."""

import numpy as np

from attncourse.exercises import Case


def _kinds(cases, *groups):
    """The cases, each put in the public group of its kind (same order)."""
    cases = list(cases)
    if len(cases) != len(groups):
        raise ValueError(f"{len(cases)} cases, {len(groups)} groups")
    for case, group in zip(cases, groups):
        case.group = group
    return cases


def scaled_scores():
    rng = np.random.default_rng(1301)
    n = rng.normal
    return _kinds(
        [
            Case("E=64, float32", q=n(size=(4, 64)).astype(np.float32), k=n(size=(6, 64)).astype(np.float32)),
            Case("E=2", q=n(size=(3, 2)), k=n(size=(3, 2))),
            Case("float16", q=n(size=(2, 16)).astype(np.float16), k=n(size=(5, 16)).astype(np.float16)),
            Case("batch and heads (2, 2, L, E)", q=n(size=(2, 2, 3, 8)), k=n(size=(2, 2, 4, 8))),
        ],
        "values",
        "values",
        "values",
        "batch dimensions",
    )


def _two_part(label, rng, batch, H, L, S, Dc, Dr, Dv, dtype=np.float64):
    n = rng.normal
    return Case(
        label,
        q_c=n(size=(*batch, H, L, Dc)).astype(dtype),
        k_c=n(size=(*batch, H, S, Dc)).astype(dtype),
        q_r=n(size=(*batch, H, L, Dr)).astype(dtype),
        k_r=n(size=(*batch, S, Dr)).astype(dtype),
        v=n(size=(*batch, H, S, Dv)).astype(dtype),
    )


def two_part_attention():
    rng = np.random.default_rng(1302)
    return _kinds(
        [
            _two_part("H=3, L=2, S=4, Dc=64, Dr=16, Dv=2", rng, (), 3, 2, 4, 64, 16, 2),
            _two_part("float32, H=2, L=4, S=3, Dc=4, Dr=12, Dv=5", rng, (), 2, 4, 3, 4, 12, 5, np.float32),
            # a batch as long as the head axis: k_r's batch axis lines up with the heads without an error
            _two_part("a batch of 2, H=2, L=3, S=5, Dc=16, Dr=32, Dv=3", rng, (2,), 2, 3, 5, 16, 32, 3),
        ],
        "values",
        "values",
        "batch dimensions",
    )


def _packed(label, rng, batch, H, L, S, D, Dv, dtype=np.float64):
    n = rng.normal
    return Case(
        label,
        q=n(size=(*batch, L, H * D)).astype(dtype),
        k=n(size=(*batch, S, H * D)).astype(dtype),
        v=n(size=(*batch, S, H * Dv)).astype(dtype),
        n_heads=H,
    )


def packed_head_attention():
    rng = np.random.default_rng(1303)
    return _kinds(
        [
            _packed("6 heads, L=3, S=7, D=10, Dv=2", rng, (), 6, 3, 7, 10, 2),
            _packed("float32, 2 heads, L=4, S=2, D=7, Dv=3", rng, (), 2, 4, 2, 7, 3, np.float32),
            _packed("batch (3,), 4 heads, L=2, S=5, D=9, Dv=4", rng, (3,), 4, 2, 5, 9, 4),
        ],
        "values",
        "values",
        "batch dimensions",
    )


HIDDEN = {
    "ch03.scaled_scores": scaled_scores,
    "ch03.two_part_attention": two_part_attention,
    "ch03.packed_head_attention": packed_head_attention,
}


def predict_cosine_factor():
    return _kinds([Case("d_k = 128, N(0, 1) entries, then unit length")], "the number")


def _layer_case(name, q, k, c, dtype=np.float64):
    """q, k and the weights softmax(c q k^T) of a layer computed in dtype."""
    q, k = q.astype(dtype), k.astype(dtype)
    s = q @ np.swapaxes(k, -1, -2) * dtype(c)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    E, S = q.shape[-1], k.shape[-2]
    candidates = []
    for x in (c, 1 / np.sqrt(E), 1 / E, 1.0, 1 / np.sqrt(S), np.sqrt(E), 3 * c, c / 2):
        if all(abs(x / y - 1) > 0.05 for y in candidates):
            candidates.append(float(x))
    weights = e / e.sum(axis=-1, keepdims=True)
    return Case(name, q=q, k=k, weights=weights, candidates=np.array(candidates[::-1]))


def recover_scale():
    rng = np.random.default_rng(1305)
    n = rng.normal
    return _kinds(
        [
            _layer_case(
                "float32, E=32, the default scale",
                n(size=(4, 32)),
                n(size=(7, 32)),
                1 / np.sqrt(32),
                np.float32,
            ),
            _layer_case("E=4, S=9, scaled by the number of keys", n(size=(3, 4)), n(size=(9, 4)), 1 / 3),
            _layer_case(
                "a batch of 2, E=128, the default scale, one very long query each: weights exactly 0",
                n(size=(2, 3, 128)) * np.array([250.0, 1.0, 1.0])[:, None],
                n(size=(2, 16, 128)),
                1 / np.sqrt(128),
            ),
            _layer_case(
                "batch and heads (3, 1), L=1, E=2, a scale of 2.5",
                n(size=(3, 1, 1, 2)),
                n(size=(3, 1, 6, 2)),
                2.5,
            ),
        ],
        "values",
        "values",
        "saturated rows",
        "batch dimensions",
    )


def fix_late_scaling():
    rng = np.random.default_rng(1306)
    n = rng.normal
    return _kinds(
        [
            Case("L=4, S=2, E=64", q=n(size=(4, 64)), k=n(size=(2, 64)), v=n(size=(2, 3))),
            Case("batch and heads", q=n(size=(2, 2, 3, 8)), k=n(size=(2, 2, 5, 8)), v=n(size=(2, 2, 5, 2))),
            Case(
                "float32, E=9",
                q=n(size=(3, 9)).astype(np.float32),
                k=n(size=(3, 9)).astype(np.float32),
                v=n(size=(3, 4)).astype(np.float32),
            ),
        ],
        "values",
        "batch dimensions",
        "values",
    )


HIDDEN.update(
    {
        "ch03.predict_cosine_factor": predict_cosine_factor,
        "ch03.recover_scale": recover_scale,
        "ch03.weights_not_normalised": fix_late_scaling,
    }
)
