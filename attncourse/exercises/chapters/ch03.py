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
                """Scaled dot-product attention of queries q over keys k and values v.

                Returns (out (..., L, Ev), weights (..., L, S)), weights the softmax over the keys.
                """
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


# ----------------------------------------------------------------------------- 3.4 unit-length q and k (predict)
_COSINE_DK = 128


def _cosine_factor(how="right", d_k=_COSINE_DK):
    length = np.sqrt(d_k)  # |q| and |k|: about sqrt(d_k) each, so q_hat . k_hat is about q . k / d_k
    return np.array(
        {
            "right": length,  # Var(q . k / d_k) = 1 / d_k: the factor sqrt(d_k) gives spread 1
            "none": 1.0,
            "unscaled": length**2,
            "divided": 1 / length,
            "each vector": np.sqrt(length),
        }[how]
    )


register(
    Exercise(
        id="ch03.predict_cosine_factor",
        number="3.4",
        title="a factor for queries and keys of unit length",
        points=1,
        function="predict_cosine_factor",
        stub=STUB_LINE,
        kind="predict",
        description="Some models normalise every query and every key to length 1 before the dot product, "
        "and then multiply the scores by a fixed factor $\\tau$ instead of dividing them by "
        "$\\sqrt{d_k}$. Before normalising, the queries and keys of this one have $d_k = 128$ "
        "independent $\\mathcal{N}(0, 1)$ entries, the chapter's setting. Before running anything, "
        "write down the $\\tau$ for which its scores spread as much (standard deviation over random "
        "independent `q` and `k`) as the chapter's scaled scores $q \\cdot k / \\sqrt{d_k}$ do. Return "
        "$\\tau$; anything within 5% passes.",
        solution='''
            def predict_cosine_factor():
                """The factor tau for unit-length q and k, d_k = 128."""
                ### BEGIN SOLUTION
                # |q| and |k| are each about sqrt(128), so q_hat . k_hat is about q . k / 128, whose
                # variance is 128 / 128^2 = 1 / 128; a spread of 1 needs tau = sqrt(128)
                return 128**0.5
                ### END SOLUTION
        ''',
        reference=_cosine_factor,
        public_cases=lambda: grouped("the number", Case("d_k = 128, N(0, 1) entries, then unit length")),
        tolerance=(0.05, 0.0),
        hint="a vector of d_k independent N(0, 1) entries has a length of about sqrt(d_k): what does "
        "normalising q and k do to q . k, and so to its variance?",
        diagnoses=(
            Diagnosis(
                "with that factor the normalised scores keep their own spread: how long were q and k "
                "before they were normalised?",
                name="no factor",
                hint="normalising divides q . k by |q| |k|, about d_k",
                variant=lambda: _cosine_factor("none"),
            ),
            Diagnosis(
                "your factor gives back the unscaled scores' spread, not the scaled ones'",
                name="the unscaled scores",
                hint="the scaled scores have standard deviation 1; the normalised ones 1 / sqrt(d_k)",
                variant=lambda: _cosine_factor("unscaled"),
            ),
            Diagnosis(
                "your factor shrinks the scores, and the normalised scores are already narrower than "
                "the scaled ones",
                name="divided, not multiplied",
                hint="the normalised scores spread by 1 / sqrt(d_k): multiply them back up",
                variant=lambda: _cosine_factor("divided"),
            ),
            Diagnosis(
                "your factor would do if it multiplied q and k each; it multiplies their dot product once",
                name="a factor for each vector",
                hint="the dot product of two vectors each multiplied by a is multiplied by a squared",
                variant=lambda: _cosine_factor("each vector"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.5 the scale a layer used (inverse)
def _recover(q, k, weights, how="right"):
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
    def variant(q, k, weights):
        wrong, right = _recover(q, k, weights, how), _recover(q, k, weights)
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
        return Case(label, q=q, k=k, weights=_layer(q, k, c, dtype))

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
        hint="compare two weights of the same row: what does the softmax's normaliser become in their ratio?",
        description="A library's attention layer returns its weights, but its documentation does not say "
        "what it multiplies the scores by: $1/\\sqrt{E}$, one over the square root of the model's "
        "width, something else, or nothing. You ran it on `q (..., L, E)` and `k (..., S, E)` and it "
        "returned `weights (..., L, S)`, the softmax over the keys of $c\\, q k^\\top$ with one unknown "
        "scale $c > 0$ for every row. Return $c$ (a float), read from these three arrays. In some "
        "rows the layer saturated: weights there may be exactly 0, but every row has at least two "
        "weights above 0.",
        solution='''
            def recover_scale(q, k, weights):
                """The scale c > 0 with weights = softmax(c q k^T) over the keys."""
                ### BEGIN SOLUTION
                s = q @ np.swapaxes(k, -1, -2)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                s, w = np.broadcast_arrays(s, weights)
                top = w.argmax(-1)[..., None]  # each row's largest weight, never 0
                w_top = np.take_along_axis(w, top, -1)
                s_top = np.take_along_axis(s, top, -1)
                # log w_j - log w_top = c (s_j - s_top): the normaliser cancels in a ratio
                use = (w > 0) & (s != s_top)  # skip weights that underflowed to 0
                return float(np.mean(np.log(w[use] / np.broadcast_to(w_top, w.shape)[use])
                                     / (s[use] - np.broadcast_to(s_top, s.shape)[use])))
                ### END SOLUTION
        ''',
        reference=_recover,
        public_cases=_recover_cases,
        tolerance=(1e-2, 0.0),
        diagnoses=(
            Diagnosis(
                "your scale is the default one whatever the weights say; this layer's may be another",
                name="the default assumed",
                hint="the weights hold the scale: the ratio of two weights in a row depends on c",
                variant=_variant("default"),
            ),
            Diagnosis(
                "that is the temperature the scores were divided by; the function returns the factor "
                "they were multiplied by",
                name="the temperature",
                hint="c multiplies q k^T; a temperature T divides it, so c = 1 / T",
                variant=_variant("temperature"),
            ),
            Diagnosis(
                "your scale is measured against scores that were already divided by the square root "
                "of the width; c multiplies q k^T itself",
                name="relative to the default",
                hint="fit c against q k^T, not q k^T / sqrt(E)",
                variant=_variant("pre-scaled"),
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
                """Scaled dot-product attention of queries q over keys k and values v.

                Returns (out (..., L, Ev), weights (..., L, S)), weights the softmax over the keys.
                """
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
