"""Chapter 13 exercises: a hybrid's memory, a gated layer's decays from its outputs, chunked linear
attention and the chunked delta rule (both in ``_ch13_chunked``), sparse attention picked by an indexer
(``_ch13_sparse``), and a DeltaNet layer's values recovered from its outputs."""

from __future__ import annotations

import numpy as np

from ... import delta_rule
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
        "take together for one sequence of 4,096 tokens? Return the number of MiB; within 1% passes.",
        solution='''
            def predict_hybrid_mib():
                """MiB of the softmax layers' KV cache and the DeltaNet layers' states, together."""
                ### BEGIN SOLUTION
                cache = 8 * 2 * 4 * 128 * 2 * 4096  # softmax layers x (k, v) x KV heads x width x bytes x tokens
                states = 24 * 16 * 128 * 128 * 2  # DeltaNet layers x value heads x d_k x d_v x bytes
                return (cache + states) / 2**20  # bytes -> MiB
                ### END SOLUTION
        ''',
        reference=_hybrid_mib,
        needs=("import numpy as np", "import torch"),
        public_cases=lambda: grouped(
            "prediction", Case("32 layers, one softmax in four, bfloat16, 4096 tokens")
        ),
        tolerance=(0.01, 0.0),
        diagnoses=(
            Diagnosis(
                "every layer counted as a softmax layer: which layers keep a cache that grows with the tokens?",
                name="every layer softmax",
                hint="only one layer in four is a softmax layer: 8 of the 32",
                variant=lambda: _hybrid_mib(soft=32, lin=0),
            ),
            Diagnosis(
                "a state counted for every token: does a DeltaNet layer's state grow with the sequence?",
                name="a state per token",
                hint="a DeltaNet layer keeps one state per value head for the whole sequence",
                variant=lambda: _hybrid_mib(per_token_states=True),
            ),
            Diagnosis(
                "the cache counted with keys only: what does a softmax layer keep for a token besides its key?",
                name="keys only",
                hint="each token keeps a key and a value: a factor 2",
                variant=lambda: _hybrid_mib(kv=1),
            ),
            Diagnosis(
                "the answer is in megabytes: in which unit does the prompt ask for it?",
                name="MB, not MiB",
                hint="a MiB is 2**20 bytes, a MB 10**6",
                variant=lambda: _hybrid_mib() * 2**20 / 1e6,
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 13.2 a gated layer's decays (extend)
def _gated_linear(q, k, v, decay):
    """The outputs of an adding state with a per-token decay (the cases are made with it)."""
    S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]), dtype=np.result_type(q, k, v))
    outs = []
    for t in range(q.shape[-2]):
        S = decay[..., t, None, None] * S + k[..., t, :, None] * v[..., t, None, :]
        outs.append(np.einsum("...e,...ef->...f", q[..., t, :], S))
    return np.stack(outs, axis=-2)


def _recover_decays(q, k, v, out, *, own_write=True, undecayed=False, ratio=False):
    """decay_t for t = 1 .. L-1 from the outputs; the flags make the classic mistakes."""
    q, k, v, out = (np.asarray(x, dtype=np.float64) for x in (q, k, v, out))
    S = k[..., 0, :, None] * v[..., 0, None, :]  # S_0 = k_0^T v_0 whatever decay_0 is
    found = []
    for t in range(1, q.shape[-2]):
        if ratio:  # the output's size from one step to the next
            y, r = out[..., t, :], out[..., t - 1, :]
        else:
            r = np.einsum("...e,...ef->...f", q[..., t, :], S)  # q_t S_(t-1)
            y = out[..., t, :]
            if own_write:
                y = y - np.sum(q[..., t, :] * k[..., t, :], -1)[..., None] * v[..., t, :]
        a = np.sum(y * r, -1) / np.sum(r * r, -1)
        found.append(a)
        S = (1.0 if undecayed else a[..., None, None]) * S + k[..., t, :, None] * v[..., t, None, :]
    return np.stack(found, axis=-1)


