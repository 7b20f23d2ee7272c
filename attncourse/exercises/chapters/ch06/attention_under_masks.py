"""Chapter 6 exercises 6.6-6.9: attention under masks - local and global heads, a streaming model's
settings read back, a decoder with key-major scores and the lengths a padded batch lost."""

from __future__ import annotations

import numpy as np

from .... import causal_mask, softmax
from .... import scaled_dot_product_attention as sdpa
from ...engine.registry import Case, Diagnosis, Exercise, grouped, register
from .._shared import D_MODEL_SCALE
from ..ch05 import mha_reference

__all__: list = []

NEEDS = ("import numpy as np", "from attncourse import softmax")


# ----------------------------------------------------------------------------- 6.6 local and global heads
def _local_global_mask(L, n_heads, window, local="first", lo=None, both_ways=False):
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    causal = j <= i
    lo = window if lo is None else lo
    windowed = (np.abs(i - j) < lo) if both_ways else causal & (j > i - lo)
    n_local = n_heads // 2
    heads = [windowed] * n_local + [causal] * (n_heads - n_local)
    if local == "last":
        heads = heads[::-1]
    elif local == "all":
        heads = [windowed] * n_heads
    elif local == "none":
        heads = [causal] * n_heads
    return np.stack(heads)[None]  # (1, H, L, L)


def _local_global(x, W_q, W_k, W_v, W_o, n_heads, window, scale=None, **how):
    mask = _local_global_mask(x.shape[-2], n_heads, window, **how)
    return mha_reference(x, W_q, W_k, W_v, W_o, n_heads, mask, scale=scale)


def _lg_cases():
    rng = np.random.default_rng(606)

    def weights(d):
        return dict(
            zip(("W_q", "W_k", "W_v", "W_o"), [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4)])
        )

    return (
        grouped(
            "windows",
            Case(
                "B=1, L=5, d_model=4, 2 heads, window 2",
                x=rng.normal(size=(1, 5, 4)),
                **weights(4),
                n_heads=2,
                window=2,
            ),
            Case(
                "B=2, L=6, d_model=8, 4 heads, window 3",
                x=rng.normal(size=(2, 6, 8)),
                **weights(8),
                n_heads=4,
                window=3,
            ),
        )
        + grouped(
            "edge windows",
            Case(
                "window 1: the local heads see only themselves, 4 heads, L=4",
                x=rng.normal(size=(2, 4, 8)),
                **weights(8),
                n_heads=4,
                window=1,
            ),
            Case(
                "window 5 longer than L=3, 4 heads",
                x=rng.normal(size=(1, 3, 8)),
                **weights(8),
                n_heads=4,
                window=5,
            ),
        )
        + grouped(
            "odd head counts",
            Case(
                "3 heads (1 local), L=5, window 2",
                x=rng.normal(size=(1, 5, 6)),
                **weights(6),
                n_heads=3,
                window=2,
            ),
        )
    )


