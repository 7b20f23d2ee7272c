"""Chapter 7 exercises: sinusoidal positional encoding and rotary embeddings (RoPE)."""

from __future__ import annotations

import numpy as np

from .. import apply_rope, sinusoidal_positional_encoding
from ._registry import Case, Diagnosis, Exercise, register

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
    return [
        Case("4 positions, d_model=6", n_positions=4, d_model=6),
        Case("10 positions, d_model=8", n_positions=10, d_model=8),
    ]


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
    return [
        Case("positions 0..3, E=6", positions=np.arange(4), E=6),
        Case("positions 5, 6, 7, E=8", positions=np.array([5, 6, 7]), E=8),
    ]


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
    return [
        Case("L=4, E=6, positions 0..3", x=rng.normal(size=(4, 6)), positions=np.arange(4)),
        Case("L=3, E=8, positions 5, 6, 7", x=rng.normal(size=(3, 8)), positions=np.array([5, 6, 7])),
    ]


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
    return [
        Case("L=4, E=6, positions 0..3", x=rng.normal(size=(4, 6)), positions=np.arange(4)),
        Case("L=2, E=4, positions 3, 9", x=rng.normal(size=(2, 4)), positions=np.array([3, 9])),
    ]


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
