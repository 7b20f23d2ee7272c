"""Chapter 13 exercises: a hybrid's memory, causal linear attention, the gated delta rule, a top-k
mask applied in the wrong order, the work of top-k attention, and a chunked form that reads ahead."""

from __future__ import annotations

import numpy as np

from ... import scaled_dot_product_attention as sdpa
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

NO_FUSED = ("torch.nn.functional.scaled_dot_product_attention",)


# ----------------------------------------------------------------------------- 13.1 hybrid memory (predict)
def _hybrid_mib(soft=8, lin=24, tokens=4096, per_token_states=False, states=True, kv=2):
    cache = soft * kv * 4 * 128 * 2 * tokens  # softmax layers: (k, v) x 4 KV heads x 128 x 2 bytes a token
    state = lin * 16 * 128 * 128 * 2 if states else 0  # DeltaNet layers: 16 value heads of 128 x 128
    if per_token_states:
        state *= tokens
    return np.array((cache + state) / 2**20)


register(
    Exercise(
        id="ch13.predict_hybrid_mib",
        number="13.1",
        title="predict a hybrid's memory",
        points=1,
        function="predict_hybrid_mib",
        hint="a softmax layer keeps a key and a value per token and KV head; a DeltaNet layer keeps one d_k x d_v matrix per value head, whatever the length",
        kind="predict",
        description="A 32-layer hybrid makes every fourth layer a softmax layer with 4 key/value heads of "
        "width 128; the other layers are Gated DeltaNet layers with 16 value heads whose keys and values "
        "have width 128. Everything is stored in bfloat16 (2 bytes a number). Before running anything: "
        "how many MiB ($2^{20}$ bytes) do the softmax layers' KV cache and the DeltaNet layers' states "
        "take together for one sequence of 4,096 tokens? Return the number of MiB; within 5% passes.",
        solution='''
            def predict_hybrid_mib():
                """MiB of KV cache + states: 8 softmax and 24 DeltaNet layers, bfloat16, 4096 tokens."""
                ### BEGIN SOLUTION
                cache = 8 * 2 * 4 * 128 * 2 * 4096  # softmax layers x (k, v) x KV heads x width x bytes x tokens
                states = 24 * 16 * 128 * 128 * 2  # DeltaNet layers x value heads x d_k x d_v x bytes
                return (cache + states) / 2**20  # 64 MiB of cache + 12 MiB of states
                ### END SOLUTION
        ''',
        reference=_hybrid_mib,
        needs=("import numpy as np", "import torch"),
        public_cases=lambda: grouped(
            "prediction", Case("32 layers, one softmax in four, bfloat16, 4096 tokens")
        ),
        tolerance=(0.05, 0.0),
        diagnoses=(
            Diagnosis(
                "that is four times the memory: which layers keep a cache that grows with the tokens?",
                name="every layer softmax",
                hint="only one layer in four is a softmax layer: 8 of the 32",
                variant=lambda: _hybrid_mib(soft=32, lin=0),
            ),
            Diagnosis(
                "that is far too much: does a DeltaNet layer's state grow with the sequence?",
                name="a state per token",
                hint="a DeltaNet layer keeps one state per value head for the whole sequence",
                variant=lambda: _hybrid_mib(per_token_states=True),
            ),
            Diagnosis(
                "that is half the cache: what does a softmax layer keep for a token besides its key?",
                name="keys only",
                hint="each token keeps a key and a value: a factor 2",
                variant=lambda: _hybrid_mib(kv=1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 13.2 causal linear attention (implement)
def _phi(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def _linear(q, k, v, causal=True, normalize=True, phi=True):
    pq, pk = (_phi(q), _phi(k)) if phi else (q, k)
    sims = pq @ np.swapaxes(pk, -1, -2)  # (..., L, L)
    if causal:
        sims = np.tril(sims)
    out = sims @ v
    if normalize:
        out = out / sims.sum(-1, keepdims=True)
    return out


def _linear_cases():
    rng = np.random.default_rng(1302)
    n = rng.normal
    return (
        grouped(
            "shape",
            Case("L=5, E=4, Ev=3", q=n(size=(5, 4)), k=n(size=(5, 4)), v=n(size=(5, 3))),
            Case("L=1, E=2, Ev=2", q=n(size=(1, 2)), k=n(size=(1, 2)), v=n(size=(1, 2))),
        )
        + grouped(
            "batch dims",
            Case(
                "batch (2, 3), L=4, E=2, Ev=5",
                q=n(size=(2, 3, 4, 2)),
                k=n(size=(2, 3, 4, 2)),
                v=n(size=(2, 3, 4, 5)),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=6, E=3, Ev=2",
                q=n(size=(6, 3)).astype(np.float32),
                k=n(size=(6, 3)).astype(np.float32),
                v=n(size=(6, 2)).astype(np.float32),
            ),
        )
    )


register(
    Exercise(
        id="ch13.causal_linear_attention",
        number="13.2",
        title="causal linear attention",
        points=2,
        function="causal_linear_attention",
        hint="with phi = elu + 1 on q and k, query t reads S_t = sum over j <= t of phi(k_j)^T v_j and divides by phi(q_t) . z_t",
        kind="implement",
        forbids=("attncourse.linear_attention", "attncourse.elu_feature_map"),
        description="Causal linear attention in numpy with the feature map $\\phi(x) = \\text{elu}(x) + 1$ "
        "(write it yourself): for `q, k (..., L, E)` and `v (..., L, Ev)` return `out (..., L, Ev)` with "
        "$o_t = \\phi(q_t) S_t / (\\phi(q_t) \\cdot z_t)$, $S_t = \\sum_{j \\le t} \\phi(k_j)^\\top v_j$, "
        "$z_t = \\sum_{j \\le t} \\phi(k_j)$; no scale. The recurrence, a cumulative sum or the masked "
        "quadratic form are all fine.",
        solution='''
            def causal_linear_attention(q, k, v):
                """Causal linear attention with elu + 1: (..., L, Ev)."""
                ### BEGIN SOLUTION
                phi_q = np.where(q > 0, q + 1.0, np.exp(np.minimum(q, 0.0)))  # elu(x) + 1
                phi_k = np.where(k > 0, k + 1.0, np.exp(np.minimum(k, 0.0)))
                sims = np.tril(phi_q @ np.swapaxes(phi_k, -1, -2))  # (..., L, E) @ (..., E, L) -> (..., L, L)
                return (sims @ v) / sims.sum(-1, keepdims=True)  # (..., L, Ev), rows divided by phi(q_t) . z_t
                ### END SOLUTION
        ''',
        reference=_linear,
        needs=("import numpy as np", "import torch"),
        public_cases=_linear_cases,
        outputs=("out",),
        diagnoses=(
            Diagnosis(
                "the first outputs depend on later tokens: which keys may query t read?",
                name="not causal",
                hint="sum only over j <= t (the lower triangle)",
                variant=lambda q, k, v: _linear(q, k, v, causal=False),
            ),
            Diagnosis(
                "the outputs grow with the position: what are they divided by?",
                name="not normalised",
                hint="divide by phi(q_t) . z_t, the sum of the similarities",
                variant=lambda q, k, v: _linear(q, k, v, normalize=False),
            ),
            Diagnosis(
                "the outputs are those of raw q . k similarities: where is the feature map?",
                name="no feature map",
                hint="apply phi(x) = elu(x) + 1 to q and to k",
                variant=lambda q, k, v: _linear(q, k, v, phi=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 13.3 gated delta rule (extend)
def _gated(q, k, v, beta, decay, order="decay first", scale=True, read_before=False, no_beta=False):
    E = q.shape[-1]
    S = np.zeros(q.shape[:-2] + (E, v.shape[-1]), dtype=np.result_type(q, v))
    outs = []
    for t in range(q.shape[-2]):
        k_t, v_t, q_t = k[..., t : t + 1, :], v[..., t : t + 1, :], q[..., t : t + 1, :]
        b = 1.0 if no_beta else beta[..., t, None, None]
        a = decay[..., t, None, None]
        if order == "decay first":
            S = a * S
        if read_before:
            outs.append(q_t @ S)
        S = S + np.swapaxes(k_t, -1, -2) @ (b * (v_t - k_t @ S))
        if order == "decay last":
            S = a * S
        if not read_before:
            outs.append(q_t @ S)
    out = np.concatenate(outs, axis=-2)
    return out / np.sqrt(E) if scale else out


def _gated_cases():
    rng = np.random.default_rng(1303)
    n, u = rng.normal, rng.uniform

    def unit(x):
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    return (
        grouped(
            "recurrence",
            Case(
                "L=6, E=4, Ev=3",
                q=n(size=(6, 4)),
                k=unit(n(size=(6, 4))),
                v=n(size=(6, 3)),
                beta=u(0.2, 1, 6),
                decay=u(0.5, 1, 6),
            ),
            Case(
                "L=4, E=2, Ev=5, decay 1 (plain DeltaNet)",
                q=n(size=(4, 2)),
                k=unit(n(size=(4, 2))),
                v=n(size=(4, 5)),
                beta=u(0.2, 1, 4),
                decay=np.ones(4),
            ),
        )
        + grouped(
            "batch dims",
            Case(
                "2 heads, L=5, E=3, Ev=2",
                q=n(size=(2, 5, 3)),
                k=unit(n(size=(2, 5, 3))),
                v=n(size=(2, 5, 2)),
                beta=u(0.2, 1, (2, 5)),
                decay=u(0.5, 1, (2, 5)),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=5, E=4, Ev=2",
                q=n(size=(5, 4)).astype(np.float32),
                k=unit(n(size=(5, 4))).astype(np.float32),
                v=n(size=(5, 2)).astype(np.float32),
                beta=u(0.2, 1, 5).astype(np.float32),
                decay=u(0.5, 1, 5).astype(np.float32),
            ),
        )
    )


register(
    Exercise(
        id="ch13.gated_delta_rule",
        number="13.3",
        title="the gated delta rule, written out",
        points=3,
        function="gated_delta_rule",
        hint="for each t: S = decay_t S; u = beta_t (v_t - k_t S); S = S + k_t^T u; out_t = q_t S / sqrt(E)",
        kind="extend",
        forbids=("attncourse.delta_rule",),
        description="The chapter only called `ac.delta_rule`. Write Gated DeltaNet's recurrence yourself in "
        "numpy: `q, k (..., L, E)`, `v (..., L, Ev)`, `beta, decay (..., L)`; the state `S (..., E, Ev)` "
        "starts at zero and for each position `t` in order it is first multiplied by `decay_t`, then "
        "corrected by `beta_t (v_t - k_t S)` written under `k_t`; the output is `q_t S / sqrt(E)`, read "
        "after the write. Return `out (..., L, Ev)`.",
        solution='''
            def gated_delta_rule(q, k, v, beta, decay):
                """Gated DeltaNet's outputs (..., L, Ev)."""
                ### BEGIN SOLUTION
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]), dtype=np.result_type(q, v))  # (..., E, Ev)
                outs = []
                for t in range(q.shape[-2]):
                    k_t, v_t = k[..., t : t + 1, :], v[..., t : t + 1, :]  # (..., 1, E), (..., 1, Ev)
                    S = decay[..., t, None, None] * S  # forget
                    u = beta[..., t, None, None] * (v_t - k_t @ S)  # (..., 1, Ev): the correction
                    S = S + np.swapaxes(k_t, -1, -2) @ u  # (..., E, 1) @ (..., 1, Ev): write under k_t
                    outs.append(q[..., t : t + 1, :] @ S)  # read after the write
                return np.concatenate(outs, axis=-2) / np.sqrt(q.shape[-1])
                ### END SOLUTION
        ''',
        reference=_gated,
        needs=("import numpy as np", "import torch"),
        public_cases=_gated_cases,
        outputs=("out",),
        diagnoses=(
            Diagnosis(
                "the outputs differ as soon as a decay is below 1: when is the state decayed?",
                name="decay after the write",
                hint="multiply the state by decay_t before computing the correction",
                variant=lambda q, k, v, beta, decay: _gated(q, k, v, beta, decay, order="decay last"),
            ),
            Diagnosis(
                "each output misses its own token's write: when is the state read?",
                name="read before the write",
                hint="out_t = q_t S after S has been corrected with (k_t, v_t)",
                variant=lambda q, k, v, beta, decay: _gated(q, k, v, beta, decay, read_before=True),
            ),
            Diagnosis(
                "the outputs are too large by sqrt(E): what is the output multiplied by?",
                name="no scale",
                hint="divide q_t S by sqrt(E)",
                variant=lambda q, k, v, beta, decay: _gated(q, k, v, beta, decay, scale=False),
            ),
            Diagnosis(
                "the state is corrected by the full error every time: where does beta enter?",
                name="beta ignored",
                hint="the correction is beta_t (v_t - k_t S)",
                variant=lambda q, k, v, beta, decay: _gated(q, k, v, beta, decay, no_beta=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 13.4 top-k after the mask (diagnose)
def _topk_causal(q, k, v, top_k, mask_first=True, smallest=False):
    L, S = q.shape[-2], k.shape[-2]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., L, S)
    causal = np.tril(np.ones((L, S), dtype=bool))
    ranked = np.where(causal, scores, -np.inf) if mask_first else scores
    if smallest:
        ranked = np.where(causal, -scores, -np.inf)
    order = np.argsort(-ranked, axis=-1, kind="stable")[..., :top_k]  # (..., L, top_k)
    kept = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(kept, order, True, axis=-1)
    return sdpa(q, k, v, kept & causal)[0]


def _topk_cases():
    rng = np.random.default_rng(1304)
    n = rng.normal
    return (
        grouped(
            "causal top-k",
            Case("L=8, E=4, Ev=2, top_k=3", q=n(size=(8, 4)), k=n(size=(8, 4)), v=n(size=(8, 2)), top_k=3),
            Case("L=6, E=2, Ev=3, top_k=2", q=n(size=(6, 2)), k=n(size=(6, 2)), v=n(size=(6, 3)), top_k=2),
        )
        + grouped(
            "batch dims",
            Case(
                "2 heads, L=5, top_k=2",
                q=n(size=(2, 5, 3)),
                k=n(size=(2, 5, 3)),
                v=n(size=(2, 5, 2)),
                top_k=2,
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=6, top_k=4",
                q=n(size=(6, 4)).astype(np.float32),
                k=n(size=(6, 4)).astype(np.float32),
                v=n(size=(6, 2)).astype(np.float32),
                top_k=4,
            ),
        )
    )


register(
    Exercise(
        id="ch13.fix_topk_causal",
        number="13.4",
        title="causal top-k attention that reads too few keys",
        points=2,
        function="topk_causal",
        hint="rank only the keys a query may attend to: put -inf on the future before choosing the top k",
        kind="diagnose",
        forbids=NO_FUSED + ("attncourse.topk_attention",),
        description="`topk_causal` should give each query its `top_k` highest-scoring keys among those it may "
        "attend to (key `j <= i`), as `ac.topk_attention(q, k, v, top_k, is_causal=True)` does. Symptom: "
        "late queries are right, but many early queries attend to fewer than `min(top_k, i + 1)` keys, "
        "some to a single one. Find the bug and fix it.",
        solution='''
            def topk_causal(q, k, v, top_k):
                """Causal attention of each query to its top_k allowed keys: (..., L, Ev)."""
                L, S = q.shape[-2], k.shape[-2]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., L, S)
                causal = np.tril(np.ones((L, S), dtype=bool))
                ### BEGIN SOLUTION
                ranked = np.where(causal, scores, -np.inf)  # rank only the keys the query may see
                ### END SOLUTION
                order = np.argsort(-ranked, axis=-1, kind="stable")[..., :top_k]  # (..., L, top_k)
                kept = np.zeros(scores.shape, dtype=bool)
                np.put_along_axis(kept, order, True, axis=-1)
                scores = np.where(kept & causal, scores, -np.inf)
                return softmax(scores) @ v  # (..., L, S) @ (..., S, Ev) -> (..., L, Ev)
        ''',
        stub="""
            ranked = scores  # rank the keys by their scores
        """,
        reference=_topk_causal,
        public_cases=_topk_cases,
        outputs=("out",),
        needs=("import numpy as np", "import torch", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "early queries read fewer keys than they may: which keys compete for the top k?",
                name="top-k before the mask",
                hint="mask the future keys to -inf before ranking, not after",
                variant=lambda q, k, v, top_k: _topk_causal(q, k, v, top_k, mask_first=False),
            ),
            Diagnosis(
                "each query reads the keys it matches least: which end of the ranking is kept?",
                name="smallest scores kept",
                hint="keep the largest scores",
                variant=lambda q, k, v, top_k: _topk_causal(q, k, v, top_k, smallest=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 13.5 top-k work (predict)
def _topk_share(L=4096, top_k=256, r=32, E=128, indexer=True, causal_topk=True, causal_dense=True):
    dense = L * (L + 1) / 2 if causal_dense else L * L  # full scores of dense causal attention
    allowed = np.arange(1, L + 1)  # query i may see i + 1 keys
    kept = np.minimum(top_k, allowed).sum() if causal_topk else top_k * L
    index = r / E * allowed.sum() if indexer else 0.0  # a rank-r score costs r / E of a full one
    return np.array((kept + index) / dense)


register(
    Exercise(
        id="ch13.predict_topk_share",
        number="13.5",
        title="predict the work top-k attention does",
        points=1,
        function="predict_topk_share",
        hint="count, query by query, the scores it may compute: min(top_k, keys it may see) full scores plus one indexer score per key it may see, at r / E of a full score",
        kind="predict",
        description="A causal sequence of $L = 4096$ tokens, heads of width $E = 128$. Each query ranks every "
        "key it may attend to with an indexer score of width $r = 32$ (costing $r / E$ of a full score) and "
        "then computes full scores for its `top_k = 256` best (or for all it may see, when fewer). Before "
        "running anything: what fraction of the full scores of dense causal attention ($L(L+1)/2$) is that "
        "work, the indexer included? Return the fraction; within 1% passes.",
        solution='''
            def predict_topk_share():
                """(top-k scores + indexer scores) / dense causal scores, L=4096, top_k=256, r/E=1/4."""
                ### BEGIN SOLUTION
                L, k = 4096, 256
                dense = L * (L + 1) / 2  # query i sees i + 1 keys
                kept = k * (k + 1) / 2 + (L - k) * k  # the first k queries see fewer than k keys
                return (kept + dense * 32 / 128) / dense  # about 0.12 + 0.25
                ### END SOLUTION
        ''',
        reference=_topk_share,
        needs=("import numpy as np", "import torch"),
        public_cases=lambda: grouped("prediction", Case("L=4096, top_k=256, r=32, E=128, causal")),
        tolerance=(0.01, 0.0),
        diagnoses=(
            Diagnosis(
                "that leaves out a part of the work: what does the indexer cost?",
                name="indexer free",
                hint="every key a query may see gets an indexer score, at r / E of a full score",
                variant=lambda: _topk_share(indexer=False),
            ),
            Diagnosis(
                "that is about half the share: how many scores does dense causal attention compute?",
                name="dense not causal",
                hint="dense causal attention computes L (L + 1) / 2 scores, not L^2",
                variant=lambda: _topk_share(causal_dense=False, causal_topk=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 13.6 chunked linear attention (diagnose)
def _chunked(q, k, v, chunk_size, write_first=False, carry=True, mask=True):
    S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]), dtype=np.result_type(q, k, v))
    outs = []
    for s in range(0, q.shape[-2], chunk_size):
        qc, kc, vc = (
            q[..., s : s + chunk_size, :],
            k[..., s : s + chunk_size, :],
            v[..., s : s + chunk_size, :],
        )
        sims = qc @ np.swapaxes(kc, -1, -2)
        inside = (np.tril(sims) if mask else sims) @ vc
        if not carry:
            S = np.zeros_like(S)
        if write_first:
            S = S + np.swapaxes(kc, -1, -2) @ vc
        outs.append(qc @ S + inside)
        if not write_first:
            S = S + np.swapaxes(kc, -1, -2) @ vc
    return np.concatenate(outs, axis=-2)


def _chunked_cases():
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
            Case("L=5, chunks of 1", q=n(size=(5, 2)), k=n(size=(5, 2)), v=n(size=(5, 2)), chunk_size=1),
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


register(
    Exercise(
        id="ch13.fix_chunked_linear",
        number="13.6",
        title="chunked linear attention that reads ahead",
        points=2,
        function="chunked_linear",
        hint="read the state carried from the earlier chunks before writing the current chunk into it",
        kind="diagnose",
        forbids=("attncourse.linear_attention",),
        description="Training kernels compute linear attention chunk by chunk: inside a chunk the masked "
        "quadratic form, across chunks a state carried from one chunk to the next. `chunked_linear` should "
        "return, for any `chunk_size`, the same `out (..., L, Ev)` as the recurrence "
        "$o_t = q_t S_t$, $S_t = \\sum_{j \\le t} k_j^\\top v_j$ (no feature map, no normalisation: "
        "`ac.linear_attention(q, k, v, normalize=False)`), for `q, k (..., L, E)`, `v (..., L, Ev)`. "
        "Symptom: every output differs from the recurrence, and the outputs of a chunk's first query "
        "change when a later key of the same chunk changes. Find the bug and fix it; numpy only.",
        solution='''
            def chunked_linear(q, k, v, chunk_size):
                """Causal linear attention (identity map, no normalisation), chunk by chunk: (..., L, Ev)."""
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]), dtype=np.result_type(q, k, v))  # (..., E, Ev)
                outs = []
                for s in range(0, q.shape[-2], chunk_size):
                    qc, kc, vc = (x[..., s : s + chunk_size, :] for x in (q, k, v))  # (..., C, E), (..., C, Ev)
                    inside = np.tril(qc @ np.swapaxes(kc, -1, -2)) @ vc  # (..., C, Ev): this chunk's keys
                    ### BEGIN SOLUTION
                    outs.append(qc @ S + inside)  # the earlier chunks, through the state as it was
                    S = S + np.swapaxes(kc, -1, -2) @ vc  # then write this chunk: (..., E, C) @ (..., C, Ev)
                    ### END SOLUTION
                return np.concatenate(outs, axis=-2)
        ''',
        stub="""
            S = S + np.swapaxes(kc, -1, -2) @ vc  # write this chunk: (..., E, C) @ (..., C, Ev)
            outs.append(qc @ S + inside)
        """,
        reference=_chunked,
        public_cases=_chunked_cases,
        outputs=("out",),
        needs=("import numpy as np", "import torch"),
        diagnoses=(
            Diagnosis(
                "each chunk counts its own keys twice, and its early queries read its later keys: when is "
                "the state read?",
                name="state written before it is read",
                hint="read qc @ S before adding this chunk's kc^T vc to S",
                variant=lambda q, k, v, chunk_size: _chunked(q, k, v, chunk_size, write_first=True),
            ),
            Diagnosis(
                "the outputs only see keys of their own chunk: what happens to the state between chunks?",
                name="state not carried",
                hint="keep S from one chunk to the next; start it at zero once",
                variant=lambda q, k, v, chunk_size: _chunked(q, k, v, chunk_size, carry=False),
            ),
            Diagnosis(
                "a query reads the later keys of its own chunk: which keys inside the chunk may it see?",
                name="chunk not masked",
                hint="keep the lower triangle of qc kc^T, the diagonal included",
                variant=lambda q, k, v, chunk_size: _chunked(q, k, v, chunk_size, mask=False),
            ),
        ),
    )
)
