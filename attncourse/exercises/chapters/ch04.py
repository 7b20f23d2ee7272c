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
                """(q, k, v) = (x W_q, x W_k, x W_v) for x (..., L, d_model)."""
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


# ----------------------------------------------------------------------------- 4.3 permutation
def _unpermute_cases():
    rng = np.random.default_rng(403)
    return grouped(
        "tokens",
        Case("L=3, a cycle", out_permuted=rng.normal(size=(3, 2)), perm=np.array([1, 2, 0])),
        Case("L=5", out_permuted=rng.normal(size=(5, 3)), perm=np.array([3, 0, 4, 1, 2])),
    ) + grouped(
        "batch dimensions",
        Case("a batch (2, 4, 4)", out_permuted=rng.normal(size=(2, 4, 4)), perm=np.array([2, 0, 3, 1])),
        Case(
            "batch and heads (3, 2, 3, 3)",
            out_permuted=rng.normal(size=(3, 2, 3, 3)),
            perm=np.array([1, 2, 0]),
        ),
    )


register(
    Exercise(
        id="ch04.unpermute",
        number="4.3",
        title="undo a permutation of the tokens",
        points=1,
        hint="undo a permutation with its inverse, np.argsort(perm)",
        function="unpermute",
        stub=STUB_LINE,
        needs=("import numpy as np", "from attncourse import softmax"),
        description="Self-attention without positions is permutation-equivariant: "
        "`attend(x[perm]) == attend(x)[perm]`. Given `out_permuted = attend(x)[perm]` (tokens on axis "
        "-2) and `perm`, return `attend(x)`: the rows back in their original order.",
        solution='''
            def unpermute(out_permuted, perm):
                """Undo out_permuted = out[..., perm, :]: return out (tokens on axis -2)."""
                ### BEGIN SOLUTION
                inverse = np.argsort(perm)  # row j of out went to position inverse[j]
                return out_permuted[..., inverse, :]  # (..., L, d): rows back in the original order
                ### END SOLUTION
        ''',
        reference=lambda out_permuted, perm: out_permuted[..., np.argsort(perm), :],
        public_cases=_unpermute_cases,
        diagnoses=(
            Diagnosis(
                "you applied the permutation again; undo it with its inverse, np.argsort(perm)",
                variant=lambda out_permuted, perm: out_permuted[..., perm, :],
            ),
            Diagnosis(
                "the rows are still in the permuted order: nothing was undone",
                name="returned unchanged",
                hint="index the rows with the inverse permutation, np.argsort(perm)",
                variant=lambda out_permuted, perm: (
                    None if np.array_equal(perm, np.arange(len(perm))) else out_permuted
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.4 where attention overtakes the projections (derive)
def _crossover(d_model, E, Ev, av=True, ev=True):
    d_model, E, Ev = (np.asarray(a, dtype=np.float64) for a in (d_model, E, Ev))
    Ev_proj, Ev_attn = (Ev, Ev) if ev else (E, E)
    return d_model * (2 * E + Ev_proj) / (E + (Ev_attn if av else 0))


def _crossover_cases():
    return grouped(
        "values",
        Case("d_model=384, E=Ev=64", d_model=384, E=64, Ev=64),
        Case("d_model=256, E=32, Ev=96", d_model=256, E=32, Ev=96),
        Case("d_model=64, E=16, several Ev", d_model=64, E=16, Ev=np.array([4, 16, 112])),
    )


register(
    Exercise(
        id="ch04.attention_overtakes_projections",
        number="4.4",
        title="the length at which attention costs more than the projections",
        points=1,
        function="attention_overtakes_projections",
        stub=STUB_LINE,
        kind="derive",
        hint="set the projections' multiply-adds equal to those of Q K^T and A V, and solve for L",
        description="The chapter counts the multiply-adds of one self-attention layer (one head, one "
        "sequence): the three projections grow like $L$, the scores and the output like $L^2$. At "
        "which length $L$ do the scores and the output together cost exactly as many multiply-adds "
        "as the three projections? Return it (a float, not rounded) as a closed form in `d_model`, "
        "`E` (the width of queries and keys) and `Ev` (the width of the values); `Ev` may be an "
        "array. Use arithmetic and `numpy` only.",
        solution='''
            def attention_overtakes_projections(d_model, E, Ev):
                """The L at which L^2 (E + Ev) equals L d_model (2E + Ev)."""
                ### BEGIN SOLUTION
                # projections: L d_model (2E + Ev); Q K^T: L^2 E; A V: L^2 Ev
                return d_model * (2 * E + Ev) / (E + Ev)
                ### END SOLUTION
        ''',
        reference=_crossover,
        public_cases=_crossover_cases,
        diagnoses=(
            Diagnosis(
                "you counted Q K^T but not the product of the weights with V: it costs L^2 Ev",
                name="A V left out",
                hint="the attention part is L^2 E for the scores plus L^2 Ev for the output",
                variant=lambda d_model, E, Ev: _crossover(d_model, E, Ev, av=False),
            ),
            Diagnosis(
                "your answer is right only when Ev = E: the value projection is (d_model, Ev) and A V "
                "costs L^2 Ev",
                name="Ev taken as E",
                hint="W_V costs L d_model Ev, A V costs L^2 Ev",
                variant=lambda d_model, E, Ev: (
                    None if np.all(np.asarray(Ev) == E) else _crossover(d_model, E, Ev, ev=False)
                ),
            ),
            Diagnosis(
                "the projections' cost grows with L too: you compared L^2 (E + Ev) with "
                "d_model (2E + Ev), without its factor L",
                name="square root",
                hint="L^2 (E + Ev) = L d_model (2E + Ev): divide both sides by L",
                variant=lambda d_model, E, Ev: np.sqrt(_crossover(d_model, E, Ev)),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.5 parameters (predict)
register(
    Exercise(
        id="ch04.predict_projection_parameters",
        number="4.5",
        title="predict the projections' size",
        points=1,
        function="predict_projection_parameters",
        stub=STUB_LINE,
        hint="what shape does each of W_Q, W_K and W_V have, and how many numbers does that hold?",
        kind="predict",
        description="Before running anything: a self-attention layer with $d_{model} = 512$ projects to "
        "$d_k = d_v = 64$ with three weight matrices $W_Q, W_K, W_V$ and no biases. How many numbers "
        "do the three hold together? Return the count (exact).",
        solution='''
            def predict_projection_parameters():
                """Entries of W_Q, W_K, W_V (d_model=512 -> d_k=d_v=64, no biases)."""
                ### BEGIN SOLUTION
                d_model, d_k, d_v = 512, 64, 64
                return d_model * d_k + d_model * d_k + d_model * d_v  # three (d_model, 64) matrices
                ### END SOLUTION
        ''',
        reference=lambda: np.array(3 * 512 * 64),
        public_cases=lambda: grouped("the count", Case("d_model=512, d_k=d_v=64")),
        diagnoses=(
            Diagnosis(
                "that is one matrix; there are three, W_Q, W_K and W_V", variant=lambda: np.array(512 * 64)
            ),
            Diagnosis(
                "each matrix maps d_model=512 to 64, so it is (512, 64), not (512, 512)",
                variant=lambda: np.array(3 * 512 * 512),
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
        title="outputs that are not averages of the values",
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