def _decay_cases():
    rng = np.random.default_rng(1312)
    n, u = rng.normal, rng.uniform

    def case(name, shape, Ev, decay, dtype=np.float64):
        *lead, L, E = shape
        q, k, v = n(size=shape), n(size=shape), n(size=(*lead, L, Ev))
        decay = np.asarray(decay, dtype=np.float64)
        out = _gated_linear(q, k, v, decay)
        return Case(name, q=q.astype(dtype), k=k.astype(dtype), v=v.astype(dtype), out=out.astype(dtype))

    return (
        grouped(
            "decays",
            case("L=6, E=3, Ev=2, decays in [0.3, 1]", (6, 3), 2, u(0.3, 1, 6)),
            case("L=5, E=2, Ev=3, decays in [0.5, 0.9]", (5, 2), 3, u(0.5, 0.9, 5)),
        )
        + grouped(
            "decays of 0 and 1",
            case(
                "L=7, a decay of 0 at position 3, of 1 at 5", (7, 3), 2, [0.6, 0.8, 0.7, 0.0, 0.9, 1.0, 0.5]
            ),
        )
        + grouped("batch dims", case("2 heads, L=5, E=3, Ev=2", (2, 5, 3), 2, u(0.4, 1, (2, 5))))
        + grouped("dtype", case("float32, L=5, E=4, Ev=3", (5, 4), 3, u(0.4, 1, 5), dtype=np.float32))
    )


