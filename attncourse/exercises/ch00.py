"""Chapter 0 exercises: kernel regression, the encoder-decoder bottleneck, additive attention."""

from __future__ import annotations

import numpy as np

from .. import softmax
from ..pooling import additive_scores, nadaraya_watson
from ._registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

SOFTMAX_NEEDS = ("import numpy as np", "from attncourse import softmax")


# ----------------------------------------------------------------------------- 0.1 kernel regression
def _nw_cases():
    rng = np.random.default_rng(1)
    x_key = np.sort(rng.uniform(0, 5, size=8))
    return grouped(
        "predictions",
        Case(
            "three keys, width 1",
            x_query=np.array([0.0, 1.5]),
            x_key=np.array([0.0, 1.0, 3.0]),
            y_value=np.array([1.0, 2.0, -1.0]),
            width=1.0,
        ),
        Case(
            "8 noisy samples, width 0.5",
            x_query=np.linspace(0, 5, 6),
            x_key=x_key,
            y_value=np.sin(x_key) + 0.1 * rng.normal(size=8),
            width=0.5,
        ),
    ) + grouped(
        "far queries and narrow kernels",
        Case(
            "a query 512 from the keys (its kernel values underflow), width 8",
            x_query=np.array([-512.0, 0.25]),
            x_key=np.array([0.0, 0.25, 0.5]),
            y_value=np.array([2.0, -1.0, 4.0]),
            width=8.0,
        ),
    )


def _nw(x_query, x_key, y_value, width, factor=2.0, power=2):
    diff = np.abs(np.asarray(x_query)[:, None] - np.asarray(x_key)[None, :])  # (L, 1) - (1, S) -> (L, S)
    return softmax(-(diff**power) / (factor * width**2)) @ y_value  # (L, S) @ (S,) -> (L,)


