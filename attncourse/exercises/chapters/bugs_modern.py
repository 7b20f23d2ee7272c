"""Appendix A exercises, second part: bugs of the code of chapters 7, 11 and 12 (RoPE with YaRN's
scaling, RoPE on part of each head, a cache with attention sinks, a cross-attention cache), and one
prediction of a bug's symptom.  Imported by ``bugs``; the ids are ``bugs.*`` like the first part's."""

from __future__ import annotations

import numpy as np

from ... import apply_rope, rope_frequencies, softmax
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register
from ._shared import swap

__all__: list = []


def _causal_softmax(scores):
    L, S = scores.shape[-2:]
    return softmax(np.where(np.tril(np.ones((L, S), dtype=bool)), scores, -np.inf))


# ----------------------------------------------------------------------------- A.6 yarn_scores
def _yarn_dict(factor, original_length):
    return {
        "rope_type": "yarn",
        "factor": float(factor),
        "original_max_position_embeddings": int(original_length),
    }


def _yarn(q, k, factor, original_length, power=2):
    """Scaled scores of q, k rotated with YaRN; ``power``: the attention factor's power in them."""
    scaling = _yarn_dict(factor, original_length)
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    attention = rope_frequencies(q.shape[-1], scaling=scaling)[1]
    if power != 2 and attention == 1.0:
        return None  # no attention factor: the mistake cannot show
    rq, rk = apply_rope(q, scaling=scaling), apply_rope(k, scaling=scaling)  # each carries the factor once
    return rq @ swap(rk) / np.sqrt(q.shape[-1]) * attention ** (power - 2)


def _yarn_case(name, rng, shape, factor, original_length, dtype=np.float64):
    return Case(
        name,
        q=rng.normal(size=shape).astype(dtype),
        k=rng.normal(size=shape).astype(dtype),
        factor=float(factor),
        original_length=int(original_length),
    )


def _yarn_cases():
    rng = np.random.default_rng(9106)
    return grouped(
        "scaling",
        _yarn_case("factor 4, trained on 16 positions, L=6, E=8", rng, (6, 8), 4, 16),
        _yarn_case("factor 2, trained on 8 positions, L=5, E=4", rng, (5, 4), 2, 8),
        _yarn_case("2 heads, factor 8, trained on 32 positions, L=4, E=6", rng, (2, 4, 6), 8, 32),
    ) + grouped(
        "dtype",
        _yarn_case("float32, factor 16, trained on 8 positions, L=5, E=8", rng, (5, 8), 16, 8, np.float32),
    )


