"""Chapter 9 exercises: a sink added to a finished pass, KV caches through a beam search step, a
batched KV cache, keys taken back out of a finished pass, a decoding step split among workers, causal tiles
for a chunk of new tokens."""

from __future__ import annotations

import numpy as np

from ... import scaled_dot_product_attention as sdpa
from ... import softmax as softmax_ref
from ..engine.method import ScoreTiles
from ..engine.registry import STUB_LINE, Case, Diagnosis, Exercise, grouped, register
from ._shared import swap

__all__: list = []

NO_FUSED = ("torch.nn.functional.scaled_dot_product_attention",)


# ----------------------------------------------------------------------------- 9.1 a sink added afterwards (extend)
def sink_case(name, rng, B, H, L, S, E, Ev, offset=0.0, masked=(), dtype=np.float64):
    """A case of 9.1: a finished pass's (out, lse) over S keys per head, and one sink logit per head.
    ``offset`` lifts every score of the pass (scores in the hundreds); ``masked`` lists (b, h, i) rows
    whose keys were all masked.  Each head's sink lies near the middle of its rows' lse, so that it
    takes a large share of some rows and a small one of others."""
    n = rng.normal
    q, k, v = n(size=(B, H, L, E)), n(size=(B, H, S, E)), n(size=(B, H, S, Ev))
    s = 2 * q @ swap(k) / np.sqrt(E) + offset  # (B, H, L, S)
    for row in masked:
        s[row] = -np.inf
    m = s.max(axis=-1)
    shift = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - shift[..., None])
    total = e.sum(axis=-1)  # 0 for a row with every key masked
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = np.where(total > 0, shift + np.log(total), -np.inf)
        out = np.where(total[..., None] > 0, (e @ v) / total[..., None], 0.0)
    finite_rows = [lse[:, h][np.isfinite(lse[:, h])] for h in range(H)]
    centre = np.array([np.median(r) if r.size else 0.0 for r in finite_rows])  # a head all masked: 0
    sink = centre + n(size=H)
    c = lambda a: np.asarray(a).astype(dtype)  # noqa: E731
    return Case(name, out=c(out), lse=c(lse), sink=c(sink))


def _sink_cases():
    rng = np.random.default_rng(9011)
    return (
        grouped(
            "sinks",
            sink_case("B=1, H=2 heads, L=3, S=5", rng, 1, 2, 3, 5, 4, 2),
            sink_case("B=2, H=4 heads, L=3, S=6, Ev=3", rng, 2, 4, 3, 6, 3, 3),
        )
        + grouped(
            "heads and positions",  # L = H: a sink matched with query positions still broadcasts
            sink_case("B=2, H=3 heads, L=3 queries, S=4", rng, 2, 3, 3, 4, 2, 2),
        )
        + grouped(
            "large scores",
            sink_case("B=1, H=2, L=4, S=6, scores near 750", rng, 1, 2, 4, 6, 4, 2, offset=750.0),
        )
        + grouped(
            "masked rows",
            sink_case(
                "B=2, H=2, L=3: two rows with every key masked",
                rng,
                2,
                2,
                3,
                5,
                2,
                2,
                masked=[(0, 1, 2), (1, 0, 0)],
            ),
        )
        + grouped(
            "dtype",  # scores near 100: exponentials taken directly overflow in float32, as in the hidden case
            sink_case(
                "float32, B=1, H=3, L=2, S=5, scores near 100", rng, 1, 3, 2, 5, 4, 2, 100.0, dtype=np.float32
            ),
        )
    )


def _add_sink(out, lse, sink, mode="right"):
    out, lse, sink = (np.asarray(a, dtype=np.float64) for a in (out, lse, sink))
    if mode == "by position":  # the sinks matched with the query axis, not the heads
        if lse.shape[-1] != sink.shape[0]:
            return None
        z = sink
    else:
        z = np.zeros_like(sink) if mode == "sink at 0" else sink
        z = z[:, None]  # (H, 1) against (B, H, L)
    new_lse = np.logaddexp(lse, z)
    keys, to_sink = np.exp(lse - new_lse), np.exp(z - new_lse)  # the two shares of each row
    to_sink = np.broadcast_to(to_sink, new_lse.shape)
    if mode == "out kept":
        return out, new_lse, to_sink
    if mode == "lse kept":
        return out * keys[..., None], lse, to_sink
    if mode == "shares swapped":
        return out * to_sink[..., None], new_lse, keys
    return out * keys[..., None], new_lse, to_sink


def _sink_variant(mode):
    return lambda out, lse, sink: _add_sink(out, lse, sink, mode)


