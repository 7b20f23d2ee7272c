"""Chapter 3 exercises 3.5 and 3.6: a layer's scale picked out by its weights, and scaled attention
whose softmax is written in log space."""

from __future__ import annotations

import numpy as np

from ... import scaled_dot_product_attention as sdpa
from ... import softmax
from ..engine.registry import STUB_LINE, Case, Diagnosis, Exercise, grouped, register
from ._shared import TIMES_SQRT, UNSCALED, swap

__all__: list = []


# ----------------------------------------------------------------------------- 3.5 the scale a layer used (inverse)
def _recover(q, k, weights, candidates=None, how="right"):
    """The one scale c with weights = softmax(c q k^T), fitted on every weight of full precision."""
    E = np.shape(q)[-1]
    s = np.asarray(q, dtype=np.float64) @ swap(np.asarray(k, dtype=np.float64))  # (..., L, S)
    w = np.asarray(weights, dtype=np.float64)
    tiny = np.finfo(np.asarray(weights).dtype).tiny  # subnormal weights have lost their digits
    s, w = np.broadcast_arrays(s, w)
    ok = w > tiny
    logw = np.log(np.where(ok, w, 1.0))
    # log w = c s - log Z per row: centre both over the row's usable entries, then least squares
    n = ok.sum(-1, keepdims=True)
    s_c = np.where(ok, s - (s * ok).sum(-1, keepdims=True) / n, 0.0)
    l_c = np.where(ok, logw - (logw * ok).sum(-1, keepdims=True) / n, 0.0)
    c = float((s_c * l_c).sum() / (s_c * s_c).sum())
    return {"right": c, "default": 1 / np.sqrt(E), "temperature": 1 / c, "pre-scaled": c * np.sqrt(E)}[how]


def _variant(how):
    def variant(q, k, weights, candidates):
        wrong, right = _recover(q, k, weights, how=how), _recover(q, k, weights)
        return None if np.isclose(wrong, right, rtol=0.05) else wrong

    return variant


def _layer(q, k, c, dtype=np.float64):
    """The weights a layer with scale c returns, computed in dtype."""
    q, k = q.astype(dtype), k.astype(dtype)
    return softmax(q @ swap(k) * dtype(c))


def _recover_cases():
    rng = np.random.default_rng(305)
    n = rng.normal

    def case(label, q, k, c, dtype=np.float64):
        q, k = q.astype(dtype), k.astype(dtype)
        E, S = q.shape[-1], k.shape[-2]
        # the true scale among the usual suspects: the default, one over the width, none, the
        # number of keys, the square root of the width, and two others around the true one
        tried = [c, 1 / np.sqrt(E), 1 / E, 1.0, 1 / np.sqrt(S), np.sqrt(E), 2 * c, c / 3]
        candidates = []
        for x in tried:
            if all(abs(x / y - 1) > 0.05 for y in candidates):
                candidates.append(float(x))
        candidates = np.array(sorted(candidates))
        return Case(label, q=q, k=k, weights=_layer(q, k, c, dtype), candidates=candidates)

    q_big = 15 * n(size=(4, 64))  # scores of spread about 240 after a scale of 2: rows saturate
    return (
        grouped(
            "values",
            case("E=16, the default scale", n(size=(3, 16)), n(size=(5, 16)), 1 / np.sqrt(16)),
            case("E=16 in a model of width 64, scaled by its width", n(size=(3, 16)), n(size=(6, 16)), 1 / 8),
        )
        + grouped(
            "saturated rows",
            case(
                "E=64, a scale of 2, long queries: some weights are exactly 0", q_big, n(size=(12, 64)), 2.0
            ),
        )
        + grouped(
            "batch dimensions",
            case(
                "batch and heads (2, 3), E=8, a scale of 0.3", n(size=(2, 3, 2, 8)), n(size=(2, 3, 4, 8)), 0.3
            ),
        )
    )


