"""Chapter 4 exercises: self-attention, its projections, permutation equivariance and its cost."""

from __future__ import annotations

import numpy as np

from ... import softmax
from ..engine.registry import STUB_LINE, Case, Diagnosis, Exercise, grouped, register

__all__: list = []


# ----------------------------------------------------------------------------- 4.1 projections
def _project_cases():
    rng = np.random.default_rng(401)
    n = rng.normal

    def weights(d_model, d_k, d_v):
        return {"W_q": n(size=(d_model, d_k)), "W_k": n(size=(d_model, d_k)), "W_v": n(size=(d_model, d_v))}

    # every group has a square case (W and W.T both fit) and a case where d_model, d_k, d_v differ
    return grouped(
        "shapes",
        Case("square weights (4, 4)", x=n(size=(3, 4)), **weights(4, 4, 4)),
        Case("d_model=4 -> d_k=2, d_v=3", x=n(size=(5, 4)), **weights(4, 2, 3)),
    ) + grouped(
        "batch dimensions",
        Case("a batch (2, 3, 4), square weights", x=n(size=(2, 3, 4)), **weights(4, 4, 4)),
        Case("batch and heads (2, 2, 3, 4), d_k=2, d_v=5", x=n(size=(2, 2, 3, 4)), **weights(4, 2, 5)),
    )


def _transposed_projection(x, W_q, W_k, W_v):
    if any(W.shape[0] != W.shape[1] for W in (W_q, W_k, W_v)):
        return None
    return x @ W_q.T, x @ W_k.T, x @ W_v.T


