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
        "(rows sum to 1). Do not build the long sequence.",
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


# ----------------------------------------------------------------------------- 4.3 a token deleted
def layer_run(seed, L, d_model=4, d_k=3, d_v=2, batch=(), dtype=np.float64):
    """One run of the chapter's layer on random tokens: q, weights (..., L, L), v and out."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(*batch, L, d_model))
    W_q, W_k = rng.normal(size=(2, d_model, d_k)) / np.sqrt(d_model)
    W_v = rng.normal(size=(d_model, d_v))
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k))
    out = weights @ v
    return {name: a.astype(dtype) for name, a in (("q", q), ("weights", weights), ("v", v), ("out", out))}


def _deletion_case(label, seed, L, j, **kw):
    run = layer_run(seed, L, **kw)
    return Case(label, out=run["out"], weights=run["weights"], v=run["v"], j=j)


def _deletion_cases():
    return grouped(
        "one sentence",
        _deletion_case("L=5, d_v=2, token 2 deleted", 4031, 5, 2),
        _deletion_case("L=4, d_v=3, the first token deleted", 4032, 4, 0, d_v=3),
        _deletion_case("L=6, d_v=2, the last token deleted", 4033, 6, 5),
    ) + grouped(
        "batch dimensions",
        _deletion_case("a batch of 2, L=4, d_v=3, token 1 deleted", 4034, 4, 1, d_v=3, batch=(2,)),
        _deletion_case("batch and heads (2, 2), L=3, d_v=2, token 2 deleted", 4035, 3, 2, batch=(2, 2)),
    )


def _without(out, weights, v, j, renormalise=True, keep_row=False, column=True):
    out, weights, v = (np.asarray(a, dtype=np.float64) for a in (out, weights, v))
    share = weights[..., :, j, None] if column else weights[..., j, :, None]  # (..., L, 1)
    rest = out - share * v[..., j, None, :]  # (..., L, d_v): the deleted token's part taken out
    if renormalise:
        rest = rest / (1 - share)  # the other keys' weights, rescaled to sum to 1 again
    return rest if keep_row else np.delete(rest, j, axis=-2)


register(
    Exercise(
        id="ch04.output_without_token",
        # the engine's Guard doctest looks an exercise up by this old id
        number="4.3",
        title="a token deleted, without rerunning the layer",
        points=2,
        function="output_without_token",
        stub=STUB_LINE,
        needs=("import numpy as np", "from attncourse import softmax"),
        hint="without key j, each query's softmax runs over the other keys only: how do those keys' "
        "new weights relate to their old ones?",
        description="A self-attention layer of this chapter (one head, no positions) ran on a sentence and "
        "you kept its `weights (..., L, L)`, its values `v (..., L, d_v)` and its output "
        "`out (..., L, d_v)`; the tokens and the projection matrices are gone. Token `j` "
        "(`0 <= j < L`) is now deleted from the sentence. Return `out_new (..., L - 1, d_v)`: the "
        "output the same layer gives on the shorter sentence, rows in the order of the remaining "
        "tokens.",
        solution='''
            def output_without_token(out, weights, v, j):
                """The layer's output (..., L - 1, d_v) on the sentence without token j."""
                ### BEGIN SOLUTION
                w_j = weights[..., :, j, None]  # (..., L, 1): what each query gave token j
                # queries, keys and values are made token by token: the others' stay as they were,
                # and each query's remaining weights are its old ones over a sum of 1 - w_j
                out_new = (out - w_j * v[..., j, None, :]) / (1 - w_j)  # (..., L, d_v)
                return np.delete(out_new, j, axis=-2)  # token j is no longer a query either
                ### END SOLUTION
        ''',
        reference=_without,
        public_cases=_deletion_cases,
        diagnoses=(
            Diagnosis(
                "your rows are the old outputs with token j's row taken out: the other queries' "
                "outputs change too",
                name="the other outputs left as they were",
                hint="every remaining query gave token j some weight, which now goes to the other keys",
                variant=lambda out, weights, v, j: np.delete(np.asarray(out, dtype=np.float64), j, axis=-2),
            ),
            Diagnosis(
                "your outputs are weighted sums of the remaining values whose weights no longer sum to 1",
                name="not renormalised",
                hint="the softmax over the remaining keys divides by their own sum",
                variant=lambda out, weights, v, j: _without(out, weights, v, j, renormalise=False),
            ),
            Diagnosis(
                "your output still has a row for the deleted token",
                name="its row kept",
                hint="the deleted token is no longer a query: L - 1 rows",
                variant=lambda out, weights, v, j: _without(out, weights, v, j, keep_row=True),
            ),
            Diagnosis(
                "the share you took out of row i is not the weight query i gave token j",
                name="weights[j, i] for weights[i, j]",
                hint="query i gave token j the weight weights[..., i, j]: a column of weights",
                variant=lambda out, weights, v, j: _without(out, weights, v, j, column=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.4 biases on the keys and the values
def _bias_case(label, seed, L, d_k=3, d_v=2, batch=(), dtype=np.float64, size=1.0):
    run = layer_run(seed, L, d_k=d_k, d_v=d_v, batch=batch, dtype=dtype)
    rng = np.random.default_rng(seed + 1)
    b_k, b_v = (size * rng.normal(size=n).astype(dtype) for n in (d_k, d_v))
    return Case(label, q=run["q"], out=run["out"], weights=run["weights"], b_k=b_k, b_v=b_v)


def _bias_cases():
    return grouped(
        "one sentence",
        _bias_case("L=4, d_k=3, d_v=2", 4041, 4),
        _bias_case("L=5, d_k=2, d_v=4, large biases", 4042, 5, d_k=2, d_v=4, size=3.0),
    ) + grouped(
        "batch dimensions",
        _bias_case("a batch of 2, L=3, d_k=4, d_v=3", 4043, 3, d_k=4, d_v=3, batch=(2,)),
        _bias_case("batch and heads (2, 2), L=4, d_k=3, d_v=2", 4044, 4, batch=(2, 2)),
    )


def _with_biases(q, out, weights, b_k, b_v, how="right"):
    q, out, weights, b_k, b_v = (np.asarray(a, dtype=np.float64) for a in (q, out, weights, b_k, b_v))
    if how == "rescaled":  # exp(s + q.b_k / sqrt(d_k)) = exp(s) exp(q.b_k / sqrt(d_k)), never renormalised
        weights = weights * np.exp(q @ b_k / np.sqrt(q.shape[-1]))[..., None]
    if how == "per token":
        return out + weights.shape[-1] * b_v, weights
    if how == "no value bias":
        return out, weights
    if how == "column sums":
        return out + weights.sum(axis=-2)[..., None] * b_v, weights
    return out + b_v, weights


register(
    Exercise(
        id="ch04.add_projection_biases",
        number="4.4",
        title="biases on the keys and the values",
        points=2,
        function="add_projection_biases",
        stub=STUB_LINE,
        needs=("import numpy as np", "from attncourse import softmax"),
        outputs=("out", "weights"),
        distributions=("weights",),
        hint="write query i's score for key j with the key's bias, and see which part of it depends on j",
        description="This chapter's layer has no biases. A checkpoint of the same layer has two: its keys "
        "are `x @ W_k + b_k` and its values `x @ W_v + b_v` (its queries have none; scores still scaled "
        "by $1/\\sqrt{d_k}$). You ran the layer without its biases and kept the queries `q (..., L, d_k)`, "
        "the weights `weights (..., L, L)` and the output `out (..., L, d_v)`; the tokens, the keys and "
        "the values are gone. Given `b_k (d_k,)` and `b_v (d_v,)`, return `(out, weights)` of the layer "
        "with its biases, same shapes.",
        solution='''
            def add_projection_biases(q, out, weights, b_k, b_v):
                """(out (..., L, d_v), weights (..., L, L)) of the layer with b_k and b_v."""
                ### BEGIN SOLUTION
                # score(i, j) gains q_i . b_k / sqrt(d_k): the same for every key j of row i, and a
                # softmax does not change when a row's scores all move by one number
                new_weights = weights
                # each row of weights sums to 1, so the weighted sum of (v_j + b_v) is out_i + b_v
                return out + b_v, new_weights
                ### END SOLUTION
        ''',
        reference=_with_biases,
        public_cases=_bias_cases,
        diagnoses=(
            Diagnosis(
                "your weights' rows no longer sum to 1",
                name="weights rescaled, not renormalised",
                hint="exp(s_ij + c_i) = exp(s_ij) exp(c_i): what does the softmax's division do with exp(c_i)?",
                variant=lambda q, out, weights, b_k, b_v: _with_biases(q, out, weights, b_k, b_v, "rescaled"),
            ),
            Diagnosis(
                "your output moved by the value bias once for every token",
                name="the value bias added per token",
                hint="the output is a weighted average of the values, not their sum",
                variant=lambda q, out, weights, b_k, b_v: _with_biases(
                    q, out, weights, b_k, b_v, "per token"
                ),
            ),
            Diagnosis(
                "your output does not depend on b_v",
                name="the value bias left out",
                hint="every value row gains b_v",
                variant=lambda q, out, weights, b_k, b_v: _with_biases(
                    q, out, weights, b_k, b_v, "no value bias"
                ),
            ),
            Diagnosis(
                "your output adds b_v with the weights the other queries give each token",
                name="column sums",
                hint="out = weights @ v sums over a row of weights",
                variant=lambda q, out, weights, b_k, b_v: _with_biases(
                    q, out, weights, b_k, b_v, "column sums"
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.5 distinct weights (predict)
SENTENCE_45 = "the cat saw the dog and the dog saw the cat".split()


def _distinct_weights(per="pair"):
    words, L = len(set(SENTENCE_45)), len(SENTENCE_45)
    return np.array(
        {"pair": words * words, "entry": L * L, "row": words * L, "unordered": words * (words + 1) // 2}[per]
    )


register(
    Exercise(
        id="ch04.predict_distinct_weights",
        number="4.5",
        title="how many different weights?",
        points=1,
        function="predict_distinct_weights",
        stub=STUB_LINE,
        hint="which entries of the weight matrix are always equal, and which only look as if they were?",
        kind="predict",
        description="Before running anything: a self-attention layer of this chapter (no positions; "
        "each word has one embedding) uses one matrix for its queries and its keys, $W_Q = W_K$, and "
        'runs on the 11-token sentence "the cat saw the dog and the dog saw the cat". Its weights '
        "form an (11, 11) matrix. Whatever that shared matrix and the embeddings, at most how many "
        "different numbers can the weights hold? Return the count (exact).",
        solution='''
            def predict_distinct_weights():
                """The largest number of different entries of the sentence's (11, 11) weight matrix."""
                ### BEGIN SOLUTION
                # weights[i, j] depends only on the word at i and the word at j: 5 words, 5 x 5 pairs;
                # the shared matrix makes the scores symmetric, but each row is divided by its own sum,
                # so the weight from cat to dog is not the weight from dog to cat
                return 5 * 5
                ### END SOLUTION
        ''',
        reference=_distinct_weights,
        public_cases=lambda: grouped("the count", Case("11 tokens, 5 words")),
        diagnoses=(
            Diagnosis(
                "your count treats every entry as different: two copies of a word are the same query "
                "and the same key",
                name="every entry",
                hint="equal words give equal rows and equal columns",
                variant=lambda: _distinct_weights("entry"),
            ),
            Diagnosis(
                "your count merges equal rows but not equal columns",
                name="rows only",
                hint="two copies of a word are also the same key",
                variant=lambda: _distinct_weights("row"),
            ),
            Diagnosis(
                "your count takes the weight from one word to another as the weight back",
                name="symmetric",
                hint="the scores are symmetric, but is each row of weights divided by the same sum?",
                variant=lambda: _distinct_weights("unordered"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 4.6 self-attention a block of queries at a time (diagnose)
def _block_case(label, seed, L, block, d_model=4, d_k=3, d_v=2, batch=(), dtype=np.float64):
    rng = np.random.default_rng(seed)
    n = rng.normal
    return Case(
        label,
        x=n(size=(*batch, L, d_model)).astype(dtype),
        W_q=n(size=(d_model, d_k)).astype(dtype),
        W_k=n(size=(d_model, d_k)).astype(dtype),
        W_v=n(size=(d_model, d_v)).astype(dtype),
        block=block,
    )


def _block_cases():
    # block never divides L: there the handed-out code is right (the prompt says so)
    return grouped(
        "blocks of several sizes",
        _block_case("L=5, block=2 (a last block of 1)", 4061, 5, 2),
        _block_case("L=4, block=3, d_k=2, d_v=3", 4062, 4, 3, d_k=2, d_v=3),
        _block_case("L=3, block=4 (one block, longer than L), d_model=3", 4063, 3, 4, d_model=3),
    ) + grouped(
        "batch dimensions",
        _block_case("a batch of 2, L=5, block=3", 4064, 5, 3, batch=(2,)),
        _block_case("batch and heads (2, 2), L=5, block=2, d_v=3", 4065, 5, 2, d_v=3, batch=(2, 2)),
    )


def _in_blocks(x, W_q, W_k, W_v, block, within=False, axis=-1, scale=True, padded=False, full_only=False):
    x, W_q, W_k, W_v = (np.asarray(a, dtype=np.float64) for a in (x, W_q, W_k, W_v))
    L = x.shape[-2]
    if padded:  # zero tokens appended so that every block is full, their keys and values kept
        x = np.concatenate([x, np.zeros(x.shape[:-2] + (-L % block, x.shape[-1]))], axis=-2)
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    out = np.zeros(q.shape[:-1] + v.shape[-1:])
    for start in range(0, q.shape[-2] - (block - 1 if full_only else 0), block):
        rows = slice(start, start + block)
        keys = rows if within else slice(None)
        scores = q[..., rows, :] @ np.swapaxes(k[..., keys, :], -1, -2)
        weights = softmax(scores / np.sqrt(q.shape[-1]) if scale else scores, axis=axis)
        out[..., rows, :] = weights @ v[..., keys, :]
    return out[..., :L, :]


register(
    Exercise(
        id="ch04.self_attention_in_blocks",
        number="4.6",
        title="self-attention a block of queries at a time",
        points=2,
        function="self_attention_in_blocks",
        hint="how many keys does each query's softmax run over here, and how many should it?",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="To keep its memory down, this function computes the chapter's self-attention of "
        "`x (..., L, d_model)` (scaled, no biases, `W_q`, `W_k (d_model, d_k)`, `W_v (d_model, d_v)`) "
        "for `block` queries at a time, so that at most `block` rows of weights exist at once, and "
        "every block has the same shape; it should return the layer's `out (..., L, d_v)` for every "
        "`block >= 1`. Symptom: when `block` divides `L` it does; for any other block every row of "
        "its output is wrong, although every shape is right. Find the bug and fix it; you may call "
        "`numpy` and `softmax`.",
        solution='''
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                """The layer's out (..., L, d_v), computed block queries at a time."""
                L = x.shape[-2]
                filler = np.zeros(x.shape[:-2] + (-L % block, x.shape[-1]), dtype=x.dtype)  # fewer than block
                x = np.concatenate([x, filler], axis=-2)  # (..., L + n, d_model): every block is full
                q, k, v = x @ W_q, x @ W_k, x @ W_v  # (..., L + n, d_k), (..., L + n, d_k), (..., L + n, d_v)
                out = np.zeros(q.shape[:-1] + v.shape[-1:])  # (..., L + n, d_v)
                for start in range(0, q.shape[-2], block):
                    rows = slice(start, start + block)  # this block's queries
                    ### BEGIN SOLUTION
                    scores = q[..., rows, :] @ np.swapaxes(k[..., :L, :], -1, -2) / np.sqrt(q.shape[-1])
                    out[..., rows, :] = softmax(scores) @ v[..., :L, :]  # (..., block, L) @ (..., L, d_v)
                    ### END SOLUTION
                return out[..., :L, :]  # the filler's rows dropped
        ''',
        stub="scores = q[..., rows, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])\n"
        "out[..., rows, :] = softmax(scores) @ v",
        reference=_in_blocks,
        public_cases=_block_cases,
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "every query's softmax also runs over the filler tokens: a zero key scores 0, not "
                "minus infinity, so each filler token takes a share of the weight, and the real "
                "tokens' weights sum to less than 1",
                name="the filler's keys in the softmax",
                hint="a query's softmax runs over the sequence's L keys only: k[..., :L, :] and "
                "v[..., :L, :] (or the filler's scores set to -inf)",
                variant=lambda x, W_q, W_k, W_v, block: _in_blocks(x, W_q, W_k, W_v, block, padded=True),
            ),
            Diagnosis(
                "each output mixes only the values of the tokens in its own block",
                name="keys cut to the block",
                hint="a block of queries still meets every one of the sequence's keys and values",
                variant=lambda x, W_q, W_k, W_v, block: _in_blocks(x, W_q, W_k, W_v, block, within=True),
            ),
            Diagnosis(
                "the outputs past the last full block are never computed",
                name="the last, shorter block dropped",
                hint="without the filler, the blocks start at 0, block, 2 block, ... up to L, the last one shorter",
                variant=lambda x, W_q, W_k, W_v, block: _in_blocks(x, W_q, W_k, W_v, block, full_only=True),
            ),
            Diagnosis(
                "your outputs are mixed with weights whose columns, not rows, sum to 1",
                name="softmax over the queries",
                hint="softmax(scores) over axis -1, the keys",
                variant=lambda x, W_q, W_k, W_v, block: _in_blocks(x, W_q, W_k, W_v, block, axis=-2),
            ),
            Diagnosis(
                "your outputs come from weights sharper than the chapter's layer's",
                name="unscaled scores",
                hint="the scores are divided by the square root of d_k",
                variant=lambda x, W_q, W_k, W_v, block: _in_blocks(x, W_q, W_k, W_v, block, scale=False),
            ),
        ),
    )
)