register(
    Exercise(
        id="ch09.add_sink",
        number="9.1",
        title="a sink added to a finished pass",
        points=3,
        function="add_sink",
        stub=STUB_LINE,
        hint="the sink is one more term in each row's sum: what share of the new sum do the keys keep?",
        kind="extend",
        forbids=NO_FUSED,
        description="Some models (gpt-oss, for one) give every head a learned *sink* logit `z_h`: each query's softmax runs "
        "over its `S` scores and `z_h` together, and the sink carries no value, so a row's weights over "
        "the keys sum to less than 1 and the rest goes nowhere. A tiled pass like this chapter's ran "
        "without the sinks and saved, per query, only `out (B, H, L, Ev)` and `lse (B, H, L)`, the log "
        "of the sum of $e^{s_j}$ over the `S` scores. Given them and the sinks `sink (H,)`, one per head, "
        "return `(out, lse, sink_weight)` as a pass with the sinks would have saved them: the output, "
        "the log of the sum over the scores and the sink, and the weight the sink takes in each row, "
        "`(B, H, L)`. Scores may be in the hundreds. A row whose keys were all masked arrives with "
        "`lse = -inf` and `out = 0`; no NaN may come out.",
        solution='''
            def add_sink(out, lse, sink):
                """(out, lse, sink_weight) of the pass with one sink logit per head."""
                ### BEGIN SOLUTION
                z = sink[:, None]  # (H, 1): one sink per head, against lse (B, H, L)
                new_lse = np.logaddexp(lse, z)  # log(e^lse + e^z) without forming either
                keys = np.exp(lse - new_lse)  # (B, H, L): the share the keys keep (0 for a masked row)
                sink_weight = np.exp(z - new_lse)  # the rest, taken by the sink
                return out * keys[..., None], new_lse, sink_weight
                ### END SOLUTION
        ''',
        reference=_add_sink,
        public_cases=_sink_cases,
        outputs=("out", "lse", "sink_weight"),
        # an lse near 750 carries float32's rounding (about 5e-5) into e^(lse - new lse): a stated
        # tolerance that a float32 answer meets there and every registered mistake misses by far
        tolerance=(1e-6, 5e-4),
        diagnoses=(
            Diagnosis(
                "lse and the sink's weight are right, out is the pass without the sink: what do the "
                "keys' weights sum to now?",
                name="output not rescaled",
                hint="multiply out by the share the keys keep, e^(lse - new lse)",
                variant=_sink_variant("out kept"),
            ),
            Diagnosis(
                "out is right, lse is the old one: which sum does lse hold once the sink is in?",
                name="lse left as it was",
                hint="the new lse is log(e^lse + e^z)",
                variant=_sink_variant("lse kept"),
            ),
            Diagnosis(
                "out and the sink's weight hold each other's share: which part of the row belongs to the "
                "keys?",
                name="the keys' share and the sink's swapped",
                hint="the keys keep e^(lse - new lse); the sink takes e^(z - new lse)",
                variant=_sink_variant("shares swapped"),
            ),
            Diagnosis(
                "the sinks went to the wrong rows: which axis of lse counts the heads?",
                name="sinks matched with query positions",
                hint="sink (H,) belongs to axis 1 of lse (B, H, L): sink[:, None]",
                variant=_sink_variant("by position"),
            ),
            Diagnosis(
                "every head behaves as if its sink logit were 0",
                name="sink logit ignored",
                hint="the sink's term in the sum is e^z, not e^0",
                variant=_sink_variant("sink at 0"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.2 a cache through a beam search step (extend)
def beam_case(name, rng, B, t, n, E, Ev, parents, dtype=np.float64):
    """A case of 9.2: B beams' caches of t tokens, the parent of each new beam, n new tokens per beam."""
    r = rng.normal
    c = lambda a: a.astype(dtype)  # noqa: E731
    return Case(
        name,
        q=c(2 * r(size=(B, n, E))),
        k_new=c(r(size=(B, n, E))),
        v_new=c(r(size=(B, n, Ev))),
        k_cache=c(r(size=(B, t, E))),
        v_cache=c(r(size=(B, t, Ev))),
        parents=np.array(parents),
    )


def _beam_cases():
    rng = np.random.default_rng(9021)
    return (
        grouped(
            "beams",
            beam_case("3 beams of 4 tokens, 2 new each, parents [1, 0, 0]", rng, 3, 4, 2, 3, 2, [1, 0, 0]),
            beam_case(
                "4 beams of 3 tokens, 3 new each, parents [2, 2, 3, 1]", rng, 4, 3, 3, 2, 3, [2, 2, 3, 1]
            ),
            beam_case("2 beams of 5 tokens, 2 new each, parents swapped", rng, 2, 5, 2, 4, 2, [1, 0]),
        )
        + grouped(
            "one new token",
            beam_case("3 beams of 6 tokens, 1 new each, parents [2, 2, 0]", rng, 3, 6, 1, 3, 2, [2, 2, 0]),
        )
        + grouped(
            "dtype",
            beam_case(
                "float32, 3 beams of 3 tokens, 2 new, parents [1, 2, 1]",
                rng,
                3,
                3,
                2,
                4,
                2,
                [1, 2, 1],
                np.float32,
            ),
        )
    )


def _beam_step(q, k_new, v_new, k_cache, v_cache, parents, order="gather, append", mask="bottom right"):
    q, k_new, v_new, k_cache, v_cache = (
        np.asarray(a, dtype=np.float64) for a in (q, k_new, v_new, k_cache, v_cache)
    )
    parents = np.asarray(parents)
    n, t = q.shape[1], k_cache.shape[1]
    if order == "not gathered":
        k_all, v_all = np.concatenate([k_cache, k_new], 1), np.concatenate([v_cache, v_new], 1)
    elif order == "append, gather":
        k_all, v_all = (
            np.concatenate([k_cache, k_new], 1)[parents],
            np.concatenate([v_cache, v_new], 1)[parents],
        )
    elif order == "in place":  # row b overwritten before a later beam reads it
        k_old, v_old = k_cache.copy(), v_cache.copy()
        for b, p in enumerate(parents):
            k_old[b], v_old[b] = k_old[p], v_old[p]
        k_all, v_all = np.concatenate([k_old, k_new], 1), np.concatenate([v_old, v_new], 1)
    else:
        k_all, v_all = (
            np.concatenate([k_cache[parents], k_new], 1),
            np.concatenate([v_cache[parents], v_new], 1),
        )
    i, j = np.arange(n)[:, None], np.arange(t + n)[None, :]
    visible = {"bottom right": j <= t + i, "top left": j <= i, "none": None}[mask]
    out = sdpa(q, k_all, v_all, visible)[0]
    return out, k_all, v_all


def _beam_variant(**kw):
    return lambda *a: _beam_step(*a, **kw)


register(
    Exercise(
        id="ch09.beam_cache_step",
        number="9.2",
        title="KV caches through a beam search step",
        points=3,
        function="beam_cache_step",
        stub=STUB_LINE,
        hint="new beam b's history is old beam parents[b]'s: which rows of the old caches does it need, and "
        "where do its own new tokens sit among its keys?",
        kind="extend",
        forbids=NO_FUSED,
        needs=("import numpy as np", "from attncourse import softmax"),
        description="Beam search decodes `B` candidate continuations (beams) side by side, each with its "
        "own KV cache. After every step it keeps the best `B` continuations: new beam `b` continues old "
        "beam `parents[b]` (`parents (B,)` ints in `0 .. B - 1`; an old beam may go on as several new "
        "ones, and another as none). The old caches are `k_cache (B, t, E)` and `v_cache (B, t, Ev)` "
        "(row `b`: old beam `b`'s `t` tokens), and each new beam now adds `n` tokens, given as `q`, "
        "`k_new (B, n, E)` and `v_new (B, n, Ev)` (row `b`: new beam `b`'s). Attend (scaled scores, "
        "causal) from each new beam's `n` queries to that beam's tokens so far, and return "
        "`(out (B, n, Ev), k_cache (B, t + n, E), v_cache (B, t + n, Ev))`, the new beams' caches.",
        solution='''
            def beam_cache_step(q, k_new, v_new, k_cache, v_cache, parents):
                """One step of B beams: (out (B, n, Ev), k_cache (B, t + n, E), v_cache (B, t + n, Ev))."""
                ### BEGIN SOLUTION
                t, n = k_cache.shape[1], q.shape[1]
                k_all = np.concatenate([k_cache[parents], k_new], axis=1)  # (B, t + n, E): its parent's past, then its own
                v_all = np.concatenate([v_cache[parents], v_new], axis=1)  # (B, t + n, Ev)
                scores = q @ np.swapaxes(k_all, -1, -2) / np.sqrt(q.shape[-1])  # (B, n, t + n)
                visible = np.arange(t + n)[None, :] <= t + np.arange(n)[:, None]  # new token i sits at t + i
                weights = softmax(np.where(visible, scores, -np.inf))
                return weights @ v_all, k_all, v_all  # (B, n, t + n) @ (B, t + n, Ev) -> (B, n, Ev)
                ### END SOLUTION
        ''',
        reference=_beam_step,
        public_cases=_beam_cases,
        outputs=("out", "k_cache", "v_cache"),
        diagnoses=(
            Diagnosis(
                "each new beam reads the history of the old beam in its own row, not of the one it continues",
                name="caches not reordered",
                hint="gather the old caches' rows by parents before appending: k_cache[parents]",
                variant=_beam_variant(order="not gathered"),
            ),
            Diagnosis(
                "the beams' histories are right, but each beam's new tokens went to another beam",
                name="reordered after appending",
                hint="the new tokens already belong to the new beams: gather the old rows first, then append",
                variant=_beam_variant(order="append, gather"),
            ),
            Diagnosis(
                "some beams got the history of a beam that had already been overwritten",
                name="rows overwritten before they were read",
                hint="copy the old rows out at once (k_cache[parents]) instead of row by row in place",
                variant=_beam_variant(order="in place"),
            ),
            Diagnosis(
                "the new queries see the keys as if they were the first n tokens: where do they sit?",
                name="causal mask aligned top-left",
                hint="new token i is token t + i: it sees keys 0 .. t + i",
                variant=_beam_variant(mask="top left"),
            ),
            Diagnosis(
                "a new token sees the new tokens after it",
                name="no causal mask among the new tokens",
                hint="mask key j for new query i when j > t + i",
                variant=_beam_variant(mask="none"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.3 static cache (extend)
def _static_case(name, rng, lengths, T, E, Ev, dtype=np.float64):
    n = rng.normal
    B = len(lengths)
    k_cache, v_cache = n(size=(B, T, E)), n(size=(B, T, Ev))  # slots past a length hold stale numbers
    return Case(
        name,
        q_new=n(size=(B, 1, E)).astype(dtype),
        k_new=n(size=(B, 1, E)).astype(dtype),
        v_new=n(size=(B, 1, Ev)).astype(dtype),
        k_cache=k_cache.astype(dtype),
        v_cache=v_cache.astype(dtype),
        lengths=np.array(lengths),
    )


def _static_cases():
    rng = np.random.default_rng(9031)
    return (
        grouped(
            "lengths",
            _static_case("3 sequences of 2, 5 and 0 tokens, 6 slots", rng, [2, 5, 0], 6, 3, 2),
            _static_case("2 sequences of 4 and 1 tokens, 8 slots, E=4, Ev=3", rng, [4, 1], 8, 4, 3),
        )
        + grouped("one sequence", _static_case("1 sequence of 3 tokens, 5 slots", rng, [3], 5, 2, 2))
        + grouped(
            "dtype",
            _static_case("float32, 2 sequences of 1 and 3, 4 slots", rng, [1, 3], 4, 4, 2, np.float32),
        )
    )


def _static(q_new, k_new, v_new, k_cache, v_cache, lengths, write="at length", see="through length"):
    B, T = k_cache.shape[:2]
    rows = np.arange(B)
    k_all, v_all = k_cache.astype(float), v_cache.astype(float)
    slot = {
        "at length": lengths,
        "last slot": np.full(B, T - 1),
        "before length": np.maximum(lengths - 1, 0),
    }[write]
    k_all[rows, slot], v_all[rows, slot] = k_new[:, 0], v_new[:, 0]
    if see == "through length":
        visible = np.arange(T)[None, None, :] <= lengths[:, None, None]
    elif see == "before length":
        if (lengths == 0).any():
            return None
        visible = np.arange(T)[None, None, :] < lengths[:, None, None]
    else:
        visible = None
    out = sdpa(q_new.astype(float), k_all, v_all, visible)[0]
    return out, k_all, v_all


register(
    Exercise(
        id="ch09.static_cache_step",
        number="9.3",
        title="a batch decoding step into a preallocated cache",
        points=2,
        function="static_cache_step",
        stub=STUB_LINE,
        hint="write row b's new key and value into slot lengths[b], then let row b's query see slots "
        "0..lengths[b] only",
        kind="extend",
        description="Servers batch sequences of different lengths and keep one preallocated cache of `T` "
        "slots per sequence instead of concatenating: `k_cache (B, T, E)`, `v_cache (B, T, Ev)`, where "
        "sequence `b` holds its `lengths[b]` earlier tokens in slots `0 .. lengths[b] - 1` and the slots "
        "after them hold stale numbers from earlier requests (`lengths (B,)` ints, each below `T`). Each "
        "sequence's new token arrives as `q_new`, `k_new (B, 1, E)` and `v_new (B, 1, Ev)`. Write each new "
        "key and value into its sequence's next free slot, then attend (scaled) from each new query to "
        "its own sequence's tokens, the new one included, and to nothing else. Return "
        "`(out (B, 1, Ev), k_cache, v_cache)`, the caches updated (a copy or in place).",
        solution='''
            def static_cache_step(q_new, k_new, v_new, k_cache, v_cache, lengths):
                """One decoding step into a preallocated cache: (out (B, 1, Ev), k_cache, v_cache)."""
                ### BEGIN SOLUTION
                B, T = k_cache.shape[0], k_cache.shape[1]
                rows = np.arange(B)
                k_cache, v_cache = k_cache.copy(), v_cache.copy()
                k_cache[rows, lengths] = k_new[:, 0]  # row b's new key goes into slot lengths[b]
                v_cache[rows, lengths] = v_new[:, 0]
                scores = q_new @ np.swapaxes(k_cache, -1, -2) / np.sqrt(q_new.shape[-1])  # (B, 1, T)
                visible = np.arange(T)[None, None, :] <= lengths[:, None, None]  # (B, 1, T)
                weights = softmax(np.where(visible, scores, -np.inf))
                return weights @ v_cache, k_cache, v_cache  # (B, 1, T) @ (B, T, Ev) -> (B, 1, Ev)
                ### END SOLUTION
        ''',
        reference=_static,
        public_cases=_static_cases,
        outputs=("out", "k_cache", "v_cache"),
        needs=("import numpy as np", "from attncourse import softmax"),
        forbids=NO_FUSED,
        diagnoses=(
            Diagnosis(
                "the new tokens also read the stale slots after each sequence's tokens: which slots hold "
                "this sequence's keys?",
                name="stale slots attended",
                hint="mask slot j of row b unless j <= lengths[b]",
                variant=lambda *a: _static(*a, see="all"),
            ),
            Diagnosis(
                "each new token reads its sequence's earlier tokens but not itself",
                name="the new token left out",
                hint="slot lengths[b] holds the new token: it is visible too (<=, not <)",
                variant=lambda *a: _static(*a, see="before length"),
            ),
            Diagnosis(
                "the new key landed in the cache's last slot, not in the sequence's next free one",
                name="written at the end of the buffer",
                hint="the next free slot of row b is lengths[b]",
                variant=lambda *a: _static(*a, write="last slot"),
            ),
            Diagnosis(
                "the new key overwrote the sequence's latest cached token",
                name="overwrote the last token",
                hint="slots 0..lengths[b]-1 are taken: write into slot lengths[b]",
                variant=lambda *a: _static(*a, write="before length"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.4 keys taken back out (extend)
def _forward_state(q, k, v):
    """(out, lse) of full attention: what a FlashAttention forward pass saves per query."""
    s = q @ swap(k) / np.sqrt(q.shape[-1])  # (..., L, S)
    m = s.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True)))[..., 0]  # (..., L)
    return np.exp(s - lse[..., None]) @ v, lse


def _remove_keys(q, k_rm, v_rm, out, lse, mode="right"):
    """(out, lse) over the keys that remain once the block k_rm, v_rm is taken out."""
    q, k_rm, v_rm, out, lse = (np.asarray(a, dtype=np.float64) for a in (q, k_rm, v_rm, out, lse))
    scale = 1.0 if mode == "unscaled" else 1 / np.sqrt(q.shape[-1])
    w = np.exp(q @ swap(k_rm) * scale - lse[..., None])  # (..., L, r): the removed keys' weights
    gone = w.sum(axis=-1)  # (..., L): their share of each row
    rest = out - w @ v_rm  # (..., L, Ev): the other keys' weighted values, still over the old sum
    if mode == "not_renormalised":
        return rest, np.log1p(-gone) + lse
    if mode == "lse_kept":
        return rest / (1 - gone)[..., None], lse
    return rest / (1 - gone)[..., None], lse + np.log1p(-gone)


def remove_case(name, rng, lead, L, S, E, Ev, removed, offset=0.0, dtype=np.float64):
    """A case of 9.4: full attention's saved (out, lse) over S keys and the keys `removed` taken out.
    With an `offset`, every key's last feature is 1 and every query's last feature lifts all its
    scores by about `offset` (scores in the hundreds: e^score overflows past 709). The draw is
    repeated until the removed keys carry at most 0.9 of any row's weight, as the prompt promises."""
    n = rng.normal
    for _ in range(100):
        q, k, v = n(size=lead + (L, E)), n(size=lead + (S, E)), n(size=lead + (S, Ev))
        if offset:
            k[..., -1] = 1.0
            q[..., -1] = (offset + 10 * np.arange(L)) * np.sqrt(E)  # rows at offset, offset + 10, ...
        w = softmax_ref(q @ swap(k) / np.sqrt(E))[..., removed].sum(axis=-1)
        if w.max() <= 0.9:
            break
    else:  # pragma: no cover - a case the generator could not draw
        raise RuntimeError(name)
    out, lse = _forward_state(q, k, v)
    c = lambda a: a.astype(dtype)  # noqa: E731
    return Case(name, q=c(q), k_rm=c(k[..., removed, :]), v_rm=c(v[..., removed, :]), out=c(out), lse=c(lse))


def _remove_cases():
    rng = np.random.default_rng(9041)
    return (
        grouped(
            "keys taken out",
            remove_case("L=3, S=6, key 2 taken out, E=4, Ev=2", rng, (), 3, 6, 4, 2, [2]),
            remove_case("L=4, S=8, keys 0, 5 and 7 taken out, E=3, Ev=3", rng, (), 4, 8, 3, 3, [0, 5, 7]),
        )
        + grouped(
            "large scores",
            remove_case("L=3, S=5, key 4 taken out, scores near 750", rng, (), 3, 5, 8, 2, [4], 750.0),
        )
        + grouped("batch dims", remove_case("2 heads, L=2, S=5, keys 1 and 3", rng, (2,), 2, 5, 2, 2, [1, 3]))
        + grouped(
            "dtype",
            remove_case("float32, L=3, S=7, keys 0 and 6", rng, (), 3, 7, 4, 2, [0, 6], 1.0, np.float32),
        )
    )


def _remove_variant(mode):
    return lambda q, k_rm, v_rm, out, lse: _remove_keys(q, k_rm, v_rm, out, lse, mode)


register(
    Exercise(
        id="ch09.remove_keys",
        number="9.4",
        title="take keys back out of a finished attention output",
        points=2,
        function="remove_keys",
        stub=STUB_LINE,
        hint="each removed key's weight in the finished pass can be rebuilt from q, the key and lse; the keys "
        "that remain shared the rest of each row, and their output must be normalised over that rest",
        kind="extend",
        forbids=NO_FUSED,
        description="A forward pass like this chapter's attended from `q (..., L, E)` to `S` keys and saved "
        "only `out (..., L, Ev)` $= \\operatorname{softmax}(q k^\\top / \\sqrt{E})\\, v$ and "
        "`lse (..., L)`, the log of the sum of $e^{q \\cdot k_j / \\sqrt{E}}$ over all `S` keys. Afterwards "
        "`r` of those keys turn out to be ones the queries must not see. Given `q`, `out`, `lse` and the "
        "keys and values to take out, `k_rm (..., r, E)` and `v_rm (..., r, Ev)`, return `(out, lse)` as "
        "the same pass over the other `S - r` keys would have saved them. The other keys are not given. "
        "Scores may be in the hundreds; the keys taken out never hold more than 0.9 of a row's weight.",
        solution='''
            def remove_keys(q, k_rm, v_rm, out, lse):
                """(out, lse) over the keys that remain once k_rm, v_rm are taken out of the pass."""
                ### BEGIN SOLUTION
                scale = 1 / np.sqrt(q.shape[-1])
                s = q @ np.swapaxes(k_rm, -1, -2) * scale  # (..., L, E) @ (..., E, r) -> (..., L, r)
                w = np.exp(s - lse[..., None])  # the removed keys' weights in the finished pass
                gone = w.sum(axis=-1)  # (..., L): the share of each row they held
                rest = out - w @ v_rm  # (..., L, Ev): what the other keys contributed
                return rest / (1 - gone)[..., None], lse + np.log1p(-gone)
                ### END SOLUTION
        ''',
        reference=_remove_keys,
        public_cases=_remove_cases,
        outputs=("out", "lse"),
        # scores near 750 carry float32's rounding (about 5e-5) into e^(s - lse): a stated tolerance
        # that a float32 answer meets there and every registered mistake misses by far
        tolerance=(1e-6, 5e-4),
        diagnoses=(
            Diagnosis(
                "the removed keys' share is subtracted, but the keys that remain still carry weights that "
                "sum to less than 1: what must each row of weights sum to?",
                name="remaining weights not renormalised",
                hint="divide what is left of out by the share of the row that remains, 1 - (the removed weights)",
                variant=_remove_variant("not_renormalised"),
            ),
            Diagnosis(
                "out is right, lse is the old one: which sum does lse hold now?",
                name="lse left as it was",
                hint="the sum over the remaining keys is the old sum times the share that remains",
                variant=_remove_variant("lse_kept"),
            ),
            Diagnosis(
                "both outputs are off: are the removed keys' scores rebuilt as the forward pass made them?",
                name="scores rebuilt unscaled",
                hint="the scores are q k^T / sqrt(E), with the scale lse was saved with",
                variant=_remove_variant("unscaled"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.5 a decoding step split among workers (diagnose)
def _split_decode(q, k, v, n_splits, mode="right"):
    """One query's attention over T cached keys, computed the way the workers of 9.5 combine their parts."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    E = q.shape[-1]
    outs, lses = [], []
    for k_part, v_part in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):
        s = q @ swap(k_part) / np.sqrt(E)  # (..., 1, t)
        m = s.max(axis=-1, keepdims=True)
        p = np.exp(s - m)
        l = p.sum(axis=-1, keepdims=True)
        outs.append(p @ v_part / l)
        lses.append({"own maximum": np.log(l), "maximum subtracted": np.log(l) - m}.get(mode, m + np.log(l)))
    lses = np.stack(lses)
    w = np.ones_like(lses) if mode == "averaged" else np.exp(lses - lses.max(axis=0))
    return (w * np.stack(outs)).sum(axis=0) / w.sum(axis=0)


def split_case(name, rng, lead, T, E, Ev, n_splits, scale=2.0, offset=0.0, dtype=np.float64):
    """A case of 9.5: one new query, T cached keys and values, n_splits workers.  ``scale`` sharpens the
    scores; with an ``offset``, every key's last feature is 1 and the query's last feature lifts every
    score by about ``offset`` (scores in the hundreds)."""
    n = rng.normal
    q, k, v = scale * n(size=lead + (1, E)), n(size=lead + (T, E)), n(size=lead + (T, Ev))
    if offset:
        k[..., -1] = 1.0
        q[..., -1] = offset * np.sqrt(E)
    c = lambda a: a.astype(dtype)  # noqa: E731
    return Case(name, q=c(q), k=c(k), v=c(v), n_splits=n_splits)


def _split_cases():
    rng = np.random.default_rng(9051)
    return (
        grouped(
            "splits",
            split_case("T=7 keys, 2 workers, E=4, Ev=3", rng, (), 7, 4, 3, 2),
            split_case("T=9 keys, 4 workers, E=2, Ev=2", rng, (), 9, 2, 2, 4),
            split_case("T=5 keys, 5 workers (one key each)", rng, (), 5, 3, 2, 5),
        )
        + grouped("batch dims", split_case("2 sequences x 3 heads, T=8, 3 workers", rng, (2, 3), 8, 4, 2, 3))
        + grouped(
            "large scores", split_case("T=6, 3 workers, scores near 750", rng, (), 6, 4, 2, 3, 1.0, 750.0)
        )
        + grouped("dtype", split_case("float32, T=10, 3 workers", rng, (), 10, 4, 3, 3, dtype=np.float32))
    )


_SPLIT_SOLUTION = '''
    def split_decode(q, k, v, n_splits):
        """One decoding step over a cache cut into n_splits consecutive parts, one per worker: (..., 1, Ev)."""
        E = q.shape[-1]
        outs, logw = [], []
        for k_part, v_part in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):
            s = q @ np.swapaxes(k_part, -1, -2) / np.sqrt(E)  # (..., 1, E) @ (..., E, t) -> (..., 1, t)
            m = s.max(axis=-1, keepdims=True)  # (..., 1, 1)
            p = np.exp(s - m)
            l = p.sum(axis=-1, keepdims=True)  # (..., 1, 1)
            outs.append(p @ v_part / l)  # (..., 1, Ev): this worker's output over its own keys
            ### BEGIN SOLUTION
            logw.append(m + np.log(l))  # (..., 1, 1): log of the part's sum of e^s
            ### END SOLUTION
        logw = np.stack(logw)  # (n_splits, ..., 1, 1)
        w = np.exp(logw - logw.max(axis=0))  # (n_splits, ..., 1, 1)
        return (w * np.stack(outs)).sum(axis=0) / w.sum(axis=0)  # (..., 1, Ev)
'''

_SPLIT_STUB = "logw.append(np.log(l))  # (..., 1, 1)"


register(
    Exercise(
        id="ch09.split_decode",
        number="9.5",
        title="one decoding step split among workers",
        points=2,
        function="split_decode",
        hint="take two workers whose keys score very differently: what does each one report, and on what "
        "scale?",
        kind="diagnose",
        forbids=NO_FUSED,
        description="`split_decode(q, k, v, n_splits)` is one decoding step done the way long caches are "
        "decoded on many workers at once: the cache of `T` keys and values is cut into `n_splits` "
        "consecutive parts, each worker attends (scaled scores) from the new query to its own part only "
        "and reports its part's output and one number per query, and a last step combines the reports. "
        "With `q (..., 1, E)`, `k (..., T, E)`, `v (..., T, Ev)` and `2 <= n_splits <= T`, it must return "
        "`(..., 1, Ev)`: the same output as attention from `q` to all `T` keys at once. It does not. "
        "Find the bug and fix it. Scores may be in the hundreds.",
        solution=_SPLIT_SOLUTION,
        stub=_SPLIT_STUB,
        reference=_split_decode,
        public_cases=_split_cases,
        diagnoses=(
            Diagnosis(
                "the output is off whenever the workers' largest scores differ: are their reports on one "
                "scale?",
                name="each part's sum relative to its own maximum",
                hint="a part's lse is its maximum plus the log of its sum: m + log(l)",
                variant=lambda *a: _split_decode(*a, mode="own maximum"),
            ),
            Diagnosis(
                "every worker's output counts the same, however much of the row's weight its keys hold",
                name="parts averaged equally",
                hint="weigh each part by its sum of e^s over all parts' sums",
                variant=lambda *a: _split_decode(*a, mode="averaged"),
            ),
            Diagnosis(
                "the parts whose keys score highest count least: what does each report say about its keys' scores?",
                name="maximum subtracted",
                hint="the log of e^m times l is m + log(l)",
                variant=lambda *a: _split_decode(*a, mode="maximum subtracted"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 9.6 causal tiles after a cache (extend)
def _tiled_case(name, rng, lead, L, S, E, Ev, block_size, dtype=np.float64):
    n = rng.normal
    return Case(
        name,
        q=n(size=lead + (L, E)).astype(dtype),
        k=n(size=lead + (S, E)).astype(dtype),
        v=n(size=lead + (S, Ev)).astype(dtype),
        block_size=block_size,
    )


def _causal_tiled_cases():
    rng = np.random.default_rng(907)
    return (
        grouped(
            "tiles",
            _tiled_case("L=S=8, blocks of 4", rng, (), 8, 8, 3, 2, 4),
            _tiled_case("L=S=7, blocks of 3 (ragged)", rng, (), 7, 7, 2, 3, 3),
            _tiled_case("L=8 new of S=10, blocks of 3", rng, (), 8, 10, 3, 2, 3),
            _tiled_case("L=6 new of S=8, blocks of 2", rng, (), 6, 8, 2, 2, 2),
            _tiled_case("L=1 new of S=9, blocks of 4 (one decoding step)", rng, (), 1, 9, 2, 3, 4),
            _tiled_case(
                "L=256 new of S=512, blocks of 32 (the method: tiles, not the whole score matrix)",
                rng,
                (),
                256,
                512,
                4,
                2,
                32,
            ),
        )
        + grouped(
            "batch dims",
            _tiled_case("a batch of 2, L=S=5, blocks of 2", rng, (2,), 5, 5, 3, 2, 2),
            _tiled_case("batch (2, 2), L=4 new of S=7, blocks of 3", rng, (2, 2), 4, 7, 2, 2, 3),
        )
        + grouped(
            "dtype", _tiled_case("float32, L=5 new of S=9, blocks of 2", rng, (), 5, 9, 4, 2, 2, np.float32)
        )
    )


def _n_blocks(n, block_size):
    return -(-n // block_size)  # ceil(n / block_size)


def _causal_tiled(q, k, v, block_size, align="bottom right", skip=True, mask=True):
    from ... import causal_mask

    L, S = q.shape[-2], k.shape[-2]
    offset = S - L if align == "bottom right" else 0  # query i sits at position offset + i
    visible = causal_mask(S)[S - L :] if align == "bottom right" else causal_mask(L, S)
    out = sdpa(q, k, v, visible if mask else None)[0]
    tiles = 0
    for i0 in range(0, L, block_size):
        last = offset + min(i0 + block_size, L) - 1  # the block's last query's position
        tiles += min(last // block_size + 1, _n_blocks(S, block_size)) if skip else _n_blocks(S, block_size)
    return out, np.array(tiles)


register(
    Exercise(
        id="ch09.causal_tiled_attention",
        number="9.6",
        title="causal tiles for a chunk of new tokens",
        points=4,
        function="causal_tiled_attention",
        stub=STUB_LINE,
        hint="place each block of queries at its positions among the S keys: which key blocks hold a key at "
        "or before its last query, and which of them also hold keys after some of its queries?",
        kind="extend",
        description="Causal attention for a chunk of new tokens after a cache: `k (..., S, E)`, "
        "`v (..., S, Ev)` hold all `S` tokens, the cached ones first, and `q (..., L, E)` ($L \\le S$) the "
        "last `L` of them, so query `i` is token `S - L + i` and sees keys `0 .. S - L + i` (scaled "
        "scores). Compute it tiled both ways: blocks of `block_size` queries counted from query 0 "
        "against blocks of `block_size` keys counted from key 0 (the last block of each may be shorter), "
        "never computing the scores of a tile in which no query may see any key. Return "
        "`(out (..., L, Ev), n_tiles)`, where `n_tiles` counts the (query block, key block) tiles whose "
        "scores you computed.",
        solution='''
            def causal_tiled_attention(q, k, v, block_size):
                """Causal tiled attention for the last L of S tokens: (out (..., L, Ev), tiles computed)."""
                ### BEGIN SOLUTION
                L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
                offset = S - L  # query i is token offset + i
                out = np.zeros(q.shape[:-1] + (v.shape[-1],))
                n_tiles = 0
                for i0 in range(0, L, block_size):  # one block of queries at a time
                    i1 = min(i0 + block_size, L)
                    rows = offset + np.arange(i0, i1)  # the block's positions among the S tokens
                    q_blk = q[..., i0:i1, :]
                    m = np.full(q_blk.shape[:-1], -np.inf)  # (..., b) running max, sum and output
                    l = np.zeros(q_blk.shape[:-1])
                    acc = np.zeros(q_blk.shape[:-1] + (v.shape[-1],))
                    for j0 in range(0, rows[-1] + 1, block_size):  # key blocks after the last query: skipped
                        j1 = min(j0 + block_size, S)
                        n_tiles += 1
                        s = q_blk @ np.swapaxes(k[..., j0:j1, :], -1, -2) / np.sqrt(E)  # (..., b, E) @ (..., E, b') -> (..., b, b')
                        allowed = np.arange(j0, j1)[None, :] <= rows[:, None]  # (b, b') causal, at the tokens' positions
                        s = np.where(allowed, s, -np.inf)
                        m_new = np.maximum(m, s.max(axis=-1))  # finite: key j0 <= every query of the block
                        p = np.exp(s - m_new[..., None])
                        rescale = np.exp(m - m_new)
                        l = l * rescale + p.sum(axis=-1)
                        acc = acc * rescale[..., None] + p @ v[..., j0:j1, :]  # (..., b, b') @ (..., b', Ev)
                        m = m_new
                    out[..., i0:i1, :] = acc / l[..., None]
                return out, n_tiles
                ### END SOLUTION
        ''',
        reference=_causal_tiled,
        public_cases=_causal_tiled_cases,
        outputs=("out", "n_tiles"),
        forbids=NO_FUSED,
        method=lambda: ScoreTiles(square=True, count_output=1),
        diagnoses=(
            Diagnosis(
                "you computed every tile: are there tiles in which no query may see any key?",
                name="every tile computed",
                hint="a key block that starts after the block's last query holds nothing any of its queries "
                "may see: skip it",
                variant=lambda q, k, v, b: _causal_tiled(q, k, v, b, skip=False),
            ),
            Diagnosis(
                "the new queries see the keys as if they were the first L tokens: where do they sit among "
                "the S?",
                name="causal mask aligned top-left",
                hint="query i is token S - L + i: it sees keys 0 .. S - L + i (the bottom-right alignment)",
                variant=lambda q, k, v, b: _causal_tiled(q, k, v, b, align="top left"),
            ),
            Diagnosis(
                "a query sees keys after its own token in the tiles it shares with them",
                name="no mask inside the tiles",
                hint="in a tile that holds keys after some of its queries, mask those pairs",
                variant=lambda q, k, v, b: _causal_tiled(q, k, v, b, mask=False),
            ),
        ),
    )
)
