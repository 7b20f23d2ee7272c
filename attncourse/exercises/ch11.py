"""Chapter 11 exercises: cache sizes, grouped-query attention, windows with sinks, scaled RoPE
frequencies, a rolling cache and latent attention's absorbed projections."""

from __future__ import annotations

import numpy as np

from .. import scaled_dot_product_attention as sdpa
from ._registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

NO_FUSED = ("torch.nn.functional.scaled_dot_product_attention",)


# ----------------------------------------------------------------------------- 11.1 cache bytes (predict)
def _cache_gib(layers=40, kv_heads=8, d_head=128, tokens=16384, batch=4, b=2, kv=2):
    return np.array(layers * kv * kv_heads * d_head * b * tokens * batch / 2**30)


register(
    Exercise(
        id="ch11.predict_cache_gib",
        number="11.1",
        title="predict a model's KV cache",
        points=1,
        function="predict_cache_gib",
        hint="what does one token keep in every layer, in how many bytes, and how many tokens does the batch hold?",
        kind="predict",
        description="A model has 40 layers, 32 query heads and 8 key/value heads of width 128, and serves "
        "in bfloat16. Before running anything: how many GiB ($2^{30}$ bytes) does its KV cache take for "
        "a batch of 4 sequences of 16,384 tokens each? Return the number of GiB; within 5% passes.",
        solution='''
            def predict_cache_gib():
                """GiB of the KV cache: 40 layers, 8 KV heads of 128, bfloat16, 4 x 16384 tokens."""
                ### BEGIN SOLUTION
                per_token = 40 * 2 * 8 * 128 * 2  # layers x (key, value) x KV heads x width x 2 bytes
                return per_token * 16384 * 4 / 2**30  # 160 KiB a token x 65,536 tokens = 10 GiB
                ### END SOLUTION
        ''',
        reference=_cache_gib,
        public_cases=lambda: grouped(
            "prediction", Case("40 layers, 8 KV heads of 128, bfloat16, 4 x 16384 tokens")
        ),
        tolerance=(0.05, 0.0),
        diagnoses=(
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
                "that is one sequence's cache: how many sequences are in the batch?",
                name="batch forgotten",
                hint="multiply by the 4 sequences of the batch",
                variant=lambda: _cache_gib(batch=1),
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


# ----------------------------------------------------------------------------- 11.4 linear and NTK frequencies (derive)
def _freqs(E, base, factor, L, N, multiply=False, no_exponent=False, plain_factor=False):
    exponents = np.arange(0, E, 2) / E
    inv = base**-exponents
    linear = inv * factor if multiply else inv / factor
    growth = factor if plain_factor else factor * L / N - (factor - 1)
    power = 1.0 if no_exponent else E / (E - 2)
    ntk = (base * growth**power) ** -exponents
    return linear, ntk


def _freq_cases():
    return grouped(
        "frequencies",
        Case("E=8, base 10000, factor 4, L=128, N=32", E=8, base=10000.0, factor=4.0, L=128, N=32),
        Case("E=16, base 500000, factor 8, L=300, N=64", E=16, base=500000.0, factor=8.0, L=300, N=64),
    )


register(
    Exercise(
        id="ch11.scaled_frequencies",
        number="11.4",
        title="linear and dynamic-NTK frequencies",
        points=2,
        function="scaled_frequencies",
        hint="linear slows every pair by the factor; dynamic keeps the form base ** (-2i / E) with a larger base that depends on L / N",
        kind="derive",
        forbids=("attncourse.rope_frequencies", "attncourse.rope_angles", "attncourse.apply_rope"),
        description="From the formulas in the section on stretching the context, return the per-pair RoPE "
        "frequencies `(linear, dynamic)`, two arrays of `E // 2`, for head width `E`, base `base`, "
        "scaling factor `factor`, a sequence of `L` tokens and training length `N` (`L > N`): "
        'position interpolation and dynamic NTK scaling, as Hugging Face\'s `rope_type` "linear" and '
        '"dynamic" compute them.',
        solution='''
            def scaled_frequencies(E, base, factor, L, N):
                """(linear, dynamic) RoPE frequencies, each (E // 2,)."""
                ### BEGIN SOLUTION
                exponents = np.arange(0, E, 2) / E  # 2i / E for pairs i = 0 .. E/2 - 1
                linear = base**-exponents / factor  # every pair slowed by the factor
                new_base = base * (factor * L / N - (factor - 1)) ** (E / (E - 2))
                return linear, new_base**-exponents  # pair 0 keeps frequency 1
                ### END SOLUTION
        ''',
        reference=_freqs,
        public_cases=_freq_cases,
        outputs=("linear", "dynamic"),
        diagnoses=(
            Diagnosis(
                "the linear frequencies are faster than the unscaled ones: should interpolation speed "
                "the rotation up or slow it down?",
                name="linear multiplied",
                hint="position interpolation divides every frequency by the factor",
                variant=lambda E, base, factor, L, N: _freqs(E, base, factor, L, N, multiply=True),
            ),
            Diagnosis(
                "the dynamic frequencies are a little too fast: what power is the base's growth raised to?",
                name="NTK exponent missing",
                hint="the base grows by (s L / N - (s - 1)) ** (E / (E - 2))",
                variant=lambda E, base, factor, L, N: _freqs(E, base, factor, L, N, no_exponent=True),
            ),
            Diagnosis(
                "the dynamic frequencies are those of a base grown by the factor s alone, the static NTK "
                "scaling: what does 'dynamic' adapt to?",
                name="static NTK factor",
                hint="use s * L / N - (s - 1), not s",
                variant=lambda E, base, factor, L, N: _freqs(E, base, factor, L, N, plain_factor=True),
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
            if len(keys) >= window:  # the window counts the newest token itself
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
def _absorb(W_UV, W_O, summed=False):
    W = W_UV @ W_O  # (H, r, d_head) @ (H, d_head, d_model) -> (H, r, d_model)
    return W.sum(0) if summed else W


def _absorb_cases():
    rng = np.random.default_rng(1106)
    n = rng.normal
    return grouped(
        "absorbed projection",
        Case("H=2 heads, r=3, d_head=4, d_model=5", W_UV=n(size=(2, 3, 4)), W_O=n(size=(2, 4, 5))),
        Case("H=4 heads, r=6, d_head=2, d_model=8", W_UV=n(size=(4, 6, 2)), W_O=n(size=(4, 2, 8))),
    ) + grouped(
        "dtype",
        Case(
            "float32, H=3, r=2, d_head=3, d_model=4",
            W_UV=n(size=(3, 2, 3)).astype(np.float32),
            W_O=n(size=(3, 3, 4)).astype(np.float32),
        ),
    )


register(
    Exercise(
        id="ch11.absorb_value_side",
        number="11.6",
        title="absorb the value up-projection into the output",
        points=2,
        function="absorb_value_side",
        hint="P (c W_UV) W_O = P c (W_UV W_O): one (r, d_model) product per head",
        kind="extend",
        description="In latent attention head `h`'s value for token `t` is `c[t] @ W_UV[h]` (`c (S, r)`, "
        "`W_UV (H, r, d_head)`), and the output projection maps head `h`'s output with its slice "
        "`W_O[h] (d_head, d_model)`; the layer's output is the sum over heads of "
        "`P[h] @ (c @ W_UV[h]) @ W_O[h]` for the weights `P (H, L, S)`. Return the per-head matrices "
        "`W (H, r, d_model)` for which that output equals the sum over heads of `P[h] @ c @ W[h]`, so "
        "the values are never rebuilt from the cached latent.",
        solution='''
            def absorb_value_side(W_UV, W_O):
                """(H, r, d_model): W_UV[h] @ W_O[h] for every head."""
                ### BEGIN SOLUTION
                # P (c W_UV) W_O = P c (W_UV W_O): one (r, d_model) matrix per head, computed once
                return W_UV @ W_O  # (H, r, d_head) @ (H, d_head, d_model) -> (H, r, d_model)
                ### END SOLUTION
        ''',
        reference=_absorb,
        public_cases=_absorb_cases,
        outputs=("W",),
        diagnoses=(
            Diagnosis(
                "the result has no head axis: can one matrix serve heads with different weights P[h]?",
                name="summed over heads",
                hint="keep one (r, d_model) matrix per head: W[h] = W_UV[h] @ W_O[h]",
                variant=lambda W_UV, W_O: _absorb(W_UV, W_O, summed=True),
            ),
        ),
    )
)
