"""Chapter 6 exercise 6.10: the masks a KV cache, run one token at a time, reproduces, and where it
first goes wrong for the others."""

from __future__ import annotations

import numpy as np

from ...engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []


# ----------------------------------------------------------------------------- 6.10 where a KV cache goes wrong
def _cache_mask(L, kind, a=0, b=0):
    """One (L, L) self-attention mask of a kind the exercise's cases mix (True = may attend)."""
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    causal = j <= i
    masks = {
        "causal": causal,
        "window": causal & (j > i - a),  # a causal window of a keys
        "packed": causal & ((i < a) == (j < a)),  # two documents, the second from position a
        "left padded": causal & (j >= a),  # a left pads, causal
        "prefix": causal | (j < a),  # a prefix LM with a prefix of a tokens
        "padded both ways": np.broadcast_to(j < a, (L, L)),  # an encoder's padding mask, length a
        "two-sided window": np.abs(i - j) < a,
        "leak": causal | ((i == a) & (j == b)),  # causal, and query a also sees key b
        "global last": causal | (j == L - 1),  # every query sees the last token
    }
    return masks[kind].copy()


def _cache_stack(L, *specs):
    return np.stack([_cache_mask(L, *spec) for spec in specs])


def _first_wrong(masks, how="rows"):
    m = np.asarray(masks, dtype=bool)
    L = m.shape[-1]
    if how == "not tril":  # the first row that is not the full causal row
        bad = (m != np.tril(np.ones((L, L), dtype=bool))).any(axis=-1)
    elif how == "diagonal too":  # the query's own key counted as a future one
        bad = np.triu(m).any(axis=-1)
    elif how == "columns":  # the first key an earlier query sees
        bad = np.triu(m, k=1).any(axis=-2)
    else:
        bad = np.triu(m, k=1).any(axis=-1)  # (N, L): row t holds a True after t
    first = np.where(bad.any(axis=-1), bad.argmax(axis=-1), L)
    return first if how != "minus one" else np.where(first == L, -1, first)


def _cache_cases():
    return grouped(
        "masks",
        Case(
            "L=6, four masks",
            masks=_cache_stack(6, ("causal",), ("window", 3), ("padded both ways", 6), ("leak", 3, 5)),
        ),
        Case(
            "L=5, four masks",
            masks=_cache_stack(5, ("packed", 2), ("prefix", 3), ("left padded", 2), ("two-sided window", 2)),
        ),
        Case(
            "L=7, three masks",
            masks=_cache_stack(7, ("global last",), ("leak", 5, 6), ("prefix", 1)),
        ),
    )


register(
    Exercise(
        id="ch06.first_wrong_cached_output",
        number="6.10",
        title="where a KV cache goes wrong",
        points=1,
        function="first_wrong_cached_output",
        hint="what does the cache hold when it computes query t, and what does the mask let query t see?",
        description="A decoder with a KV cache runs a sequence one token at a time: at step `t` it adds token "
        "`t`'s key and value to the cache, computes the output of query `t` from the cached keys `0..t` "
        "under row `t` of its self-attention mask, and never computes that output again. `masks (N, L, L)` "
        "holds the boolean self-attention masks of N models (True = may attend; any pattern). For each "
        "model, return the first position `t` whose cached output can differ, for some inputs, from the "
        "output of attention over the whole sequence at once under the same mask, or `L` if none can: "
        "an integer array of shape `(N,)`.",
        solution='''
            def first_wrong_cached_output(masks):
                """First position whose cached output can differ from full attention, or L: (N,) ints."""
                ### BEGIN SOLUTION
                m = np.asarray(masks, dtype=bool)
                L = m.shape[-1]
                # query t needs a key after t that the cache does not hold yet: True strictly above the diagonal
                needs_future = np.triu(m, k=1).any(axis=-1)  # (N, L)
                return np.where(needs_future.any(axis=-1), needs_future.argmax(axis=-1), L)
                ### END SOLUTION
        ''',
        reference=_first_wrong,
        public_cases=_cache_cases,
        needs=("import numpy as np", "import torch"),
        diagnoses=(
            Diagnosis(
                "a mask under which every cached output is right is reported as going wrong",
                name="compared with the causal mask",
                hint="the cache only lacks the keys after t; a query that sees fewer keys is computed right",
                variant=lambda masks: _first_wrong(masks, "not tril"),
            ),
            Diagnosis(
                "a query that attends to itself is reported as going wrong",
                name="its own key counted as missing",
                hint="at step t the cache already holds key t",
                variant=lambda masks: _first_wrong(masks, "diagonal too"),
            ),
            Diagnosis(
                "that position is a key's, not the query whose output goes wrong",
                name="the key's position",
                hint="return the query t, the row of the mask",
                variant=lambda masks: _first_wrong(masks, "columns"),
            ),
            Diagnosis(
                "a mask under which no output goes wrong gets another value than L",
                name="-1 for none",
                hint="none: L",
                variant=lambda masks: _first_wrong(masks, "minus one"),
            ),
        ),
    )
)
