"""Chapter 11 exercises: a cache with windowed layers, a multi-head checkpoint turned grouped-query,
windows with sinks, RoPE pairs inside the training range, a window buffer of fixed slots and one
decoding step over a paged cache."""

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
                "that counts every token in every layer: how many tokens does a windowed layer keep?",
                name="window ignored",
                hint="a windowed layer keeps only its last 4096 tokens",
                variant=lambda: _cache_gib(window=131072),
            ),
            Diagnosis(
                "that leaves the windowed layers out: what does each of them keep?",
                name="windowed layers forgotten",
                hint="the 40 windowed layers each keep 4096 tokens too",
                variant=lambda: _cache_gib(local=0),
            ),
            Diagnosis(
                "that counts the query heads: whose keys and values does the cache keep?",
                name="query heads instead of KV heads",
                hint="the cache holds the 8 key/value heads, not the 32 query heads",
                variant=lambda: _cache_gib(kv_heads=32),
            ),
            Diagnosis(
                "that counts the keys alone: what else does each layer keep for a token?",
                name="keys only",
                hint="each token keeps a key and a value: a factor 2",
                variant=lambda: _cache_gib(kv=1),
            ),
            Diagnosis(
                "that counts the wrong number of bytes per number: how wide is a bfloat16?",
                name="4 bytes a number",
                hint="bfloat16 takes 2 bytes a number",
                variant=lambda: _cache_gib(b=4),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 11.2 MHA -> GQA (implement)
def _pool_heads(W, H, H_kv, interleaved=False, how="mean", feature_major=False):
    d_model = W.shape[-1]
    d_head = W.shape[0] // H
    if feature_major:  # rows read as d_head blocks of H: row e * H + h
        heads = W.reshape(d_head, H, d_model).swapaxes(0, 1)
    else:  # head h owns rows h * d_head .. (h + 1) * d_head - 1
        heads = W.reshape(H, d_head, d_model)
    G = H // H_kv
    if interleaved:  # heads h, h + H_kv, h + 2 H_kv, ... pooled together
        groups = heads.reshape(G, H_kv, d_head, d_model).swapaxes(0, 1)
    else:  # heads g G .. (g + 1) G - 1 pooled together
        groups = heads.reshape(H_kv, G, d_head, d_model)
    if how == "sum":
        pooled = groups.sum(1)
    elif how == "first":
        pooled = groups[:, 0]
    else:
        pooled = groups.mean(1)
    if feature_major:
        return pooled.swapaxes(0, 1).reshape(H_kv * d_head, d_model)
    return pooled.reshape(H_kv * d_head, d_model)


def _pool_cases():
    rng = np.random.default_rng(1112)
    n = rng.normal
    return grouped(
        "grouping",
        Case("H=4 heads of 3 -> H_kv=2, d_model=5", W=n(size=(12, 5)), H=4, H_kv=2),
        Case("H=6 heads of 2 -> H_kv=3, d_model=4", W=n(size=(12, 4)), H=6, H_kv=3),
        Case("H=4 heads of 2 -> H_kv=1 (multi-query), d_model=3", W=n(size=(8, 3)), H=4, H_kv=1),
    ) + grouped(
        "dtype",
        Case(
            "float32, H=6 heads of 3 -> H_kv=2, d_model=4", W=n(size=(18, 4)).astype(np.float32), H=6, H_kv=2
        ),
    )


register(
    Exercise(
        id="ch11.mha_to_gqa",
        number="11.2",
        title="turn a multi-head checkpoint into a grouped-query one",
        points=2,
        function="mha_to_gqa",
        hint="view W as (H, d_head, d_model), group the heads the way grouped-query attention reads them, and average each group",
        kind="implement",
        description="A trained multi-head layer is to be served with grouped-query attention. Its key "
        "projection is stored as `k_proj.weight`, a matrix `W (H * d_head, d_model)` whose rows "
        "`h * d_head .. (h + 1) * d_head - 1` make head `h`'s keys. Build the key projection of a layer "
        "with `H_kv` key/value heads (`H` a multiple of `H_kv`), in the same layout `(H_kv * d_head, "
        "d_model)`, where each new key/value head is the mean of the old heads whose queries will read it "
        "(the same conversion applies to `v_proj.weight`).",
        solution='''
            def mha_to_gqa(W, H, H_kv):
                """(H_kv * d_head, d_model): each group of key heads averaged into one."""
                ### BEGIN SOLUTION
                d_model = W.shape[-1]
                d_head = W.shape[0] // H
                heads = W.reshape(H_kv, H // H_kv, d_head, d_model)  # group g holds heads g G .. (g + 1) G - 1
                return heads.mean(axis=1).reshape(H_kv * d_head, d_model)
                ### END SOLUTION
        ''',
        reference=_pool_heads,
        public_cases=_pool_cases,
        outputs=("W_kv",),
        diagnoses=(
            Diagnosis(
                "each new head averages old heads that different query groups read: which query heads "
                "share key/value head g?",
                name="groups interleaved",
                hint="query head h reads key/value head h // (H // H_kv): consecutive heads form a group",
                variant=lambda W, H, H_kv: _pool_heads(W, H, H_kv, interleaved=True),
            ),
            Diagnosis(
                "each new head is too large: does the pooled head average the group or add it up?",
                name="summed, not averaged",
                hint="the new head is the group's mean",
                variant=lambda W, H, H_kv: _pool_heads(W, H, H_kv, how="sum"),
            ),
            Diagnosis(
                "each new head is one old head of its group: what happens to the others?",
                name="first head of each group kept",
                hint="average all the heads of the group",
                variant=lambda W, H, H_kv: _pool_heads(W, H, H_kv, how="first"),
            ),
            Diagnosis(
                "the rows of W are split into heads the wrong way: which rows make head h?",
                name="rows read feature-major",
                hint="head h owns rows h * d_head .. (h + 1) * d_head - 1: W.reshape(H, d_head, d_model)",
                variant=lambda W, H, H_kv: _pool_heads(W, H, H_kv, feature_major=True),
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


# ----------------------------------------------------------------------------- 11.5 ring buffer (diagnose)
def _ring(q, k, v, window, unwritten=False, keep=None):
    """Decoding through a buffer of `window` slots; `unwritten`: every slot attended from step 0."""
    keep = window if keep is None else keep
    T = q.shape[-2]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    out = sdpa(q, k, v, (j <= i) & (j > i - keep))[0]
    if not unwritten:
        return out
    rows = []
    for t in range(T):  # before the buffer is full, the empty slots (zero keys and values) take part
        held = min(t + 1, window)
        empty_k = np.zeros(k.shape[:-2] + (window - held, k.shape[-1]), dtype=k.dtype)
        empty_v = np.zeros(v.shape[:-2] + (window - held, v.shape[-1]), dtype=v.dtype)
        K = np.concatenate([k[..., t + 1 - held : t + 1, :], empty_k], -2)
        V = np.concatenate([v[..., t + 1 - held : t + 1, :], empty_v], -2)
        rows.append(sdpa(q[..., t : t + 1, :], K, V)[0])
    return np.concatenate(rows, axis=-2)


def _ring_cases():
    rng = np.random.default_rng(1115)
    n = rng.normal
    return (
        grouped(
            "decoding",
            Case(
                "T=8 tokens, window 3", q=n(size=(8, 4)), k=n(size=(8, 4)), v=n(1, 1, size=(8, 2)), window=3
            ),
            Case(
                "T=4 tokens, window 6 (never full)",
                q=n(size=(4, 2)),
                k=n(size=(4, 2)),
                v=n(size=(4, 3)),
                window=6,
            ),
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
        id="ch11.ring_buffer_decode",
        number="11.5",
        title="decoding through a fixed buffer of window slots",
        points=2,
        function="ring_decode",
        hint="look at what the buffer holds at the first steps of decoding",
        kind="diagnose",
        forbids=NO_FUSED,
        description="A server gives each sequence of a sliding-window model one preallocated buffer of "
        "`window` slots for keys and one for values, and writes token `t` into slot `t % window`, "
        "overwriting the token that left the window. `ring_decode` decodes `T` tokens one at a time "
        "(`q`, `k` `(..., T, E)`, `v` `(..., T, Ev)`) through that buffer. Its outputs should equal "
        "attention under `ac.sliding_window_mask(T, window)` (`window` keys, the newest included); they "
        "do not. Find the bug and fix it, keeping the buffer.",
        solution='''
            def ring_decode(q, k, v, window):
                """Outputs (..., T, Ev) of decoding through a buffer of `window` slots."""
                K = np.zeros(k.shape[:-2] + (window, k.shape[-1]))  # (..., window, E)
                V = np.zeros(v.shape[:-2] + (window, v.shape[-1]))  # (..., window, Ev)
                outputs = []
                for t in range(q.shape[-2]):
                    K[..., t % window, :] = k[..., t, :]
                    V[..., t % window, :] = v[..., t, :]
                    ### BEGIN SOLUTION
                    n = min(t + 1, window)  # slots written so far: 0 .. n - 1 until the buffer is full
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K[..., :n, :], -1, -2) / np.sqrt(q.shape[-1])
                    outputs.append(softmax(scores) @ V[..., :n, :])  # (..., 1, Ev)
                    ### END SOLUTION
                return np.concatenate(outputs, axis=-2)
        ''',
        stub="""
            scores = q[..., t : t + 1, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])  # (..., 1, window)
            outputs.append(softmax(scores) @ V)  # (..., 1, Ev)
        """,
        reference=_ring,
        public_cases=_ring_cases,
        outputs=("out",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "the outputs of the first steps are wrong, the later ones right: what differs between those steps?",
                name="empty slots attended",
                hint="until step window - 1 only slots 0 .. t hold tokens; the others are zeros that still get weight",
                variant=lambda q, k, v, window: _ring(q, k, v, window, unwritten=True),
            ),
            Diagnosis(
                "each output sees one key fewer than the window: how many tokens does the buffer hold?",
                name="keeps window - 1",
                hint="the window counts the newest token: `window` slots, all of them attended once full",
                variant=lambda q, k, v, window: _ring(q, k, v, window, keep=window - 1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 11.6 paged decode (extend)
def _paged(q, k_pool, v_pool, block_table, length, sorted_blocks=False, whole_blocks=False, scale=True):
    table = np.sort(block_table) if sorted_blocks else np.asarray(block_table)
    b = k_pool.shape[1]
    n = len(table) * b if whole_blocks else length
    K = k_pool[table].reshape(len(table) * b, *k_pool.shape[2:])[:n]  # (n, H, E)
    V = v_pool[table].reshape(len(table) * b, *v_pool.shape[2:])[:n]  # (n, H, Ev)
    K, V = np.swapaxes(K, 0, 1), np.swapaxes(V, 0, 1)  # (H, n, E), (H, n, Ev)
    out, w = sdpa(q[:, None, :], K, V, scale=None if scale else 1.0)
    return out[:, 0], w[:, 0]


def paged_case(name, rng, n_blocks, b, H, E, Ev, table, length, dtype=np.float64):
    """A case of 11.6: a pool of `n_blocks` blocks of `b` slots filled with noise, one sequence's table."""
    n = rng.normal
    return Case(
        name,
        q=n(size=(H, E)).astype(dtype),
        k_pool=n(size=(n_blocks, b, H, E)).astype(dtype),
        v_pool=n(size=(n_blocks, b, H, Ev)).astype(dtype),
        block_table=np.array(table, dtype=np.int64),
        length=length,
    )


def _paged_cases():
    rng = np.random.default_rng(1116)
    return grouped(
        "block table",
        paged_case(
            "3 blocks of 4 out of 8, in the order 5, 1, 6; 10 tokens; 2 heads",
            rng,
            8,
            4,
            2,
            3,
            2,
            [5, 1, 6],
            10,
        ),
        paged_case(
            "2 blocks of 3 out of 6, in the order 4, 0; 6 tokens; 1 head", rng, 6, 3, 1, 4, 3, [4, 0], 6
        ),
        paged_case(
            "4 blocks of 2 out of 9, in the order 7, 2, 8, 3; 7 tokens; 3 heads",
            rng,
            9,
            2,
            3,
            2,
            2,
            [7, 2, 8, 3],
            7,
        ),
    ) + grouped(
        "dtype",
        paged_case(
            "float32, 2 blocks of 4 out of 5, in the order 3, 1; 5 tokens",
            rng,
            5,
            4,
            2,
            4,
            2,
            [3, 1],
            5,
            np.float32,
        ),
    )


register(
    Exercise(
        id="ch11.paged_decode",
        number="11.6",
        title="one decoding step over a paged cache",
        points=2,
        function="paged_decode",
        hint="gather the sequence's blocks in the order of its table, keep its first `length` slots, then attend as usual",
        kind="extend",
        forbids=NO_FUSED,
        description="The chapter's `PagedKVCache` keeps only the block table. Here are the tensors too: "
        "`k_pool (n_blocks, block_size, H, E)` and `v_pool (n_blocks, block_size, H, Ev)` hold the keys "
        "and values of every sequence on the server, and one sequence's tokens `0 .. length - 1` are in "
        "its blocks `block_table` (a 1-D integer array) as the chapter lays them out. The slots of the "
        "pool that are not this sequence's hold other data. For the sequence's new query `q (H, E)` (one "
        "per head), return `(out (H, Ev), weights (H, length))`: scaled dot-product attention of each "
        "head's query over that head's keys and values of the sequence's `length` tokens, weights in "
        "token order.",
        solution='''
            def paged_decode(q, k_pool, v_pool, block_table, length):
                """One query per head over a paged cache: (out (H, Ev), weights (H, length))."""
                ### BEGIN SOLUTION
                K = k_pool[block_table].reshape(-1, *k_pool.shape[2:])[:length]  # (length, H, E), token order
                V = v_pool[block_table].reshape(-1, *v_pool.shape[2:])[:length]  # (length, H, Ev)
                scores = np.einsum("he,the->ht", q, K) / np.sqrt(q.shape[-1])  # (H, length)
                weights = softmax(scores)
                return np.einsum("ht,thv->hv", weights, V), weights
                ### END SOLUTION
        ''',
        reference=_paged,
        public_cases=_paged_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "the weights belong to the right keys in the wrong order: in which order are the "
                "sequence's blocks read?",
                name="blocks in pool order",
                hint="token t is in block block_table[t // block_size]: read the blocks in the table's order",
                variant=lambda q, k_pool, v_pool, block_table, length: _paged(
                    q, k_pool, v_pool, block_table, length, sorted_blocks=True
                ),
            ),
            Diagnosis(
                "there are more weights than tokens: what is in the last block after the sequence's last token?",
                name="whole last block attended",
                hint="only the first `length` slots of the gathered blocks are the sequence's",
                variant=lambda q, k_pool, v_pool, block_table, length: _paged(
                    q, k_pool, v_pool, block_table, length, whole_blocks=True
                ),
            ),
            Diagnosis(
                "the weights are too peaked: what are the scores divided by?",
                name="no scaling",
                hint="divide the scores by sqrt(E)",
                variant=lambda q, k_pool, v_pool, block_table, length: _paged(
                    q, k_pool, v_pool, block_table, length, scale=False
                ),
            ),
        ),
    )
)
