"""Chapter 3 exercises: scaling the scores by 1/sqrt(d_k)."""

from __future__ import annotations

import numpy as np

from ... import scaled_dot_product_attention as sdpa
from ... import softmax
from ..engine.registry import SHARED_MISTAKES, STUB_LINE, Case, Diagnosis, Exercise, grouped, register
from ._shared import swap

__all__: list = []

UNSCALED = (
    "the scores are larger than expected by a factor of sqrt(E), whatever the inputs: what makes "
    "them grow with the width E?"
)
DIVIDED_BY_E = (
    "the scores are smaller than expected by a factor of sqrt(E): the scores' variance is E; what is "
    "their standard deviation?"
)
TIMES_SQRT = "the scores are E times the expected ones: did the scale go the right way?"
SHARED_MISTAKES.update(
    {
        UNSCALED: ("unscaled scores", "divide the scores by sqrt(E), the width of q and k"),
        DIVIDED_BY_E: ("divided by E", "divide by sqrt(E), not E"),
        TIMES_SQRT: ("multiplied by sqrt(E)", "divide by sqrt(E) instead of multiplying"),
    }
)


# ----------------------------------------------------------------------------- 3.1 scaled scores
def _scores(q, k, scale):
    return q @ swap(k) * scale


def _scores_cases():
    rng = np.random.default_rng(301)
    n = rng.normal
    return grouped(
        "values",
        Case("L=3, S=5, E=4", q=n(size=(3, 4)), k=n(size=(5, 4))),
        Case("L=S=2, E=9", q=n(size=(2, 9)), k=n(size=(2, 9))),
    ) + grouped(
        "batch dimensions",
        Case("a batch of 2, E=9", q=n(size=(2, 2, 9)), k=n(size=(2, 3, 9))),
        Case("batch and heads (2, 2), L=2, S=3, E=4", q=n(size=(2, 2, 2, 4)), k=n(size=(2, 2, 3, 4))),
    )


