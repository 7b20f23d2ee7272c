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
        "features $h\\,d_{head}$ to $(h+1)\\,d_{head} - 1$, as in this chapter's layer) that computes the same thing for "
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


# ----------------------------------------------------------------------------- 5.2 a layer with two copies of one head
def _copied_pair(W_q, W_k, W_v, n_heads):
    """(first, second): the two heads whose blocks of W_q, W_k and W_v are equal."""
    d = np.shape(W_q)[0]
    d_head = d // n_heads
    blocks = [
        [np.asarray(W)[:, h * d_head : (h + 1) * d_head] for W in (W_q, W_k, W_v)] for h in range(n_heads)
    ]
    for g in range(n_heads):
        for h in range(g):
            if all(np.array_equal(a, b) for a, b in zip(blocks[h], blocks[g])):
                return h, g
    raise ValueError("no two heads have the same blocks of W_q, W_k and W_v")


def _merge_copies(W_q, W_k, W_v, W_o, n_heads, *, keep="first", o="added"):
    """The layer with the later copy removed; its rows of W_o added to the kept copy's rows.

    ``keep="second"`` removes the first copy instead; ``o``: "added" (right), "dropped" (the removed
    copy's rows of W_o thrown away), "averaged" (the two copies' rows of W_o averaged).
    """
    W_q, W_k, W_v, W_o = (np.asarray(W) for W in (W_q, W_k, W_v, W_o))
    d_head = W_q.shape[0] // n_heads
    first, second = _copied_pair(W_q, W_k, W_v, n_heads)
    kept, gone = (first, second) if keep == "first" else (second, first)
    rows_kept = slice(kept * d_head, (kept + 1) * d_head)
    rows_gone = slice(gone * d_head, (gone + 1) * d_head)
    W_o = W_o.copy()
    if o == "added":
        W_o[rows_kept] = W_o[rows_kept] + W_o[rows_gone]
    elif o == "averaged":
        W_o[rows_kept] = (W_o[rows_kept] + W_o[rows_gone]) / 2
    cut = np.arange(gone * d_head, (gone + 1) * d_head)
    return (
        np.delete(W_q, cut, axis=1),
        np.delete(W_k, cut, axis=1),
        np.delete(W_v, cut, axis=1),
        np.delete(W_o, cut, axis=0),
    )


def copied_head_case(rng, label, d, H, first, second, dtype=np.float64):
    """A layer of H heads whose head ``second`` is a copy of head ``first`` in W_q, W_k, W_v."""
    d_head = d // H
    Ws = {n: rng.normal(size=(d, d)) / np.sqrt(d) for n in ("W_q", "W_k", "W_v", "W_o")}
    for n in ("W_q", "W_k", "W_v"):
        Ws[n][:, second * d_head : (second + 1) * d_head] = Ws[n][:, first * d_head : (first + 1) * d_head]
    return Case(label, **{n: W.astype(dtype) for n, W in Ws.items()}, n_heads=H)


def _copies_cases(seed=5102):
    rng = np.random.default_rng(seed)
    return grouped(
        "several heads",
        copied_head_case(rng, "4 heads of width 2", 8, 4, 0, 3),
        copied_head_case(rng, "3 heads of width 2", 6, 3, 0, 2),
        copied_head_case(rng, "5 heads of width 2", 10, 5, 1, 4),
    ) + grouped(
        "edge counts",
        copied_head_case(rng, "2 heads of width 3", 6, 2, 0, 1),
        copied_head_case(rng, "6 heads of width 1", 6, 6, 2, 5),
        copied_head_case(rng, "float32, 4 heads of width 3", 12, 4, 1, 2, np.float32),
    )