register(
    Exercise(
        id="ch00.kernel_regression",
        number="0.1",
        title="Nadaraya-Watson kernel regression",
        points=2,
        function="kernel_regression",
        hint="one row of weights per query: the (L, S) differences x_query[:, None] - x_key[None, :], a softmax over each row, then a weighted sum of y_value",
        kind="implement",
        description="Predict at each query point `x_query (L,)` a weighted average of the training "
        "targets `y_value (S,)`, weighting key `x_key[j]` by a Gaussian kernel of width `width`: "
        "$f(x) = \\sum_j \\operatorname{softmax}_j\\big(-(x - x_j)^2 / 2w^2\\big)\\, y_j$. Return the "
        "predictions `(L,)`.",
        solution='''
            def kernel_regression(x_query, x_key, y_value, width):
                """Gaussian-kernel (Nadaraya-Watson) predictions (L,) at x_query (L,) from x_key, y_value (S,)."""
                ### BEGIN SOLUTION
                diff = x_query[:, None] - x_key[None, :]  # (L, 1) - (1, S) -> (L, S)
                weights = softmax(-(diff**2) / (2 * width**2))  # near keys weigh more; rows sum to 1
                return weights @ y_value  # (L, S) @ (S,) -> (L,)
                ### END SOLUTION
        ''',
        reference=lambda x_query, x_key, y_value, width: nadaraya_watson(x_query, x_key, y_value, width)[0],
        public_cases=_nw_cases,
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "the weights are too peaked, as if the width were w / sqrt(2): what is in the kernel's "
                "denominator?",
                name="kernel without the factor 2",
                hint="the kernel is exp(-(x - x_j)^2 / (2 w^2)): the factor 2 is in the denominator",
                variant=lambda xq, xk, y, w: _nw(xq, xk, y, w, factor=1.0),
            ),
            Diagnosis(
                "you used the distance |x - x_j| instead of its square: the Gaussian kernel squares it",
                variant=lambda xq, xk, y, w: _nw(xq, xk, y, w, power=1),
            ),
            Diagnosis(
                "the scores lost their minus sign, so far keys weigh more than near ones",
                variant=lambda xq, xk, y, w: softmax(((xq[:, None] - xk[None, :]) ** 2) / (2 * w**2)) @ y,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 0.2 weight ratio
def _ratio_cases():
    return grouped(
        "ratios",
        Case("d1=0, d2=1, width 1", d1=0.0, d2=1.0, width=1.0),
        Case(
            "several distances, width 0.5",
            d1=np.array([0.0, 0.5, 1.0]),
            d2=np.array([1.0, 1.0, 2.0]),
            width=0.5,
        ),
        Case("equal distances", d1=np.array([2.0, -2.0]), d2=np.array([-2.0, 2.0]), width=3.0),
    )


def _ratio(d1, d2, width):
    return np.exp((np.asarray(d2) ** 2 - np.asarray(d1) ** 2) / (2 * width**2))


register(
    Exercise(
        id="ch00.kernel_weight_ratio",
        number="0.2",
        title="how much more a near key weighs",
        points=2,
        function="kernel_weight_ratio",
        hint="write each weight as exp(score) / Z: what happens to Z in the ratio?",
        kind="derive",
        description="A query sits at distance `d1` from key 1 and `d2` from key 2 (any other keys are "
        "the same for both). Derive the ratio $\\alpha_1 / \\alpha_2$ of their Nadaraya-Watson weights "
        "under a Gaussian kernel of width `width`, as a closed form (the normaliser cancels), and "
        "return it. `d1`, `d2` may be arrays of the same shape.",
        solution='''
            def kernel_weight_ratio(d1, d2, width):
                """alpha_1 / alpha_2 for keys at distances d1 and d2 from the query (Gaussian kernel)."""
                ### BEGIN SOLUTION
                # softmax weights are exp(score) / Z; Z cancels in the ratio, so it is exp(score_1 - score_2)
                return np.exp((d2**2 - d1**2) / (2 * width**2))
                ### END SOLUTION
        ''',
        reference=_ratio,
        public_cases=_ratio_cases,
        diagnoses=(
            Diagnosis(
                "this is alpha_2 / alpha_1, the inverse: the nearer key (smaller d) must get the larger weight",
                variant=lambda d1, d2, w: _ratio(d2, d1, w),
            ),
            Diagnosis(
                "the ratio is the one for width w / sqrt(2): what divides the squared distances?",
                name="ratio without the factor 2",
                hint="the exponent is (d2^2 - d1^2) / (2 w^2)",
                variant=lambda d1, d2, w: _ratio(d1, d2, w / np.sqrt(2)),
            ),
            Diagnosis(
                "that is the difference of the scores, not the ratio of the weights: exponentiate it",
                variant=lambda d1, d2, w: (np.asarray(d2) ** 2 - np.asarray(d1) ** 2) / (2 * w**2),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 0.3 bottleneck
def _bottleneck_reference():
    return np.array(512), np.array(512 * 40)


register(
    Exercise(
        id="ch00.bottleneck_numbers",
        number="0.3",
        title="what the decoder gets to see",
        points=1,
        function="bottleneck_numbers",
        hint="without attention the decoder reads one state vector; with attention, how many state vectors can it read?",
        kind="predict",
        description="An RNN encoder with a hidden state of 512 numbers reads a sentence of 40 tokens. "
        "Before running anything, write down how many numbers the decoder can read from the encoder "
        "(a) in the encoder-decoder without attention (only the final state), (b) with attention "
        "(every encoder state). Return the two counts `(without, with_attention)` as integers.",
        solution='''
            def bottleneck_numbers():
                """(numbers the decoder reads without attention, with attention) for 40 tokens, hidden size 512."""
                ### BEGIN SOLUTION
                hidden, n_tokens = 512, 40
                return hidden, hidden * n_tokens  # one final state vs one state per source token
                ### END SOLUTION
        ''',
        reference=_bottleneck_reference,
        public_cases=lambda: grouped("the counts", Case("hidden size 512, 40 tokens")),
        outputs=("without", "with_attention"),
        diagnoses=(
            Diagnosis(
                "without attention the decoder sees only the encoder's final state: one vector of 512 "
                "numbers, whatever the sentence's length",
                variant=lambda: (np.array(512 * 40), np.array(512 * 40)),
            ),
            Diagnosis(
                "with attention the decoder can read every encoder state: 40 vectors of 512 numbers",
                variant=lambda: (np.array(512), np.array(512)),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 0.4 additive scores
def _additive_cases():
    rng = np.random.default_rng(4)
    n = rng.normal
    return grouped(
        "scores",
        Case(
            "L=2, S=3, E_q=E_k=4, hidden 5",
            q=n(size=(2, 4)),
            k=n(size=(3, 4)),
            W_q=n(size=(5, 4)),
            W_k=n(size=(5, 4)),
            w_v=n(size=5),
        ),
        Case(
            "query and key widths differ (E_q=3, E_k=6)",
            q=n(size=(4, 3)),
            k=n(size=(2, 6)),
            W_q=n(size=(7, 3)),
            W_k=n(size=(7, 6)),
            w_v=n(size=7),
        ),
    )


register(
    Exercise(
        id="ch00.bahdanau_scores",
        number="0.4",
        title="additive (Bahdanau) scores",
        points=2,
        function="bahdanau_scores",
        hint="project the queries and the keys once each, broadcast them to (L, S, H), apply tanh, then contract H with w_v",
        kind="implement",
        description="Score every query `q (L, E_q)` against every key `k (S, E_k)` with a small network: "
        "$e_{ij} = w_v^\\top \\tanh(W_q q_i + W_k k_j)$, with `W_q (H, E_q)`, `W_k (H, E_k)`, "
        "`w_v (H,)`. Return the `(L, S)` scores. Broadcasting beats a double loop.",
        solution='''
            def bahdanau_scores(q, k, W_q, W_k, w_v):
                """Additive scores (L, S): w_v . tanh(W_q q_i + W_k k_j)."""
                ### BEGIN SOLUTION
                q_proj = q @ W_q.T  # (L, E_q) @ (E_q, H) -> (L, H)
                k_proj = k @ W_k.T  # (S, E_k) @ (E_k, H) -> (S, H)
                hidden = np.tanh(q_proj[:, None, :] + k_proj[None, :, :])  # (L, 1, H) + (1, S, H) -> (L, S, H)
                return hidden @ w_v  # (L, S, H) @ (H,) -> (L, S)
                ### END SOLUTION
        ''',
        reference=additive_scores,
        public_cases=_additive_cases,
        diagnoses=(
            Diagnosis(
                "the tanh is missing: without it the score is w_v.(W_q q) + w_v.(W_k k), a sum of a query "
                "term and a key term, and every query would rank the keys the same way",
                variant=lambda q, k, W_q, W_k, w_v: (
                    (q @ W_q.T)[:, None, :] @ w_v + (k @ W_k.T)[None, :, :] @ w_v
                ),
            ),
            Diagnosis(
                "you applied tanh to each projection separately: the nonlinearity acts on the sum "
                "W_q q_i + W_k k_j",
                variant=lambda q, k, W_q, W_k, w_v: (
                    (np.tanh(q @ W_q.T)[:, None, :] + np.tanh(k @ W_k.T)[None, :, :]) @ w_v
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 0.5 bilinear attention
def _bilinear_cases():
    rng = np.random.default_rng(5)
    n = rng.normal
    return grouped(
        "shapes",
        Case(
            "L=2, S=3, E_q=4, E_k=5",
            q=n(size=(2, 4)),
            k=n(size=(3, 5)),
            v=n(size=(3, 2)),
            W=n(size=(4, 5)) / 2,
        ),
        Case("L=S=3, square W", q=n(size=(3, 3)), k=n(size=(3, 3)), v=n(size=(3, 2)), W=n(size=(3, 3))),
    ) + grouped(
        "batch dimensions",
        Case(
            "a batch of 2, L=S=3",
            q=n(size=(2, 3, 3)),
            k=n(size=(2, 3, 3)),
            v=n(size=(2, 3, 4)),
            W=n(size=(3, 3)),
        ),
        Case(
            "batch and heads (2, 2), L=3, S=4, E_q=2, E_k=3",
            q=n(size=(2, 2, 3, 2)),
            k=n(size=(2, 2, 4, 3)),
            v=n(size=(2, 2, 4, 2)),
            W=n(size=(2, 3)),
        ),
    )


def _bilinear(q, k, v, W):
    scores = q @ W @ np.swapaxes(k, -1, -2)  # (..., L, E_q) @ (E_q, E_k) @ (..., E_k, S) -> (..., L, S)
    weights = softmax(scores)
    return weights @ v, weights


register(
    Exercise(
        id="ch00.bilinear_attention",
        number="0.5",
        title="a third score: bilinear attention",
        points=3,
        function="bilinear_attention",
        hint="scores q @ W @ k^T over the last two axes, a softmax over the keys, then the weighted sum of v",
        kind="extend",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="Between additive ($w_v^\\top\\tanh(W_q q + W_k k)$) and dot-product ($q^\\top k$) "
        "scores sits Luong's *general* score $q^\\top W k$, with one learned matrix `W (E_q, E_k)`: "
        "queries and keys may have different widths, and there is no $\\tanh$ and no scaling. Write "
        "attention with it for `q (..., L, E_q)`, `k (..., S, E_k)`, `v (..., S, Ev)` and return "
        "`(out (..., L, Ev), weights (..., L, S))`.",
        solution='''
            def bilinear_attention(q, k, v, W):
                """Attention with scores q W k^T: returns (out (..., L, Ev), weights (..., L, S))."""
                ### BEGIN SOLUTION
                scores = q @ W @ np.swapaxes(k, -1, -2)  # (..., L, E_q) @ (E_q, E_k) @ (..., E_k, S) -> (..., L, S)
                weights = softmax(scores)  # over the keys
                return weights @ v, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
                ### END SOLUTION
        ''',
        reference=_bilinear,
        public_cases=_bilinear_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=SOFTMAX_NEEDS,
        diagnoses=(
            Diagnosis(
                "the general score has no 1/sqrt(E) scaling: W is learned and can absorb any scale",
                variant=lambda q, k, v, W: _bilinear(q / np.sqrt(q.shape[-1]), k, v, W),
            ),
            Diagnosis(
                "you used W's transpose: with W of shape (E_q, E_k) the score is q W k^T",
                variant=lambda q, k, v, W: _bilinear(q, k, v, W.T) if W.shape[0] == W.shape[1] else None,
            ),
        ),
    )
)
