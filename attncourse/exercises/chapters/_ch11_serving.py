"""Chapter 11 exercises 11.5 and 11.6, on serving: a long prompt read in chunks by a windowed model
whose memory does not grow with the prompt, and a sequence's lost block table recovered from the pool."""

from __future__ import annotations

import numpy as np

from ... import scaled_dot_product_attention as sdpa
from ... import sliding_window_mask
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

NO_FUSED = ("torch.nn.functional.scaled_dot_product_attention",)


# ----------------------------------------------------------------------------- 11.5 chunked prefill (diagnose)
def _prefill(q, k, v, window, chunk, cut_first=False, wide=False, top_left=False):
    """Outputs of a prompt read `chunk` tokens at a time; the flags are the classic mistakes."""
    T = q.shape[-2]
    if not (cut_first or wide or top_left):
        return sdpa(q, k, v, sliding_window_mask(T, window))[0]
    K, V = k[..., :0, :], v[..., :0, :]
    w = window + 1 if wide else window
    rows = []
    for start in range(0, T, chunk):
        stop = min(start + chunk, T)
        K = np.concatenate([K, k[..., start:stop, :]], axis=-2)
        V = np.concatenate([V, v[..., start:stop, :]], axis=-2)
        if cut_first:  # the cache is cut to the window before the chunk is scored
            K, V = K[..., -window:, :], V[..., -window:, :]
        n, c = K.shape[-2], stop - start
        i = np.arange(c)[:, None] + (0 if top_left else n - c)
        j = np.arange(n)[None, :]
        rows.append(sdpa(q[..., start:stop, :], K, V, (j <= i) & (j > i - w))[0])
        K, V = K[..., -window:, :], V[..., -window:, :]
    return np.concatenate(rows, axis=-2)


def prefill_case(name, rng, shape, Ev, window, chunk, dtype=np.float64):
    """A case of 11.5: q, k `shape` = (..., T, E), v (..., T, Ev), read `chunk` tokens at a time."""
    n = rng.normal
    v_shape = tuple(shape[:-1]) + (Ev,)
    return Case(
        name,
        q=n(size=shape).astype(dtype),
        k=n(size=shape).astype(dtype),
        v=n(size=v_shape).astype(dtype),
        window=window,
        chunk=chunk,
    )


def _prefill_cases():
    rng = np.random.default_rng(1115)
    return (
        grouped(
            "chunks",
            prefill_case("T=9, window 4, chunks of 3", rng, (9, 4), 2, 4, 3),
            prefill_case("T=10, window 3, chunks of 2", rng, (10, 3), 3, 3, 2),
            prefill_case("T=7, window 3, chunks of 5 (longer than the window)", rng, (7, 2), 2, 3, 5),
        )
        + grouped(
            "batch dims",
            prefill_case("2 heads, T=8, window 3, chunks of 4", rng, (2, 8, 3), 3, 3, 4),
            prefill_case("batch (2, 2), T=6, window 2, chunks of 3", rng, (2, 2, 6, 2), 3, 2, 3),
        )
        + grouped(
            "dtype",
            prefill_case("float32, T=8, window 4, chunks of 3", rng, (8, 4), 2, 4, 3, np.float32),
        )
    )