register(
    Exercise(
        id="ch03.recover_scale",
        number="3.5",
        title="the scale a layer used, read from its weights",
        points=2,
        function="recover_scale",
        stub=STUB_LINE,
        kind="extend",
        hint="the layer's computation is one you can run: what does each candidate give?",
        description="A library's attention layer returns its weights, but its documentation does not say "
        "what it multiplies the scores by. You ran it on `q (..., L, E)` and `k (..., S, E)` and it "
        "returned `weights (..., L, S)`, the softmax over the keys of $c\\, q k^\\top$ with one unknown "
        "scale $c > 0$ for every row. Reading its source narrowed $c$ down to the values in "
        "`candidates` (a 1-d array of positive floats, among them $1/\\sqrt{E}$, $1/E$ and 1): "
        "return the one it used (a float), read from these arrays. In some rows the layer "
        "saturated: weights there may be exactly 0, but every row has at least two weights above 0.",
        needs=("import numpy as np", "from attncourse import softmax"),
        solution='''
            def recover_scale(q, k, weights, candidates):
                """The scale c, one of candidates, with weights = softmax(c q k^T) over the keys."""
                ### BEGIN SOLUTION
                s = q @ np.swapaxes(k, -1, -2)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                # the layer's own computation with each candidate: keep the one that gives its weights
                misfit = [np.abs(softmax(c * s) - weights).max() for c in candidates]
                return float(candidates[int(np.argmin(misfit))])
                ### END SOLUTION
        ''',
        reference=_recover,
        public_cases=_recover_cases,
        tolerance=(1e-2, 0.0),
        diagnoses=(
            Diagnosis(
                "your scale is the default one whatever the weights say; this layer's may be another",
                name="the default assumed",
                hint="the weights hold the scale: each candidate gives other weights",
                variant=_variant("default"),
            ),
            Diagnosis(
                "that is the temperature the scores were divided by; the function returns the factor "
                "they were multiplied by",
                name="the temperature",
                hint="c multiplies q k^T; a temperature divides it",
                variant=_variant("temperature"),
            ),
            Diagnosis(
                "your scale is measured against scores that were already divided by the square root "
                "of the width; c multiplies q k^T itself",
                name="relative to the default",
                hint="c multiplies q k^T itself, not q k^T / sqrt(E)",
                variant=_variant("pre-scaled"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.6 softmax in log space (diagnose)
def _late_scale_cases():
    rng = np.random.default_rng(306)
    n = rng.normal
    return grouped(
        "values",
        Case("L=2, S=3, E=16", q=n(size=(2, 16)), k=n(size=(3, 16)), v=n(size=(3, 2))),
        Case("L=3, S=8, E=64", q=n(size=(3, 64)), k=n(size=(8, 64)), v=n(size=(8, 4))),
    ) + grouped(
        "batch dimensions",
        Case("a batch of 2, E=4", q=n(size=(2, 3, 4)), k=n(size=(2, 3, 4)), v=n(size=(2, 3, 3))),
        Case(
            "batch and heads (2, 2), L=2, S=3, E=9",
            q=n(size=(2, 2, 2, 9)),
            k=n(size=(2, 2, 3, 9)),
            v=n(size=(2, 2, 3, 2)),
        ),
    )


def _log_space(q, k, v, how="right"):
    """Attention with the softmax written as exp(scaled - log-sum-exp), the normaliser as `how` says."""
    s = q @ swap(k)
    c = 1 / np.sqrt(q.shape[-1])
    if how == "scaled after the softmax":
        w = softmax(s) * c
    else:
        inside = s if how == "normaliser of the unscaled scores" else s * c
        top = inside.max(-1, keepdims=True)
        log_total = top + np.log(np.exp(inside - top).sum(-1, keepdims=True))
        w = np.exp(s * c - log_total)
    return w @ v, w


register(
    Exercise(
        id="ch03.weights_not_normalised",
        former_ids=("ch03.fix_late_scaling",),
        number="3.6",
        title="attention with its softmax in log space",
        points=2,
        function="scaled_dot_attention",
        former_functions=("attention_scaled_late",),
        hint="exp(a - log sum exp b) sums to 1 over a row when a and b are what?",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="This function is meant to be scaled dot-product attention for `q (..., L, E)`, "
        "`k (..., S, E)`, `v (..., S, Ev)`, returning `(out (..., L, Ev), weights (..., L, S))`. It "
        "writes the softmax in log space, $w_j = \\exp\\big(x_j - \\log \\sum_i e^{x_i}\\big)$ with the "
        "largest $x_i$ taken out of the sum, the form libraries use when they also need the log of "
        "the weights. Symptom: the rows of `weights` do not sum to 1; on random queries and keys most "
        "rows sum to well below 1 and a few to more than 1. Find the bug and fix it; you may call "
        "`numpy` and `softmax`.",
        solution='''
            def scaled_dot_attention(q, k, v):
                """Scaled dot-product attention of queries q over keys k and values v.

                Returns (out (..., L, Ev), weights (..., L, S)), weights the softmax over the keys.
                """
                scores = q @ np.swapaxes(k, -1, -2)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                top = scores.max(axis=-1, keepdims=True)  # (..., L, 1)
                ### BEGIN SOLUTION
                top = top / np.sqrt(q.shape[-1])
                q_scaled = q / np.sqrt(q.shape[-1])  # (..., L, E)
                log_x = q_scaled @ np.swapaxes(k, -1, -2)  # (..., L, S)
                log_total = top + np.log(np.exp(log_x - top).sum(axis=-1, keepdims=True))  # (..., L, 1)
                ### END SOLUTION
                weights = np.exp(log_x - log_total)
                return weights @ v, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
        ''',
        stub="""
            log_total = top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))  # (..., L, 1)
            q_scaled = q / np.sqrt(q.shape[-1])  # (..., L, E)
            log_x = q_scaled @ np.swapaxes(k, -1, -2)  # (..., L, S)
        """,
        reference=lambda q, k, v: sdpa(q, k, v),
        public_cases=_late_scale_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "your weights are exp of the scaled scores minus the log of a sum over other scores: "
                "which scores does the normaliser add up?",
                name="the normaliser of the unscaled scores",
                hint="the log-sum-exp must be taken over the same scaled scores that are exponentiated",
                variant=lambda q, k, v: _log_space(q, k, v, "normaliser of the unscaled scores"),
            ),
            Diagnosis(
                "the weights' rows sum to 1/sqrt(E), not 1, and are as peaked as the unscaled ones: "
                "where in the computation does a scale change how peaked a softmax is?",
                name="scaled after the softmax",
                hint="scale the scores, then take the softmax",
                variant=lambda q, k, v: _log_space(q, k, v, "scaled after the softmax"),
            ),
            Diagnosis(UNSCALED, variant=lambda q, k, v: sdpa(q, k, v, scale=1.0)),
            Diagnosis(TIMES_SQRT, variant=lambda q, k, v: sdpa(q, k, v, scale=np.sqrt(q.shape[-1]))),
        ),
    )
)