register(
    Exercise(
        id="ch04.project_qkv",
        number="4.1",
        title="queries, keys and values from x",
        points=1,
        hint="each projection is one matrix product with x on the left",
        function="project_qkv",
        stub=STUB_LINE,
        needs=("import numpy as np", "from attncourse import softmax"),
        description="Project the tokens `x (..., L, d_model)` with `W_q`, `W_k (d_model, d_k)` and "
        "`W_v (d_model, d_v)`; return `(q, k, v)`.",
        solution='''
            def project_qkv(x, W_q, W_k, W_v):
                """The queries, keys and values of x (..., L, d_model)."""
                ### BEGIN SOLUTION
                q = x @ W_q  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)
                k = x @ W_k  # (..., L, d_model) @ (d_model, d_k) -> (..., L, d_k)
                v = x @ W_v  # (..., L, d_model) @ (d_model, d_v) -> (..., L, d_v)
                return q, k, v
                ### END SOLUTION
        ''',
        reference=lambda x, W_q, W_k, W_v: (x @ W_q, x @ W_k, x @ W_v),
        public_cases=_project_cases,
        outputs=("q", "k", "v"),
        diagnoses=(
            Diagnosis(
                "multiplied by W transposed: with W of shape (d_model, d_k) the projection is x @ W",
                variant=_transposed_projection,
            ),
            Diagnosis(
                "k and v are both x @ W_q: which weight matrix makes each of the three?",
                name="one matrix for all three",
                hint="q = x @ W_q, k = x @ W_k, v = x @ W_v",
                variant=lambda x, W_q, W_k, W_v: (
                    (x @ W_q, x @ W_q, x @ W_q) if W_q.shape == W_k.shape == W_v.shape else None
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.2 repeated keys
def _counted(q, k, v, counts, how="log"):
    counts = np.asarray(counts, dtype=np.float64)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., L, S)
    if how == "log":
        with np.errstate(divide="ignore"):
            scores = scores + np.log(counts)
    elif how == "add":
        scores = scores + counts
    elif how == "times":
        scores = scores * counts
    weights = softmax(scores)
    return weights @ v, weights


def _counts_cases():
    rng = np.random.default_rng(402)
    n = rng.normal
    return (
        grouped(
            "counts",
            Case(
                "L=2, S=3, E=4, Ev=2, counts 1, 3, 2",
                q=n(size=(2, 4)),
                k=n(size=(3, 4)),
                v=n(size=(3, 2)),
                counts=np.array([1, 3, 2]),
            ),
            Case(
                "L=3, S=4, E=2, Ev=3, counts 5, 1, 1, 2",
                q=n(size=(3, 2)),
                k=n(size=(4, 2)),
                v=n(size=(4, 3)),
                counts=np.array([5, 1, 1, 2]),
            ),
        )
        + grouped(
            "a key that occurs 0 times",
            Case(
                "L=2, S=3, E=4, Ev=2, counts 2, 0, 1",
                q=n(size=(2, 4)),
                k=n(size=(3, 4)),
                v=n(size=(3, 2)),
                counts=np.array([2, 0, 1]),
            ),
        )
        + grouped(
            "batch dimensions",
            Case(
                "a batch of 2, L=3, S=2, E=9, Ev=4, counts 4, 1",
                q=n(size=(2, 3, 9)),
                k=n(size=(2, 2, 9)),
                v=n(size=(2, 2, 4)),
                counts=np.array([4, 1]),
            ),
            Case(
                "batch and heads (2, 2), L=2, S=3, E=4, Ev=2, counts 1, 2, 3",
                q=n(size=(2, 2, 2, 4)),
                k=n(size=(2, 2, 3, 4)),
                v=n(size=(2, 2, 3, 2)),
                counts=np.array([1, 2, 3]),
            ),
        )
    )


register(
    Exercise(
        id="ch04.attention_with_counts",
        number="4.2",
        title="attention over repeated keys without repeating them",
        points=3,
        function="attention_with_counts",
        stub=STUB_LINE,
        hint="n copies of a key put n equal terms exp(s_j) in the softmax's sum: which score gives one "
        "term of n exp(s_j)?",
        description='The chapter\'s sentence has "the" twice, and the two copies always receive '
        "the same weight. Take that further: a long sequence in which key/value pair $j$ occurs "
        "`counts[j]` times (identical copies; a count may be 0) is stored once per distinct pair. "
        "Given `q (..., L, E)`, `k (..., S, E)`, `v (..., S, Ev)` for the S distinct pairs and "
        "`counts (S,)` (ints), return `(out (..., L, Ev), weights (..., L, S))`: the output of scaled "
        "dot-product attention (scale $1/\\sqrt{E}$) over the sequence with every copy written out, "
        "and `weights[..., i, j]` the total weight query $i$ gives to all copies of pair $j$ "
        "(rows sum to 1). Do not build the long sequence; you may call `numpy` and `softmax`.",
        solution='''
            def attention_with_counts(q, k, v, counts):
                """Attention over keys repeated counts[j] times: (out (..., L, Ev), weights (..., L, S))."""
                ### BEGIN SOLUTION
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., L, S)
                with np.errstate(divide="ignore"):  # log 0 = -inf: a key that is not there
                    scores = scores + np.log(counts)  # n copies: n exp(s) = exp(s + log n)
                weights = softmax(scores)  # total weight of each pair's copies
                return weights @ v, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
                ### END SOLUTION
        ''',
        reference=_counted,
        public_cases=_counts_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "your result does not depend on counts: n copies of a key add n equal terms to the "
                "softmax's sum",
                name="counts ignored",
                hint="the copies of pair j together hold counts[j] times one copy's exp(s_j)",
                variant=lambda q, k, v, counts: _counted(q, k, v, counts, how="none"),
            ),
            Diagnosis(
                "you added counts[j] to the score: that multiplies exp(s_j) by e^counts[j], not by counts[j]",
                name="added the count",
                hint="which number added to s_j multiplies exp(s_j) by n?",
                variant=lambda q, k, v, counts: _counted(q, k, v, counts, how="add"),
            ),
            Diagnosis(
                "you multiplied the score by counts[j]: that raises exp(s_j) to the power n instead of "
                "adding n copies of it",
                name="multiplied the score",
                hint="n exp(s_j) = exp(s_j + log n)",
                variant=lambda q, k, v, counts: _counted(q, k, v, counts, how="times"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.3 which shuffle was it
def _attend(x, W_q, W_k, W_v, dtype=np.float64):
    x, W_q, W_k, W_v = (np.asarray(a, dtype=dtype) for a in (x, W_q, W_k, W_v))
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    return softmax(q @ k.T / np.sqrt(q.shape[-1])) @ v  # (L, d_v)


def _shuffled_run(seed, L, d_model, d_v, perm, dtype=np.float32, spread=1.0):
    """(out, out_permuted): out from the tokens in order (float64), out_permuted from the layer run
    again on the shuffled tokens in ``dtype``, so its rows equal out's only up to rounding."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(L, d_model)) * spread
    W = [rng.normal(size=(d_model, n)) / np.sqrt(d_model) for n in (4, 4, d_v)]
    return _attend(x, *W), _attend(x[np.asarray(perm)], *W, dtype=dtype)


def _recover_cases():
    out2 = np.array([[1.0, 0.0], [3.0, 0.5], [0.2, -2.0], [-1.0, 1.0]])
    return grouped(
        "the same run twice",
        Case("L=4, d=2, a 3-cycle and a fixed point", out=out2, out_permuted=out2[[1, 2, 0, 3]]),
    ) + grouped(
        "the layer run again on the shuffled tokens",
        Case(
            "L=6, d_v=3, out_permuted computed in float32",
            **dict(zip(("out", "out_permuted"), _shuffled_run(403, 6, 8, 3, [3, 0, 4, 5, 1, 2]))),
        ),
        Case(
            "L=5, d_v=2, rows of very different lengths",
            out=np.array([[0.1, 0.0], [5.0, 0.4], [2.0, 2.0], [-0.3, 0.1], [0.0, -4.0]]),
            out_permuted=(
                np.array([[0.1, 0.0], [5.0, 0.4], [2.0, 2.0], [-0.3, 0.1], [0.0, -4.0]])[[2, 0, 4, 1, 3]]
                * (1 + 1e-7)
            ).astype(np.float32),
        ),
    )


def _recover(out, out_permuted):
    out, out_p = np.asarray(out, dtype=np.float64), np.asarray(out_permuted, dtype=np.float64)
    d2 = ((out_p[:, None, :] - out[None, :, :]) ** 2).sum(-1)  # (L, L): row i of out_p against row j of out
    return d2.argmin(axis=-1)


register(
    Exercise(
        id="ch04.recover_permutation",
        former_ids=("ch04.unpermute",),
        number="4.3",
        title="which shuffle was it?",
        points=2,
        hint="row i of out_permuted is one of out's rows: which one is nearest?",
        function="recover_permutation",
        stub=STUB_LINE,
        needs=("import numpy as np", "from attncourse import softmax"),
        description="A self-attention layer without positions ran twice: once on a sentence, giving "
        "`out (L, d)`, and once on the same tokens shuffled by a permutation you were not told, giving "
        "`out_permuted (L, d)` (the second run may have used float32, so its rows match only up to "
        "rounding; no two rows of `out` are that close). Find the shuffle: return `perm`, an integer "
        "array `(L,)` such that the second run's tokens were `x[perm]`.",
        solution='''
            def recover_permutation(out, out_permuted):
                """perm (L,) such that out_permuted ~ out[perm]."""
                ### BEGIN SOLUTION
                out = np.asarray(out, dtype=np.float64)
                out_p = np.asarray(out_permuted, dtype=np.float64)
                # equivariance: attend(x[perm]) = attend(x)[perm], so row i of out_p is row perm[i] of out
                dist = ((out_p[:, None, :] - out[None, :, :]) ** 2).sum(axis=-1)  # (L, L) squared distances
                return dist.argmin(axis=-1)  # for each row of out_p, the nearest row of out
                ### END SOLUTION
        ''',
        reference=_recover,
        public_cases=_recover_cases,
        diagnoses=(
            Diagnosis(
                "your permutation undoes the shuffle instead of describing it: out[perm] must give out_permuted",
                name="the inverse permutation",
                hint="row i of out_permuted is row perm[i] of out",
                variant=lambda out, out_p: (
                    None
                    if np.array_equal(np.argsort(_recover(out, out_p)), _recover(out, out_p))
                    else np.argsort(_recover(out, out_p))
                ),
            ),
            Diagnosis(
                "your match picks, for a row of out_permuted, the row of out with the largest dot product: "
                "a long row wins over the row that is equal",
                name="matched by dot product",
                hint="two rows are the same when their difference is small, not when their product is large",
                variant=lambda out, out_p: (
                    np.asarray(out_p, dtype=np.float64) @ np.asarray(out, dtype=np.float64).T
                ).argmax(-1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.4 the value projection, recovered
def _weights_of(x, W_q, W_k, scale=True, axis=-1):
    q, k = x @ W_q, x @ W_k  # (L, d_k) each
    scores = q @ k.T  # (L, L)
    return softmax(scores / np.sqrt(q.shape[-1]) if scale else scores, axis=axis)


def value_projection_case(label, seed, L, d_model, d_k, d_v, spread=1.0):
    """A layer run on random tokens: x, W_q, W_k and out = weights @ x @ W_v (float64), W_v held back."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(L, d_model)) * spread
    W_q, W_k = rng.normal(size=(2, d_model, d_k))
    W_v = rng.normal(size=(d_model, d_v))
    out = _weights_of(x, W_q, W_k) @ x @ W_v  # (L, L) @ (L, d_model) @ (d_model, d_v) -> (L, d_v)
    return Case(label, x=x, W_q=W_q, W_k=W_k, out=out)


def _value_projection_cases():
    return grouped(
        "more tokens than d_model",
        value_projection_case("L=6, d_model=4, d_k=2, d_v=3", 410, 6, 4, 2, 3),
        value_projection_case("L=5, d_model=3, d_k=2, d_v=4", 403, 5, 3, 2, 4),
    ) + grouped(
        "exactly d_model tokens",
        value_projection_case("L=d_model=5, d_k=3, d_v=2", 460, 5, 5, 3, 2, spread=1.2),
    )


def _recover_value_projection(x, W_q, W_k, out, **how):
    mixed = _weights_of(x, W_q, W_k, **how) @ x  # (L, d_model): what W_v multiplies
    return np.linalg.lstsq(mixed, out, rcond=None)[0]  # (d_model, d_v)


register(
    Exercise(
        id="ch04.recover_value_projection",
        number="4.4",
        title="the value projection, from the outside",
        points=2,
        function="recover_value_projection",
        stub=STUB_LINE,
        needs=("import numpy as np", "from attncourse import softmax"),
        hint="out is linear in W_v: write out as a matrix that does not depend on W_v, times W_v",
        description="A self-attention layer (one head, no biases, scores scaled as in this chapter) "
        "ran on tokens `x (L, d_model)` and gave `out (L, d_v)`. You are given `x`, its query and key "
        "projections `W_q` and `W_k (d_model, d_k)`, and `out`, but not its value projection. Recover "
        "`W_v (d_model, d_v)`. Every case has at least `d_model` tokens, spread out enough that "
        "exactly one `W_v` gives `out`.",
        solution='''
            def recover_value_projection(x, W_q, W_k, out):
                """W_v (d_model, d_v) of the layer that turned x into out."""
                ### BEGIN SOLUTION
                q, k = x @ W_q, x @ W_k  # (L, d_k) each
                weights = softmax(q @ k.T / np.sqrt(q.shape[-1]))  # (L, L), rows sum to 1
                mixed = weights @ x  # (L, d_model): out = weights @ (x @ W_v) = mixed @ W_v
                return np.linalg.lstsq(mixed, out, rcond=None)[0]  # (d_model, d_v)
                ### END SOLUTION
        ''',
        reference=_recover_value_projection,
        public_cases=_value_projection_cases,
        diagnoses=(
            Diagnosis(
                "your W_v would give out if each token's output were its own value; in the layer, "
                "what does each output row add up?",
                name="the weights left out",
                hint="out = weights @ x @ W_v, not x @ W_v",
                variant=lambda x, W_q, W_k, out: np.linalg.lstsq(x, out, rcond=None)[0],
            ),
            Diagnosis(
                "your W_v fits a layer whose weights differ from this one's: compare how sharp your "
                "weights are with the chapter's layer",
                name="unscaled scores",
                hint="the scores are divided by the square root of d_k before the softmax",
                variant=lambda x, W_q, W_k, out: _recover_value_projection(x, W_q, W_k, out, scale=False),
            ),
            Diagnosis(
                "your W_v fits a layer whose weights differ from this one's: which way do your "
                "weights' rows sum to 1?",
                name="softmax over the queries",
                hint="each query's weights over the keys sum to 1: the softmax runs along the last axis",
                variant=lambda x, W_q, W_k, out: _recover_value_projection(x, W_q, W_k, out, axis=0),
            ),
            Diagnosis(
                "your W_v fits a layer that mixes the tokens the other way round",
                name="weights transposed",
                hint="out = weights @ values, with weights[i, j] the share of token j in output i",
                variant=lambda x, W_q, W_k, out: np.linalg.lstsq(
                    _weights_of(x, W_q, W_k).T @ x, out, rcond=None
                )[0],
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.5 cross-source parameters (predict)
def _cross_parameters(kv_width=768, d_v=80, biases=True, w_o=True):
    sizes = [(512, 64), (kv_width, 64), (kv_width, d_v)] + ([(d_v, 512)] if w_o else [])
    return np.array(sum(a * b + (b if biases else 0) for a, b in sizes))


register(
    Exercise(
        id="ch04.predict_cross_projection_parameters",
        number="4.5",
        title="predict the size of attention between two sequences",
        points=1,
        function="predict_cross_projection_parameters",
        stub=STUB_LINE,
        hint="write down the shape of each of the four weight matrices and of its bias",
        kind="predict",
        description="Before running anything: a layer attends from a decoder's tokens (width 512) to an "
        "encoder's states (width 768). Queries are projected from the decoder's tokens to $d_k = 64$, "
        "keys and values from the encoder's states to $d_k = 64$ and $d_v = 80$, and an output "
        "projection maps each output back to width 512; all four projections have biases. How many "
        "parameters does the layer hold? Return the count (exact).",
        solution='''
            def predict_cross_projection_parameters():
                """Parameters of the layer the prompt describes, weights and biases."""
                ### BEGIN SOLUTION
                w_q = 512 * 64 + 64  # from the decoder's width
                w_k = 768 * 64 + 64  # keys and values come from the encoder's width
                w_v = 768 * 80 + 80
                w_o = 80 * 512 + 512  # back from d_v to the decoder's width
                return w_q + w_k + w_v + w_o
                ### END SOLUTION
        ''',
        reference=_cross_parameters,
        public_cases=lambda: grouped("the count", Case("decoder 512, encoder 768, d_k=64, d_v=80, biases")),
        diagnoses=(
            Diagnosis(
                "your count projects the keys and values from the decoder's width",
                name="keys and values from the decoder",
                hint="keys and values are made from the encoder's states",
                variant=lambda: _cross_parameters(kv_width=512),
            ),
            Diagnosis(
                "your count leaves out the biases",
                name="no biases",
                hint="a bias has one number per output",
                variant=lambda: _cross_parameters(biases=False),
            ),
            Diagnosis(
                "your count leaves out the output projection",
                name="no output projection",
                hint="four projections: W_q, W_k, W_v and W_o",
                variant=lambda: _cross_parameters(w_o=False),
            ),
            Diagnosis(
                "your count gives the values the keys' width",
                name="d_v taken as d_k",
                hint="the values are projected to d_v = 80",
                variant=lambda: _cross_parameters(d_v=64),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.6 outputs that are not averages (diagnose)
def _transposed_mix_cases():
    rng = np.random.default_rng(406)
    n = rng.normal
    return grouped(
        "shapes",
        Case(
            "L=4, d_model=6, d_k=3, d_v=2",
            x=n(size=(4, 6)),
            W_q=n(size=(6, 3)),
            W_k=n(size=(6, 3)),
            W_v=n(size=(6, 2)),
        ),
        Case(
            "L=3, d_model=4, d_k=2, d_v=5",
            x=n(size=(3, 4)),
            W_q=n(size=(4, 2)),
            W_k=n(size=(4, 2)),
            W_v=n(size=(4, 5)),
        ),
    ) + grouped(
        "batch dimensions",
        Case(
            "a batch of 2, L=5, d_model=4, d_k=2, d_v=3",
            x=n(size=(2, 5, 4)),
            W_q=n(size=(4, 2)),
            W_k=n(size=(4, 2)),
            W_v=n(size=(4, 3)),
        ),
        Case(
            "batch and heads (2, 2, 3, 4), d_k=4, d_v=2",
            x=n(size=(2, 2, 3, 4)),
            W_q=n(size=(4, 4)),
            W_k=n(size=(4, 4)),
            W_v=n(size=(4, 2)),
        ),
    )


def _self_attention_full(x, W_q, W_k, W_v, mix="rows", axis=-1):
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), axis=axis)
    mixer = np.swapaxes(weights, -1, -2) if mix == "columns" else weights
    return mixer @ v, weights


def _right_weights_wrong_mix(outputs, x, W_q, W_k, W_v):
    """The weights match, the outputs do not: the mix of the values is what is wrong."""
    if len(outputs) != 2:
        return False
    out, weights = (np.asarray(o, dtype=np.float64) for o in outputs)
    ref_out, ref_weights = _self_attention_full(x, W_q, W_k, W_v)
    if weights.shape != ref_weights.shape or out.shape != ref_out.shape:
        return False
    return bool(np.allclose(weights, ref_weights, atol=1e-4) and not np.allclose(out, ref_out, atol=1e-4))


register(
    Exercise(
        id="ch04.self_attention_out",
        former_ids=("ch04.fix_output_mix",),
        number="4.6",
        title="self-attention's output, from its weights",
        points=2,
        function="self_attention_out",
        hint="out[i] should be sum_j weights[i, j] v[j]: which index of weights does your product sum over?",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="This function should return scaled self-attention of `x (..., L, d_model)` with "
        "`W_q`, `W_k (d_model, d_k)` and `W_v (d_model, d_v)`: `(out (..., L, d_v), weights (..., L, "
        "L))`. Its weights are right, and every shape is right. Symptom: when all value rows are "
        "the same vector $c$, the rows of `out` are not $c$ (some longer, some shorter), and a token "
        "that many others attend to gets a large output. Find the bug and fix it; you may call "
        "`numpy` and `softmax`.",
        solution='''
            def self_attention_out(x, W_q, W_k, W_v):
                """Scaled self-attention of x (..., L, d_model): (out (..., L, d_v), weights (..., L, L))."""
                q, k, v = x @ W_q, x @ W_k, x @ W_v  # (..., L, d_k), (..., L, d_k), (..., L, d_v)
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., L, L)
                weights = softmax(scores)
                ### BEGIN SOLUTION
                out = weights @ v  # (..., L, L) @ (..., L, d_v) -> (..., L, d_v)
                ### END SOLUTION
                return out, weights
        ''',
        stub="out = np.swapaxes(weights, -1, -2) @ v  # (..., L, L) @ (..., L, d_v) -> (..., L, d_v)",
        reference=_self_attention_full,
        public_cases=_transposed_mix_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "row i of out sums the values with column i of weights, the weights the other "
                "queries give to key i: do those sum to 1?",
                name="weights transposed",
                hint="out[i] = sum_j weights[i, j] v[j]: weights @ v",
                variant=lambda x, W_q, W_k, W_v: _self_attention_full(x, W_q, W_k, W_v, mix="columns"),
            ),
            Diagnosis(
                "your weights are right, but row i of out is still not the average of the value "
                "rows that row i of weights describes",
                name="weights right, outputs not their average",
                hint="out[i] = sum_j weights[i, j] v[j], for every i",
                symptom=_right_weights_wrong_mix,
            ),
            Diagnosis(
                "your weights' columns sum to 1, not their rows: the softmax runs over the keys, "
                "the last axis",
                name="softmax over the queries",
                hint="softmax(scores) over axis -1",
                variant=lambda x, W_q, W_k, W_v: _self_attention_full(x, W_q, W_k, W_v, axis=-2),
            ),
        ),
    )
)
