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


def init_std_for_unscaled_scores():
    return _kinds(
        [
            Case("d_k=256, d_model=512, token variance 1", d_k=256, d_model=512, token_var=1.0),
            Case("d_k=1, d_model=8, token variance 3", d_k=1, d_model=8, token_var=3.0),
            Case(
                "an array of d_k, d_model=64, token variance 2",
                d_k=np.array([32, 64, 128, 1024]),
                d_model=64,
                token_var=2.0,
            ),
        ],
        "values",
        "values",
        "values",
    )


def fix_scale_size():
    rng = np.random.default_rng(1303)
    n = rng.normal
    return _kinds(
        [
            Case("L=1, S=100, E=16, Ev=2", q=n(size=(1, 16)), k=n(size=(100, 16)), v=n(size=(100, 2))),
            Case(
                "float32, L=4, S=2, E=32, Ev=3",
                q=n(size=(4, 32)).astype(np.float32),
                k=n(size=(2, 32)).astype(np.float32),
                v=n(size=(2, 3)).astype(np.float32),
            ),
            Case(
                "batch and heads, S=7, E=4",
                q=n(size=(2, 2, 3, 4)),
                k=n(size=(2, 2, 7, 4)),
                v=n(size=(2, 2, 7, 6)),
            ),
        ],
        "values",
        "values",
        "batch dimensions",
    )


HIDDEN = {
    "ch03.scaled_scores": scaled_scores,
    "ch03.init_std_for_unscaled_scores": init_std_for_unscaled_scores,
    "ch03.attention_with_scale": fix_scale_size,
}


def predict_cosine_factor():
    return _kinds([Case("d_k = 128, N(0, 1) entries, then unit length")], "the number")


def _layer_case(name, q, k, c, dtype=np.float64):
    """q, k and the weights softmax(c q k^T) of a layer computed in dtype."""
    q, k = q.astype(dtype), k.astype(dtype)
    s = q @ np.swapaxes(k, -1, -2) * dtype(c)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return Case(name, q=q, k=k, weights=e / e.sum(axis=-1, keepdims=True))


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
                "a batch of 2, E=128, the default scale, very long queries: weights exactly 0",
                250 * n(size=(2, 3, 128)),
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