register(
    Exercise(
        id="ch11.window_prefill",
        number="11.5",
        title="a long prompt read in chunks by a windowed model",
        points=2,
        function="window_prefill",
        hint="look at which keys the first queries of a chunk can still reach when they are scored",
        kind="diagnose",
        forbids=NO_FUSED,
        description="A server reads a long prompt `chunk` tokens at a time through a layer with a sliding "
        "window of `window` tokens (the query included, as `ac.sliding_window_mask`); what it holds of a "
        "prompt between chunks does not grow with the prompt's length. `window_prefill` does this for "
        "queries, keys and values `q`, `k` `(..., T, E)` and `v` `(..., T, Ev)` and returns the `T` "
        "outputs `(..., T, Ev)`, which must equal attention over the whole prompt under "
        "`ac.sliding_window_mask(T, window)`. Symptom: some of its outputs differ from that attention, "
        "others agree. Find the bug and fix it.",
        solution='''
            def window_prefill(q, k, v, window, chunk):
                """Outputs (..., T, Ev) of a prompt read `chunk` tokens at a time."""
                K, V = k[..., :0, :], v[..., :0, :]  # nothing kept yet: (..., 0, E), (..., 0, Ev)
                outputs = []
                for start in range(0, q.shape[-2], chunk):
                    stop = min(start + chunk, q.shape[-2])
                    ### BEGIN SOLUTION
                    K = np.concatenate([K, k[..., start:stop, :]], axis=-2)  # (..., n, E): kept, then the chunk
                    V = np.concatenate([V, v[..., start:stop, :]], axis=-2)  # (..., n, Ev)
                    n, c = K.shape[-2], stop - start
                    i = np.arange(c)[:, None] + (n - c)  # the chunk's queries are the last c of the n positions
                    j = np.arange(n)[None, :]
                    scores = q[..., start:stop, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])  # (..., c, n)
                    scores = np.where((j <= i) & (j > i - window), scores, -np.inf)
                    outputs.append(softmax(scores) @ V)  # (..., c, Ev)
                    K, V = K[..., -window:, :], V[..., -window:, :]  # what the next chunk is given
                    ### END SOLUTION
                return np.concatenate(outputs, axis=-2)
        ''',
        stub="""
            K = np.concatenate([K, k[..., start:stop, :]], axis=-2)[..., -window:, :]  # (..., n, E)
            V = np.concatenate([V, v[..., start:stop, :]], axis=-2)[..., -window:, :]  # (..., n, Ev)
            n, c = K.shape[-2], stop - start
            i = np.arange(c)[:, None] + (n - c)  # (c, 1)
            j = np.arange(n)[None, :]  # (1, n)
            scores = q[..., start:stop, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])  # (..., c, n)
            scores = np.where((j <= i) & (j > i - window), scores, -np.inf)
            outputs.append(softmax(scores) @ V)  # (..., c, Ev)
        """,
        reference=_prefill,
        public_cases=_prefill_cases,
        outputs=("out",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "every query of a chunk but its last sees fewer keys than its window: which keys are "
                "left when the chunk is scored?",
                name="cache cut before the chunk is scored",
                hint="score the chunk against the kept tokens and the whole chunk; cut to the last `window` "
                "tokens only afterwards (the first query of a chunk needs window - 1 tokens before it)",
                variant=lambda q, k, v, window, chunk: _prefill(q, k, v, window, chunk, cut_first=True),
            ),
            Diagnosis(
                "each query sees one key more than its window: does the window count the query itself?",
                name="window one too wide",
                hint="the window is i - window < j <= i: `window` keys, the query's own included",
                variant=lambda q, k, v, window, chunk: _prefill(q, k, v, window, chunk, wide=True),
            ),
            Diagnosis(
                "the chunk's queries are placed at the start of what is kept: which positions are they?",
                name="chunk aligned top-left",
                hint="the chunk's c queries are the last c of the n positions (bottom-right alignment)",
                variant=lambda q, k, v, window, chunk: _prefill(q, k, v, window, chunk, top_left=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 11.6 lost block table (extend)
def _table(k_pool, k, pool_order=False, first_slot=False, whole_tail=False):
    """The blocks of `k_pool` that hold `k`'s tokens, in the order the sequence uses them."""
    k_pool, k = np.asarray(k_pool, dtype=np.float64), np.asarray(k, dtype=np.float64)
    b, length = k_pool.shape[1], k.shape[0]
    table = []
    for m in range(-(-length // b)):  # block m of the sequence holds tokens m b .. m b + b - 1
        tokens = k[m * b : (m + 1) * b]
        if first_slot:  # only the block's first slot compared
            tokens = tokens[:1]
        slots = k_pool if whole_tail else k_pool[:, : len(tokens)]  # whole_tail: every slot compared
        fits = [p for p in range(len(k_pool)) if np.array_equal(slots[p], tokens)]
        if fits:
            table.append(fits[0])
    return np.array(sorted(table) if pool_order else table, dtype=np.int64)


def block_table_case(name, rng, n_blocks, b, H, E, table, length, decoys=(), dtype=np.float64):
    """A case of 11.6: a pool of noise holding one sequence at `table`; a decoy (p, m, count) is block p
    beginning with the first `count` tokens of the sequence's block m (a shared prompt, then other data)."""
    pool = rng.normal(size=(n_blocks, b, H, E))
    k = rng.normal(size=(length, H, E))
    for m, p in enumerate(table):
        held = k[m * b : (m + 1) * b]
        pool[p, : len(held)] = held
    for p, m, count in decoys:
        pool[p, :count] = k[m * b : m * b + count]
    return Case(name, k_pool=pool.astype(dtype), k=k.astype(dtype))


def _table_cases():
    rng = np.random.default_rng(1116)
    return grouped(
        "pools",
        block_table_case(
            "8 blocks of 4, 10 tokens, 2 heads", rng, 8, 4, 2, 3, [5, 1, 6], 10, [(0, 1, 2), (2, 2, 1)]
        ),
        block_table_case("6 blocks of 3, 6 tokens, 1 head", rng, 6, 3, 1, 4, [4, 0], 6, [(2, 0, 2)]),
        block_table_case(
            "9 blocks of 2, 7 tokens, 3 heads", rng, 9, 2, 3, 2, [7, 2, 8, 3], 7, [(1, 1, 1), (0, 0, 1)]
        ),
    ) + grouped(
        "dtype",
        block_table_case(
            "float32, 5 blocks of 4, 5 tokens", rng, 5, 4, 2, 4, [3, 1], 5, [(0, 0, 3)], np.float32
        ),
    )


register(
    Exercise(
        id="ch11.recover_block_table",
        number="11.6",
        title="which blocks hold this sequence?",
        points=2,
        function="recover_block_table",
        hint="for each block of the sequence's tokens, find the pool block whose slots hold exactly those tokens",
        kind="extend",
        description="A server keeps the keys of all its sequences in one pool `k_pool (n_blocks, "
        "block_size, H, E)`, laid out as the chapter's `PagedKVCache` lays out tokens. One sequence's block "
        "table was lost; its keys `k (length, H, E)` (tokens `0 .. length - 1`, exactly as they were "
        "written) were not. The rest of the pool holds other data, and some other sequences began with the "
        "same tokens as this one and then went their own way. Return the lost block table, as "
        "`PagedKVCache` would hold it: a 1-D integer array. On every case exactly one table fits.",
        solution='''
            def recover_block_table(k_pool, k):
                """1-D integer array: the sequence's blocks, in the order it uses them."""
                ### BEGIN SOLUTION
                b = k_pool.shape[1]
                table = []
                for start in range(0, k.shape[0], b):
                    tokens = k[start : start + b]  # the tokens one block holds (fewer in the last)
                    held = k_pool[:, : len(tokens)]  # (n_blocks, len(tokens), H, E): those slots of every block
                    fits = np.all(held == tokens, axis=(1, 2, 3))
                    table.append(int(np.argmax(fits)))
                return np.array(table)
                ### END SOLUTION
        ''',
        reference=_table,
        public_cases=_table_cases,
        outputs=("block_table",),
        needs=("import numpy as np",),
        diagnoses=(
            Diagnosis(
                "those are the right blocks in the pool's order: in which order does the sequence use them?",
                name="blocks in pool order",
                hint="block m of the table holds tokens m * block_size onwards: list the blocks in the order "
                "of the tokens they hold",
                variant=lambda k_pool, k: _table(k_pool, k, pool_order=True),
            ),
            Diagnosis(
                "a block that only begins like one of the sequence's was taken: how much of a block must "
                "match?",
                name="first slot compared",
                hint="compare every slot the sequence fills in that block, not only its first",
                variant=lambda k_pool, k: _table(k_pool, k, first_slot=True),
            ),
            Diagnosis(
                "the sequence's last block is missing: what is in its slots after the sequence's last token?",
                name="last block compared whole",
                hint="in the last block only the slots up to the sequence's last token are its own",
                variant=lambda k_pool, k: _table(k_pool, k, whole_tail=True),
            ),
        ),
    )
)
