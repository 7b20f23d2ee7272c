"""Chapter 11 exercises: a cache with windowed layers, which key/value head each query head of a
grouped-query layer read, what the last token reads through a stack of windows, RoPE pairs inside
the training range; a windowed prompt read in chunks and a lost block table are in
``_ch11_serving``."""

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


# ----------------------------------------------------------------------------- 11.2 which KV head (extend)
def _kv_of(q, k, v, out, assume=None):
    """The key/value head each query head read: the one whose attention output is `out`'s."""
    H, H_kv = q.shape[-3], k.shape[-3]
    if assume == "chapter":  # h // G, the chapter's grouping, whatever the outputs say
        return np.arange(H) // (H // H_kv)
    if assume == "tile":  # h % H_kv, key/value heads dealt out in turn
        return np.arange(H) % H_kv
    candidates = sdpa(q[:, None], k[None], v[None])[0]  # (H, H_kv, L, Ev): every pairing
    err = np.abs(candidates - np.asarray(out, dtype=np.float64)[:, None]).max(axis=(-2, -1))
    return err.argmin(axis=-1)


def kv_map_case(name, rng, H, H_kv, L, S, E, Ev, mapping, dtype=np.float64):
    """A case of 11.2: a layer whose query head h read key/value head `mapping[h]`."""
    n = rng.normal
    q, k, v = n(size=(H, L, E)), n(size=(H_kv, S, E)), n(size=(H_kv, S, Ev))
    mapping = np.asarray(mapping)
    out = sdpa(q, k[mapping], v[mapping])[0]  # (H, L, Ev)
    return Case(name, q=q.astype(dtype), k=k.astype(dtype), v=v.astype(dtype), out=out.astype(dtype))


def _kv_map_cases():
    rng = np.random.default_rng(1112)
    return grouped(
        "layers",
        kv_map_case("H=8, H_kv=2, L=3, S=5", rng, 8, 2, 3, 5, 4, 3, [0, 0, 0, 0, 1, 1, 1, 1]),
        kv_map_case("H=6, H_kv=3, L=2, S=4", rng, 6, 3, 2, 4, 3, 2, [0, 1, 2, 0, 1, 2]),
        kv_map_case("H=4, H_kv=2, L=4, S=6", rng, 4, 2, 4, 6, 2, 3, [1, 0, 0, 1]),
    ) + grouped(
        "dtype",
        kv_map_case(
            "float32, H=8, H_kv=4, L=3, S=5", rng, 8, 4, 3, 5, 8, 2, [3, 0, 1, 2, 2, 1, 0, 3], np.float32
        ),
    )