register(
    Exercise(
        id="ch03.scaled_scores",
        number="3.1",
        title="scaled scores",
        points=1,
        hint="q k^T, divided by the square root of the last dimension",
        function="scaled_scores",
        stub=STUB_LINE,
        needs=("import numpy as np", "from attncourse import softmax"),
        description="The scores $q k^\\top / \\sqrt{E}$ for `q (..., L, E)` and `k (..., S, E)`.",
        solution='''
            def scaled_scores(q, k):
                """Scores q k^T / sqrt(E): (..., L, E), (..., S, E) -> (..., L, S)."""
                ### BEGIN SOLUTION
                E = q.shape[-1]
                return q @ np.swapaxes(k, -1, -2) / np.sqrt(E)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                ### END SOLUTION
        ''',
        reference=lambda q, k: _scores(q, k, 1 / np.sqrt(q.shape[-1])),
        public_cases=_scores_cases,
        diagnoses=(
            Diagnosis(UNSCALED, variant=lambda q, k: _scores(q, k, 1.0)),
            Diagnosis(DIVIDED_BY_E, variant=lambda q, k: _scores(q, k, 1 / q.shape[-1])),
            Diagnosis(TIMES_SQRT, variant=lambda q, k: _scores(q, k, np.sqrt(q.shape[-1]))),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.2 init for unscaled scores (derive)
def _init_std(d_k, d_model, token_var, q_var_target=None, use_token_var=True, variance=False):
    d_k = np.asarray(d_k, dtype=np.float64)
    per_entry = 1 / np.sqrt(d_k) if q_var_target is None else q_var_target(d_k)  # Var(q_j) = Var(k_j)
    denominator = d_model * (token_var if use_token_var else 1.0)
    sigma2 = per_entry / denominator  # Var(q_j) = d_model * token_var * sigma^2
    return sigma2 if variance else np.sqrt(sigma2)


def _init_cases():
    return grouped(
        "values",
        Case("the saved run: d_k=64, d_model=64, token variance 2", d_k=64, d_model=64, token_var=2.0),
        Case("the saved run: d_k=128, d_model=64, token variance 2", d_k=128, d_model=64, token_var=2.0),
        Case("d_k=16, d_model=32, token variance 0.5", d_k=16, d_model=32, token_var=0.5),
        Case(
            "several d_k, d_model=100, token variance 1",
            d_k=np.array([4, 25, 400]),
            d_model=100,
            token_var=1.0,
        ),
    )


register(
    Exercise(
        id="ch03.init_std_for_unscaled_scores",
        number="3.2",
        title="an initialisation that makes the scale unnecessary at step 0",
        points=3,
        function="init_std_for_unscaled_scores",
        stub=STUB_LINE,
        kind="derive",
        hint="write Var(q_j) in terms of d_model, token_var and sigma^2 first; then Var(q . k) in terms of d_k and Var(q_j)",
        description="The chapter's training run (`scaling_training.json`) initialises `W_q` and `W_k` so "
        "that every entry of `q` and `k` has variance about 1, and its unscaled scores start with "
        "variance $d_k$. Another way to start with unit-variance scores *without* the $1/\\sqrt{d_k}$ "
        "is a smaller initialisation. The tokens `x` have `d_model` independent entries of mean 0 and "
        "variance `token_var`; `q = x @ W_q` and `k = x' @ W_k` with `W_q`, `W_k (d_model, d_k)` "
        "whose entries are independent $\\mathcal{N}(0, \\sigma^2)$; treat `q` and `k` as independent. "
        "Derive the standard deviation $\\sigma$ for which the *unscaled* score $q \\cdot k$ has "
        "variance 1, and return it as a closed form in `d_k` (an int or an array), `d_model` and "
        "`token_var`: a float or an array shaped like `d_k`. Use arithmetic and `numpy` only.",
        solution='''
            def init_std_for_unscaled_scores(d_k, d_model, token_var):
                """The std of W_q's and W_k's entries for which Var(q . k) = 1 at initialisation."""
                ### BEGIN SOLUTION
                # Var(q_j) = d_model * token_var * sigma^2 (a sum of d_model independent products),
                # Var(q . k) = d_k * Var(q_j) * Var(k_j) = 1  =>  Var(q_j) = 1 / sqrt(d_k)
                sigma2 = 1 / (np.sqrt(d_k) * d_model * token_var)
                return np.sqrt(sigma2)
                ### END SOLUTION
        ''',
        reference=_init_std,
        public_cases=_init_cases,
        diagnoses=(
            Diagnosis(
                "that is the saved run's own initialisation, which gives q and k entries of variance 1: "
                "what is the variance of a sum of d_k products of two such entries?",
                name="entries of variance 1",
                hint="unit-variance entries give Var(q . k) = d_k; each entry's variance must shrink with d_k",
                variant=lambda d_k, d_model, token_var: _init_std(
                    d_k, d_model, token_var, q_var_target=lambda d: np.ones_like(d)
                ),
            ),
            Diagnosis(
                "with your sigma the scores have variance 1/d_k, not 1: q . k multiplies an entry of q "
                "by an entry of k, so how small must each of the two be?",
                name="each entry of variance 1/d_k",
                hint="Var(q . k) = d_k Var(q_j) Var(k_j): Var(q_j) = Var(k_j) = 1/sqrt(d_k)",
                variant=lambda d_k, d_model, token_var: _init_std(
                    d_k, d_model, token_var, q_var_target=lambda d: 1 / d
                ),
            ),
            Diagnosis(
                "your answer does not change with token_var: each entry of q sums d_model products "
                "x_i W_ij, and the variance of x_i is token_var",
                name="token variance left out",
                hint="Var(q_j) = d_model * token_var * sigma^2",
                variant=lambda d_k, d_model, token_var: (
                    None if token_var == 1 else _init_std(d_k, d_model, token_var, use_token_var=False)
                ),
            ),
            Diagnosis(
                "that is sigma squared, the variance; the function returns the standard deviation",
                name="returned the variance",
                hint="take the square root of the variance you found",
                variant=lambda d_k, d_model, token_var: _init_std(d_k, d_model, token_var, variance=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.3 disagrees with torch (diagnose)
def _wrong_size_cases():
    rng = np.random.default_rng(303)
    n = rng.normal
    # S, E and Ev differ in every case: a scale read from the wrong axis shows
    return grouped(
        "values",
        Case("L=2, S=8, E=64, Ev=3", q=n(size=(2, 64)), k=n(size=(8, 64)), v=n(size=(8, 3))),
        Case("L=3, S=5, E=4, Ev=2", q=n(size=(3, 4)), k=n(size=(5, 4)), v=n(size=(5, 2))),
    ) + grouped(
        "batch dimensions",
        Case(
            "a batch of 2, L=3, S=4, E=16, Ev=5",
            q=n(size=(2, 3, 16)),
            k=n(size=(2, 4, 16)),
            v=n(size=(2, 4, 5)),
        ),
        Case(
            "batch and heads (2, 3), L=2, S=6, E=9, Ev=4",
            q=n(size=(2, 3, 2, 9)),
            k=n(size=(2, 3, 6, 9)),
            v=n(size=(2, 3, 6, 4)),
        ),
    )


register(
    Exercise(
        id="ch03.attention_with_scale",
        former_ids=("ch03.fix_scale_size",),
        number="3.3",
        title="attention that disagrees with torch's",
        points=2,
        function="attention_with_scale",
        hint="which axis of which array holds the width of the dot products?",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="This function is meant to be scaled dot-product attention for `q (..., L, E)`, "
        "`k (..., S, E)`, `v (..., S, Ev)`, returning `(out (..., L, Ev), weights (..., L, S))`. Symptom: "
        "it agrees with `F.scaled_dot_product_attention` on a test with 16 keys of width 16, but with "
        "8 keys of width 64 its weights are more peaked than torch's, and with 100 keys of width 16 "
        "flatter. Find the bug and fix it; you may call `numpy` and `softmax`.",
        solution='''
            def attention_with_scale(q, k, v):
                """softmax(q k^T / sqrt(E)) v: returns (out (..., L, Ev), weights (..., L, S))."""
                ### BEGIN SOLUTION
                scale = 1 / np.sqrt(q.shape[-1])
                ### END SOLUTION
                scores = q @ np.swapaxes(k, -1, -2) * scale  # (..., L, E) @ (..., E, S) -> (..., L, S)
                weights = softmax(scores)
                return weights @ v, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
        ''',
        stub="scale = 1 / np.sqrt(k.shape[-2])",
        reference=lambda q, k, v: sdpa(q, k, v),
        public_cases=_wrong_size_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "your weights are as peaked as a scale of 1/sqrt(S), S the number of keys: which size "
                "should the scale follow, and is the number of keys that size?",
                name="scaled by the number of keys",
                hint="the dot products have E terms, the last axis of q and k",
                variant=lambda q, k, v: sdpa(q, k, v, scale=1 / np.sqrt(k.shape[-2])),
            ),
            Diagnosis(
                "you scaled by sqrt(Ev), the width of the values; the scale uses E, the width of q and k",
                variant=lambda q, k, v: sdpa(q, k, v, scale=1 / np.sqrt(v.shape[-1])),
            ),
            Diagnosis(
                "your weights are as peaked as a scale of 1/sqrt(L), L the number of queries",
                name="scaled by the number of queries",
                hint="the dot products have E terms, the last axis of q and k",
                variant=lambda q, k, v: sdpa(q, k, v, scale=1 / np.sqrt(q.shape[-2])),
            ),
            Diagnosis(UNSCALED, variant=lambda q, k, v: sdpa(q, k, v, scale=1.0)),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.4 a token's score with itself (predict)
def _self_score(d_k=64, scaled=True, independent=False, square_var=2.0, var_divisor="d"):
    mean, var = (0.0, d_k) if independent else (float(d_k), square_var * d_k)
    if scaled:
        mean = mean / np.sqrt(d_k)
        var = var / (d_k if var_divisor == "d" else np.sqrt(d_k))
    return np.array(mean), np.array(var)


register(
    Exercise(
        id="ch03.predict_self_score",
        number="3.4",
        title="predict a token's score with itself",
        points=1,
        function="predict_self_score",
        stub=STUB_LINE,
        kind="predict",
        description="A layer ties its projections, `W_q = W_k`, so a token's key is its own query: its "
        "score with itself is $q \\cdot q / \\sqrt{d_k}$. The query has $d_k = 64$ independent entries, each "
        "$\\mathcal{N}(0, 1)$. Before running anything, write down the *mean* and the *variance* of this "
        "scaled score over random queries. Return `(mean, variance)`; anything within 5% passes.",
        solution='''
            def predict_self_score():
                """(mean, variance) of q . q / sqrt(d_k) for q with d_k = 64 independent N(0, 1) entries."""
                ### BEGIN SOLUTION
                # q . q = sum of 64 squares: mean 64 * E[q_i^2] = 64, variance 64 * Var(q_i^2) = 64 * 2
                # (E[q_i^4] = 3 for a standard Gaussian); dividing by sqrt(64) = 8 divides the variance by 64
                return 64 / 8, 64 * 2 / 64
                ### END SOLUTION
        ''',
        reference=_self_score,
        public_cases=lambda: grouped("the numbers", Case("d_k = 64, N(0, 1) entries, k = q")),
        outputs=("mean", "variance"),
        tolerance=(0.05, 0.0),
        hint="q . q is a sum of d_k squares: what are the mean and the variance of one square of a standard Gaussian?",
        diagnoses=(
            Diagnosis(
                "your numbers are those of a query and a key drawn independently; here the key is the query",
                name="key independent of the query",
                hint="q_i times itself is q_i^2, which is never negative",
                variant=lambda: _self_score(independent=True),
            ),
            Diagnosis(
                "your numbers are those of the unscaled score",
                name="unscaled",
                hint="dividing by sqrt(d_k) divides the mean by sqrt(d_k) and the variance by d_k",
                variant=lambda: _self_score(scaled=False),
            ),
            Diagnosis(
                "your mean is right; your variance takes one squared entry to vary as much as one entry",
                name="Var(q_i^2) taken as 1",
                hint="E[z^4] = 3 for z ~ N(0, 1)",
                variant=lambda: _self_score(square_var=1.0),
            ),
            Diagnosis(
                "your mean is right; your variance was scaled as if it were a standard deviation",
                name="variance divided by sqrt(d_k)",
                hint="Var(X / c) = Var(X) / c^2",
                variant=lambda: _self_score(var_divisor="sqrt"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.5 a scale for entries with a mean (derive)
def _unit_scale(d_k, mu, how="right"):
    d_k = np.asarray(d_k, dtype=np.float64)
    m2 = np.asarray(mu, dtype=np.float64) ** 2
    var = {
        "right": d_k * (1 + 2 * m2),
        "mean ignored": d_k + 0 * m2,
        "second moments": d_k * (1 + m2) ** 2,
        "one mean": d_k * (1 + m2),
        "mean square": d_k * (1 + 2 * m2) + (d_k * m2) ** 2,
    }[how]
    return 1 / np.sqrt(var)


def _unit_scale_cases():
    return grouped(
        "values",
        Case("d_k=64, mu=0 (the chapter's case)", d_k=64, mu=0.0),
        Case("d_k=16, mu=1", d_k=16, mu=1.0),
        Case("d_k=100, several means, one negative", d_k=100, mu=np.array([0.5, 2.0, -1.0])),
    )


register(
    Exercise(
        id="ch03.unit_variance_scale",
        number="3.5",
        title="a scale for queries and keys that are not centred",
        points=2,
        function="unit_variance_scale",
        stub=STUB_LINE,
        hint="write Var(q_i k_i) as E[(q_i k_i)^2] - (E[q_i k_i])^2 and use independence in each term",
        kind="derive",
        description="The chapter's $1/\\sqrt{d_k}$ assumes entries of mean 0. After a ReLU-like layer they "
        "are not: here `q` and `k` have $d_k$ entries, all independent, each with mean `mu` and variance "
        "1. Derive the scale $c$ for which the score $c\\, q \\cdot k$ has variance 1, and return it as a "
        "closed form in `d_k` (an int) and `mu` (a float or an array; return an array of its shape). Use "
        "arithmetic and `numpy` only.",
        solution='''
            def unit_variance_scale(d_k, mu):
                """The scale c for which c q . k has variance 1: d_k independent entries of mean mu, variance 1."""
                ### BEGIN SOLUTION
                mu2 = np.asarray(mu, dtype=float) ** 2
                # E[(q_i k_i)^2] = E[q_i^2] E[k_i^2] = (1 + mu^2)^2 and E[q_i k_i] = mu^2,
                # so Var(q_i k_i) = 1 + 2 mu^2; d_k independent terms add their variances
                return 1 / np.sqrt(d_k * (1 + 2 * mu2))
                ### END SOLUTION
        ''',
        reference=_unit_scale,
        public_cases=_unit_scale_cases,
        diagnoses=(
            Diagnosis(
                "your scale does not change with mu: what does a mean add to the variance of a product?",
                name="mean ignored",
                hint="Var(q_i k_i) = E[q_i^2] E[k_i^2] - E[q_i]^2 E[k_i]^2",
                variant=lambda d_k, mu: (
                    None if np.all(np.asarray(mu) == 0) else _unit_scale(d_k, mu, "mean ignored")
                ),
            ),
            Diagnosis(
                "your scale makes the mean square of one product 1/d_k, not its variance: "
                "a product of entries with a mean has a mean of its own",
                name="second moment taken as the variance",
                hint="subtract (E[q_i k_i])^2 = mu^4",
                variant=lambda d_k, mu: (
                    None if np.all(np.asarray(mu) == 0) else _unit_scale(d_k, mu, "second moments")
                ),
            ),
            Diagnosis(
                "your scale counts the mean of only one of the two factors",
                name="one factor's mean",
                hint="E[q_i^2] and E[k_i^2] are both 1 + mu^2",
                variant=lambda d_k, mu: (
                    None if np.all(np.asarray(mu) == 0) else _unit_scale(d_k, mu, "one mean")
                ),
            ),
            Diagnosis(
                "your scale makes the mean square of the whole score 1, not its variance",
                name="mean square of the score",
                hint="the variance leaves out the square of the score's mean",
                variant=lambda d_k, mu: (
                    None if np.all(np.asarray(mu) == 0) else _unit_scale(d_k, mu, "mean square")
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.6 rows that do not sum to 1 (diagnose)
def _late_scale_cases():
    rng = np.random.default_rng(306)
    n = rng.normal
    return grouped(
        "values",
        Case("L=2, S=3, E=16", q=n(size=(2, 16)), k=n(size=(3, 16)), v=n(size=(3, 2))),
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


def _scaled_after(q, k, v):
    weights = softmax(q @ swap(k)) / np.sqrt(q.shape[-1])
    return weights @ v, weights


register(
    Exercise(
        id="ch03.weights_not_normalised",
        former_ids=("ch03.fix_late_scaling",),
        number="3.6",
        title="weights whose rows do not sum to 1",
        points=2,
        function="scaled_dot_attention",
        former_functions=("attention_scaled_late",),
        hint="the scaling belongs inside the softmax: divide the scores, not the weights",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="This function is meant to be scaled dot-product attention, returning `(out, weights)`. "
        "Symptom: the rows of `weights` do not sum to 1. Find the bug and fix it.",
        solution='''
            def scaled_dot_attention(q, k, v):
                """softmax(q k^T / sqrt(E)) v: returns (out (..., L, Ev), weights (..., L, S))."""
                scores = q @ np.swapaxes(k, -1, -2)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                ### BEGIN SOLUTION
                weights = softmax(scores / np.sqrt(q.shape[-1]))
                ### END SOLUTION
                return weights @ v, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
        ''',
        stub="weights = softmax(scores) / np.sqrt(q.shape[-1])",
        reference=lambda q, k, v: sdpa(q, k, v),
        public_cases=_late_scale_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "the weights' rows sum to 1/sqrt(E), not 1, and are as peaked as the unscaled ones: "
                "where in the computation does a scale change how peaked a softmax is?",
                name="scaled after the softmax",
                hint="scale the scores, then take the softmax",
                variant=_scaled_after,
            ),
            Diagnosis(UNSCALED, variant=lambda q, k, v: sdpa(q, k, v, scale=1.0)),
            Diagnosis(TIMES_SQRT, variant=lambda q, k, v: sdpa(q, k, v, scale=np.sqrt(q.shape[-1]))),
        ),
    )
)