register(
    Exercise(
        id="ch06.local_global_attention",
        number="6.6",
        title="local and global heads in one layer",
        points=5,
        hint="build one (L, L) mask per head, stack them on the head axis, and let the batch axis broadcast",
        function="local_global_attention",
        description="Some models mix *local* and *global* heads in one layer: the first "
        "`n_heads // 2` heads attend through this chapter's causal sliding window of `window` keys "
        "(Mistral's), the other heads are plainly causal. Write multi-head self-attention of `x (B, L, d_model)` with "
        "`W_q, W_k, W_v, W_o (d_model, d_model)` (used as `x @ W`) and `n_heads` heads scaled by "
        "$1/\\sqrt{d_{head}}$, with those masks. Head `h` owns columns `h * d_head:(h + 1) * d_head` of "
        "`x @ W_q`, `x @ W_k` and `x @ W_v`, and the merged heads go back in the "
        "same order before `@ W_o`. Return `(out (B, L, d_model), weights (B, n_heads, L, L))`. "
        "`softmax`, `split_heads` and `merge_heads` are handed out.",
        solution='''
            def local_global_attention(x, W_q, W_k, W_v, W_o, n_heads, window):
                """Causal multi-head self-attention, the first n_heads // 2 heads windowed: (out, weights)."""
                ### BEGIN SOLUTION
                L, d_head = x.shape[-2], x.shape[-1] // n_heads
                i = np.arange(L)[:, None]  # (L, 1): query positions
                j = np.arange(L)[None, :]  # (1, L): key positions
                causal = j <= i  # (L, L)
                local = causal & (j > i - window)  # (L, L): at most `window` keys back, itself included
                n_local = n_heads // 2
                mask = np.stack([local] * n_local + [causal] * (n_heads - n_local))  # (H, L, L)
                q = split_heads(x @ W_q, n_heads)  # (B, L, d_model) -> (B, H, L, d_head)
                k = split_heads(x @ W_k, n_heads)
                v = split_heads(x @ W_v, n_heads)
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head)  # (B, H, L, L)
                weights = softmax(np.where(mask, scores, -np.inf))  # (H, L, L) broadcasts over B
                out = merge_heads(weights @ v) @ W_o  # (B, H, L, d_head) -> (B, L, d_model) -> (B, L, d_model)
                return out, weights
                ### END SOLUTION
        ''',
        reference=_local_global,
        public_cases=_lg_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax, split_heads, merge_heads"),
        diagnoses=(
            Diagnosis(
                "your windowed heads are the last ones: the first n_heads // 2 heads are local",
                name="local heads last",
                hint="head 0 is a local head",
                variant=lambda x, W_q, W_k, W_v, W_o, n_heads, window: (
                    _local_global(x, W_q, W_k, W_v, W_o, n_heads, window, local="last")
                    if n_heads > 1
                    else None
                ),
            ),
            Diagnosis(
                "every head is windowed: only the first n_heads // 2 are local, the others see every "
                "earlier key",
                name="every head windowed",
                hint="two masks, one per kind of head",
                variant=lambda x, W_q, W_k, W_v, W_o, n_heads, window: _local_global(
                    x, W_q, W_k, W_v, W_o, n_heads, window, local="all"
                ),
            ),
            Diagnosis(
                "no head is windowed: the first n_heads // 2 heads see only the last `window` keys",
                name="no head windowed",
                hint="the local heads' mask also needs j > i - window",
                variant=lambda x, W_q, W_k, W_v, W_o, n_heads, window: (
                    _local_global(x, W_q, W_k, W_v, W_o, n_heads, window, local="none")
                    if n_heads > 1
                    else None
                ),
            ),
            Diagnosis(
                "a local head's query sees one key more than `window`",
                name="window one too wide",
                hint="count the keys query i sees: itself and window - 1 before it",
                variant=lambda x, W_q, W_k, W_v, W_o, n_heads, window: (
                    _local_global(x, W_q, W_k, W_v, W_o, n_heads, window, lo=window + 1)
                    if n_heads > 1
                    else None
                ),
            ),
            Diagnosis(
                D_MODEL_SCALE,
                variant=lambda x, W_q, W_k, W_v, W_o, n_heads, window: _local_global(
                    x, W_q, W_k, W_v, W_o, n_heads, window, scale=1 / np.sqrt(x.shape[-1])
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.7 a streaming model's settings, read back (extend)
def _streaming_mask(L, window, n_sink):
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    return (j <= i) & ((j > i - window) | (j < n_sink))  # never a key after the query


def _streaming_weights(rng, L, settings, dtype=np.float64):
    """(H, L, L) softmax weights of random scores, head h under (window, n_sink) = settings[h]."""
    heads = []
    for window, n_sink in settings:
        scores = rng.normal(size=(L, L))
        heads.append(_masked_weights(scores, _streaming_mask(L, window, n_sink)))
    return np.stack(heads).astype(dtype)


def _masked_weights(scores, mask):
    s = np.where(mask, scores, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _settings_case(rng, name, L, settings, dtype=np.float64):
    return Case(name, weights=_streaming_weights(rng, L, settings, dtype))


def _settings_cases():
    rng = np.random.default_rng(617)
    return grouped(
        "settings",
        _settings_case(rng, "3 heads, L=9", 9, [(3, 2), (4, 1), (2, 4)]),
        _settings_case(rng, "float32, 2 heads, L=12", 12, [(5, 3), (6, 4)], np.float32),
    ) + grouped(
        "heads without sinks or with a one-key window",
        _settings_case(rng, "4 heads, L=8", 8, [(4, 0), (1, 2), (1, 0), (1, 5)]),
    )


def _settings(weights, last=-1, shrink=0, sinks_in_window=False):
    """(window, n_sink) per head, read from one query's row of the weights."""
    row = np.asarray(weights, dtype=np.float64)[..., last, :] != 0  # (H, L): keys the query saw
    n_sink = np.argmin(row, axis=-1)  # the first key it did not see: the end of the sinks
    window = np.argmin(row[..., ::-1], axis=-1)  # the run of seen keys that ends at the query
    if sinks_in_window:
        window = row.sum(axis=-1)
    return (window - shrink).astype(np.int64), n_sink.astype(np.int64)


def _settings_transposed(weights):
    return _settings(np.swapaxes(np.asarray(weights), -1, -2))


register(
    Exercise(
        id="ch06.streaming_settings",
        number="6.7",
        title="a streaming model's settings, read back",
        points=2,
        function="streaming_settings",
        hint="a query far enough from the start shows both settings at once",
        kind="extend",
        description="A streaming model (StreamingLLM) runs past its training length with this chapter's "
        "causal sliding window of `window >= 1` keys (the query's own key included), and, much as "
        "Longformer's window keeps a few tokens global, it keeps the first `n_sink >= 0` tokens of the "
        "sequence visible to every later query, whatever the window (StreamingLLM calls them *attention "
        "sinks*). Each head of a layer was given its own "
        "settings, and they were not recorded. You have the layer's attention weights `weights (H, L, L)` "
        "(rows: queries, columns: keys; float32 or float64; a key a query may not see has weight exactly 0, "
        "any other key a positive weight). In every head `window + n_sink < L`. Return `(window, n_sink)`, "
        "two integer arrays of shape `(H,)`.",
        solution='''
            def streaming_settings(weights):
                """Each head's (window, n_sink), read from its attention weights: two (H,) int arrays."""
                ### BEGIN SOLUTION
                seen = np.asarray(weights)[:, -1, :] != 0  # (H, L): the keys the last query saw
                n_sink = np.argmin(seen, axis=-1)  # the sinks end at the first key it did not see
                window = np.argmin(seen[:, ::-1], axis=-1)  # the run of seen keys that ends at itself
                return window, n_sink
                ### END SOLUTION
        ''',
        reference=_settings,
        public_cases=_settings_cases,
        outputs=("window", "n_sink"),
        needs=("import numpy as np", "import torch"),
        diagnoses=(
            Diagnosis(
                "each of your windows is one key short: does the window hold the query's own key?",
                name="window without the query itself",
                hint="the window counts the query's own key",
                variant=lambda w: _settings(w, shrink=1),
            ),
            Diagnosis(
                "your windows count the sinks as well",
                name="sinks counted in the window",
                hint="the window is the run of keys that ends at the query",
                variant=lambda w: _settings(w, sinks_in_window=True),
            ),
            Diagnosis(
                "your settings are read with queries and keys swapped: which axis holds the keys?",
                name="queries and keys swapped",
                hint="rows are queries, the last axis holds the keys",
                variant=_settings_transposed,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.8 a decoder with key-major scores (diagnose)
def _decoder_cases():
    rng = np.random.default_rng(608)
    n = rng.normal
    return grouped(
        "values",
        Case("L=4, E=3", q=n(size=(4, 3)), k=n(size=(4, 3)), v=n(size=(4, 2))),
    ) + grouped(
        "batch dimensions",
        Case("a batch of 2, L=3", q=n(size=(2, 3, 2)), k=n(size=(2, 3, 2)), v=n(size=(2, 3, 3))),
        Case(
            "batch and heads (2, 2), L=3",
            q=n(size=(2, 2, 3, 4)),
            k=n(size=(2, 2, 3, 4)),
            v=n(size=(2, 2, 3, 2)),
        ),
    )


def _key_major(q, k, v, mask="causal", layout="keys", normalise="queries"):
    """Causal self-attention; weights returned key-major (..., S, L) unless layout="queries"."""
    L = q.shape[-2]
    allowed = {
        "causal": np.tril(np.ones((L, L), dtype=bool)),
        "future": np.triu(np.ones((L, L), dtype=bool)),  # query t sees keys t .. L - 1
        "misses itself": np.tril(np.ones((L, L), dtype=bool), k=-1),
    }[mask]
    if normalise == "keys":  # each key's scores over the queries normalised: rows of the key-major array
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., L, S)
        w = np.swapaxes(softmax(np.swapaxes(np.where(allowed, s, -np.inf), -1, -2)), -1, -2)
        out = w @ v
    else:
        out, w = sdpa(q, k, v, allowed)
    return out, (np.swapaxes(w, -1, -2) if layout == "keys" else w)


register(
    Exercise(
        id="ch06.key_major_decoder",
        number="6.8",
        title="a decoder with key-major scores",
        points=2,
        hint="in this layout, where in the (S, L) array do query t and key j meet?",
        function="key_major_decoder",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="An attention kernel keeps its scores *key-major*: row `j` of the "
        "`(..., S, L)` array belongs to key `j`, column `t` to query `t`, and each column is "
        "normalised. A small language model trained with the kernel's causal "
        "self-attention below reaches almost zero training loss, then generates nonsense; changing "
        "the token at position $t + 1$ changes the output at position $t$. Find the bug and fix it. "
        "The function returns `(out (..., L, Ev), weights (..., L, L))`, `weights` in the kernel's "
        "key-major layout; `softmax` (it takes `axis`) is handed out, PyTorch's attention "
        "functions are not.",
        solution='''
            def key_major_decoder(q, k, v):
                """Causal self-attention computed key-major: returns (out, weights), weights[..., j, t] for key j, query t."""
                L = q.shape[-2]
                scores = k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1])  # (..., S, E) @ (..., E, L) -> (..., S, L)
                ### BEGIN SOLUTION
                allowed = np.triu(np.ones((L, L), dtype=bool))  # key j serves query t when j <= t: row <= column
                ### END SOLUTION
                weights = softmax(np.where(allowed, scores, -np.inf), axis=-2)  # each column, one query, sums to 1
                return np.swapaxes(weights, -1, -2) @ v, weights  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
        ''',
        stub="allowed = np.tril(np.ones((L, L), dtype=bool))  # (S, L): where key j may serve query t",
        reference=_key_major,
        public_cases=_decoder_cases,
        outputs=("out", "weights"),
        distributions=(),
        needs=NEEDS,
        diagnoses=(
            Diagnosis(
                "query t puts weight on the keys after t, and none on the keys before it",
                name="the query-major mask on key-major scores",
                hint="here key j and query t meet at row j, column t: query t may see the rows j <= t of "
                "its column, the upper triangle with the diagonal, np.triu",
                variant=lambda q, k, v: _key_major(q, k, v, "future"),
            ),
            Diagnosis(
                "query t gives key t no weight",
                name="misses itself",
                hint="a token may attend to itself: the diagonal stays True",
                variant=lambda q, k, v: _key_major(q, k, v, "misses itself") if q.shape[-2] > 1 else None,
            ),
            Diagnosis(
                "each query's weights do not sum to one",
                name="normalised over the queries",
                hint="a query is a column in this layout: the softmax runs over axis -2",
                variant=lambda q, k, v: _key_major(q, k, v, normalise="keys") if q.shape[-2] > 1 else None,
            ),
            Diagnosis(
                "out is right, but weights is not in the kernel's layout",
                name="weights returned query-major",
                hint="weights[..., j, t] is key j's weight for query t",
                variant=lambda q, k, v: _key_major(q, k, v, layout="queries") if q.shape[-2] > 1 else None,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 6.9 lengths from an output (extend)
def _padded_out(q, k, v, n, scale=None, causal=False):
    """Scaled self-attention of one sequence with its first n keys real (optionally also causal)."""
    S = k.shape[-2]
    mask = np.arange(S) < n
    mask = np.broadcast_to(mask, (q.shape[-2], S))
    if causal:
        mask = mask & causal_mask(q.shape[-2], S)
    return sdpa(q, k, v, mask, scale=scale)[0]


def _lengths_search(q, k, v, out, candidates=None, scale=None, causal=False):
    q, k, v, out = (np.asarray(a, dtype=np.float64) for a in (q, k, v, out))
    S = k.shape[-2]
    candidates = range(S + 1) if candidates is None else candidates
    found = []
    for b in range(q.shape[0]):
        gaps = [np.abs(_padded_out(q[b], k[b], v[b], n, scale, causal) - out[b]).max() for n in candidates]
        found.append(list(candidates)[int(np.argmin(gaps))])
    return np.array(found, dtype=np.int64)


def _lengths_case(rng, name, lengths, S, E, Ev, dtype=np.float64):
    n = rng.normal
    B = len(lengths)
    q, k, v = (n(size=(B, S, d)).astype(dtype) for d in (E, E, Ev))
    out = np.stack(
        [
            _padded_out(q[b].astype(np.float64), k[b].astype(np.float64), v[b].astype(np.float64), m)
            for b, m in enumerate(lengths)
        ]
    ).astype(dtype)
    return Case(name, q=q, k=k, v=v, out=out)


def _lengths_cases():
    rng = np.random.default_rng(629)
    return grouped(
        "lengths",
        _lengths_case(rng, "B=3, S=5, E=3, Ev=2", [5, 2, 3], 5, 3, 2),
        _lengths_case(rng, "B=2, S=6, E=4, Ev=3, a single real token", [1, 4], 6, 4, 3),
        _lengths_case(rng, "float32, B=2, S=7, E=8, Ev=4", [6, 7], 7, 8, 4, np.float32),
    ) + grouped(
        "fully padded rows",
        _lengths_case(rng, "B=3, S=5, E=3, Ev=2, one row with no real token", [4, 0, 5], 5, 3, 2),
    )


def _lengths_nonzero_rows(q, k, v, out):
    return (np.abs(np.asarray(out, dtype=np.float64)).max(axis=-1) > 0).sum(axis=-1).astype(np.int64)


register(
    Exercise(
        id="ch06.lengths_from_output",
        number="6.9",
        title="the lengths a padded batch lost",
        points=3,
        function="lengths_from_output",
        hint="each length from 0 to S gives one output you can compute; which one did the encoder produce?",
        kind="extend",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="An encoder ran scaled self-attention (scores divided by $\\sqrt{E}$) over a batch "
        "padded on the right, with this chapter's padding mask, and the batch's lengths were lost. You "
        "still have the attention's inputs `q, k (B, S, E)`, `v (B, S, Ev)` and its output `out "
        "(B, S, Ev)`, padded queries included (a query with nothing to attend to got an all-zero output, as "
        "in this chapter); the arrays may be float32. Recover the number of real tokens of each sequence: "
        "return an integer array of shape `(B,)`, each entry between 0 and `S`. `softmax` is handed out; "
        "PyTorch's attention functions are not.",
        solution='''
            def lengths_from_output(q, k, v, out):
                """Each sequence's number of real tokens, recovered from a padded attention's output: (B,) ints."""
                ### BEGIN SOLUTION
                S = k.shape[1]  # keys per sequence
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, S, E) @ (B, E, S) -> (B, S, S)
                gaps = []
                for n in range(S + 1):  # every length the sequence could have had
                    real = np.arange(S) < n  # (S,): the first n keys are real
                    weights = softmax(np.where(real, scores, -np.inf))  # n = 0: all-zero rows
                    gaps.append(np.abs(weights @ v - out).max(axis=(-2, -1)))  # (B,): how far from `out`
                return np.argmin(np.stack(gaps), axis=0)  # (S + 1, B) -> (B,): the closest length
                ### END SOLUTION
        ''',
        reference=_lengths_search,
        public_cases=_lengths_cases,
        needs=NEEDS + ("import torch",),
        diagnoses=(
            Diagnosis(
                "you counted the queries whose output is not zero; does a padded query attend to nothing?",
                name="counted nonzero outputs",
                hint="padded queries attend to the real keys too; the mask is about keys",
                variant=_lengths_nonzero_rows,
            ),
            Diagnosis(
                "your answer is never 0, but a row whose output is all zeros had nothing to attend to",
                name="length 0 never tried",
                hint="try every length from 0 to S",
                variant=lambda q, k, v, out: _lengths_search(
                    q, k, v, out, candidates=range(1, k.shape[-2] + 1)
                ),
            ),
            Diagnosis(
                "each of your lengths is one fewer than the number of real tokens",
                name="one short",
                hint="a sequence with n real tokens has keys 0 .. n - 1 visible",
                variant=lambda q, k, v, out: np.maximum(_lengths_search(q, k, v, out) - 1, 0),
            ),
            Diagnosis(
                "your lengths are those of a model whose scores are not scaled",
                name="not scaled",
                hint="divide the scores by sqrt(E)",
                variant=lambda q, k, v, out: _lengths_search(q, k, v, out, scale=1.0),
            ),
            Diagnosis(
                "your lengths are those of a causal model; an encoder's padding mask hides only keys past the length",
                name="causal candidates",
                hint="an encoder's query sees every real key, before and after it",
                variant=lambda q, k, v, out: _lengths_search(q, k, v, out, causal=True),
            ),
        ),
    )
)