register(
    Exercise(
        id="ch11.kv_head_map",
        number="11.2",
        title="which key/value head did each query head read?",
        points=2,
        function="kv_head_map",
        hint="each query head's output is attention over one key/value head: try them all and keep the one that gives `out`",
        kind="extend",
        forbids=NO_FUSED,
        description="A grouped-query layer from another library was run on queries `q (H, L, E)` and on "
        "keys and values with fewer heads, `k (H_kv, S, E)` and `v (H_kv, S, Ev)` (`H` a multiple of "
        "`H_kv`), and returned `out (H, L, Ev)`: each query head's scaled dot-product attention (no mask) "
        "over one of the key/value heads. Its code is not at hand, and libraries do not all pair the heads "
        "the way this chapter does. Return an integer array `(H,)`: for each query head, the key/value head "
        "it read. On every case exactly one key/value head fits each query head.",
        solution='''
            def kv_head_map(q, k, v, out):
                """Integer (H,): the key/value head each query head read."""
                ### BEGIN SOLUTION
                H, H_kv = q.shape[0], k.shape[0]
                found = np.zeros(H, dtype=np.int64)
                for h in range(H):
                    errors = []
                    for g in range(H_kv):  # head h's output if it had read key/value head g
                        scores = q[h] @ k[g].T / np.sqrt(q.shape[-1])  # (L, E) @ (E, S) -> (L, S)
                        errors.append(np.abs(softmax(scores) @ v[g] - out[h]).max())
                    found[h] = np.argmin(errors)
                return found
                ### END SOLUTION
        ''',
        reference=_kv_of,
        public_cases=_kv_map_cases,
        outputs=("kv_head",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "that is the pairing the chapter uses, and not every layer here used it: what do the "
                "outputs themselves say?",
                name="the chapter's pairing assumed",
                hint="compute each query head's output with every key/value head and keep the one that matches `out`",
                variant=lambda q, k, v, out: _kv_of(q, k, v, out, assume="chapter"),
            ),
            Diagnosis(
                "that deals the key/value heads out in turn, and not every layer here did: what do the "
                "outputs themselves say?",
                name="heads dealt out in turn assumed",
                hint="compute each query head's output with every key/value head and keep the one that matches `out`",
                variant=lambda q, k, v, out: _kv_of(q, k, v, out, assume="tile"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 11.3 reach of a stack (extend)
def _reach(T, windows, n_sinks, one_more=False, no_sinks=False, last_only=False):
    """Boolean (T,): the input tokens whose change can change the last layer's output at the last position."""
    layers = [int(w) for w in np.asarray(windows).reshape(-1)]
    if last_only:  # the last layer's window taken for the whole stack
        layers = layers[-1:]
    sinks = 0 if no_sinks else int(n_sinks)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    reached = np.zeros(T, dtype=bool)
    reached[-1] = True
    for w in reversed(layers):  # from the last layer down: what the reached positions read
        w = w + 1 if one_more and w else w  # one_more: a window that reaches w tokens back
        mask = (j <= i) if w == 0 else (j <= i) & ((j > i - w) | (j < sinks))
        reached = mask[reached].any(axis=0)
    return reached


def _reach_cases():
    w = lambda *ws: np.array(ws, dtype=np.int64)  # noqa: E731
    return grouped(
        "windows, sinks and a full layer",
        Case("T=16, three layers of window 4", T=16, windows=w(4, 4, 4), n_sinks=0),
        Case("T=20, two layers of window 3, 2 sinks", T=20, windows=w(3, 3), n_sinks=2),
        Case("T=14, windows 2, full, 3", T=14, windows=w(2, 0, 3), n_sinks=0),
    ) + grouped(
        "mixed stacks",
        Case("T=12, windows 2, 5, 3, 1 sink", T=12, windows=w(2, 5, 3), n_sinks=1),
        Case("T=18, windows 4, full, 4, 1 sink", T=18, windows=w(4, 0, 4), n_sinks=1),
    )


register(
    Exercise(
        id="ch11.stack_reach",
        number="11.3",
        title="what the last token can read through a stack of windows",
        points=2,
        function="tokens_reached",
        hint="go down the stack from the last layer: at each layer, the positions already reached read their own masks' rows",
        kind="extend",
        description="A decoder stacks attention layers (each with its residual connection) whose masks are "
        "given by `windows`, a 1-D integer array, layer 0 first: a window of `w` tokens counts the query "
        "itself, as `ac.sliding_window_mask`, and `0` means full causal attention. Every windowed layer "
        "also lets each query attend to the first `n_sinks` tokens that are not after it. For a sequence of "
        "`T` tokens, return a boolean array `(T,)`: True at `j` where the input token at position `j` can "
        "change the last layer's output at the last position `T - 1`.",
        solution='''
            def tokens_reached(T, windows, n_sinks):
                """Boolean (T,): the tokens that can change the last layer's output at position T - 1."""
                ### BEGIN SOLUTION
                i, j = np.arange(T)[:, None], np.arange(T)[None, :]
                reached = np.arange(T) == T - 1  # the last layer's output at the last position
                for w in windows[::-1]:  # from the last layer down to the first
                    if w == 0:
                        mask = j <= i
                    else:
                        mask = (j <= i) & ((j > i - w) | (j < n_sinks))
                    reached = mask[reached].any(axis=0)  # what the reached positions read in this layer
                return reached
                ### END SOLUTION
        ''',
        reference=_reach,
        public_cases=_reach_cases,
        outputs=("reached",),
        diagnoses=(
            Diagnosis(
                "the reach goes one token too far back for every windowed layer: how far back does a window "
                "of w tokens read?",
                name="w tokens back per layer",
                hint="a window of w tokens counts the query itself: each windowed layer reaches w - 1 tokens further back",
                variant=lambda T, windows, n_sinks: _reach(T, windows, n_sinks, one_more=True),
            ),
            Diagnosis(
                "the first tokens are missing: what else does a windowed layer let each query read?",
                name="sinks left out",
                hint="every windowed layer also reads the sink tokens, whatever the distance",
                variant=lambda T, windows, n_sinks: _reach(T, windows, n_sinks, no_sinks=True),
            ),
            Diagnosis(
                "that is what one layer reads: what did the positions it reads read in the layers below?",
                name="one layer only",
                hint="compose the layers: each layer's reached positions read their own mask rows in the layer below",
                variant=lambda T, windows, n_sinks: _reach(T, windows, n_sinks, last_only=True),
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
        "linear and unscaled",
        range_case("E=8, base 100, linear factor 4, N=16, L=64", 8, 100.0, 4.0, 64, 16, "linear"),
        range_case("E=10, base 1000, no scaling, N=24, L=40", 10, 1000.0, 1.0, 40, 24, "none"),
    ) + grouped(
        "dynamic",
        range_case("E=12, base 10000, dynamic factor 2, N=48, L=96", 12, 10000.0, 2.0, 96, 48, "dynamic"),
        range_case(
            "float32, E=10, base 1000, dynamic factor 4, N=20, L=60",
            10,
            1000.0,
            4.0,
            60,
            20,
            "dynamic",
            np.float32,
        ),
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


# 11.5 and 11.6 (a windowed prompt read in chunks, a lost block table) are in _ch11_serving
from . import _ch11_serving  # noqa: E402,F401