register(
    Exercise(
        id="ch05.merge_copied_heads",
        number="5.2",
        title="a layer with two copies of one head",
        points=1,
        function="merge_copied_heads",
        stub=STUB_LINE,
        needs=MHA_NEEDS,
        hint="what do the two copies output, and what does concat(heads) @ W_o do with two equal outputs?",
        description="A trained multi-head layer of this chapter (weights `W_q`, `W_k`, `W_v`, `W_o`, each "
        "`(d_model, d_model)`, used as `x @ W`, `n_heads` heads of width $d_{head}$) turns out to "
        "hold two copies of one head: exactly two of its heads have the same blocks of `W_q`, `W_k` "
        "and `W_v`; their blocks of `W_o` differ. Return `(W_q, W_k, W_v, W_o)` of a layer with "
        "`n_heads - 1` heads of width $d_{head}$, run the same way, that gives the same `out` for "
        "every `x`: the earlier of the two copies stays where it is, the later one is gone, the "
        "other heads keep their order. Shapes: `(d_model, d_model - d_head)` for `W_q`, `W_k`, "
        "`W_v`, `(d_model - d_head, d_model)` for `W_o`.",
        solution='''
            def merge_copied_heads(W_q, W_k, W_v, W_o, n_heads):
                """The same layer with one head fewer: the later of the two copies removed."""
                ### BEGIN SOLUTION
                d_head = W_q.shape[0] // n_heads

                def block(W, h):  # head h's columns of a projection
                    return W[:, h * d_head : (h + 1) * d_head]

                pairs = [(a, b) for b in range(n_heads) for a in range(b)]
                first, second = next(
                    (a, b) for a, b in pairs if all(np.array_equal(block(W, a), block(W, b)) for W in (W_q, W_k, W_v))
                )
                # both copies output the same head_a: head_a @ W_o^(a) + head_a @ W_o^(b) = head_a @ (W_o^(a) + W_o^(b))
                W_o = W_o.copy()
                W_o[first * d_head : (first + 1) * d_head] += W_o[second * d_head : (second + 1) * d_head]
                gone = np.arange(second * d_head, (second + 1) * d_head)
                return (
                    np.delete(W_q, gone, axis=1),
                    np.delete(W_k, gone, axis=1),
                    np.delete(W_v, gone, axis=1),
                    np.delete(W_o, gone, axis=0),
                )
                ### END SOLUTION
        ''',
        reference=_merge_copies,
        public_cases=_copies_cases,
        outputs=("W_q", "W_k", "W_v", "W_o"),
        diagnoses=(
            Diagnosis(
                "W_q, W_k and W_v are right and W_o is not: where does the removed copy's "
                "contribution to out go in your layer?",
                name="the removed copy's rows of W_o dropped",
                hint="both copies output the same head: add the later copy's rows of W_o to the earlier "
                "copy's before removing them",
                variant=lambda W_q, W_k, W_v, W_o, h: _merge_copies(W_q, W_k, W_v, W_o, h, o="dropped"),
            ),
            Diagnosis(
                "W_q, W_k and W_v are right and W_o is not: how much of the two copies' contribution "
                "does your W_o give back?",
                name="the copies' rows of W_o averaged",
                hint="the two copies' contributions add up in concat(heads) @ W_o: add their rows of W_o",
                variant=lambda W_q, W_k, W_v, W_o, h: _merge_copies(W_q, W_k, W_v, W_o, h, o="averaged"),
            ),
            Diagnosis(
                "the heads of your layer are not in the order asked: which copy did you keep?",
                name="the later copy kept",
                hint="keep the earlier copy where it is and remove the later one",
                variant=lambda W_q, W_k, W_v, W_o, h: _merge_copies(W_q, W_k, W_v, W_o, h, keep="second"),
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


# ----------------------------------------------------------------------------- 5.5 heads of different widths
def _mha_widths(x, W_q, W_k, W_v, W_o, widths, *, scale_by="own"):
    """Multi-head attention whose head h owns ``widths[h]`` consecutive features.

    ``scale_by``: "own" (right: 1/sqrt(widths[h])), "mean" (1/sqrt(d_model / H) for every head),
    "d_model" (1/sqrt(d_model) for every head).
    """
    x = np.asarray(x)
    widths = [int(w) for w in widths]
    d_model = x.shape[-1]
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    edges = np.cumsum([0, *widths])
    heads, maps = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        c = {"own": hi - lo, "mean": d_model / len(widths), "d_model": d_model}[scale_by]
        w = softmax(q[..., lo:hi] @ np.swapaxes(k[..., lo:hi], -1, -2) / np.sqrt(c))
        heads.append(w @ v[..., lo:hi])
        maps.append(w)
    return np.concatenate(heads, axis=-1) @ W_o, np.stack(maps, axis=-3)


def _widths_cases(seed=5105):
    rng = np.random.default_rng(seed)

    def case(label, B, L, widths, dtype=np.float64):
        d = sum(widths)
        Ws = {
            n: (rng.normal(size=(d, d)) / np.sqrt(d) * 1.5).astype(dtype)
            for n in ("W_q", "W_k", "W_v", "W_o")
        }
        return Case(label, x=rng.normal(size=(B, L, d)).astype(dtype), **Ws, widths=np.array(widths))

    return (
        grouped(
            "uneven widths",
            case("widths [1, 3, 4], B=2, L=4", 2, 4, (1, 3, 4)),
            case("widths [4, 2, 2, 4], B=1, L=5", 1, 5, (4, 2, 2, 4)),
            case("widths [2, 6], B=2, L=3", 2, 3, (2, 6)),
        )
        + grouped(
            "edge widths",
            case("one head of width 6, B=1, L=4", 1, 4, (6,)),
            case("widths [3, 3], B=2, L=3", 2, 3, (3, 3)),
            case("widths [5, 1, 1, 1], B=1, L=6", 1, 6, (5, 1, 1, 1)),
            case("widths [2, 4], one token", 2, 1, (2, 4)),
        )
        + grouped("dtype", case("float32, widths [1, 2, 5], B=2, L=4", 2, 4, (1, 2, 5), np.float32))
    )


register(
    Exercise(
        id="ch05.mha_uneven_heads",
        number="5.5",
        title="a layer whose heads have different widths",
        points=1,
        function="mha_uneven_heads",
        stub=STUB_LINE,
        needs=MHA_NEEDS,
        hint="cut q, k and v at the running sum of the widths, and ask of each head what this chapter "
        "asks of every head",
        description="A layer may give its heads different widths (as when some heads of a trained "
        "model are pruned to fewer features), say one wide head and a few narrow ones. Such a layer has weights `W_q`, `W_k`, `W_v`, `W_o`, each `(d_model, d_model)`, used as "
        "`x @ W`, and an integer array `widths` of its heads' widths, which add up to `d_model`: head $h$ owns "
        "the `widths[h]` features that follow those of heads $0, \\dots, h - 1$, in `q`, `k`, `v` "
        "and in the concatenation that meets `W_o`. Each head is an attention head of this chapter on "
        "its own features. For `x (B, L, d_model)` return `(out (B, L, d_model), weights (B, H, L, "
        "L))`, $H$ being the number of heads.",
        solution='''
            def mha_uneven_heads(x, W_q, W_k, W_v, W_o, widths):
                """Self-attention with heads of the given widths: (out (B, L, d_model), weights (B, H, L, L))."""
                ### BEGIN SOLUTION
                q, k, v = x @ W_q, x @ W_k, x @ W_v  # (B, L, d_model)
                start, heads, maps = 0, [], []
                for width in widths:
                    cols = slice(start, start + width)  # this head's features
                    s = q[..., cols] @ np.swapaxes(k[..., cols], -1, -2) / np.sqrt(width)  # its own width
                    w = softmax(s)  # (B, L, L)
                    heads.append(w @ v[..., cols])  # (B, L, width)
                    maps.append(w)
                    start += width
                return np.concatenate(heads, axis=-1) @ W_o, np.stack(maps, axis=1)
                ### END SOLUTION
        ''',
        reference=_mha_widths,
        public_cases=_widths_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        diagnoses=(
            Diagnosis(
                "the heads' weights are off, flatter in some heads and sharper in others: each "
                "head's scores are dot products of how many numbers?",
                name="every head scaled by the mean width",
                hint="each head divides its scores by the square root of its own width, widths[h]",
                variant=lambda x, W_q, W_k, W_v, W_o, widths: _mha_widths(
                    x, W_q, W_k, W_v, W_o, widths, scale_by="mean"
                ),
            ),
            Diagnosis(
                "every head's weights are flatter than expected, the narrowest heads' the most: each "
                "head's scores are dot products of how many numbers?",
                name="scale by d_model",
                hint="each head divides its scores by the square root of its own width, not of d_model",
                variant=lambda x, W_q, W_k, W_v, W_o, widths: _mha_widths(
                    x, W_q, W_k, W_v, W_o, widths, scale_by="d_model"
                ),
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


# ----------------------------------------------------------------------------- 5.7 heads folded into the batch axis (diagnose)
def _mha_batch_folded(
    x, W_q, W_k, W_v, W_o, n_heads, *, unfold="batch first", fold="moved", merge="moved", scale=None
):
    """Multi-head attention run as a (B * H, L, d_head) batch of single-head attentions, then unfolded.

    ``unfold``: "batch first" (right: row b * H + h is sequence b's head h) or "heads first" (row
    h * B + b taken as sequence b's head h); ``fold``: "moved" (right) or "reshaped" (the (B, L,
    d_model) array reshaped to (B * H, L, d_head) without moving the head axis in front of the
    tokens); ``merge``: "moved" (right) or "reshaped" (the (B, H, L, d_head) heads reshaped to (B,
    L, d_model) without moving the head axis back); ``scale``: the scores' factor (1/sqrt(d_head)).
    """
    x = np.asarray(x)
    B, L, d_model = x.shape
    d_head = d_model // n_heads

    def folded(t):
        if fold == "reshaped":
            return t.reshape(B * n_heads, L, d_head)
        return t.reshape(B, L, n_heads, d_head).transpose(0, 2, 1, 3).reshape(B * n_heads, L, d_head)

    def unfolded(t):
        if unfold == "heads first":
            return t.reshape(n_heads, B, L, t.shape[-1]).transpose(1, 0, 2, 3)
        return t.reshape(B, n_heads, L, t.shape[-1])

    q, k, v = folded(x @ W_q), folded(x @ W_k), folded(x @ W_v)
    s = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(d_head) if scale is None else scale)
    weights = softmax(s)  # (B * H, L, L)
    heads = unfolded(weights @ v)  # (B, H, L, d_head)
    if merge == "reshaped":
        concat = heads.reshape(B, L, d_model)
    else:
        concat = heads.transpose(0, 2, 1, 3).reshape(B, L, d_model)
    return concat @ W_o, unfolded(weights)


def _batches_cases():
    rng = np.random.default_rng(507)

    # no case of one sequence or one head: the handed-out code is right there (the prompt says so)
    def case(label, B, L, d, H, dtype=np.float64):
        Ws = {n: (rng.normal(size=(d, d)) / np.sqrt(d)).astype(dtype) for n in ("W_q", "W_k", "W_v", "W_o")}
        return Case(label, x=rng.normal(size=(B, L, d)).astype(dtype), **Ws, n_heads=H)

    return grouped(
        "batches",
        case("B=2, L=4, d_model=6, 3 heads", 2, 4, 6, 3),
        case("B=3, L=5, d_model=8, 4 heads", 3, 5, 8, 4),
        case("B=2, L=3, d_model=6, 2 heads", 2, 3, 6, 2),
    ) + grouped("dtype", case("float32, B=4, L=3, d_model=6, 6 heads of width 1", 4, 3, 6, 6, np.float32))


register(
    Exercise(
        id="ch05.mha_forward",
        former_ids=("ch05.fix_head_split",),
        number="5.7",
        title="multi-head attention run as a batch of single-head attentions",
        points=4,
        function="mha_forward",
        hint="write down which (sequence, head) pair row i of the folded batch holds, then ask the same "
        "of the row that the unfolding reads for sequence b's head h",
        kind="diagnose",
        description="Some libraries run multi-head attention as one big batch of single-head attentions: "
        "every (sequence, head) pair becomes one row of a `(B * n_heads, L, d_head)` batch, attention "
        "runs on that batch, and the results are unfolded afterwards. This function does that. Inputs: "
        "`x (B, L, d_model)`; `W_q`, `W_k`, `W_v`, `W_o`, each `(d_model, d_model)`, used as `x @ W` "
        "(this course's convention, as in 5.3); `n_heads`. It should return what 5.3 returns, "
        "`(out (B, L, d_model), weights (B, n_heads, L, L))`. Its author tested it on one sentence "
        "against `ac.MultiHeadAttention` loaded with the same weights, and it passed; on a batch of "
        "several sentences it does not. Find the bug and fix it.",
        solution='''
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                """Multi-head self-attention: returns (out (B, L, d_model), weights (B, H, L, L))."""
                B, L, d_model = x.shape
                d_head = d_model // n_heads

                def fold(t):  # (B, L, d_model) -> a batch of single-head inputs, one per (sequence, head) pair
                    return t.reshape(B, L, n_heads, d_head).transpose(0, 2, 1, 3).reshape(B * n_heads, L, d_head)

                def unfold(t):  # a batch of single-head results -> (B, n_heads, L, n)
                    ### BEGIN SOLUTION
                    return t.reshape(B, n_heads, L, t.shape[-1])
                    ### END SOLUTION

                q, k, v = fold(x @ W_q), fold(x @ W_k), fold(x @ W_v)
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head))
                heads = unfold(weights @ v)
                out = heads.transpose(0, 2, 1, 3).reshape(B, L, d_model) @ W_o
                return out, unfold(weights)
        ''',
        stub="""
            return t.reshape(n_heads, B, L, t.shape[-1]).transpose(1, 0, 2, 3)
        """,
        reference=lambda x, W_q, W_k, W_v, W_o, n_heads: mha_reference(x, W_q, W_k, W_v, W_o, n_heads),
        public_cases=_batches_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=MHA_NEEDS,
        diagnoses=(
            Diagnosis(
                "right for one sequence and for one head; with several of both, sequence b's head h "
                "reads another pair's row of the folded batch: which row holds it?",
                name="sequences and heads swapped when unfolding",
                hint="fold puts sequence b's head h in row b * n_heads + h: unfold with "
                "t.reshape(B, n_heads, L, t.shape[-1])",
                variant=lambda x, W_q, W_k, W_v, W_o, h: _mha_batch_folded(
                    x, W_q, W_k, W_v, W_o, h, unfold="heads first"
                ),
            ),
            Diagnosis(
                "right for one head only: does a row of your folded batch hold one head's slice of "
                "every token, or whole tokens?",
                name="folded without moving the head axis",
                hint="move the head axis in front of the tokens before the folding reshape: "
                "reshape(B, L, n_heads, d_head), transpose(0, 2, 1, 3), then reshape(B * n_heads, L, d_head)",
                variant=lambda x, W_q, W_k, W_v, W_o, h: _mha_batch_folded(
                    x, W_q, W_k, W_v, W_o, h, fold="reshaped"
                ),
            ),
            Diagnosis(
                "weights are right and out is not, with more than one head: which features of the "
                "concatenation does head h's output land on?",
                name="merged without moving the head axis back",
                hint="move the head axis behind the tokens before merging: transpose(0, 2, 1, 3), then "
                "reshape(B, L, d_model)",
                variant=lambda x, W_q, W_k, W_v, W_o, h: _mha_batch_folded(
                    x, W_q, W_k, W_v, W_o, h, merge="reshaped"
                ),
            ),
            Diagnosis(
                D_MODEL_SCALE,
                variant=lambda x, W_q, W_k, W_v, W_o, h: mha_reference(
                    x, W_q, W_k, W_v, W_o, h, scale=1 / np.sqrt(np.shape(x)[-1])
                ),
            ),
        ),
    )
)
