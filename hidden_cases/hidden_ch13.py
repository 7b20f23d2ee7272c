"""Hidden cases, chapter 13 (beyond softmax): a longer sequence, one head of width 1, decays of 0 and
1 among recovered ones, top_k of 1 among indexer-picked keys, chunks longer than the sequence,
writing strengths all 1 among recovered values."""

import numpy as np

from attncourse.exercises import Case, grouped


def predict_hybrid_mib():
    return grouped("prediction", Case("the same hybrid and sequence"))


def recover_values():
    from attncourse.exercises.chapters.ch13 import _values_cases

    return _values_cases(seed=1916, hidden=True)


def recover_decays():
    from attncourse.exercises.chapters.ch13 import _gated_linear

    rng = np.random.default_rng(1912)
    n, u = rng.normal, rng.uniform

    def case(name, shape, Ev, decay, dtype=np.float64):
        *lead, L, E = shape
        q, k, v = n(size=shape), n(size=shape), n(size=(*lead, L, Ev))
        out = _gated_linear(q, k, v, np.asarray(decay, dtype=np.float64))
        return Case(name, q=q.astype(dtype), k=k.astype(dtype), v=v.astype(dtype), out=out.astype(dtype))

    return (
        grouped("decays", case("L=9, E=2, Ev=4", (9, 2), 4, u(0.3, 1, 9)))
        + grouped(
            "decays of 0 and 1",
            case(
                "L=6, decays 0 at the start and at the end, 1 between",
                (6, 3),
                3,
                [0.0, 0.9, 1.0, 1.0, 0.6, 0.0],
            ),
        )
        + grouped("batch dims", case("batch (2, 2), L=4", (2, 2, 4, 3), 2, u(0.2, 1, (2, 2, 4))))
        + grouped("dtype", case("float32, L=6, decays near 1", (6, 3), 2, u(0.9, 1, 6), dtype=np.float32))
    )


def chunked_delta_rule():
    rng = np.random.default_rng(1913)
    n, u = rng.normal, rng.uniform

    def unit(x):
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    def case(name, shape, Ev, C, dtype=np.float64):
        *lead, L, E = shape
        return Case(
            name,
            q=n(size=shape).astype(dtype),
            k=unit(n(size=shape)).astype(dtype),
            v=n(size=(*lead, L, Ev)).astype(dtype),
            beta=u(0.2, 1, (*lead, L)).astype(dtype),
            chunk_size=C,
        )

    return (
        grouped(
            "chunks",
            case("L=10, chunks of 4, E=2, Ev=3", (10, 2), 3, 4),
            case("L=9, chunks of 3", (9, 3), 1, 3),
        )
        + grouped("chunk sizes at the ends", case("L=6, one chunk of 6", (6, 2), 2, 6))
        + grouped("batch dims", case("batch (2, 2), L=5, chunks of 2", (2, 2, 5, 3), 2, 2))
        + grouped("dtype", case("float32, L=7, chunks of 5", (7, 4), 3, 5, dtype=np.float32))
    )


def indexed_sparse_attention():
    from attncourse.exercises.chapters._ch13_sparse import sparse_cases

    return sparse_cases(seed=1905, hidden=True)


def chunked_linear_attention():
    rng = np.random.default_rng(1906)
    n = rng.normal
    return (
        grouped(
            "chunks",
            Case("L=5, one chunk of 8", q=n(size=(5, 3)), k=n(size=(5, 3)), v=n(size=(5, 2)), chunk_size=8),
            Case("L=9, chunks of 2", q=n(size=(9, 1)), k=n(size=(9, 1)), v=n(size=(9, 4)), chunk_size=2),
        )
        + grouped(
            "batch dims",
            Case(
                "batch (2, 2), L=5, chunks of 3",
                q=n(size=(2, 2, 5, 2)),
                k=n(size=(2, 2, 5, 2)),
                v=n(size=(2, 2, 5, 3)),
                chunk_size=3,
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=10, chunks of 4",
                q=n(size=(10, 3)).astype(np.float32),
                k=n(size=(10, 3)).astype(np.float32),
                v=n(size=(10, 2)).astype(np.float32),
                chunk_size=4,
            ),
        )
    )


HIDDEN = {
    "ch13.predict_hybrid_mib": predict_hybrid_mib,
    "ch13.recover_decays": recover_decays,
    "ch13.chunked_linear_attention": chunked_linear_attention,
    "ch13.chunked_delta_rule": chunked_delta_rule,
    "ch13.indexed_sparse_attention": indexed_sparse_attention,
    "ch13.recover_delta_values": recover_values,
}
