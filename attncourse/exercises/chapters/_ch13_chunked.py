"""Chapter 13 exercises 13.3 and 13.4, the chunked forms: causal linear attention chunk by chunk (find
the bug), then the delta rule chunk by chunk, equal to ``ac.delta_rule``, with a probe that watches that
the answer reads its inputs a chunk at a time, not one position at a time."""

from __future__ import annotations

from typing import Any, Callable, List, Optional

import numpy as np

from ... import delta_rule
from ...i18n import tr
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__ = ["TokenReads", "chunked_delta", "chunked_linear_variant"]


# ----------------------------------------------------------------------------- 13.3 chunked linear attention (diagnose)
def _phi(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))  # elu(x) + 1


def chunked_linear_variant(
    q,
    k,
    v,
    chunk_size,
    *,
    late_den=False,
    den_inside=True,
    write_first=False,
    carry=True,
    mask=True,
    norm=True,
):
    """Normalised causal linear attention with phi = elu + 1, chunk by chunk; the flags make the
    classic mistakes (``late_den``: the normaliser read after the chunk's write, the handed-out bug)."""
    fq, fk = _phi(np.asarray(q)), _phi(np.asarray(k))
    S = np.zeros(fq.shape[:-2] + (fq.shape[-1], v.shape[-1]), dtype=np.result_type(q, k, v))
    z = np.zeros(fq.shape[:-2] + (fq.shape[-1],), dtype=S.dtype)
    outs = []
    for s in range(0, fq.shape[-2], chunk_size):
        qc, kc, vc = (
            fq[..., s : s + chunk_size, :],
            fk[..., s : s + chunk_size, :],
            v[..., s : s + chunk_size, :],
        )
        sims = qc @ np.swapaxes(kc, -1, -2)
        if mask:
            sims = np.tril(sims)
        if not carry:
            S, z = np.zeros_like(S), np.zeros_like(z)
        if write_first:
            S = S + np.swapaxes(kc, -1, -2) @ vc
        num = qc @ S + sims @ vc
        den = np.einsum("...ce,...e->...c", qc, z) + (sims.sum(-1) if den_inside else 0.0)
        if not write_first:
            S = S + np.swapaxes(kc, -1, -2) @ vc
        if late_den:
            den = np.einsum("...ce,...e->...c", qc, z + kc.sum(-2))
        z = z + kc.sum(-2)
        with np.errstate(divide="ignore", invalid="ignore"):  # a denominator of 0 is a mistake's
            outs.append(num / den[..., None] if norm else num)
    return np.concatenate(outs, axis=-2)


def _linear_cases():
    rng = np.random.default_rng(1306)
    n = rng.normal
    return (
        grouped(
            "chunks",
            Case(
                "L=8, chunks of 4, E=3, Ev=2",
                q=n(size=(8, 3)),
                k=n(size=(8, 3)),
                v=n(size=(8, 2)),
                chunk_size=4,
            ),
            Case(
                "L=7, chunks of 3 (a short last chunk), E=2, Ev=3",
                q=n(size=(7, 2)),
                k=n(size=(7, 2)),
                v=n(size=(7, 3)),
                chunk_size=3,
            ),
            Case("L=5, one chunk of 5", q=n(size=(5, 2)), k=n(size=(5, 2)), v=n(size=(5, 2)), chunk_size=5),
        )
        + grouped(
            "batch dims",
            Case(
                "2 heads, L=6, chunks of 2",
                q=n(size=(2, 6, 3)),
                k=n(size=(2, 6, 3)),
                v=n(size=(2, 6, 2)),
                chunk_size=2,
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=6, chunks of 4",
                q=n(size=(6, 4)).astype(np.float32),
                k=n(size=(6, 4)).astype(np.float32),
                v=n(size=(6, 2)).astype(np.float32),
                chunk_size=4,
            ),
        )
    )


def _lv(**flags):
    return lambda q, k, v, chunk_size: chunked_linear_variant(q, k, v, chunk_size, **flags)


