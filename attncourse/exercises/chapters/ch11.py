"""Chapter 11 exercises: a cache with windowed layers, grouped-query attention, windows with sinks,
RoPE pairs inside the training range, a rolling cache and latent attention's absorbed projections."""

from __future__ import annotations

import numpy as np

from ... import scaled_dot_product_attention as sdpa
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

NO_FUSED = ("torch.nn.functional.scaled_dot_product_attention",)


# ----------------------------------------------------------------------------- 11.1 cache bytes (predict)
def _cache_gib(kv_heads=8, b=2, kv=2, window=4096, local=40, full=8, tokens=131072):
    per_layer_token = kv * kv_heads * 256 * b  # bytes one layer keeps for one token
    held = full * tokens + local * min(window, tokens)  # token slots over all layers
    return np.array(per_layer_token * held / 2**30)


register(
    Exercise(
        id="ch11.predict_cache_gib",
        number="11.1",
        title="predict the cache of a model with windowed layers",
        points=1,
        function="predict_cache_gib",
        hint="a full layer keeps every token, a windowed layer only its window: add the two kinds of layer up",
        kind="predict",
        description="A model has 48 layers with 32 query heads and 8 key/value heads of width 256, and "
        "serves in bfloat16. Its layers come in groups of six: five with a sliding window of 4096 tokens, "
        "then one with full causal attention. Before running anything: how many GiB ($2^{30}$ bytes) "
        "does its KV cache take for one sequence of 131,072 tokens? Return the number of GiB (a float); "
        "within 5% passes.",
        solution='''
            def predict_cache_gib():
                """GiB of the model's KV cache for one sequence of 131,072 tokens."""
                ### BEGIN SOLUTION
                per_layer = 2 * 8 * 256 * 2  # (key, value) x KV heads x width x 2 bytes = 8 KiB a token
                full = 8 * 131072 * per_layer  # the 8 full layers keep every token: 8 GiB
                windowed = 40 * 4096 * per_layer  # the 40 windowed layers keep 4096 tokens each
                return (full + windowed) / 2**30
                ### END SOLUTION
        ''',
        reference=_cache_gib,
        public_cases=lambda: grouped(
            "prediction",
            Case("48 layers (40 windowed, 8 full), 8 KV heads of 256, bfloat16, 131,072 tokens"),
        ),
        tolerance=(0.05, 0.0),
        diagnoses=(
            Diagnosis(
                "that is about 5 times the cache: how many tokens does a windowed layer keep?",
                name="window ignored",
                hint="a windowed layer keeps only its last 4096 tokens",
                variant=lambda: _cache_gib(window=131072),
            ),
            Diagnosis(
                "that is the full layers' share alone: what do the windowed layers keep?",
                name="windowed layers forgotten",
                hint="the 40 windowed layers each keep 4096 tokens too",
                variant=lambda: _cache_gib(local=0),
            ),
            Diagnosis(
                "that is 4 times the cache: how many heads' keys and values does the cache keep?",
                name="query heads instead of KV heads",
                hint="the cache holds the 8 key/value heads, not the 32 query heads",
                variant=lambda: _cache_gib(kv_heads=32),
            ),
            Diagnosis(
                "that is half the cache: what does each layer keep for a token besides its key?",
                name="keys only",
                hint="each token keeps a key and a value: a factor 2",
                variant=lambda: _cache_gib(kv=1),
            ),
            Diagnosis(
                "that is twice the cache: how many bytes is a bfloat16 number?",
                name="4 bytes a number",
                hint="bfloat16 takes 2 bytes a number",
                variant=lambda: _cache_gib(b=4),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 11.2 GQA forward (implement)
def _gqa(q, k, v, mask=None, tile=False, scale=True):
    H, H_kv = q.shape[-3], k.shape[-3]
    if tile:  # heads 0, 1, 0, 1, ...: query head h reads KV head h % H_kv
        k, v = np.concatenate([k] * (H // H_kv), axis=-3), np.concatenate([v] * (H // H_kv), axis=-3)
    else:
        k, v = np.repeat(k, H // H_kv, axis=-3), np.repeat(v, H // H_kv, axis=-3)
    if scale:
        return sdpa(q, k, v, mask)
    return sdpa(q, k, v, mask, scale=1.0)


def _gqa_cases():
    rng = np.random.default_rng(1102)
    n = rng.normal
    causal = np.tril(np.ones((4, 4), dtype=bool))
    chunk = np.tril(np.ones((3, 5), dtype=bool), k=2)  # the last 3 of 5 positions, causal
    padding = np.arange(4) < np.array([4, 2])[:, None, None, None]  # (B, 1, 1, S): sequence 1 has 2 keys
    return (
        grouped(
            "grouping",
            Case(
                "H=4 query heads, H_kv=2, L=3, S=5",
                q=n(size=(4, 3, 8)),
                k=n(size=(2, 5, 8)),
                v=n(size=(2, 5, 3)),
                mask=None,
            ),
            Case(
                "B=2, H=6, H_kv=3, padding mask",
                q=n(size=(2, 6, 2, 4)),
                k=n(size=(2, 3, 4, 4)),
                v=n(size=(2, 3, 4, 4)),
                mask=padding,
            ),
            Case(
                "batch (2, 2), H=6, H_kv=2, L=2, S=3",
                q=n(size=(2, 2, 6, 2, 2)),
                k=n(size=(2, 2, 2, 3, 2)),
                v=n(size=(2, 2, 2, 3, 3)),
                mask=None,
            ),
        )
        + grouped(
            "masking",
            Case(
                "H=4, H_kv=1 (multi-query), causal mask",
                q=n(size=(4, 4, 4)),
                k=n(size=(1, 4, 4)),
                v=n(size=(1, 4, 2)),
                mask=causal,
            ),
            Case(
                "H=6, H_kv=2, the last 3 of 5 positions, causal mask",
                q=n(size=(6, 3, 4)),
                k=n(size=(2, 5, 4)),
                v=n(size=(2, 5, 2)),
                mask=chunk,
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, H=6, H_kv=2, L=2, S=3, causal mask",
                q=n(size=(6, 2, 4)).astype(np.float32),
                k=n(size=(2, 3, 4)).astype(np.float32),
                v=n(size=(2, 3, 2)).astype(np.float32),
                mask=np.tril(np.ones((2, 3), dtype=bool), k=1),
            ),
        )
    )


register(
    Exercise(
        id="ch11.gqa_attention",
        number="11.2",
        title="grouped-query attention",
        points=2,
        function="gqa_attention",
        hint="query head h uses KV head h // (H / H_kv): give every query head its keys and values, then masked scaled attention as usual",
        kind="implement",
        forbids=NO_FUSED,
        description="Implement grouped-query attention in numpy: `q (..., H, L, E)`, `k (..., H_kv, S, E)`, "
        "`v (..., H_kv, S, Ev)` with `H` a multiple of `H_kv`, and an optional boolean `mask` (True = may "
        "attend) broadcastable to `(..., H, L, S)`. Query head `h` attends, scaled by $1/\\sqrt{E}$, to "
        "key/value head `h // (H // H_kv)`. Return `(out (..., H, L, Ev), weights (..., H, L, S))`.",
        solution='''
            def gqa_attention(q, k, v, mask=None):
                """Grouped-query attention: (out, weights)."""
                ### BEGIN SOLUTION
                group = q.shape[-3] // k.shape[-3]  # query heads per KV head
                k = np.repeat(k, group, axis=-3)  # KV heads 0,0,..,1,1,..: (..., H_kv, S, E) -> (..., H, S, E)
                v = np.repeat(v, group, axis=-3)
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., H, L, S)
                if mask is not None:
                    scores = np.where(mask, scores, -np.inf)
                weights = softmax(scores)
                return weights @ v, weights  # (..., H, L, S) @ (..., H, S, Ev) -> (..., H, L, Ev)
                ### END SOLUTION
        ''',
        reference=_gqa,
        public_cases=_gqa_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "query head 1 matches key/value head 1 instead of head 0: which heads make up a group?",
                name="tiled heads",
                hint="heads h = 0 .. G-1 share KV head 0: np.repeat along the head axis, not np.tile",
                variant=lambda q, k, v, mask=None: _gqa(q, k, v, mask, tile=True),
            ),
            Diagnosis(
                "the weights are too peaked: what are the scores divided by?",
                name="no scaling",
                hint="divide the scores by sqrt(E)",
                variant=lambda q, k, v, mask=None: _gqa(q, k, v, mask, scale=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 11.3 window + sinks, chunked (extend)
def _window_sinks(L, S, window, n_sinks, top_left=False, wide=False, sinks_see_future=False):
    offset = 0 if top_left else S - L
    i = np.arange(L)[:, None] + offset  # the query's position in the sequence
    j = np.arange(S)[None, :]
    w = window + 1 if wide else window
    sink = j < n_sinks
    if sinks_see_future:
        return ((j <= i) & (j > i - w)) | sink
    return (j <= i) & ((j > i - w) | sink)


def _sink_cases():
    return grouped(
        "chunk of new queries",
        Case("L=3 new of S=10, window 4, 2 sinks", L=3, S=10, window=4, n_sinks=2),
        Case("L=S=7, window 2, 2 sinks", L=7, S=7, window=2, n_sinks=2),
    ) + grouped(
        "sinks still causal",
        Case("L=4 new of S=5, window 1, 4 sinks", L=4, S=5, window=1, n_sinks=4),
        Case("L=S=6, window 2, 3 sinks", L=6, S=6, window=2, n_sinks=3),
    )


register(
    Exercise(
        id="ch11.window_sink_chunk",
        number="11.3",
        title="a window with sinks for a chunk of new tokens",
        points=2,
        function="window_sink_chunk",
        hint="new query i is position S - L + i; it sees key j when j <= its position and j is in the window or among the sinks",
        kind="extend",
        description="A prompt is processed in chunks: `L` new queries are the **last** `L` of `S` positions "
        "(as with chapter 9's cache). Return the boolean `(L, S)` mask of a sliding window of `window` "
        "tokens (counting the query itself) plus `n_sinks` sink tokens at the start of the sequence, "
        "True where new query `i` may attend key `j`. A token never sees a later one, sink or not.",
        solution='''
            def window_sink_chunk(L, S, window, n_sinks):
                """(L, S) mask: window + sinks for the last L of S positions."""
                ### BEGIN SOLUTION
                i = np.arange(L)[:, None] + (S - L)  # new query i is position S - L + i
                j = np.arange(S)[None, :]
                return (j <= i) & ((j > i - window) | (j < n_sinks))  # causal, and in the window or a sink
                ### END SOLUTION
        ''',
        reference=_window_sinks,
        public_cases=_sink_cases,
        outputs=("mask",),
        diagnoses=(
            Diagnosis(
                "new query 0 sees too few keys, as if it were the first token of the sequence: "
                "which position is new query i?",
                name="top-left alignment",
                hint="new query i is position S - L + i (bottom-right alignment)",
                variant=lambda L, S, window, n_sinks: _window_sinks(L, S, window, n_sinks, top_left=True),
            ),
            Diagnosis(
                "each query sees one key too many: does the window count the query itself?",
                name="window one too wide",
                hint="the window is i - window < j <= i: `window` keys including the query",
                variant=lambda L, S, window, n_sinks: _window_sinks(L, S, window, n_sinks, wide=True),
            ),
            Diagnosis(
                "an early query sees a sink token that comes after it: are sinks exempt from causality?",
                name="sinks see the future",
                hint="a sink is visible only to queries at or after it: combine with j <= i",
                variant=lambda L, S, window, n_sinks: _window_sinks(
                    L, S, window, n_sinks, sinks_see_future=True
                ),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 11.4 pairs in range (derive)
def _in_range(theta, scaled, N, L, no_wrap=False, scaled_training=False):
    trained = (N - 1) * (scaled if scaled_training else theta)  # the largest angle seen in training
    swept = trained >= 2 * np.pi  # training already went round the whole circle
    inside = (L - 1) * scaled <= trained
    return inside if no_wrap else swept | inside


def _range_freqs(E, base, factor, L, N, how):
    theta = base ** -(np.arange(0, E, 2) / E)
    if how == "none":
        return theta
    if how == "linear":
        return theta / factor
    growth = factor * L / N - (factor - 1)  # dynamic NTK
    return (base * growth ** (E / (E - 2))) ** -(np.arange(0, E, 2) / E)


def range_case(name, E, base, factor, L, N, how, dtype=np.float64):
    """A case of 11.4: unscaled and scaled frequencies of one head, training length N, length L."""
    theta = (base ** -(np.arange(0, E, 2) / E)).astype(dtype)
    scaled = _range_freqs(E, base, factor, L, N, how).astype(dtype)
    return Case(name, theta=theta, scaled=scaled, N=N, L=L)


def _range_cases():
    return grouped(
        "scaled",
        range_case("E=8, base 100, linear factor 4, N=16, L=64", 8, 100.0, 4.0, 64, 16, "linear"),
        range_case("E=12, base 10000, dynamic factor 2, N=48, L=96", 12, 10000.0, 2.0, 96, 48, "dynamic"),
    ) + grouped(
        "unscaled",
        range_case("E=10, base 1000, no scaling, N=24, L=40", 10, 1000.0, 1.0, 40, 24, "none"),
    )


register(
    Exercise(
        id="ch11.pairs_in_range",
        number="11.4",
        title="which pairs stay inside the training range",
        points=2,
        function="pairs_in_range",
        hint="a pair is safe if training already swept the whole circle, or if its largest new angle is no larger than its largest trained one",
        kind="derive",
        forbids=("attncourse.rope_frequencies", "attncourse.rope_angles", "attncourse.apply_rope"),
        description="The chapter's experiment reads a RoPE model trained at length `N` at a longer length "
        "`L`. In training, pair `i` rotated by `d * theta[i]` for every offset `d = 0 .. N - 1` between "
        "query and key; at length `L` under a scaling it rotates by `d * scaled[i]` for `d = 0 .. L - 1`. "
        "Treat angles as points on the circle (modulo $2\\pi$) and the trained angles as the whole arc "
        "swept from 0 to the largest one. Given `theta` and `scaled` (both `(P,)`, frequencies in "
        "radians per position) and the integers `N < L`, return a boolean `(P,)` array, True where every "
        "angle that pair `i` takes at length `L` lies on the arc it swept in training.",
        solution='''
            def pairs_in_range(theta, scaled, N, L):
                """Boolean (P,): pair i's angles at length L all lie on the arc swept in training."""
                ### BEGIN SOLUTION
                trained = (N - 1) * theta  # the largest angle each pair reached in training
                whole_circle = trained >= 2 * np.pi  # it went all the way round: every angle was seen
                return whole_circle | ((L - 1) * scaled <= trained)
                ### END SOLUTION
        ''',
        reference=_in_range,
        public_cases=_range_cases,
        outputs=("in_range",),
        diagnoses=(
            Diagnosis(
                "a fast pair that went round the whole circle in training is marked out of range: "
                "which angles had it already seen?",
                name="whole circle ignored",
                hint="a pair whose trained angles reach 2 pi has seen every angle: it is always in range",
                variant=lambda theta, scaled, N, L: _in_range(theta, scaled, N, L, no_wrap=True),
            ),
            Diagnosis(
                "the training range is measured with the scaled frequencies: which frequencies did the "
                "model rotate by while it trained?",
                name="training range scaled",
                hint="the trained arc is (N - 1) * theta, with the unscaled frequencies",
                variant=lambda theta, scaled, N, L: _in_range(theta, scaled, N, L, scaled_training=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 11.5 rolling cache (diagnose)
def _rolling(q, k, v, window, keep=None):
    keep = window if keep is None else keep
    T = q.shape[-2]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    return sdpa(q, k, v, (j <= i) & (j > i - keep))[0]


def _rolling_cases():
    rng = np.random.default_rng(1105)
    n = rng.normal
    return (
        grouped(
            "rolling window",
            Case("T=8 tokens, window 3", q=n(size=(8, 4)), k=n(size=(8, 4)), v=n(size=(8, 2)), window=3),
        )
        + grouped(
            "batch dims",
            Case(
                "2 heads, T=6, window 4",
                q=n(size=(2, 6, 3)),
                k=n(size=(2, 6, 3)),
                v=n(size=(2, 6, 3)),
                window=4,
            ),
            Case(
                "batch (2, 2), T=5, window 2",
                q=n(size=(2, 2, 5, 2)),
                k=n(size=(2, 2, 5, 2)),
                v=n(size=(2, 2, 5, 3)),
                window=2,
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, T=5, window 3",
                q=n(size=(5, 4)).astype(np.float32),
                k=n(size=(5, 4)).astype(np.float32),
                v=n(size=(5, 2)).astype(np.float32),
                window=3,
            ),
        )
    )


register(
    Exercise(
        id="ch11.fix_rolling_cache",
        number="11.5",
        title="a rolling cache that forgets too much",
        points=2,
        function="rolling_decode",
        hint="the window counts the newest token: drop the oldest only when the cache holds more than `window`",
        kind="diagnose",
        forbids=NO_FUSED,
        description="`rolling_decode` decodes `T` tokens one at a time with a rolling cache that should "
        "hold the last `window` tokens (the newest included), so that its outputs equal attention under "
        "`ac.sliding_window_mask(T, window)`. Symptom: the first `window - 1` outputs are right, every "
        "later one is wrong. Find the bug and fix it.",
        solution='''
            def rolling_decode(q, k, v, window):
                """Outputs (..., T, Ev) of decoding with a rolling cache of the last `window` tokens."""
                keys, values, outputs = [], [], []
                for t in range(q.shape[-2]):
                    keys.append(k[..., t, :])
                    values.append(v[..., t, :])
                    ### BEGIN SOLUTION
                    if len(keys) > window:  # the window counts the newest token itself
                        keys.pop(0)
                        values.pop(0)
                    ### END SOLUTION
                    K, V = np.stack(keys, axis=-2), np.stack(values, axis=-2)  # (..., n, E), (..., n, Ev)
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])  # (..., 1, n)
                    outputs.append(softmax(scores) @ V)  # (..., 1, Ev)
                return np.concatenate(outputs, axis=-2)
        ''',
        stub="""
            if len(keys) >= window:
                keys.pop(0)
                values.pop(0)
        """,
        reference=_rolling,
        public_cases=_rolling_cases,
        outputs=("out",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "from the step `window - 1` on, each output sees one key fewer than the window: "
                "when is the oldest token dropped?",
                name="keeps window - 1",
                hint="drop the oldest token only when more than `window` are held (> window, not >=)",
                variant=lambda q, k, v, window: _rolling(q, k, v, window, keep=window - 1),
            ),
            Diagnosis(
                "each output sees one key more than the window: does the window count the newest token?",
                name="keeps window + 1",
                hint="hold at most `window` tokens, the newest included",
                variant=lambda q, k, v, window: _rolling(q, k, v, window, keep=window + 1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 11.6 MLA value side (extend)
def _absorb(W_UV, W_O, summed=False, interleaved=False):
    H, r, d_head = W_UV.shape
    if interleaved:  # rows read as d_head blocks of H: row e * H + h
        per_head = W_O.reshape(d_head, H, -1).swapaxes(0, 1)
    else:  # head h owns rows h * d_head .. (h + 1) * d_head - 1
        per_head = W_O.reshape(H, d_head, -1)
    W = W_UV @ per_head  # (H, r, d_head) @ (H, d_head, d_model) -> (H, r, d_model)
    return W.sum(0) if summed else W


def _absorb_cases():
    rng = np.random.default_rng(1106)
    n = rng.normal
    return grouped(
        "absorbed projection",
        Case("H=2 heads, r=3, d_head=4, d_model=5", W_UV=n(size=(2, 3, 4)), W_O=n(size=(8, 5))),
        Case("H=4 heads, r=6, d_head=2, d_model=8", W_UV=n(size=(4, 6, 2)), W_O=n(size=(8, 8))),
    ) + grouped(
        "dtype",
        Case(
            "float32, H=3, r=2, d_head=3, d_model=4",
            W_UV=n(size=(3, 2, 3)).astype(np.float32),
            W_O=n(size=(9, 4)).astype(np.float32),
        ),
    )


register(
    Exercise(
        id="ch11.absorb_value_side",
        number="11.6",
        title="absorb the value up-projection into the output",
        points=2,
        function="absorb_value_side",
        hint="split W_O into its H blocks of d_head rows; then P (c W_UV) W_O_h = P c (W_UV W_O_h): one (r, d_model) product per head",
        kind="extend",
        description="In latent attention head `h`'s value for token `t` is `c[t] @ W_UV[h]` (`c (S, r)`, "
        "`W_UV (H, r, d_head)`), so head `h`'s output is `P[h] @ c @ W_UV[h]` `(L, d_head)` for its "
        "weights `P (H, L, S)`. The output projection is one matrix `W_O (H * d_head, d_model)`, as "
        "`o_proj.weight.T` is stored: the heads' outputs are concatenated along the features, head 0 "
        "first, into `(L, H * d_head)` and multiplied by `W_O`. Return the per-head matrices "
        "`W (H, r, d_model)` for which the layer's output equals the sum over heads of `P[h] @ c @ W[h]`, "
        "so the values are never rebuilt from the cached latent.",
        solution='''
            def absorb_value_side(W_UV, W_O):
                """(H, r, d_model): the value up-projection and output projection of each head, merged."""
                ### BEGIN SOLUTION
                H, r, d_head = W_UV.shape
                per_head = W_O.reshape(H, d_head, -1)  # head h owns rows h * d_head .. (h + 1) * d_head - 1
                # P (c W_UV) W_O = P c (W_UV W_O): one (r, d_model) matrix per head, computed once
                return W_UV @ per_head  # (H, r, d_head) @ (H, d_head, d_model) -> (H, r, d_model)
                ### END SOLUTION
        ''',
        reference=_absorb,
        public_cases=_absorb_cases,
        outputs=("W",),
        diagnoses=(
            Diagnosis(
                "the result has no head axis: can one matrix serve heads with different weights P[h]?",
                name="summed over heads",
                hint="keep one (r, d_model) matrix per head: W[h] = W_UV[h] @ (head h's block of W_O)",
                variant=lambda W_UV, W_O: _absorb(W_UV, W_O, summed=True),
            ),
            Diagnosis(
                "each head is paired with the wrong rows of W_O: in which order were the heads' outputs "
                "concatenated?",
                name="heads interleaved",
                hint="head h's block is rows h * d_head to (h + 1) * d_head: W_O.reshape(H, d_head, d_model)",
                variant=lambda W_UV, W_O: _absorb(W_UV, W_O, interleaved=True),
            ),
        ),
    )
)
