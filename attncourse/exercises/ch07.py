"""Chapter 7 exercises: sinusoidal positional encoding and rotary embeddings (RoPE)."""

from __future__ import annotations

import numpy as np

from .. import apply_rope, sinusoidal_positional_encoding, softmax
from ._registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []


# ----------------------------------------------------------------------------- 7.1 sinusoidal
def _table(n_positions, d_model, layout="interleaved", exponent=2):
    pos = np.arange(n_positions, dtype=np.float64)[:, None]
    i = np.arange(d_model // 2, dtype=np.float64)
    angles = pos / 10000 ** (exponent * i / d_model)
    if layout == "concatenated":
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)
    pe = np.zeros((n_positions, d_model))
    first, second = (np.cos, np.sin) if layout == "swapped" else (np.sin, np.cos)
    pe[:, 0::2], pe[:, 1::2] = first(angles), second(angles)
    return pe


def _table_cases():
    return grouped(
        "shape",
        Case("4 positions, d_model=6", n_positions=4, d_model=6),
        Case("10 positions, d_model=8", n_positions=10, d_model=8),
    )


register(
    Exercise(
        id="ch07.sinusoidal_table",
        number="7.1",
        title="the sinusoidal table",
        points=2,
        hint="sin in the even columns, cos in the odd ones, angle pos / 10000^(2i/d_model)",
        function="sinusoidal_table",
        description="The `(n_positions, d_model)` table of *Attention Is All You Need* (d_model even): "
        "$PE[pos, 2i] = \\sin(pos / 10000^{2i/d_{model}})$ and $PE[pos, 2i+1] = \\cos(\\cdot)$ of the same angle.",
        solution='''
            def sinusoidal_table(n_positions, d_model):
                """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same); d_model even."""
                ### BEGIN SOLUTION
                pos = np.arange(n_positions)[:, None]  # (P, 1)
                two_i = np.arange(0, d_model, 2)  # (d_model/2,): the even column indices 2i
                angles = pos / 10000 ** (two_i / d_model)  # (P, 1) / (d_model/2,) -> (P, d_model/2)
                pe = np.zeros((n_positions, d_model))
                pe[:, 0::2] = np.sin(angles)  # even columns
                pe[:, 1::2] = np.cos(angles)  # odd columns: the same angles
                return pe
                ### END SOLUTION
        ''',
        reference=sinusoidal_positional_encoding,
        public_cases=_table_cases,
        diagnoses=(
            Diagnosis(
                "sin and cos are swapped: even columns (0, 2, ...) hold sin, odd columns cos",
                variant=lambda n, d: _table(n, d, "swapped"),
            ),
            Diagnosis(
                "you used the concatenated [sin | cos] layout; the paper interleaves them: sin in the even "
                "columns, cos in the odd ones",
                variant=lambda n, d: _table(n, d, "concatenated"),
            ),
            Diagnosis(
                "the frequency exponent is off: use 10000^(2i/d_model), where 2i is the even column index "
                "(0, 2, 4, ...)",
                variant=lambda n, d: _table(n, d, exponent=1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.2 angles
def _angles(positions, E, exponent=2, sign=-1):
    i = np.arange(E // 2, dtype=np.float64)
    return np.asarray(positions, dtype=np.float64)[..., None] * 10000.0 ** (sign * exponent * i / E)


def _angle_cases():
    return grouped(
        "positions",
        Case("positions 0..3, E=6", positions=np.arange(4), E=6),
        Case("positions 5, 6, 7, E=8", positions=np.array([5, 6, 7]), E=8),
    )


register(
    Exercise(
        id="ch07.rotation_angles",
        number="7.2",
        title="the rotation angles of RoPE",
        points=1,
        hint="one frequency 10000^(-2i/E) per pair of features, times each position",
        function="rotation_angles",
        description="RoPE rotates feature pair `i` (of `E/2` pairs) at position `pos` by the angle "
        "$pos \\cdot 10000^{-2i/E}$: fast rotations for the first pairs, slow ones for the last. "
        "Return the `(L, E/2)` table of angles for `positions (L,)`.",
        solution='''
            def rotation_angles(positions, E):
                """Angles pos * 10000^(-2i/E) for positions (L,) and pairs i = 0..E/2-1: shape (L, E/2)."""
                ### BEGIN SOLUTION
                i = np.arange(E // 2)  # (E/2,): one frequency per pair of features
                inv_freq = 10000.0 ** (-2 * i / E)  # from 1 down to almost 1/10000
                return np.asarray(positions)[:, None] * inv_freq  # (L, 1) * (E/2,) -> (L, E/2)
                ### END SOLUTION
        ''',
        reference=_angles,
        public_cases=_angle_cases,
        diagnoses=(
            Diagnosis(
                "the exponent is off: the frequency of pair i is 10000^(-2i/E), with 2i, not i",
                variant=lambda p, E: _angles(p, E, exponent=1),
            ),
            Diagnosis(
                "the exponent lost its minus sign: the frequencies must fall from 1 to about 1/10000",
                variant=lambda p, E: _angles(p, E, sign=1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.3 RoPE
def _rope_cases():
    rng = np.random.default_rng(703)
    n = rng.normal
    return (
        grouped(
            "positions",
            Case("L=4, E=6, positions 0..3", x=n(size=(4, 6)), positions=np.arange(4)),
            Case("L=3, E=8, positions 5, 6, 7", x=n(size=(3, 8)), positions=np.array([5, 6, 7])),
        )
        + grouped(
            "batch dims",
            Case("a batch of 2, L=3, E=4, positions 2, 3, 4", x=n(size=(2, 3, 4)), positions=np.arange(2, 5)),
            Case(
                "batch (2, 2), L=2, E=6, positions 1, 7", x=n(size=(2, 2, 2, 6)), positions=np.array([1, 7])
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=3, E=4, positions 0, 4, 9",
                x=n(size=(3, 4)).astype(np.float32),
                positions=np.array([0, 4, 9]),
            ),
        )
    )


def _ignored_positions(x, positions, interleaved=False):
    default = np.arange(x.shape[-2])
    if np.array_equal(np.broadcast_to(positions, x.shape[:-1]), np.broadcast_to(default, x.shape[:-1])):
        return None
    return apply_rope(x, interleaved=interleaved)


register(
    Exercise(
        id="ch07.apply_rotary",
        number="7.3",
        title="rotary embeddings (half-split layout)",
        points=3,
        hint="rotate feature i together with feature i + E/2",
        function="apply_rotary",
        description="Rotate `x (..., L, E)` by position: feature `i` pairs with feature `i + E/2` and the "
        "pair is rotated by the angle `positions * 10000^(-2i/E)`; that is "
        "`x * cos + rotate_half(x) * sin`.",
        solution='''
            def apply_rotary(x, positions):
                """RoPE, half-split layout: x (..., L, E), positions (L,) -> (..., L, E)."""
                ### BEGIN SOLUTION
                half = x.shape[-1] // 2
                inv_freq = 10000.0 ** (-np.arange(half) / half)  # (E/2,): 10000^(-2i/E)
                angles = np.asarray(positions)[..., None] * inv_freq  # (L, 1) * (E/2,) -> (L, E/2)
                cos = np.concatenate([np.cos(angles)] * 2, axis=-1)  # (L, E): i and i + E/2 share an angle
                sin = np.concatenate([np.sin(angles)] * 2, axis=-1)
                rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)  # rotate_half(x)
                return x * cos + rotated * sin
                ### END SOLUTION
        ''',
        reference=lambda x, positions: apply_rope(x, positions),
        public_cases=_rope_cases,
        diagnoses=(
            Diagnosis(
                "you rotated neighbouring pairs (2i, 2i+1), the interleaved layout; this exercise pairs feature "
                "i with feature i + E/2, as Hugging Face's rotate_half does",
                variant=lambda x, p: apply_rope(x, p, interleaved=True),
            ),
            Diagnosis(
                "you rotated by -angle: the result is x * cos + rotate_half(x) * sin",
                variant=lambda x, p: apply_rope(x, -np.asarray(p)),
            ),
            Diagnosis("you ignored `positions` and used 0..L-1", variant=_ignored_positions),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.4 interleaved RoPE
def _rope_interleaved_cases():
    rng = np.random.default_rng(704)
    n = rng.normal
    return (
        grouped(
            "positions",
            Case("L=4, E=6, positions 0..3", x=n(size=(4, 6)), positions=np.arange(4)),
            Case("L=2, E=4, positions 3, 9", x=n(size=(2, 4)), positions=np.array([3, 9])),
        )
        + grouped(
            "batch dims",
            Case("a batch of 2, L=3, E=4, positions 2, 3, 4", x=n(size=(2, 3, 4)), positions=np.arange(2, 5)),
            Case(
                "batch (2, 2), L=2, E=6, positions 1, 7", x=n(size=(2, 2, 2, 6)), positions=np.array([1, 7])
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, L=3, E=4, positions 0, 4, 9",
                x=n(size=(3, 4)).astype(np.float32),
                positions=np.array([0, 4, 9]),
            ),
        )
    )


register(
    Exercise(
        id="ch07.apply_rotary_interleaved",
        number="7.4",
        title="rotary embeddings (interleaved layout)",
        points=2,
        hint="rotate feature 2i together with feature 2i + 1",
        function="apply_rotary_interleaved",
        description="The same rotation in the GPT-J / original LLaMA layout: feature `2i` pairs with "
        "feature `2i+1`, rotated by `positions * 10000^(-2i/E)`.",
        solution='''
            def apply_rotary_interleaved(x, positions):
                """RoPE, interleaved layout: pairs (2i, 2i+1); x (..., L, E), positions (L,)."""
                ### BEGIN SOLUTION
                E = x.shape[-1]
                inv_freq = 10000.0 ** (-np.arange(0, E, 2) / E)  # (E/2,): 10000^(-2i/E)
                angles = np.asarray(positions)[..., None] * inv_freq  # (L, 1) * (E/2,) -> (L, E/2)
                cos, sin = np.cos(angles), np.sin(angles)
                x1, x2 = x[..., 0::2], x[..., 1::2]  # the pairs (2i, 2i+1)
                out = np.empty_like(x)
                out[..., 0::2] = x1 * cos - x2 * sin  # rotate each pair by its angle
                out[..., 1::2] = x1 * sin + x2 * cos
                return out
                ### END SOLUTION
        ''',
        reference=lambda x, positions: apply_rope(x, positions, interleaved=True),
        public_cases=_rope_interleaved_cases,
        diagnoses=(
            Diagnosis(
                "you used the half-split layout (feature i with i + E/2); here feature 2i pairs with 2i+1",
                variant=lambda x, p: apply_rope(x, p),
            ),
            Diagnosis(
                "you rotated by -angle: x1' = x1 cos - x2 sin, x2' = x1 sin + x2 cos",
                variant=lambda x, p: apply_rope(x, -np.asarray(p), interleaved=True),
            ),
            Diagnosis(
                "you ignored `positions` and used 0..L-1", variant=lambda x, p: _ignored_positions(x, p, True)
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.5 ALiBi (extend)
def _alibi_cases():
    rng = np.random.default_rng(705)
    n = rng.normal
    return grouped(
        "heads",
        Case(
            "B=1, 2 heads, L=4, d_head=3",
            q=n(size=(1, 2, 4, 3)),
            k=n(size=(1, 2, 4, 3)),
            v=n(size=(1, 2, 4, 2)),
        ),
        Case(
            "B=2, 4 heads, L=3, d_head=2",
            q=n(size=(2, 4, 3, 2)),
            k=n(size=(2, 4, 3, 2)),
            v=n(size=(2, 4, 3, 2)),
        ),
    ) + grouped(
        "dtype",
        Case(
            "float32, B=1, 3 heads, L=3, d_head=2",
            q=n(size=(1, 3, 3, 2)).astype(np.float32),
            k=n(size=(1, 3, 3, 2)).astype(np.float32),
            v=n(size=(1, 3, 3, 2)).astype(np.float32),
        ),
    )


def _alibi(q, k, v, first=1, sign=-1.0, causal=True):
    H, L = q.shape[-3], q.shape[-2]
    slopes = 2.0 ** (-8.0 * (np.arange(H) + first) / H)  # (H,): 1/2, 1/4, ... for H = 8
    distance = np.arange(L)[:, None] - np.arange(L)[None, :]  # (L, L): i - j, >= 0 where j <= i
    bias = sign * slopes[:, None, None] * distance  # (H, 1, 1) * (L, L) -> (H, L, L)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) + bias  # (B, H, L, L)
    if causal:
        scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)
    weights = softmax(scores)
    return weights @ v, weights


register(
    Exercise(
        id="ch07.alibi_attention",
        number="7.5",
        title="positions as a bias: ALiBi",
        points=3,
        function="alibi_attention",
        hint="one slope per head times the distance i - j, subtracted from the scaled scores, with a causal mask on top",
        kind="extend",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="ALiBi (Press et al., 2022) adds no positional encoding at all: it adds to each "
        "head's scores a penalty proportional to the distance, $s_{ij} = q_i \\cdot k_j/\\sqrt{d} - "
        "m_h\\,(i - j)$ for $j \\le i$, with head $h = 0..H-1$ using the slope $m_h = 2^{-8(h+1)/H}$ "
        "(1/2, 1/4, ..., 1/256 for 8 heads). Write causal self-attention with ALiBi for "
        "`q, k (B, H, L, d)`, `v (B, H, L, Ev)`; return `(out, weights)`.",
        solution='''
            def alibi_attention(q, k, v):
                """Causal attention with ALiBi's linear distance penalty: (out (B, H, L, Ev), weights (B, H, L, L))."""
                ### BEGIN SOLUTION
                H, L = q.shape[-3], q.shape[-2]
                slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)  # (H,): one slope per head
                distance = np.arange(L)[:, None] - np.arange(L)[None, :]  # (L, L): i - j
                bias = -slopes[:, None, None] * distance  # (H, 1, 1) * (L, L) -> (H, L, L): far keys lose more
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, H, L, d) @ (B, H, d, L) -> (B, H, L, L)
                scores = np.where(np.tril(np.ones((L, L), dtype=bool)), scores + bias, -np.inf)  # causal
                weights = softmax(scores)
                return weights @ v, weights  # (B, H, L, L) @ (B, H, L, Ev) -> (B, H, L, Ev)
                ### END SOLUTION
        ''',
        reference=_alibi,
        public_cases=_alibi_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "the slopes start one step too early: head 0 uses 2^(-8/H), not 2^0 = 1 (h + 1 in the exponent)",
                variant=lambda q, k, v: _alibi(q, k, v, first=0),
            ),
            Diagnosis(
                "the penalty has the wrong sign: distant keys must lose score (- m (i - j)), not gain it",
                variant=lambda q, k, v: _alibi(q, k, v, sign=1.0),
            ),
            Diagnosis(
                "the causal mask is missing: ALiBi replaces the positional encoding, not the mask",
                variant=lambda q, k, v: _alibi(q, k, v, causal=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.6 RoPE score (derive)
def _pair_cases():
    rng = np.random.default_rng(706)
    return grouped(
        "pairs",
        Case(
            "one pair, offset 3, theta 0.7",
            q=np.array([1.0, 0.5]),
            k=np.array([0.25, 1.0]),
            offset=3,
            theta=0.7,
        ),
        Case(
            "five pairs, offsets -2..2",
            q=rng.normal(size=(5, 2)),
            k=rng.normal(size=(5, 2)),
            offset=np.arange(-2, 3),
            theta=0.3,
        ),
        Case(
            "batch (2, 3) of pairs, offsets per column",
            q=rng.normal(size=(2, 3, 2)),
            k=rng.normal(size=(2, 3, 2)),
            offset=np.array([1, -4, 2]),
            theta=0.5,
        ),
    ) + grouped(
        "dtype",
        Case(
            "float32, two pairs, offsets 1, 3",
            q=rng.normal(size=(2, 2)).astype(np.float32),
            k=rng.normal(size=(2, 2)).astype(np.float32),
            offset=np.array([1, 3]),
            theta=0.4,
        ),
    )


def _pair_score(q, k, offset, theta, sign=1.0):
    delta = np.asarray(offset, dtype=np.float64) * theta
    dot = q[..., 0] * k[..., 0] + q[..., 1] * k[..., 1]
    cross = q[..., 1] * k[..., 0] - q[..., 0] * k[..., 1]
    return dot * np.cos(delta) + sign * cross * np.sin(delta)


register(
    Exercise(
        id="ch07.rope_pair_score",
        number="7.6",
        title="RoPE sees only the offset",
        points=2,
        function="rope_pair_score",
        hint="R(m theta)^T R(n theta) is a single rotation: by which angle, and what does a rotation do to q . k?",
        kind="derive",
        description="Take one RoPE feature pair with frequency $\\theta$: the query's pair $q = (q_0, q_1)$ "
        "is rotated by $m\\theta$ (position $m$), the key's $k = (k_0, k_1)$ by $n\\theta$ (position $n$), "
        "each by $R(a) = \\begin{pmatrix}\\cos a & -\\sin a \\\\ \\sin a & \\cos a\\end{pmatrix}$. Derive "
        "their dot product $(R(m\\theta) q) \\cdot (R(n\\theta) k)$ as a closed form in $q$, $k$ and the "
        "offset $n - m$ only, and return it. `q`, `k` have shape `(..., 2)`; `offset` broadcasts against `(...)`.",
        solution='''
            def rope_pair_score(q, k, offset, theta):
                """(R(m theta) q) . (R(n theta) k) for pairs q, k (..., 2), as a function of offset = n - m."""
                ### BEGIN SOLUTION
                delta = offset * theta  # R(m theta)^T R(n theta) = R((n - m) theta)
                dot = q[..., 0] * k[..., 0] + q[..., 1] * k[..., 1]  # q . k
                cross = q[..., 1] * k[..., 0] - q[..., 0] * k[..., 1]  # q x k (the 2-d cross product, sign flipped)
                return dot * np.cos(delta) + cross * np.sin(delta)
                ### END SOLUTION
        ''',
        reference=_pair_score,
        public_cases=_pair_cases,
        diagnoses=(
            Diagnosis(
                "the sine term has the wrong sign: you rotated by (m - n) theta; q^T R(-m theta) R(n theta) k "
                "= q^T R((n - m) theta) k",
                variant=lambda q, k, o, t: _pair_score(q, k, o, t, sign=-1.0),
            ),
            Diagnosis(
                "only the cosine term: rotating k relative to q also mixes its components, adding "
                "(q_1 k_0 - q_0 k_1) sin((n - m) theta)",
                variant=lambda q, k, o, t: (q * k).sum(-1) * np.cos(np.asarray(o, dtype=np.float64) * t),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.7 slowest wavelength (predict)
def _wavelength(E=128, base=10000.0, i=None, two_pi=True, double=True):
    i = E // 2 - 1 if i is None else i
    exponent = (2 * i if double else i) / E
    return np.array((2 * np.pi if two_pi else 1.0) * base**exponent)


register(
    Exercise(
        id="ch07.predict_longest_wavelength",
        number="7.7",
        title="predict how far the slowest RoPE pair reaches",
        points=1,
        function="predict_longest_wavelength",
        kind="predict",
        description="RoPE with $E = 128$ features (64 pairs) and base 10000 rotates pair $i$ by "
        "$\\theta_i = 10000^{-2i/E}$ per position, $i = 0, \\dots, 63$. After how many positions has the "
        "*slowest* pair turned through one full circle ($2\\pi$)? Return the number of positions; "
        "anything within 5% passes.",
        solution='''
            def predict_longest_wavelength():
                """Positions for the slowest of 64 RoPE pairs (E = 128, base 10000) to turn 2 pi."""
                ### BEGIN SOLUTION
                # the slowest pair is i = 63: theta = 10000 ** (-126 / 128), a full turn takes 2 pi / theta
                return 2 * 3.14159 * 10000 ** (126 / 128)
                ### END SOLUTION
        ''',
        reference=lambda: _wavelength(),
        public_cases=lambda: grouped("prediction", Case("E = 128, base 10000, the slowest pair")),
        tolerance=(0.05, 0.0),
        hint="a pair turning theta per position needs 2 pi / theta positions for a full circle",
        diagnoses=(
            Diagnosis(
                "that is 1 / theta, the positions per radian: a full circle is more than one radian",
                name="forgot 2 pi",
                hint="multiply 1 / theta by 2 pi",
                variant=lambda: _wavelength(two_pi=False),
            ),
            Diagnosis(
                "that is for a pair i = 64, which does not exist: which is the last of 64 pairs?",
                name="one pair too far",
                hint="the pairs are i = 0..63; the slowest is i = 63",
                variant=lambda: _wavelength(i=64),
            ),
            Diagnosis(
                "that is far too fast for the slowest pair: is the exponent 2i/E or i/E?",
                name="exponent i/E",
                hint="theta_i = 10000 ** (-2 i / E)",
                variant=lambda: _wavelength(double=False),
            ),
        ),
    )
)