register(
    Exercise(
        id="ch13.chunked_linear_attention",
        number="13.3",
        title="chunked causal linear attention",
        points=2,
        function="chunked_linear_attention",
        hint="for one query, list the keys that reach its numerator and its denominator: each key up to the query must reach both exactly once, and no later key",
        kind="diagnose",
        forbids=("attncourse.linear_attention", "attncourse.elu_feature_map"),
        description="Training kernels compute linear attention chunk by chunk: a state carried from one "
        "chunk to the next, and inside a chunk a few matrix products over all its positions at once. "
        "`chunked_linear_attention(q, k, v, chunk_size)` does this for the chapter's causal linear "
        "attention with $\\phi(x) = \\text{elu}(x) + 1$ and its normaliser, for `q, k (..., L, E)`, "
        "`v (..., L, Ev)`: for any `chunk_size` (the last chunk may be shorter) it should return the "
        "same `out (..., L, Ev)` as the recurrence of the chapter's first section, "
        "`ac.linear_attention(q, k, v, feature_map=ac.elu_feature_map)`. It does not for every "
        "chunk size. Find which outputs are wrong, then the bug, and fix it; numpy only.",
        solution='''
            def chunked_linear_attention(q, k, v, chunk_size):
                """Causal linear attention, phi = elu + 1, normalised, chunk by chunk: (..., L, Ev)."""
                fq, fk = (np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0))) for x in (q, k))  # phi
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))  # (..., E, Ev): sum of phi(k_j)^T v_j
                z = np.zeros(q.shape[:-2] + (q.shape[-1],))  # (..., E): sum of phi(k_j)
                outs = []
                for s in range(0, q.shape[-2], chunk_size):
                    qc, kc, vc = fq[..., s : s + chunk_size, :], fk[..., s : s + chunk_size, :], v[..., s : s + chunk_size, :]
                    sims = np.tril(qc @ np.swapaxes(kc, -1, -2))  # (..., C, C)
                    num = qc @ S + sims @ vc  # (..., C, Ev)
                    ### BEGIN SOLUTION
                    den = np.einsum("...ce,...e->...c", qc, z) + sims.sum(-1)  # (..., C): the earlier chunks, then this chunk's keys
                    S = S + np.swapaxes(kc, -1, -2) @ vc  # (..., E, Ev)
                    z = z + kc.sum(-2)  # (..., E)
                    ### END SOLUTION
                    outs.append(num / den[..., None])
                return np.concatenate(outs, axis=-2)
        ''',
        stub="""
            S = S + np.swapaxes(kc, -1, -2) @ vc  # (..., E, Ev)
            z = z + kc.sum(-2)  # (..., E)
            den = np.einsum("...ce,...e->...c", qc, z)  # (..., C)
        """,
        reference=chunked_linear_variant,
        public_cases=_linear_cases,
        outputs=("out",),
        needs=("import numpy as np", "import torch"),
        diagnoses=(
            Diagnosis(
                "right with chunks of 1 and at each chunk's last position, too small elsewhere: which keys "
                "does a query's denominator sum over?",
                name="normaliser read after the chunk's write",
                hint="a query's denominator holds the keys up to it: phi(q) . z from before the chunk, plus "
                "its row of the masked products",
                variant=_lv(late_den=True),
            ),
            Diagnosis(
                "each output's denominator misses some of the keys its numerator reads: which of them?",
                name="normaliser without the chunk's own keys",
                hint="add each query's row sum of the masked products to phi(q) . z",
                variant=_lv(den_inside=False),
            ),
            Diagnosis(
                "each chunk counts its own keys twice, and its early queries read its later keys: when is "
                "the state read?",
                name="state written before it is read",
                hint="read qc @ S before adding this chunk's kc^T vc to S",
                variant=_lv(write_first=True),
            ),
            Diagnosis(
                "the outputs only see keys of their own chunk: what happens to the state between chunks?",
                name="state not carried",
                hint="keep S and z from one chunk to the next; start them at zero once",
                variant=_lv(carry=False),
            ),
            Diagnosis(
                "a query reads the later keys of its own chunk: which keys inside the chunk may it see?",
                name="chunk not masked",
                hint="keep the lower triangle of phi(qc) phi(kc)^T, the diagonal included",
                variant=_lv(mask=False),
            ),
            Diagnosis(
                "the outputs grow with the number of keys read: what are they divided by?",
                name="not normalised",
                hint="divide each numerator by phi(q_t) . z_t, the sum of its similarities",
                variant=_lv(norm=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- the probe
class _Watched(np.ndarray):
    """An input whose indexing is watched: reading one position of its token axis is counted.

    Only ``__getitem__`` and a copy make a watched array (a slice of the token axis stays watched,
    so a chunk's rows are watched too, and so is their ``.copy()`` or ``np.copy``); whatever numpy
    computes from it is a plain array."""

    _watch: Optional[list] = None  # [count, token axis (negative)]

    def __array_finalize__(self, obj: Any) -> None:
        self._watch = None  # views made by methods (reshape, .T ...) are not watched

    def _plain(self) -> np.ndarray:
        return self.view(np.ndarray)

    @staticmethod
    def _strip(items: Any) -> Any:
        if isinstance(items, _Watched):
            return items._plain()
        if isinstance(items, (list, tuple)):
            return type(items)(_Watched._strip(x) for x in items)
        return items

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if "out" in kwargs:
            kwargs["out"] = self._strip(kwargs["out"])
        return getattr(ufunc, method)(*self._strip(inputs), **kwargs)

    def copy(self, order: str = "C") -> "_Watched":  # a copy of watched rows is watched the same
        out = self._plain().copy(order).view(_Watched)
        out._watch = self._watch
        return out

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func is np.copy and args and isinstance(args[0], _Watched) and args[0]._watch is not None:
            return args[0].copy()
        return func(*self._strip(args), **{k: self._strip(v) for k, v in kwargs.items()})

    def _token_item(self, key: Any) -> Any:
        key = key if isinstance(key, tuple) else (key,)
        if any(isinstance(x, (np.ndarray, list)) for x in key):
            return "fancy"
        real = [x for x in key if x is not None and x is not Ellipsis]
        if any(x is Ellipsis for x in key):
            i = next(j for j, x in enumerate(key) if x is Ellipsis)
            key = key[:i] + (slice(None),) * (self.ndim - len(real)) + key[i + 1 :]
        key = tuple(x for x in key if x is not None)
        pos = self.ndim + self._watch[1]
        return (key[pos] if pos < len(key) else slice(None)), key[pos + 1 :]

    def __getitem__(self, key: Any) -> Any:
        result = self._plain()[key]
        if self._watch is None or self.ndim + self._watch[1] < 0:
            return result
        found = self._token_item(key)
        if found == "fancy":
            return result
        item, rest = found
        n = self.shape[self._watch[1]]
        if isinstance(item, (int, np.integer)) or (
            isinstance(item, slice) and len(range(*item.indices(n))) == 1
        ):
            self._watch[0] += 1
        if isinstance(item, slice) and all(isinstance(x, slice) and x == slice(None) for x in rest):
            out = np.asarray(result).view(_Watched)
            out._watch = self._watch  # a chunk of rows: still watched, the same count
            return out
        return result

    def __iter__(self):
        if self._watch is not None and self.ndim + self._watch[1] == 0:
            self._watch[0] += self.shape[0]
        return iter(self._plain())


class TokenReads:
    """The chunked form reads its inputs a chunk at a time: an answer that reads ``q``, ``k`` or ``v``
    one position at a time (more single positions than there are chunks) breaks it.
    An answer that turns its inputs into plain arrays or tensors first is not seen (a stated limit)."""

    rule = (
        "read `q`, `k` and `v` a chunk at a time: an answer "
        "that indexes or iterates any of them, a chunk of them or a copy of it one position at a time "
        "scores 0 (checked while it runs)."
    )

    def __init__(self) -> None:
        self.counts: List[list] = []
        self.chunks = 0

    def prepare(self, args: List[Any]) -> List[Any]:
        q, k, v, beta, C = args[:5]
        if not all(isinstance(a, np.ndarray) for a in (q, k, v, beta)):
            return args
        L = q.shape[-2]
        self.chunks = -(-L // max(int(C), 1))
        out = []  # beta stays plain: a forward substitution may read it row by row
        for a, axis in ((q, -2), (k, -2), (v, -2)):
            w = np.asarray(a).view(_Watched)
            w._watch = [0, axis]
            self.counts.append(w._watch)
            out.append(w)
        return out + list(args[3:])

    def verdict(self, fn: Callable[..., Any], args: List[Any], arrays: List[np.ndarray]) -> Optional[str]:
        for name, (count, _) in zip(("q", "k", "v"), self.counts):
            if count > self.chunks:
                return tr(
                    "method rule broken: your answer read {count} single positions of `{name}` for "
                    "{chunks} chunks; the chunked form reads each chunk's rows at once",
                    count=count,
                    name=name,
                    chunks=self.chunks,
                )
        return None


# ----------------------------------------------------------------------------- 13.4 chunked delta rule
def chunked_delta(q, k, v, beta, chunk_size, *, carry=True, correct=True, scale=True, own_write=True):
    """The delta rule chunk by chunk (the UT form); the flags make the classic mistakes."""
    E, L = q.shape[-1], q.shape[-2]
    S = np.zeros(q.shape[:-2] + (E, v.shape[-1]), dtype=np.result_type(q, k, v, beta))
    outs = []
    for s in range(0, L, chunk_size):
        qc, kc, vc, bc = (
            q[..., s : s + chunk_size, :],
            k[..., s : s + chunk_size, :],
            v[..., s : s + chunk_size, :],
            beta[..., s : s + chunk_size],
        )
        C = qc.shape[-2]
        if not carry:
            S = np.zeros_like(S)
        rhs = bc[..., None] * (vc - kc @ S)  # (..., C, Ev)
        if correct:  # (I + strictly-lower(beta K K^T)) U = beta (V - K S)
            A = np.eye(C) + np.tril(bc[..., None] * (kc @ np.swapaxes(kc, -1, -2)), -1)
            U = np.linalg.solve(A, rhs)
        else:
            U = rhs
        inside = np.tril(qc @ np.swapaxes(kc, -1, -2), 0 if own_write else -1)
        outs.append(qc @ S + inside @ U)
        S = S + np.swapaxes(kc, -1, -2) @ U
    out = np.concatenate(outs, axis=-2)
    return out / np.sqrt(E) if scale else out


def _reference(q, k, v, beta, chunk_size):
    return delta_rule(q, k, v, beta)[0]


def _cases():
    rng = np.random.default_rng(1313)
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
            case("L=8, chunks of 4, E=3, Ev=2", (8, 3), 2, 4),
            case("L=7, chunks of 3 (a short last chunk), E=4, Ev=3", (7, 4), 3, 3),
        )
        + grouped(
            "chunk sizes at the ends",
            case("L=5, chunks of 1", (5, 2), 2, 1),
            case("L=5, one chunk of 8", (5, 3), 2, 8),
        )
        + grouped("batch dims", case("2 heads, L=6, chunks of 2", (2, 6, 3), 2, 2))
        + grouped("dtype", case("float32, L=8, chunks of 4", (8, 4), 2, 4, dtype=np.float32))
    )


def _v(**flags):
    return lambda q, k, v, beta, chunk_size: chunked_delta(q, k, v, beta, chunk_size, **flags)


register(
    Exercise(
        id="ch13.chunked_delta_rule",
        number="13.4",
        title="the delta rule, chunk by chunk",
        points=3,
        function="chunked_delta_rule",
        hint="within a chunk, u_t depends on the u_j of the chunk's earlier positions through k_t . k_j: a unit lower-triangular system; the state changes only between chunks",
        kind="extend",
        forbids=("attncourse.delta_rule", "attncourse.linear_attention"),
        method=TokenReads,
        description="Exercise 13.3 computes linear attention chunk by chunk: a state carried from one "
        "chunk to the next, and inside a chunk a few matrix products over all its positions at once. "
        "Training kernels run the delta rule the same way, but the section on the delta rule measured why the "
        "chunk cannot be copied as it is: the rule to preserve is, at every position $t$, "
        "$u_t = \\beta_t (v_t - k_t S_{t-1})$, $S_t = S_{t-1} + k_t^\\top u_t$, "
        "$o_t = q_t S_t / \\sqrt{E}$, where $S_{t-1}$ is the state after position $t - 1$ also when "
        "$t - 1$ lies in the same chunk, and the corrections computed from the state the chunk starts "
        "with miss from the chunk's second position on. Write `chunked_delta_rule(q, k, v, beta, "
        "chunk_size)` in numpy for `q, k (..., L, E)` (unit-length keys), `v (..., L, Ev)`, "
        "`beta (..., L)`: cut the positions into chunks of `chunk_size` (the last may be shorter), carry "
        "the state from chunk to chunk, and return the same `out (..., L, Ev)` as the chapter's "
        "`ac.delta_rule(q, k, v, beta)[0]` (state from zero, no decay) for any `chunk_size`. The "
        "method rule below is about `q`, `k` and `v` only: arrays you compute from a chunk, and `beta`, "
        "you may index as you like.",
        solution='''
            def chunked_delta_rule(q, k, v, beta, chunk_size):
                """The delta rule chunk by chunk: (..., L, Ev), equal to ac.delta_rule(q, k, v, beta)[0]."""
                ### BEGIN SOLUTION
                L, E = q.shape[-2:]
                S = np.zeros(q.shape[:-2] + (E, v.shape[-1]), dtype=np.result_type(q, k, v, beta))  # (..., E, Ev)
                outs = []
                for s in range(0, L, chunk_size):
                    qc, kc, vc = (x[..., s : s + chunk_size, :] for x in (q, k, v))  # (..., C, E), (..., C, Ev)
                    bc = beta[..., s : s + chunk_size, None]  # (..., C, 1)
                    C = qc.shape[-2]
                    # u_t = b_t (v_t - k_t S - sum_{j < t} (k_t . k_j) u_j): (I + tril(b K K^T, -1)) U = b (V - K S)
                    A = np.eye(C) + np.tril(bc * (kc @ np.swapaxes(kc, -1, -2)), -1)  # (..., C, C)
                    U = np.linalg.solve(A, bc * (vc - kc @ S))  # (..., C, Ev): every correction at once
                    outs.append(qc @ S + np.tril(qc @ np.swapaxes(kc, -1, -2)) @ U)  # state before + this chunk
                    S = S + np.swapaxes(kc, -1, -2) @ U  # one write per chunk: (..., E, C) @ (..., C, Ev)
                return np.concatenate(outs, axis=-2) / np.sqrt(E)
                ### END SOLUTION
        ''',
        reference=_reference,
        public_cases=_cases,
        outputs=("out",),
        needs=("import numpy as np", "import torch"),
        diagnoses=(
            Diagnosis(
                "each chunk starts from nothing: what does a chunk's first position read from the earlier chunks?",
                name="state not carried",
                hint="keep S from one chunk to the next; start it at zero once",
                variant=_v(carry=False),
            ),
            Diagnosis(
                "right with chunks of 1, wrong with longer ones: does a position's correction see the writes of its own chunk's earlier positions?",
                name="corrections inside a chunk independent",
                hint="u_t subtracts what the chunk's earlier writes already give for k_t: solve the unit lower-triangular system",
                variant=_v(correct=False),
            ),
            Diagnosis(
                "each output misses its own position's write: which of the chunk's corrections does query t read?",
                name="own write left out",
                hint="keep the diagonal of tril(Q K^T): o_t is read after the write of position t",
                variant=_v(own_write=False),
            ),
            Diagnosis(
                "the outputs are too large by sqrt(E): what are they multiplied by?",
                name="no scale",
                hint="ac.delta_rule scales its outputs by 1 / sqrt(E)",
                variant=_v(scale=False),
            ),
        ),
    )
)