register(
    Exercise(
        id="bugs.yarn_scores",
        number="A.6",
        title="YaRN scores that are too sharp",
        points=2,
        function="yarn_scores",
        hint="rope_frequencies' attention factor is already in cos and sin, so it reaches the scores once "
        "through q and once through k: multiply the scores by nothing more",
        kind="diagnose",
        description="Scaled attention scores of `q, k (..., L, E)` at positions `0..L-1`, both rotated by "
        "RoPE (half-split layout) stretched with YaRN, as chapter 11 stretches a model's context: "
        "`factor` (a float >= 1) and `original_length` (the training length, an int) make the dict "
        '`scaling = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": '
        "original_length}`. Returns `scores (..., L, L)`, before any mask or softmax. The reference is the "
        "rotation transformers gives for that dict, `ac.apply_rope(x, scaling=scaling)`, applied to `q` and "
        "to `k`. Symptom: with `factor = 1` the scores match that reference; with a larger factor every "
        "score is larger than the reference's by one and the same ratio (measure it). Find the bug and fix "
        "it; numpy and `rope_frequencies` only.",
        solution='''
            def yarn_scores(q, k, factor, original_length):
                """Scores (..., L, L) of q, k (..., L, E) at positions 0..L-1, rotated with YaRN."""
                L, E = q.shape[-2], q.shape[-1]
                scaling = {"rope_type": "yarn", "factor": factor,
                           "original_max_position_embeddings": original_length}
                inv_freq, attention_factor = rope_frequencies(E, scaling=scaling)  # (E/2,), a float
                angles = np.arange(L)[:, None] * inv_freq  # (L, 1) * (E/2,) -> (L, E/2)
                cos, sin = np.cos(angles) * attention_factor, np.sin(angles) * attention_factor

                def rotate(x):  # half-split layout: feature i pairs with feature i + E/2
                    x1, x2 = x[..., : E // 2], x[..., E // 2 :]
                    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

                scores = rotate(q) @ np.swapaxes(rotate(k), -1, -2) / np.sqrt(E)  # (..., L, L)
                ### BEGIN SOLUTION
                return scores
                ### END SOLUTION
        ''',
        stub="return scores * attention_factor**2",
        reference=_yarn,
        public_cases=_yarn_cases,
        outputs=("scores",),
        needs=("import numpy as np", "from attncourse import rope_frequencies"),
        diagnoses=(
            Diagnosis(
                "with YaRN every score is the reference's times the attention factor squared: how many "
                "times does the factor reach the scores?",
                name="attention factor applied twice",
                hint="cos and sin already carry the attention factor, once for q and once for k: do not "
                "multiply the scores by it again",
                variant=lambda q, k, f, n: _yarn(q, k, f, n, power=4),
            ),
            Diagnosis(
                "with YaRN every score is the reference's divided by the attention factor squared: "
                "what does transformers do with the attention factor?",
                name="attention factor left out",
                hint="transformers multiplies cos and sin by the attention factor, so the scores carry its "
                "square: keep it in cos and sin",
                variant=lambda q, k, f, n: _yarn(q, k, f, n, power=0),
            ),
            Diagnosis(
                "with YaRN every score is the reference's divided by the attention factor: q and k are "
                "both rotated, so how many times does the factor reach a score?",
                name="attention factor applied once",
                hint="the factor multiplies q's rotation and k's rotation, so the scores carry its square",
                variant=lambda q, k, f, n: _yarn(q, k, f, n, power=1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.7 partial_rope_attention
def _partial_rotate(x, R, how="right"):
    x = np.asarray(x, dtype=np.float64)
    E = x.shape[-1]
    if how == "stub":  # the whole head rotated, then its first R features kept
        return np.concatenate([apply_rope(x)[..., :R], x[..., R:]], axis=-1)
    if how == "whole head":
        return apply_rope(x)
    if how == "last features":
        return np.concatenate([x[..., : E - R], apply_rope(x[..., E - R :])], axis=-1)
    if how == "interleaved":
        if R == 2:
            return None  # one pair: both layouts agree
        return np.concatenate([apply_rope(x[..., :R], interleaved=True), x[..., R:]], axis=-1)
    if how == "none":
        return x
    return np.concatenate([apply_rope(x[..., :R]), x[..., R:]], axis=-1)


def _partial_rope_attention(q, k, v, rotary_dim, how="right"):
    q, k = _partial_rotate(q, rotary_dim, how), _partial_rotate(k, rotary_dim, how)
    if q is None:
        return None
    scores = q @ swap(k) / np.sqrt(q.shape[-1])
    return _causal_softmax(scores) @ np.asarray(v, dtype=np.float64)


def _partial_case(name, rng, lead, L, E, Ev, R, dtype=np.float64):
    n = rng.normal
    return Case(
        name,
        q=n(size=(*lead, L, E)).astype(dtype),
        k=n(size=(*lead, L, E)).astype(dtype),
        v=n(size=(*lead, L, Ev)).astype(dtype),
        rotary_dim=R,
    )


def _partial_cases():
    rng = np.random.default_rng(9107)
    return grouped(
        "shape",
        _partial_case("L=5, E=8, a quarter rotated (rotary_dim 2)", rng, (), 5, 8, 4, 2),
        _partial_case("2 heads, L=4, E=6, rotary_dim 4", rng, (2,), 4, 6, 3, 4),
        _partial_case("batch (2, 2), L=3, E=12, rotary_dim 8", rng, (2, 2), 3, 12, 2, 8),
    ) + grouped(
        "dtype",
        _partial_case("float32, L=6, E=16, rotary_dim 4", rng, (), 6, 16, 4, 4, np.float32),
    )


register(
    Exercise(
        id="bugs.partial_rope_attention",
        number="A.7",
        title="attention whose heads carry positions in part of their features",
        points=2,
        function="partial_rope_attention",
        hint="apply_rope takes its pairs and frequencies from the width of what it is given: give it the "
        "first rotary_dim features, not the whole head",
        kind="diagnose",
        description="Some models (GPT-NeoX, with its `rotary_pct`) put positions into part of each head only: "
        "the first `rotary_dim` features of every query and key are a RoPE vector of their own, rotated "
        "as chapter 7 rotates a head of width `rotary_dim` (half-split layout, positions `0..L-1`), and "
        "the other `E - rotary_dim` features are used unrotated. `q, k (..., L, E)`, `v (..., L, Ev)`, "
        "`rotary_dim` even with `2 <= rotary_dim < E`. Returns `out (..., L, Ev)`, causal scaled "
        "dot-product attention (scale `1/sqrt(E)`) on the rotated queries and keys. Symptom: output row 0 "
        "is right, every later row is wrong. Find the bug and fix it; numpy, `softmax` and `apply_rope` "
        "only.",
        solution='''
            def partial_rope_attention(q, k, v, rotary_dim):
                """Causal attention, RoPE on part of each head: q, k (..., L, E), v (..., L, Ev) -> (..., L, Ev)."""
                L, R = q.shape[-2], rotary_dim

                def rotate(x):  # (..., L, E): the first R features rotated, the others as they are
                    ### BEGIN SOLUTION
                    return np.concatenate([apply_rope(x[..., :R]), x[..., R:]], axis=-1)
                    ### END SOLUTION

                scores = rotate(q) @ np.swapaxes(rotate(k), -1, -2) / np.sqrt(q.shape[-1])  # (..., L, L)
                allowed = np.tril(np.ones((L, L), dtype=bool))  # query i sees keys 0..i
                return softmax(np.where(allowed, scores, -np.inf)) @ v  # (..., L, L) @ (..., L, Ev)
        ''',
        stub="return np.concatenate([apply_rope(x)[..., :R], x[..., R:]], axis=-1)",
        reference=_partial_rope_attention,
        public_cases=_partial_cases,
        outputs=("out",),
        needs=("import numpy as np", "from attncourse import softmax, apply_rope"),
        diagnoses=(
            Diagnosis(
                "the first rotary_dim features are turned, but not as a RoPE vector of width rotary_dim: "
                "which features does each of them pair with, at which frequency?",
                name="rotated at the head's width, then cut",
                hint="rotate x[..., :R] on its own: apply_rope pairs feature i with i + R/2 and takes its "
                "frequencies from the width R",
                variant=lambda q, k, v, R: _partial_rope_attention(q, k, v, R, "stub"),
            ),
            Diagnosis(
                "every feature of the head carries positions: the prompt rotates only the first "
                "rotary_dim of them",
                name="whole head rotated",
                hint="rotate x[..., :rotary_dim] and leave the rest as it is",
                variant=lambda q, k, v, R: _partial_rope_attention(q, k, v, R, "whole head"),
            ),
            Diagnosis(
                "the rotated features are the last rotary_dim, not the first",
                name="last features rotated",
                hint="the rotated part is x[..., :rotary_dim]",
                variant=lambda q, k, v, R: _partial_rope_attention(q, k, v, R, "last features"),
            ),
            Diagnosis(
                "your rotation pairs neighbouring features: which layout does the prompt use?",
                name="interleaved pairs",
                hint="half-split: feature i pairs with feature i + rotary_dim/2",
                variant=lambda q, k, v, R: _partial_rope_attention(q, k, v, R, "interleaved"),
            ),
            Diagnosis(
                "the output is that of causal attention with no positions at all",
                name="RoPE left out",
                hint="rotate the first rotary_dim features of q and k",
                variant=lambda q, k, v, R: _partial_rope_attention(q, k, v, R, "none"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.8 sink_cache_weights
def _kept(t, n_sink, window):
    """Text indices in the cache at step t: the first n_sink tokens and the last `window` (t included)."""
    return np.array(sorted(set(range(min(n_sink, t + 1))) | set(range(max(0, t - window + 1), t + 1))))


def _sink_weights(q, k, n_sink, window, keys="cache", query="cache"):
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    L, E = q.shape
    out = np.zeros((L, L))
    for t in range(L):
        kept = _kept(t, n_sink, window)
        k_pos = np.arange(len(kept)) if keys == "cache" else kept
        q_pos = np.array([len(kept) - 1 if query == "cache" else t])
        scores = (
            apply_rope(q[t : t + 1], positions=q_pos) @ apply_rope(k[kept], positions=k_pos).T / np.sqrt(E)
        )
        out[t, kept] = softmax(scores)[0]
    return out


def _sink_case(name, rng, L, E, n_sink, window, dtype=np.float64):
    return Case(
        name,
        q=rng.normal(size=(L, E)).astype(dtype),
        k=rng.normal(size=(L, E)).astype(dtype),
        n_sink=n_sink,
        window=window,
    )


def _sink_cases():
    rng = np.random.default_rng(9108)
    return grouped(
        "stream",
        _sink_case("L=9 tokens, E=4, 2 sinks, window 3", rng, 9, 4, 2, 3),
        _sink_case("L=12, E=6, 1 sink, window 4", rng, 12, 6, 1, 4),
        _sink_case("L=8, E=4, 3 sinks, window 2", rng, 8, 4, 3, 2),
    ) + grouped(
        "dtype",
        _sink_case("float32, L=10, E=8, 2 sinks, window 5", rng, 10, 8, 2, 5, np.float32),
    )


register(
    Exercise(
        id="bugs.sink_cache_weights",
        number="A.8",
        title="a stream with sinks whose attention drifts",
        points=2,
        function="sink_cache_weights",
        hint="StreamingLLM numbers positions within the cache: its entries get 0, 1, 2, ... in order, "
        "whatever their place in the text",
        kind="diagnose",
        description="A stream of `L` tokens decoded one at a time with attention sinks, as StreamingLLM "
        "decodes it (chapter 11): at step `t` the cache holds the keys of the first `n_sink` tokens and of "
        "the last `window` tokens (token `t` included), stored unrotated; at every step the cached keys and "
        "the query `q[t]` are rotated by RoPE at the positions StreamingLLM gives them. `q, k (L, E)`; "
        "returns `weights (L, L)`, "
        "row `t` holding step `t`'s softmax weights over the text's tokens, 0 for the tokens not in the "
        "cache. Symptom: the first steps' weights are right, later steps' are not, although the cache "
        "holds the right tokens. Find the bug and fix it; numpy, `softmax` and `apply_rope` only.",
        solution='''
            def sink_cache_weights(q, k, n_sink, window):
                """Weights (L, L) of a stream decoded with a sink cache; q, k (L, E), unrotated."""
                L, E = q.shape
                weights = np.zeros((L, L))
                for t in range(L):
                    sinks = range(min(n_sink, t + 1))
                    recent = range(max(0, t - window + 1), t + 1)
                    kept = np.array(sorted(set(sinks) | set(recent)))  # the text indices in the cache
                    ### BEGIN SOLUTION
                    positions = np.arange(len(kept))
                    ### END SOLUTION
                    q_t = apply_rope(q[t : t + 1], positions=positions[-1:])  # (1, E): the newest entry
                    k_t = apply_rope(k[kept], positions=positions)  # (n, E)
                    weights[t, kept] = softmax(q_t @ k_t.T / np.sqrt(E))[0]
                return weights
        ''',
        stub="positions = kept",
        reference=_sink_weights,
        public_cases=_sink_cases,
        outputs=("weights",),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax, apply_rope"),
        diagnoses=(
            Diagnosis(
                "the cache's keys and query are rotated by their places in the text: how does StreamingLLM "
                "number the entries of its cache?",
                name="text positions in the cache",
                hint="number the cache's entries 0, 1, 2, ... in order: np.arange(len(kept))",
                variant=lambda q, k, n_sink, window: _sink_weights(
                    q, k, n_sink, window, keys="text", query="text"
                ),
            ),
            Diagnosis(
                "the keys are numbered within the cache but the query keeps its place in the text: which "
                "position does the newest entry of the cache get?",
                name="query at its text position",
                hint="the query is the cache's newest entry: it gets the cache's last position",
                variant=lambda q, k, n_sink, window: _sink_weights(q, k, n_sink, window, query="text"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.9 first step that differs
def _first_step(n_sink=4, window=1020, shift=0):
    return np.array(n_sink + window + shift)


register(
    Exercise(
        id="bugs.predict_first_drift",
        number="A.9",
        title="predict the first step that drifts",
        points=1,
        function="predict_first_drift",
        hint="a key keeps its offset from the query until a token between them leaves the cache",
        kind="predict",
        description="Exercise A.8's code as it was handed out (before your fix) runs on a stream of "
        "5000 tokens with `n_sink = 4` sinks and `window = 1020`. Before running anything: which step "
        "`t` (counted from 0) is the first whose row of weights differs from that of your fixed code? "
        "Return the integer.",
        solution='''
            def predict_first_drift():
                """The first step t whose weights the unfixed code of A.8 gets wrong."""
                ### BEGIN SOLUTION
                # Until a token leaves the cache, the cache is the text itself: its positions are the
                # text's. The first eviction is at the step that brings the cache above 4 + 1020 entries.
                return 4 + 1020
                ### END SOLUTION
        ''',
        reference=_first_step,
        public_cases=lambda: grouped("prediction", Case("4 sinks, window 1020, 5000 tokens")),
        outputs=("step",),
        tolerance=(0.0, 0.0),
        diagnoses=(
            Diagnosis(
                "that is the step that fills the cache",
                name="the step that fills the cache",
                hint="at that step every token so far is still in the cache, so its positions are the text's",
                variant=lambda: _first_step(shift=-1),
            ),
            Diagnosis(
                "that leaves the sinks out",
                name="window alone",
                hint="the cache holds the sinks besides the window",
                variant=lambda: _first_step(n_sink=0),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.10 cross_decode
def _cross(memory, y, W_q, W_k, W_v, source="memory"):
    memory, y = np.asarray(memory, dtype=np.float64), np.asarray(y, dtype=np.float64)
    q = y @ W_q  # (T, E)
    if source == "memory":
        K, V = memory @ W_k, memory @ W_v
        return softmax(q @ K.T / np.sqrt(q.shape[-1])) @ V
    if source == "first state":  # one key and one value: every step reads them with weight 1
        return np.repeat(y[:1] @ W_v, y.shape[0], axis=0)
    K, V = y @ W_k, y @ W_v  # "states so far": causal self-attention over the decoder's states
    return _causal_softmax(q @ K.T / np.sqrt(q.shape[-1])) @ V


def _cross_case(name, rng, S, T, D, E, Dv, dtype=np.float64):
    n = rng.normal
    return Case(
        name,
        memory=n(size=(S, D)).astype(dtype),
        y=n(size=(T, D)).astype(dtype),
        W_q=(n(size=(D, E)) / np.sqrt(D)).astype(dtype),
        W_k=(n(size=(D, E)) / np.sqrt(D)).astype(dtype),
        W_v=(n(size=(D, Dv)) / np.sqrt(D)).astype(dtype),
    )


def _cross_cases():
    rng = np.random.default_rng(9110)
    return grouped(
        "decoding",
        _cross_case("a memory of S=5 tokens, T=4 steps, D=6, E=4, Dv=3", rng, 5, 4, 6, 4, 3),
        _cross_case("S=2, T=6, D=4, E=2, Dv=4", rng, 2, 6, 4, 2, 4),
        _cross_case("S=7, T=3, D=3, E=5, Dv=2", rng, 7, 3, 3, 5, 2),
    ) + grouped("dtype", _cross_case("float32, S=4, T=5, D=4, E=4, Dv=4", rng, 4, 5, 4, 4, 4, np.float32))


register(
    Exercise(
        id="bugs.cross_decode",
        number="A.10",
        title="cross-attention decoded one step at a time",
        points=2,
        function="cross_decode",
        hint="cross-attention's keys and values come from the encoder's output, `memory`: fill the cache "
        "with memory @ W_k and memory @ W_v",
        kind="diagnose",
        description="Cross-attention decoded one step at a time with its keys and values cached, as chapter "
        "12's encoder–decoder decodes: `memory (S, D)` is the encoder's output for the source, `y (T, D)` "
        "the decoder's states, one per step; `W_q, W_k (D, E)` and `W_v (D, Dv)` the projections. Step `t`'s "
        "query `y[t] @ W_q` attends to every source token (no mask). Returns `out (T, Dv)`, equal to "
        "cross-attention computed on all the steps at once. Symptom: all the rows of the output are equal. "
        "Find the bug and fix it; numpy and `softmax` only.",
        solution='''
            def cross_decode(memory, y, W_q, W_k, W_v):
                """Cross-attention outputs (T, Dv), one decoding step at a time with a cache."""
                cache = None
                outputs = []
                for t in range(y.shape[0]):
                    x = y[t : t + 1]  # (1, D): the decoder's state at step t
                    if cache is None:  # the first step fills the cache; later steps reuse it
                        ### BEGIN SOLUTION
                        cache = (memory @ W_k, memory @ W_v)  # (S, E), (S, Dv)
                        ### END SOLUTION
                    K, V = cache
                    q = x @ W_q  # (1, E)
                    outputs.append(softmax(q @ K.T / np.sqrt(q.shape[-1])) @ V)  # (1, S) @ (S, Dv)
                return np.concatenate(outputs)  # (T, Dv)
        ''',
        stub="cache = (x @ W_k, x @ W_v)",
        reference=_cross,
        public_cases=_cross_cases,
        outputs=("out",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "every step reads the one key and value of the decoder's first state: where do "
                "cross-attention's keys and values come from?",
                name="cache filled from the decoder's state",
                hint="the keys and values are the source's: memory @ W_k and memory @ W_v",
                variant=lambda memory, y, W_q, W_k, W_v: _cross(memory, y, W_q, W_k, W_v, "first state"),
            ),
            Diagnosis(
                "the output is causal self-attention over the decoder's states: which sequence does "
                "cross-attention read?",
                name="keys from the decoder's states so far",
                hint="cross-attention reads the encoder's output, memory, not the decoder's states",
                variant=lambda memory, y, W_q, W_k, W_v: _cross(memory, y, W_q, W_k, W_v, "states so far"),
            ),
        ),
    )
)
