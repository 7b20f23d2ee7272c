"""Chapter 5 exercises: multi-head attention."""

from __future__ import annotations

import numpy as np

from ... import merge_heads, softmax, split_heads
from ... import scaled_dot_product_attention as sdpa
from ..engine.registry import STUB_LINE, Case, Diagnosis, Exercise, grouped, register
from ._shared import D_MODEL_SCALE

__all__: list = []

MHA_NEEDS = ("import numpy as np", "from attncourse import softmax, split_heads, merge_heads")


# ----------------------------------------------------------------------------- 5.1 weights from a layer whose heads are dealt out
def _dealt_order(d_model, n_heads):
    """Index array p: the course's feature h*d_head + e is the dealt layout's feature e*H + h."""
    return np.arange(d_model).reshape(d_model // n_heads, n_heads).T.ravel()


def _from_dealt(W_q, W_k, W_v, W_o, n_heads, *, inverse=False, o="rows", qkv="columns"):
    """The dealt layer's weights rearranged for the course's layout (and classic wrong ways)."""
    d = np.shape(W_q)[0]
    p = np.argsort(_dealt_order(d, n_heads)) if inverse else _dealt_order(d, n_heads)
    W_q, W_k, W_v, W_o = (np.asarray(W) for W in (W_q, W_k, W_v, W_o))
    if qkv == "rows":
        q, k, v = W_q[p], W_k[p], W_v[p]
    else:
        q, k, v = W_q[:, p], W_k[:, p], W_v[:, p]
    o_new = {
        "rows": lambda: W_o[p],
        "columns": lambda: W_o[:, p],
        "both": lambda: W_o[p][:, p],
        "kept": lambda: W_o,
    }[o]()
    return q, k, v, o_new


def _dealt_cases(seed=5101):
    rng = np.random.default_rng(seed)

    def case(label, d, H, dtype=np.float64):
        Ws = {n: (rng.normal(size=(d, d)) / np.sqrt(d)).astype(dtype) for n in ("W_q", "W_k", "W_v", "W_o")}
        return Case(label, **Ws, n_heads=H)

    return (
        grouped(
            "several heads",
            case("d_model=8, 4 heads of width 2", 8, 4),
            case("d_model=12, 3 heads of width 4", 12, 3),
            case("d_model=6, 2 heads of width 3", 6, 2),
        )
        + grouped(
            "edge counts",
            case("d_model=9, 3 heads of width 3", 9, 3),
            case("d_model=4, one head", 4, 1),
            case("d_model=5, 5 heads of width 1", 5, 5),
            case("d_model=10, 2 heads of width 5", 10, 2),
        )
        + grouped("dtype", case("float32, d_model=12, 4 heads of width 3", 12, 4, np.float32))
    )


register(
    Exercise(
        id="ch05.weights_from_dealt_heads",
        number="5.1",
        title="weights from a layer that deals its features out to the heads",
        points=5,
        function="weights_from_dealt_heads",
        stub=STUB_LINE,
        needs=MHA_NEEDS,
        hint="follow feature j of q from the other layer's head j % H to the place it must have in "
        "this course's layout; then ask the same of the heads' outputs on their way into W_o",
        description="You load a multi-head self-attention layer from a library that cuts the heads "
        "differently from this course. There, the projected queries, keys and values are dealt out "
        "to the heads in turn: feature $j$ goes to head $j \\bmod H$, so head $h$ reads features "
        "$h, h + H, h + 2H, \\dots$, in that order; and each head's output is put back at the "
        "positions its features came from before $W_O$ is applied. Its weights `W_q`, `W_k`, "
        "`W_v`, `W_o` are `(d_model, d_model)`, used as `x @ W` as in this course, and it has "
        "`n_heads` heads. Return `(W_q, W_k, W_v, W_o)` for this course's layer (head $h$ owns "
        "features $h\\,d_{head}$ to $(h+1)\\,d_{head}$, as in 5.3) that computes the same thing for "
        "every `x`: the same `out`, and head $h$'s weights equal to the library's head $h$'s. Move "
        "the library's numbers, do not recompute them, and keep each head's features in the order "
        "the library gives them.",
        solution='''
            def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
                """The library's (W_q, W_k, W_v, W_o) rearranged for this course's head layout."""
                ### BEGIN SOLUTION
                d_model = W_q.shape[0]
                d_head = d_model // n_heads
                # the course's feature h*d_head + e is the library's feature e*n_heads + h
                order = np.arange(d_model).reshape(d_head, n_heads).T.ravel()
                # q, k, v: features are columns; the heads' outputs meet W_o's rows
                return W_q[:, order], W_k[:, order], W_v[:, order], W_o[order]
                ### END SOLUTION
        ''',
        reference=_from_dealt,
        public_cases=_dealt_cases,
        outputs=("W_q", "W_k", "W_v", "W_o"),
        diagnoses=(
            Diagnosis(
                "your head h gets features of the library's head h, but not in the order the library "
                "gives them, or features of other heads: where does the library's feature j end up?",
                name="the rearrangement run backwards",
                hint="the course's feature h*d_head + e must be the library's feature e*n_heads + h: "
                "order = np.arange(d_model).reshape(d_head, n_heads).T.ravel()",
                variant=lambda W_q, W_k, W_v, W_o, h: _from_dealt(W_q, W_k, W_v, W_o, h, inverse=True),
            ),
            Diagnosis(
                "W_q, W_k and W_v are right and W_o is not: the heads' outputs arrive at W_o in "
                "another order now too",
                name="W_o left as it was",
                hint="head h's output now sits at features h*d_head:(h+1)*d_head of the concatenation: "
                "reorder W_o's rows the same way",
                variant=lambda W_q, W_k, W_v, W_o, h: _from_dealt(W_q, W_k, W_v, W_o, h, o="kept"),
            ),
            Diagnosis(
                "W_q, W_k and W_v are right and W_o is not: which of W_o's axes does the "
                "concatenation of the heads meet, in x @ W?",
                name="W_o's columns reordered",
                hint="the concatenation is multiplied into W_o's rows: reorder its rows, not its columns",
                variant=lambda W_q, W_k, W_v, W_o, h: _from_dealt(W_q, W_k, W_v, W_o, h, o="columns"),
            ),
            Diagnosis(
                "W_q, W_k and W_v are right and W_o is not: the layer's output features are not "
                "dealt to heads; only its input is the concatenation",
                name="W_o's rows and columns reordered",
                hint="reorder W_o's rows only",
                variant=lambda W_q, W_k, W_v, W_o, h: _from_dealt(W_q, W_k, W_v, W_o, h, o="both"),
            ),
            Diagnosis(
                "W_q, W_k, W_v are wrong: in x @ W, which axis of W holds the projected features "
                "that are dealt to the heads?",
                name="rows of W_q, W_k, W_v reordered",
                hint="the projected features are the columns of W_q, W_k, W_v",
                variant=lambda W_q, W_k, W_v, W_o, h: _from_dealt(W_q, W_k, W_v, W_o, h, qkv="rows"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.2 the heads' scores added up (predict)
register(
    Exercise(
        id="ch05.predict_summed_scores_rank",
        number="5.2",
        title="predict the rank of the heads' scores added up",
        points=1,
        function="predict_summed_scores_rank",
        stub=STUB_LINE,
        kind="predict",
        hint="write the sum over heads of Q_h K_h^T with the whole Q and K",
        description="A multi-head self-attention layer with $d_{model} = 8$ and $H = 4$ heads of width "
        "$d_{head} = 2$ reads $L = 10$ tokens, no mask. Add up its four heads' score matrices "
        "$Q_h K_h^\\top$ (before the scale and the softmax, each `(10, 10)`). At most what rank "
        "can that sum have, whatever the weights and the tokens? Return the number (exact).",
        solution='''
            def predict_summed_scores_rank():
                """The largest rank of sum_h Q_h K_h^T: d_model = 8, H = 4, L = 10."""
                ### BEGIN SOLUTION
                # sum_h Q_h K_h^T = Q K^T with the whole (10, 8) Q and K: rank at most 8, and
                # random weights reach it
                return 8
                ### END SOLUTION
        ''',
        reference=lambda: np.array(8),
        public_cases=lambda: grouped("the count", Case("d_model = 8, H = 4, L = 10")),
        diagnoses=(
            Diagnosis(
                "that bounds one head's scores; the sum is another matrix",
                name="one head's bound",
                hint="the sum over heads of Q_h K_h^T is Q K^T",
                variant=lambda: np.array(2),
            ),
            Diagnosis(
                "no sum of these four matrices has that rank",
                name="the matrix's size",
                hint="Q and K are (10, 8): what bounds the rank of Q K^T?",
                variant=lambda: np.array(10),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.3 forward pass
def mha_reference(x, W_q, W_k, W_v, W_o, n_heads, mask=None, *, scale=None, use_w_o=True):
    """Multi-head attention with the package's core, used by chapters 5 and 6."""
    q = split_heads(x @ W_q, n_heads)  # (B, L, d_model) -> (B, H, L, d_head)
    k = split_heads(x @ W_k, n_heads)
    v = split_heads(x @ W_v, n_heads)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
    heads, weights = sdpa(q, k, v, mask, scale=scale)  # (B, H, L, d_head), (B, H, L, L)
    out = merge_heads(heads)  # (B, L, d_model)
    return (out @ W_o if use_w_o else out), weights


def _mha_cases():
    rng = np.random.default_rng(503)

    def weights(d):
        return [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4)]

    return grouped(
        "heads",
        Case(
            "B=1, L=3, d_model=4, 2 heads",
            x=rng.normal(size=(1, 3, 4)),
            **dict(zip(("W_q", "W_k", "W_v", "W_o"), weights(4))),
            n_heads=2,
        ),
        Case(
            "B=2, L=4, d_model=6, 3 heads",
            x=rng.normal(size=(2, 4, 6)),
            **dict(zip(("W_q", "W_k", "W_v", "W_o"), weights(6))),
            n_heads=3,
        ),
        Case(
            "B=2, L=1, d_model=4, 2 heads",
            x=rng.normal(size=(2, 1, 4)),
            **dict(zip(("W_q", "W_k", "W_v", "W_o"), weights(4))),
            n_heads=2,
        ),
    )


register(
    Exercise(
        id="ch05.multi_head_attention",
        number="5.3",
        title="the multi-head forward pass",
        points=2,
        hint="split after projecting, scale by sqrt(d_head), merge before W_o",
        function="multi_head_attention",
        stub=STUB_LINE,
        description="Multi-head self-attention of `x (B, L, d_model)` with weight matrices `W_q`, "
        "`W_k`, `W_v`, `W_o` (each `(d_model, d_model)`, used as `x @ W`) and `n_heads` heads: return "
        "`(out (B, L, d_model), weights (B, n_heads, L, L))`.",
        solution='''
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                """Multi-head self-attention: returns (out (B, L, d_model), weights (B, H, L, L))."""
                ### BEGIN SOLUTION
                d_head = x.shape[-1] // n_heads
                q = split_heads(x @ W_q, n_heads)  # (B, L, d_model) -> (B, H, L, d_head)
                k = split_heads(x @ W_k, n_heads)
                v = split_heads(x @ W_v, n_heads)
                scores = q @ np.swapaxes(k, -1, -2)  # (B, H, L, d_head) @ (B, H, d_head, L) -> (B, H, L, L)
                scores = scores / np.sqrt(d_head)  # each head scales by its own width
                weights = softmax(scores)  # each head has its own (L, L) weights
                out = merge_heads(weights @ v) @ W_o  # (B, H, L, d_head) -> (B, L, d_model) -> (B, L, d_model)
                return out, weights
                ### END SOLUTION
        ''',
        reference=mha_reference,
        public_cases=_mha_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=MHA_NEEDS,
        diagnoses=(
            Diagnosis(
                D_MODEL_SCALE,
                variant=lambda x, W_q, W_k, W_v, W_o, h: mha_reference(
                    x, W_q, W_k, W_v, W_o, h, scale=1 / np.sqrt(x.shape[-1])
                ),
            ),
            Diagnosis(
                "out skips the output projection: multiply the merged heads by W_o",
                variant=lambda x, W_q, W_k, W_v, W_o, h: mha_reference(
                    x, W_q, W_k, W_v, W_o, h, use_w_o=False
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.4 a causal head of width 1 (predict)
L_CAUSAL = 12


register(
    Exercise(
        id="ch05.predict_causal_top_keys",
        number="5.4",
        title="predict where a causal head of width 1 can look",
        points=1,
        function="predict_causal_top_keys",
        stub=STUB_LINE,
        kind="predict",
        hint="which keys can query i see, and which of them can hold its largest weight?",
        description="A causal self-attention layer: query $i$ may attend only to keys $j \\le i$. One "
        "of its heads has width $d_{head} = 1$, and the sequence has $L = 12$ tokens; the layer's "
        "weights and the tokens may be anything. Over the 12 queries of that head, at most how many "
        "different keys can receive some query's largest weight? Return the number (exact).",
        solution='''
            def predict_causal_top_keys():
                """At most how many keys get some query's largest weight: causal, d_head = 1, L = 12."""
                ### BEGIN SOLUTION
                # query i orders keys 0..i by q_i * k_j: its largest weight is on the largest (q_i > 0) or
                # smallest (q_i < 0) k_j among them; with k_0 < k_1 < ... and every q_i > 0, query i picks key i
                return 12
                ### END SOLUTION
        ''',
        reference=lambda: np.array(L_CAUSAL),
        public_cases=lambda: grouped("the count", Case("causal, d_head = 1, L = 12")),
        diagnoses=(
            Diagnosis(
                "that is the most a head of width 1 reaches when every query sees every key",
                name="the mask left out",
                hint="query i sees only keys 0 .. i: its largest k_j among those depends on i",
                variant=lambda: np.array(2),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.5 separate single-head modules merged into one layer
def _merge_heads_weights(W_q, W_k, W_v, W_o, *, dealt=False, o_dealt=None, q_factor=-0.5):
    """(H, d_model, d_head) projections and (H, d_head, d_model) outputs -> four (d_model, d_model).

    The modules scale their scores by 1/sqrt(d_model), the merged layer by 1/sqrt(d_head): W_q
    takes the factor H ** q_factor (-1/2 is right; 0 leaves the scale out, 1/2 inverts it).
    ``dealt``: module h's features go to columns h, h + H, ... (and rows of W_o, unless ``o_dealt``
    says otherwise).
    """
    o_dealt = dealt if o_dealt is None else o_dealt
    cols = [np.concatenate(list(W), axis=-1) for W in (W_q, W_k, W_v)]  # (d_model, H * d_head)
    if dealt:
        cols = [np.stack(list(W), axis=-1).reshape(W.shape[1], -1) for W in (W_q, W_k, W_v)]  # e*H + h
    cols[0] = cols[0] * float(np.shape(W_q)[0]) ** q_factor  # sqrt(d_head / d_model) = 1 / sqrt(H)
    rows = np.concatenate(list(W_o), axis=0)  # (H * d_head, d_model)
    if o_dealt:
        rows = np.stack(list(W_o), axis=1).reshape(-1, W_o.shape[-1])  # row e*H + h
    return (*cols, rows)


def _single_heads_cases(seed=5105):
    rng = np.random.default_rng(seed)

    def case(label, d, H, dtype=np.float64):
        d_head = d // H
        proj = {n: rng.normal(size=(H, d, d_head)) / np.sqrt(d) for n in ("W_q", "W_k", "W_v")}
        return Case(
            label,
            **{n: w.astype(dtype) for n, w in proj.items()},
            W_o=(rng.normal(size=(H, d_head, d)) / np.sqrt(d)).astype(dtype),
        )

    return grouped(
        "modules",
        case("3 modules, d_model=6, d_head=2", 6, 3),
        case("2 modules, d_model=8, d_head=4", 8, 2),
        case("4 modules, d_model=12, d_head=3", 12, 4),
        case("one module, d_model=4", 4, 1),
        case("float32, 2 modules, d_model=6, d_head=3", 6, 2, np.float32),
    )


register(
    Exercise(
        id="ch05.merge_single_heads",
        number="5.5",
        title="one layer from separate single-head modules",
        points=1,
        function="merge_single_heads",
        stub=STUB_LINE,
        needs=MHA_NEEDS,
        hint="what does concat(heads) @ W_o add up, head by head, and by what does each side divide its scores?",
        description="An older model keeps its attention as $H$ separate single-head modules (in an "
        "`nn.ModuleList`) and adds their outputs. Module $h$ has its own `W_q[h]`, `W_k[h]`, "
        "`W_v[h]`, each `(d_model, d_head)`, and its own output matrix `W_o[h] (d_head, d_model)`, all "
        "used as `x @ W`, with $H\\,d_{head} = d_{model}$; its author divided every module's scores "
        "by $\\sqrt{d_{model}}$. The inputs are those matrices stacked: `W_q`, `W_k`, `W_v` "
        "`(H, d_model, d_head)` and `W_o` `(H, d_head, d_model)`. Return `(W_q, W_k, W_v, W_o)`, each "
        "`(d_model, d_model)`, for one multi-head layer of this course (5.3, $H$ heads) that computes "
        "the same output for every `x`, its head $h$ being module $h$: `W_k`, `W_v` and `W_o` hold "
        "the modules' numbers, moved, each module's features kept in their order, and `W_q` holds "
        "whatever else makes the two equal.",
        solution='''
            def merge_single_heads(W_q, W_k, W_v, W_o):
                """H single-head modules whose outputs add -> one multi-head layer's four matrices."""
                ### BEGIN SOLUTION
                H, d_model, d_head = W_q.shape
                # head h owns columns h*d_head:(h+1)*d_head of the projections ...
                W_q, W_k, W_v = (np.concatenate(list(W), axis=-1) for W in (W_q, W_k, W_v))  # (d, d)
                # the merged layer divides by sqrt(d_head), the modules by sqrt(d_model): W_q keeps the rest
                W_q = W_q * np.sqrt(d_head / d_model)
                # ... and head h's output meets rows h*d_head:(h+1)*d_head of W_o: the sum over heads
                return W_q, W_k, W_v, np.concatenate(list(W_o), axis=0)  # (H * d_head, d_model)
                ### END SOLUTION
        ''',
        reference=_merge_heads_weights,
        public_cases=_single_heads_cases,
        outputs=("W_q", "W_k", "W_v", "W_o"),
        diagnoses=(
            Diagnosis(
                "your matrices hold the modules' numbers, but head h of the merged layer does not read "
                "module h's features side by side: which features does your head 0 own?",
                name="modules dealt to the features in turn",
                hint="module h's d_head features are features h*d_head:(h+1)*d_head of the merged layer: "
                "put the blocks side by side (np.concatenate along the last axis, rows for W_o)",
                variant=lambda W_q, W_k, W_v, W_o: _merge_heads_weights(W_q, W_k, W_v, W_o, dealt=True),
            ),
            Diagnosis(
                "W_q, W_k and W_v are right and W_o is not: does head h's output meet the rows of "
                "W_o that hold module h's output matrix?",
                name="W_o's rows in another order than the heads",
                hint="stack W_o[0], W_o[1], ... one under the other (np.concatenate(list(W_o), axis=0))",
                variant=lambda W_q, W_k, W_v, W_o: _merge_heads_weights(W_q, W_k, W_v, W_o, o_dealt=True),
            ),
            Diagnosis(
                "W_k, W_v and W_o are right; W_q is the modules' numbers side by side: would the merged "
                "layer's weights be as sharp as the modules'?",
                name="the modules' scale left out",
                hint="the modules divide their scores by sqrt(d_model), the merged layer by sqrt(d_head): "
                "multiply W_q by sqrt(d_head / d_model)",
                variant=lambda W_q, W_k, W_v, W_o: _merge_heads_weights(W_q, W_k, W_v, W_o, q_factor=0.0),
            ),
            Diagnosis(
                "W_k, W_v and W_o are right; W_q is scaled the wrong way: are the merged layer's "
                "weights now sharper or flatter than the modules'?",
                name="the scale folded in upside down",
                hint="the merged layer already divides by sqrt(d_head), more weakly than the modules' "
                "sqrt(d_model): W_q must shrink, by sqrt(d_head / d_model)",
                variant=lambda W_q, W_k, W_v, W_o: _merge_heads_weights(W_q, W_k, W_v, W_o, q_factor=0.5),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.6 heads from averaged maps (inverse)
def _averaged_maps(q, k, H, scale_by=None, interleaved=False):
    B, L, d = q.shape
    if interleaved:  # feature j goes to head j % H
        qh = q.reshape(B, L, d // H, H).transpose(0, 3, 1, 2)
        kh = k.reshape(B, L, d // H, H).transpose(0, 3, 1, 2)
    else:
        qh, kh = split_heads(q, H), split_heads(k, H)  # (B, H, L, d_head)
    s = qh @ kh.swapaxes(-1, -2) / np.sqrt(scale_by or d // H)
    return softmax(s, axis=-1).mean(axis=1)  # (B, L, L)


def _heads_from_maps(q, k, weights, **how):
    q, k, w = (np.asarray(a, dtype=np.float64) for a in (q, k, weights))
    d = q.shape[-1]
    options = [H for H in range(1, d + 1) if d % H == 0]
    errors = [np.abs(_averaged_maps(q, k, H, **how) - w).max() for H in options]
    return np.array(options[int(np.argmin(errors))])


def _heads_cases(seed=506):
    rng = np.random.default_rng(seed)

    def case(label, B, L, d, H, scale=1.0, dtype=np.float64):
        q, k = scale * rng.normal(size=(B, L, d)), scale * rng.normal(size=(B, L, d))
        w = _averaged_maps(q, k, H)
        return Case(label, q=q.astype(dtype), k=k.astype(dtype), weights=w.astype(dtype))

    return (
        grouped(
            "head counts",
            case("B=2, L=4, d_model=8, 2 heads", 2, 4, 8, 2),
            case("B=1, L=5, d_model=12, 3 heads", 1, 5, 12, 3),
            case("B=1, L=3, d_model=6, 6 heads (d_head = 1)", 1, 3, 6, 6),
        )
        + grouped(
            "edge counts",
            case("one head, B=2, L=4, d_model=4", 2, 4, 4, 1, scale=1.5),
            case("B=1, L=6, d_model=16, 4 heads, sharp maps", 1, 6, 16, 4, scale=2.0),
            case("B=1, L=4, d_model=9, 9 heads (d_head = 1)", 1, 4, 9, 9),
        )
        + grouped(
            "dtype",
            case("float32, B=2, L=4, d_model=6, 6 heads", 2, 4, 6, 6, dtype=np.float32),
        )
    )


register(
    Exercise(
        id="ch05.heads_from_averaged_weights",
        number="5.6",
        title="how many heads, from the averaged maps",
        points=2,
        function="heads_from_averaged_weights",
        kind="implement",
        needs=MHA_NEEDS,
        hint="try every head count the width allows and rebuild what the layer would have returned",
        description="`nn.MultiheadAttention` returns, by default, its attention maps averaged over the "
        "heads. You have a layer's projected queries and keys, `q` and `k (B, L, d_model)` (after "
        "$W_Q$ and $W_K$, before the heads are split, no mask, no biases), and the `weights (B, L, L)` "
        "it returned (query on axis -2, key on axis -1), but not its number of heads. Return that "
        "number, an int. The weights are exact up to their dtype's rounding (float64 or float32).",
        solution='''
            def heads_from_averaged_weights(q, k, weights):
                """The number of heads of the layer that returned these head-averaged maps."""
                ### BEGIN SOLUTION
                d = q.shape[-1]
                best, best_err = None, np.inf
                for H in [h for h in range(1, d + 1) if d % h == 0]:
                    qh, kh = split_heads(q, H), split_heads(k, H)  # (B, H, L, d_head)
                    s = qh @ kh.swapaxes(-1, -2) / np.sqrt(d // H)  # each head scales by its own width
                    err = np.abs(softmax(s, axis=-1).mean(axis=1) - weights).max()
                    if err < best_err:
                        best, best_err = H, err
                return best
                ### END SOLUTION
        ''',
        reference=_heads_from_maps,
        public_cases=_heads_cases,
        diagnoses=(
            Diagnosis(
                "the maps you rebuilt were scaled by the model's width, not by each head's",
                name="scaled by d_model",
                hint="each head divides its scores by the square root of its own width",
                variant=lambda q, k, weights: _heads_from_maps(q, k, weights, scale_by=np.shape(q)[-1]),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 5.7 the layer with each head's W_V and W_O folded (diagnose)
def _mha_folded(x, W_q, W_k, W_v, W_o, n_heads, *, o_blocks="rows", v_blocks="columns", scale=None):
    """Multi-head attention computed as sum_h weights_h @ x @ (W_V^(h) W_O^(h)).

    ``o_blocks``: which block of W_o each head's fold uses ("rows", right; "columns", W_o's columns
    h*d_head:(h+1)*d_head as if W_o were stored (out, in); "dealt", rows h, h + H, ...);
    ``v_blocks``: "columns" (right) or "dealt" (columns h, h + H, ...).
    """
    B, L, d_model = x.shape
    d_head = d_model // n_heads
    q, k = split_heads(x @ W_q, n_heads), split_heads(x @ W_k, n_heads)  # (B, H, L, d_head)
    scores = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(d_head) if scale is None else scale)
    weights = softmax(scores)  # (B, H, L, L)
    if v_blocks == "dealt":
        W_v_heads = np.swapaxes(W_v.reshape(d_model, d_head, n_heads), -1, -2)  # column e*H + h
    else:
        W_v_heads = W_v.reshape(d_model, n_heads, d_head)  # column h*d_head + e
    if o_blocks == "columns":
        W_o_heads = np.swapaxes(W_o.reshape(d_model, n_heads, d_head), 0, 1)  # (H, d_model, d_head)
        W_ov = np.einsum("dhe,hfe->hdf", W_v_heads, W_o_heads)
    elif o_blocks == "dealt":
        W_o_heads = np.swapaxes(W_o.reshape(d_head, n_heads, d_model), 0, 1)  # row e*H + h
        W_ov = np.einsum("dhe,hef->hdf", W_v_heads, W_o_heads)
    else:
        W_ov = np.einsum("dhe,hef->hdf", W_v_heads, W_o.reshape(n_heads, d_head, d_model))
    out = np.einsum("bhls,bsd,hdf->blf", weights, x, W_ov)  # (B, L, d_model)
    return out, weights


def _mha_forward_cases():
    rng = np.random.default_rng(507)

    def weights(d):
        return dict(
            zip(("W_q", "W_k", "W_v", "W_o"), (rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4)))
        )

    return grouped(
        "heads",
        Case("B=1, L=3, d_model=4, 2 heads", x=rng.normal(size=(1, 3, 4)), **weights(4), n_heads=2),
        Case("B=2, L=4, d_model=6, 3 heads", x=rng.normal(size=(2, 4, 6)), **weights(6), n_heads=3),
        Case("B=1, L=5, d_model=8, 4 heads", x=rng.normal(size=(1, 5, 8)), **weights(8), n_heads=4),
        Case("B=2, L=3, d_model=6, 2 heads", x=rng.normal(size=(2, 3, 6)), **weights(6), n_heads=2),
        Case("B=2, L=4, d_model=4, 1 head", x=rng.normal(size=(2, 4, 4)), **weights(4), n_heads=1),
    )


register(
    Exercise(
        id="ch05.mha_forward",
        former_ids=("ch05.fix_head_split",),
        number="5.7",
        title="multi-head attention with each head's value and output matrices folded",
        points=4,
        function="mha_forward",
        hint="which rows or columns of W_o does head h's output meet in concat(heads) @ W_o?",
        kind="diagnose",
        description="This function computes the chapter's multi-head self-attention without ever "
        "forming the heads' outputs: it folds each head's block of $W_V$ and its block of $W_O$ into "
        "one `(d_model, d_model)` matrix per head and adds up, over the heads, "
        "`weights_h @ x @ W_ov[h]`. Inputs: `x (B, L, d_model)`; `W_q`, `W_k`, `W_v`, `W_o`, each "
        "`(d_model, d_model)`, used as `x @ W` (this course's convention, as in 5.3); `n_heads`. It "
        "should return what 5.3 returns, `(out (B, L, d_model), weights (B, n_heads, L, L))`, and "
        "it does not: `weights` match `ac.MultiHeadAttention` loaded with the same weights, `out` "
        "does not, with one head or with several. Find the bug and fix it.",
        solution='''
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                """Multi-head self-attention: returns (out (B, L, d_model), weights (B, H, L, L))."""
                B, L, d_model = x.shape
                d_head = d_model // n_heads
                q, k = split_heads(x @ W_q, n_heads), split_heads(x @ W_k, n_heads)  # -> (B, H, L, d_head)
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head))  # -> (B, H, L, L)
                W_v_heads = W_v.reshape(d_model, n_heads, d_head)  # (d_model, d_model) -> (d_model, H, d_head)
                ### BEGIN SOLUTION
                W_o_heads = W_o.reshape(n_heads, d_head, d_model)  # (d_model, d_model) -> (H, d_head, d_model)
                W_ov = np.einsum("dhe,hef->hdf", W_v_heads, W_o_heads)  # -> (H, d_model, d_model)
                ### END SOLUTION
                # sum over h of weights_h @ x @ W_ov[h]: (B, H, L, L), (B, L, d_model), (H, d_model, d_model)
                out = np.einsum("bhls,bsd,hdf->blf", weights, x, W_ov)  # -> (B, L, d_model)
                return out, weights
        ''',
        stub="""
            W_o_heads = W_o.reshape(d_model, n_heads, d_head)  # (d_model, d_model) -> (d_model, H, d_head)
            W_ov = np.einsum("dhe,fhe->hdf", W_v_heads, W_o_heads)  # -> (H, d_model, d_model)
        """,
        reference=lambda x, W_q, W_k, W_v, W_o, n_heads: mha_reference(x, W_q, W_k, W_v, W_o, n_heads),
        public_cases=_mha_forward_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=MHA_NEEDS,
        diagnoses=(
            Diagnosis(
                "weights are right and out is not, whatever the number of heads: head h's output "
                "enters concat(heads) @ W_o through which block of W_o?",
                name="W_o's columns taken as the head's block",
                hint="in the x @ W convention head h's output meets rows h*d_head:(h+1)*d_head of W_o, "
                "not its columns (those are the blocks of a weight stored (out, in)): "
                "W_o.reshape(n_heads, d_head, d_model)",
                variant=lambda x, W_q, W_k, W_v, W_o, h: _mha_folded(
                    x, W_q, W_k, W_v, W_o, h, o_blocks="columns"
                ),
            ),
            Diagnosis(
                "weights are right; out is right with one head and wrong with several: which rows of "
                "W_o does your head 0 fold?",
                name="rows of W_o dealt to the heads in turn",
                hint="head h owns rows h*d_head:(h+1)*d_head of W_o, a block, not rows h, h + H, ...: "
                "W_o.reshape(n_heads, d_head, d_model)",
                variant=lambda x, W_q, W_k, W_v, W_o, h: _mha_folded(
                    x, W_q, W_k, W_v, W_o, h, o_blocks="dealt"
                ),
            ),
            Diagnosis(
                "weights are right; out is right with one head and wrong with several: which columns "
                "of W_v does your head 0 fold?",
                name="columns of W_v dealt to the heads in turn",
                hint="head h owns columns h*d_head:(h+1)*d_head of W_v: W_v.reshape(d_model, n_heads, d_head)",
                variant=lambda x, W_q, W_k, W_v, W_o, h: _mha_folded(
                    x, W_q, W_k, W_v, W_o, h, v_blocks="dealt"
                ),
            ),
            Diagnosis(
                D_MODEL_SCALE,
                variant=lambda x, W_q, W_k, W_v, W_o, h: mha_reference(
                    x, W_q, W_k, W_v, W_o, h, scale=1 / np.sqrt(x.shape[-1])
                ),
            ),
        ),
    )
)