register(
    Exercise(
        id="ch13.recover_decays",
        number="13.2",
        title="a gated layer's decays, from its outputs",
        points=2,
        function="recover_decays",
        hint="at t >= 1, take token t's own write out of o_t; what is left is decay_t times what q_t reads from the state before it, and you can rebuild that state as you go",
        kind="extend",
        forbids=("attncourse.linear_attention", "attncourse.delta_rule"),
        description="A gated layer without a delta rule keeps the adding state of the chapter's section "
        "on the gate (linear attention's state with a decay), but its decay changes from token to "
        "token, as Gated DeltaNet's does: at each token the state is multiplied "
        "by that token's decay (a number in `[0, 1]`), then the token's pair is added; the state "
        "starts at zero, and the output is the query times the state (no feature map, no "
        "normalisation, no scale). You are given `q, k (..., L, E)`, `v (..., L, Ev)` and the "
        "layer's outputs `out (..., L, Ev)`, not its decays. Return the decays of positions 1 to "
        "`L - 1`, `decay (..., L - 1)`, in numpy.",
        solution='''
            def recover_decays(q, k, v, out):
                """The decays of positions 1 .. L-1 of the layer that gave `out`: (..., L - 1)."""
                ### BEGIN SOLUTION
                S = k[..., 0, :, None] * v[..., 0, None, :]  # (..., E, Ev): the state after token 0
                found = []
                for t in range(1, q.shape[-2]):
                    read = np.einsum("...e,...ef->...f", q[..., t, :], S)  # (..., Ev): q_t S_(t-1)
                    own = np.sum(q[..., t, :] * k[..., t, :], -1, keepdims=True) * v[..., t, :]  # (..., Ev)
                    a = np.sum((out[..., t, :] - own) * read, -1) / np.sum(read * read, -1)  # least squares
                    found.append(a)
                    S = a[..., None, None] * S + k[..., t, :, None] * v[..., t, None, :]  # (..., E, Ev)
                return np.stack(found, axis=-1)  # (..., L - 1)
                ### END SOLUTION
        ''',
        reference=_recover_decays,
        public_cases=_decay_cases,
        outputs=("decay",),
        needs=("import numpy as np", "import torch"),
        diagnoses=(
            Diagnosis(
                "the decays found are off at every position: what does o_t hold besides the decayed state's reading?",
                name="own write left in",
                hint="o_t = decay_t q_t S_(t-1) + (q_t . k_t) v_t: remove the second term first",
                variant=lambda q, k, v, out: _recover_decays(q, k, v, out, own_write=False),
            ),
            Diagnosis(
                "right at position 1, wrong after it: which state do you read the later positions against?",
                name="state rebuilt without the decays",
                hint="rebuild S with the decays you have found: S_t = decay_t S_(t-1) + k_t^T v_t",
                variant=lambda q, k, v, out: _recover_decays(q, k, v, out, undecayed=True),
            ),
            Diagnosis(
                "the decays found compare each output with the one before it: is o_t a multiple of o_(t-1)?",
                name="ratio of outputs",
                hint="each output reads the state with its own query and adds its own write",
                variant=lambda q, k, v, out: _recover_decays(q, k, v, out, ratio=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 13.6 a DeltaNet layer's values (extend)
def _recover_values(q, k, beta, out, *, scale=True, held=True, strength=True, adding=False):
    """The values a DeltaNet layer wrote, from its outputs; the flags make the classic mistakes."""
    q, k, beta, out = (np.asarray(x, dtype=np.float64) for x in (q, k, beta, out))
    E = q.shape[-1]
    o = out * np.sqrt(E) if scale else out  # q_t S_t
    S = np.zeros(q.shape[:-2] + (E, out.shape[-1]))
    found = []
    for t in range(q.shape[-2]):
        q_t, k_t, b_t = q[..., t, :], k[..., t, :], beta[..., t, None]
        u = (o[..., t, :] - np.einsum("...e,...ef->...f", q_t, S)) / np.sum(q_t * k_t, -1)[..., None]  # u_t
        v_t = u / b_t if strength else u
        if held:
            v_t = v_t + np.einsum("...e,...ef->...f", k_t, S)  # + k_t S_(t-1)
        found.append(v_t)
        S = S + k_t[..., :, None] * ((b_t * v_t) if adding else u)[..., None, :]
    return np.stack(found, axis=-2)


def _values_cases(seed=1316, hidden=False):
    rng = np.random.default_rng(seed)
    n, u = rng.normal, rng.uniform

    def case(name, shape, Ev, beta=None, dtype=np.float64):
        *lead, L, E = shape
        k = n(size=shape)
        k = k / np.linalg.norm(k, axis=-1, keepdims=True)
        q = n(size=shape)
        along = np.sign(n(size=(*lead, L, 1))) * u(0.5, 1.5, (*lead, L, 1))  # q_t . k_t, kept away from 0
        q = q - np.sum(q * k, -1, keepdims=True) * k + along * k
        v = n(size=(*lead, L, Ev))
        beta = u(0.3, 1, (*lead, L)) if beta is None else np.asarray(beta, dtype=np.float64)
        out = delta_rule(q, k, v, beta)[0]
        return Case(
            name, q=q.astype(dtype), k=k.astype(dtype), beta=beta.astype(dtype), out=out.astype(dtype)
        )

    if hidden:
        return (
            grouped("values", case("L=9, E=2, Ev=4", (9, 2), 4))
            + grouped("strengths of 1", case("L=6, every beta 1", (6, 3), 2, np.ones(6)))
            + grouped("batch dims", case("batch (2, 2), L=4", (2, 2, 4, 3), 2))
            + grouped("dtype", case("float32, L=6, E=3, Ev=2", (6, 3), 2, dtype=np.float32))
        )
    return (
        grouped(
            "values",
            case("L=6, E=3, Ev=2", (6, 3), 2),
            case("L=5, E=4, Ev=3", (5, 4), 3),
        )
        + grouped(
            "strengths of 1",
            case("L=7, beta 1 at positions 2 and 5", (7, 3), 2, [0.5, 0.8, 1, 0.4, 0.6, 1, 0.7]),
        )
        + grouped("batch dims", case("2 heads, L=5, E=3, Ev=2", (2, 5, 3), 2))
        + grouped("dtype", case("float32, L=5, E=4, Ev=3", (5, 4), 3, dtype=np.float32))
    )


register(
    Exercise(
        id="ch13.recover_delta_values",
        number="13.6",
        title="a DeltaNet layer's values, from its outputs",
        points=2,
        function="recover_values",
        hint="o_t sqrt(E) - q_t S_(t-1) is (q_t . k_t) u_t; u_t gives v_t through the rule, and S_t through the write",
        kind="extend",
        forbids=("attncourse.delta_rule", "attncourse.linear_attention"),
        description="A DeltaNet layer, the chapter's `ac.delta_rule(q, k, v, beta)` (state from zero, "
        "no decay, outputs scaled by $1/\\sqrt{E}$), has run on queries `q (..., L, E)`, unit-length "
        "keys `k (..., L, E)`, values `v (..., L, Ev)` and writing strengths `beta (..., L)` in "
        "`(0, 1]`. You are given `q`, `k`, `beta` and the layer's outputs `out (..., L, Ev)`, not the "
        "values. Return the values, `v (..., L, Ev)`, in numpy (every case is made so that they are "
        "determined by what you are given).",
        solution='''
            def recover_values(q, k, beta, out):
                """The values v (..., L, Ev) that the DeltaNet layer was given."""
                ### BEGIN SOLUTION
                E = q.shape[-1]
                S = np.zeros(q.shape[:-2] + (E, out.shape[-1]))  # (..., E, Ev): the state before position t
                found = []
                for t in range(q.shape[-2]):
                    q_t, k_t, b_t = q[..., t, :], k[..., t, :], beta[..., t, None]  # (..., E), (..., 1)
                    # sqrt(E) o_t = q_t S_t = q_t S_(t-1) + (q_t . k_t) u_t: the correction u_t (..., Ev)
                    read = np.einsum("...e,...ef->...f", q_t, S)
                    u = (np.sqrt(E) * out[..., t, :] - read) / np.sum(q_t * k_t, -1, keepdims=True)
                    held = np.einsum("...e,...ef->...f", k_t, S)  # k_t S_(t-1): what the key read before
                    found.append(held + u / b_t)  # u_t = beta_t (v_t - k_t S_(t-1))
                    S = S + k_t[..., :, None] * u[..., None, :]  # the layer's write: S_t
                return np.stack(found, axis=-2)  # (..., L, Ev)
                ### END SOLUTION
        ''',
        reference=lambda q, k, beta, out: _recover_values(q, k, beta, out),
        public_cases=_values_cases,
        outputs=("v",),
        needs=("import numpy as np", "import torch"),
        diagnoses=(
            Diagnosis(
                "every value found is off by the same factor: what were the layer's outputs multiplied by?",
                name="no scale",
                hint="ac.delta_rule scales its outputs by 1 / sqrt(E): undo it first",
                variant=lambda q, k, beta, out: _recover_values(q, k, beta, out, scale=False),
            ),
            Diagnosis(
                "right at position 0, wrong after it: is what a position writes into the state its value?",
                name="what the state held left out",
                hint="u_t = beta_t (v_t - k_t S_(t-1)): add back k_t S_(t-1)",
                variant=lambda q, k, beta, out: _recover_values(q, k, beta, out, held=False),
            ),
            Diagnosis(
                "off wherever beta is below 1: what does beta do to a write?",
                name="strength left out",
                hint="u_t = beta_t (v_t - k_t S_(t-1)): divide by beta_t",
                variant=lambda q, k, beta, out: _recover_values(q, k, beta, out, strength=False),
            ),
            Diagnosis(
                "right at position 0, wrong after it: what does the layer add to its state at each position?",
                name="state rebuilt by adding",
                hint="the layer writes k_t^T u_t, the correction, not k_t^T beta_t v_t",
                variant=lambda q, k, beta, out: _recover_values(q, k, beta, out, adding=True),
            ),
        ),
    )
)

from . import _ch13_chunked, _ch13_sparse  # noqa: E402,F401  (13.3, 13.4; 13.5)
