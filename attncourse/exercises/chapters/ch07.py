"""Chapter 7 exercises: sinusoidal positional encoding, rotary embeddings (RoPE) and ALiBi."""

from __future__ import annotations

import math

import numpy as np

from ... import apply_rope, softmax
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []


# ----------------------------------------------------------------------------- 7.1 RoPE for a left-padded batch
def _left_padded(x, lengths, mode="right"):
    """RoPE with each sequence's own positions; ``mode`` names a classic mistake."""
    x = np.asarray(x)
    L = x.shape[-2]
    lengths = np.asarray(lengths)
    slot = np.arange(L)[None, :]  # (1, L)
    pos = slot - (L - lengths)[:, None]  # (B, L): the first real token is position 0
    real = pos >= 0
    interleaved = False
    if mode == "slots":  # positions 0..L-1 whatever the padding
        pos = np.broadcast_to(slot, real.shape)
    elif mode == "from 1":
        pos = pos + 1
    elif mode == "padding rotated":
        real = np.ones_like(real)
    elif mode == "padding on the right":
        pos, real = np.broadcast_to(slot, real.shape), slot < lengths[:, None]
    elif mode == "interleaved":
        interleaved = True
    rotated = apply_rope(x, np.where(real, pos, 0), interleaved=interleaved)
    return np.where(real[..., None], rotated, x)


def _left_padded_cases():
    rng = np.random.default_rng(711)
    n = rng.normal
    return grouped(
        "values",
        Case("B=2, L=5, E=4, lengths [5, 3]", x=n(size=(2, 5, 4)), lengths=np.array([5, 3])),
        Case("B=3, L=4, E=6, lengths [2, 4, 1]", x=n(size=(3, 4, 6)), lengths=np.array([2, 4, 1])),
        Case("B=2, L=7, E=8, lengths [4, 6]", x=n(size=(2, 7, 8)), lengths=np.array([4, 6])),
    ) + grouped(
        "edge rows",
        Case(
            "float32, B=2, L=3, E=4, lengths [0, 2]: a row of padding",
            x=n(size=(2, 3, 4)).astype(np.float32),
            lengths=np.array([0, 2]),
        ),
    )


register(
    Exercise(
        id="ch07.rope_left_padded",
        number="7.1",
        title="RoPE for a left-padded batch",
        points=2,
        hint="what is the position of the first real token of row b, and in which slot is it?",
        function="rope_left_padded",
        description="A batch prepared for generation is *left*-padded, so that every sequence ends in "
        "the last slot: in `x (B, L, E)`, sequence `b` has `L - lengths[b]` padding slots, then its "
        "`lengths[b]` real tokens. Apply the chapter's RoPE to each real token at the position it has "
        "in its own sequence (its first real token is at position 0): feature `i` pairs with feature "
        "`i + E/2` and the pair turns by `position * 10000^(-2i/E)`, `i = 0 .. E/2 - 1` ($E$ is even). "
        "Padding slots come back unchanged. Return the `(B, L, E)` result. numpy or torch; no "
        "attncourse function.",
        solution='''
            def rope_left_padded(x, lengths):
                """RoPE (half-split) of left-padded x (B, L, E), each real token at its own sequence's position."""
                ### BEGIN SOLUTION
                B, L, E = x.shape
                pos = np.arange(L)[None, :] - (L - np.asarray(lengths))[:, None]  # (B, L): 0 at the first real token
                real = pos >= 0  # (B, L): padding has negative positions
                inv_freq = 10000.0 ** (-2 * np.arange(E // 2) / E)  # (E/2,)
                angles = np.where(real, pos, 0)[..., None] * inv_freq  # (B, L, 1) * (E/2,) -> (B, L, E/2)
                cos = np.concatenate([np.cos(angles)] * 2, axis=-1)  # (B, L, E): i and i + E/2 share an angle
                sin = np.concatenate([np.sin(angles)] * 2, axis=-1)
                rotated = np.concatenate([-x[..., E // 2:], x[..., :E // 2]], axis=-1)  # rotate_half(x)
                return np.where(real[..., None], x * cos + rotated * sin, x)  # padding unchanged
                ### END SOLUTION
        ''',
        reference=_left_padded,
        public_cases=_left_padded_cases,
        needs=("import numpy as np", "import torch"),
        diagnoses=(
            Diagnosis(
                "your real tokens' positions count the padding slots before them",
                name="positions are slots",
                hint="the first real token of row b is in slot L - lengths[b]",
                variant=lambda x, n: _left_padded(x, n, "slots"),
            ),
            Diagnosis(
                "each real token's position is one more than its place in its own sequence",
                name="positions from 1",
                hint="the first real token is position 0",
                variant=lambda x, n: _left_padded(x, n, "from 1"),
            ),
            Diagnosis(
                "your padding slots are changed",
                name="padding rotated",
                hint="where no real token is, return x as it is",
                variant=lambda x, n: _left_padded(x, n, "padding rotated"),
            ),
            Diagnosis(
                "you treated the first lengths[b] slots as the real tokens: the padding here comes first",
                name="padding on the right",
                hint="the real tokens are the last lengths[b] slots",
                variant=lambda x, n: _left_padded(x, n, "padding on the right"),
            ),
            Diagnosis(
                "you paired neighbours (2i, 2i+1), the interleaved layout; the chapter's RoPE pairs "
                "feature i with i + E/2",
                name="interleaved pairs",
                hint="rotate_half: (-x2, x1) for the halves x1, x2",
                variant=lambda x, n: _left_padded(x, n, "interleaved") if np.shape(x)[-1] > 2 else None,
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
        "Return the `(L, E/2)` table of angles for `positions (L,)`. numpy or torch; no attncourse "
        "function.",
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


# ----------------------------------------------------------------------------- 7.3 2-D RoPE
def _rope_2d(x, rows, cols, swap=False, width="half", interleaved=False):
    x = np.asarray(x)
    E = x.shape[-1]
    if swap:
        rows, cols = cols, rows
    if width == "full":  # each half turns with the frequencies of the whole width
        half = E // 2
        out = []
        for part, pos in ((x[..., :half], rows), (x[..., half:], cols)):
            angles = np.asarray(pos, dtype=np.float64)[:, None] * 10000.0 ** (-2 * np.arange(half // 2) / E)
            cos, sin = np.concatenate([np.cos(angles)] * 2, -1), np.concatenate([np.sin(angles)] * 2, -1)
            rot = np.concatenate([-part[..., half // 2 :], part[..., : half // 2]], axis=-1)
            out.append(part * cos + rot * sin)
        return np.concatenate(out, axis=-1)
    half = E // 2
    first = apply_rope(x[..., :half], rows, interleaved=interleaved)
    second = apply_rope(x[..., half:], cols, interleaved=interleaved)
    return np.concatenate([first, second], axis=-1)


def _rope_2d_cases():
    rng = np.random.default_rng(703)
    n = rng.normal
    grid = np.array([(r, c) for r in range(2) for c in range(3)])  # a 2 x 3 grid of patches, row by row
    return (
        grouped(
            "grids",
            Case("a 2 x 3 grid, N=6, E=8", x=n(size=(6, 8)), rows=grid[:, 0], cols=grid[:, 1]),
            Case(
                "four patches of a larger grid, E=12",
                x=n(size=(4, 12)),
                rows=np.array([0, 5, 2, 7]),
                cols=np.array([3, 1, 6, 0]),
            ),
        )
        + grouped(
            "batch dims",
            Case(
                "batch and heads (2, 2), a 2 x 2 grid, E=8",
                x=n(size=(2, 2, 4, 8)),
                rows=np.array([0, 0, 1, 1]),
                cols=np.array([0, 1, 0, 1]),
            ),
        )
        + grouped(
            "dtype",
            Case(
                "float32, three patches, E=8",
                x=n(size=(3, 8)).astype(np.float32),
                rows=np.array([1, 2, 4]),
                cols=np.array([6, 0, 3]),
            ),
        )
    )


register(
    Exercise(
        id="ch07.rope_2d",
        number="7.3",
        title="rotary embeddings on a grid of patches",
        points=3,
        hint="two independent rotations, each over half of the features, each with its own positions and its own width",
        function="rope_2d",
        description="Vision models with RoPE (axial 2-D RoPE) place a patch by two numbers, its row and "
        "its column. The first half of each head's features, `x[..., :E/2]`, gets ordinary half-split "
        "RoPE of width `E/2` driven by the row (feature `i` pairs with `i + E/4`, angle "
        "`rows * 10000^(-2i/(E/2))`); the second half, `x[..., E/2:]`, gets the same rotation driven by "
        "the column. For `x (..., N, E)` (`E` divisible by 4) and the patches' `rows (N,)` and "
        "`cols (N,)`, return the `(..., N, E)` result. numpy or torch; no attncourse function.",
        solution='''
            def rope_2d(x, rows, cols):
                """Axial 2-D RoPE: x[..., :E/2] turns with the row, x[..., E/2:] with the column."""
                ### BEGIN SOLUTION
                def rotate(part, positions):  # half-split RoPE of the part's own width w
                    w = part.shape[-1]
                    inv_freq = 10000.0 ** (-2 * np.arange(w // 2) / w)  # (w/2,)
                    angles = np.asarray(positions)[:, None] * inv_freq  # (N, 1) * (w/2,) -> (N, w/2)
                    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)  # (N, w)
                    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)
                    turned = np.concatenate([-part[..., w // 2:], part[..., :w // 2]], axis=-1)
                    return part * cos + turned * sin

                half = x.shape[-1] // 2
                return np.concatenate([rotate(x[..., :half], rows), rotate(x[..., half:], cols)], axis=-1)
                ### END SOLUTION
        ''',
        reference=_rope_2d,
        public_cases=_rope_2d_cases,
        diagnoses=(
            Diagnosis(
                "rows and columns are swapped: the first half of the features turns with the row",
                name="rows and columns swapped",
                hint="x[..., :E/2] goes with rows",
                variant=lambda x, r, c: _rope_2d(x, r, c, swap=True),
            ),
            Diagnosis(
                "your frequencies are those of the whole width E: each half is a rotation of width E/2, "
                "angle 10000^(-2i/(E/2))",
                name="frequencies of width E",
                hint="the exponent's denominator is the width of the half that turns",
                variant=lambda x, r, c: _rope_2d(x, r, c, width="full"),
            ),
            Diagnosis(
                "you paired neighbours (2i, 2i+1) in each half; here feature i pairs with i + E/4",
                name="interleaved pairs",
                hint="rotate_half within each half",
                variant=lambda x, r, c: _rope_2d(x, r, c, interleaved=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.4 ALiBi slopes for any head count
def _slopes(n, odd=False, plain=False):
    def power_of_two(m):
        return [2.0 ** (-8.0 * (h + 1) / m) for h in range(m)]

    if plain:
        return np.array(power_of_two(n))
    if math.log2(n).is_integer():
        return np.array(power_of_two(n))
    closest = 2 ** math.floor(math.log2(n))
    extra = power_of_two(2 * closest)[1 if odd else 0 :: 2][: n - closest]
    return np.array(power_of_two(closest) + extra)


register(
    Exercise(
        id="ch07.alibi_slopes",
        number="7.4",
        title="ALiBi's slopes when the head count is not a power of two",
        points=2,
        hint="which slopes do 2c heads have that c heads do not?",
        function="alibi_slopes",
        description="The chapter's ALiBi slopes $m_h = 2^{-8(h+1)/H}$ are the rule for $H$ a power of "
        "two. For any other $H$ the authors' code (and Hugging Face's BLOOM) takes $c$, the largest power "
        "of two smaller than $H$, uses the $c$ slopes of $c$ heads, and adds the first $H - c$ of the slopes of "
        "$2c$ heads that are *not* already among them, in their order. Return the `(n_heads,)` slopes, "
        "head 0 first. Plain Python, numpy or torch.",
        solution='''
            def alibi_slopes(n_heads):
                """ALiBi's per-head slopes for any head count: (n_heads,)."""
                ### BEGIN SOLUTION
                def power_of_two(m):  # m heads, m a power of two: 2^(-8/m), 2^(-16/m), ...
                    return [2.0 ** (-8.0 * (h + 1) / m) for h in range(m)]

                c = 1
                while 2 * c <= n_heads:  # c: the largest power of two <= n_heads
                    c *= 2
                if c == n_heads:
                    return np.array(power_of_two(c))
                # the slopes of 2c heads alternate: new, one of c's, new, ... keep the new ones
                new = power_of_two(2 * c)[0::2]
                return np.array(power_of_two(c) + new[: n_heads - c])
                ### END SOLUTION
        ''',
        reference=_slopes,
        public_cases=lambda: grouped(
            "head counts",
            Case("8 heads", n_heads=8),
            Case("6 heads", n_heads=6),
            Case("12 heads", n_heads=12),
        ),
        diagnoses=(
            Diagnosis(
                "you used the power-of-two rule 2^(-8(h+1)/H) for a head count that is not a power of two",
                name="power-of-two rule for any H",
                hint="start from the largest power of two c smaller than H",
                variant=lambda n: _slopes(n, plain=True) if not math.log2(n).is_integer() else None,
            ),
            Diagnosis(
                "your extra slopes repeat some of the first c: of the slopes of 2c heads, every second "
                "one starting with the second is already among c's",
                name="extra slopes repeat",
                hint="2^(-8 * 2j / 2c) = 2^(-8j / c)",
                variant=lambda n: _slopes(n, odd=True) if not math.log2(n).is_integer() else None,
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
        "`q, k (B, H, L, d)`, `v (B, H, L, Ev)`; return `(out (B, H, L, Ev), weights (B, H, L, L))`. "
        "`softmax` is handed out; PyTorch's attention functions are not.",
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


# ----------------------------------------------------------------------------- 7.6 where was x rotated? (inverse RoPE)
def _position_cases():
    rng = np.random.default_rng(760)
    n = rng.normal

    def case(label, shape, positions, dtype=np.float64):
        x = n(size=shape).astype(dtype)
        return Case(label, x=x, y=apply_rope(x, np.asarray(positions)).astype(dtype))

    return grouped(
        "positions",
        Case(
            "two vectors, E=8, positions 0 and 1",
            x=np.ones((2, 8)),
            y=apply_rope(np.ones((2, 8)), np.array([0, 1])),
        ),
        case("four vectors, E=8, positions 1, 5, 40, 1999", (4, 8), [1, 5, 40, 1999]),
        case("(2, 3) vectors, E=16, positions past 2 pi", (2, 3, 16), [[7, 300, 1234], [2, 64, 1000]]),
    ) + grouped(
        "dtype",
        case("float32, three vectors, E=12, positions 3, 777, 1500", (3, 12), [3, 777, 1500], np.float32),
    )


def _pair_angle(x, y, i, interleaved=False):
    """The angle that turns x's pair i into y's pair i, in (-pi, pi]."""
    E = x.shape[-1]
    a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + E // 2)
    x0, x1, y0, y1 = x[..., a], x[..., b], y[..., a], y[..., b]
    return np.arctan2(x0 * y1 - x1 * y0, x0 * y0 + x1 * y1)


def _position(x, y, mode=None):
    """The integer position p < 2000 at which half-split RoPE turns x into y; ``mode`` names a mistake."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    E = x.shape[-1]
    i = 0 if mode == "fastest pair" else E // 2 - 1
    theta = 10000.0 ** (-2.0 * i / E)
    angle = _pair_angle(x, y, i, interleaved=mode == "interleaved")
    if mode == "reversed":
        angle = -angle
    return np.rint(angle / theta).astype(np.int64)


register(
    Exercise(
        id="ch07.rope_position",
        number="7.6",
        title="where was this vector rotated?",
        points=2,
        function="rope_position",
        hint="which pair's angle can you read without ambiguity for every position below 2000?",
        description="You are given vectors `x (..., E)` and `y`, where `y` is `x` turned by the chapter's "
        "half-split RoPE (base 10000, feature $i$ paired with feature $i + E/2$) at an unknown integer "
        "position $p$, one per vector, $0 \\le p < 2000$; $E \\ge 8$ is even. Recover the positions: "
        "return `p`, integers of shape `x.shape[:-1]`. numpy or torch; no attncourse function.",
        solution='''
            def rope_position(x, y):
                """The integer positions p (...) at which half-split RoPE turns x (..., E) into y."""
                ### BEGIN SOLUTION
                x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
                E = x.shape[-1]
                i = E // 2 - 1  # the slowest pair turns by less than pi over 2000 positions
                theta = 10000.0 ** (-2.0 * i / E)
                x0, x1, y0, y1 = x[..., i], x[..., E - 1], y[..., i], y[..., E - 1]
                angle = np.arctan2(x0 * y1 - x1 * y0, x0 * y0 + x1 * y1)  # from x's pair to y's
                return np.rint(angle / theta).astype(np.int64)
                ### END SOLUTION
        ''',
        reference=_position,
        public_cases=_position_cases,
        tolerance=(0.0, 0.0),
        diagnoses=(
            Diagnosis(
                "your positions are right for the first few only: the pair you read turns more than a full "
                "circle before position 2000",
                name="fastest pair read",
                hint="a pair's angle is known only up to whole turns",
                variant=lambda x, y: _position(x, y, mode="fastest pair"),
            ),
            Diagnosis(
                "your positions have the wrong sign: the angle is measured from y to x",
                name="angle reversed",
                hint="RoPE turns x into y, not y into x",
                variant=lambda x, y: _position(x, y, mode="reversed"),
            ),
            Diagnosis(
                "you paired features 2i and 2i + 1 (the interleaved layout); this RoPE is half-split",
                name="interleaved pairs",
                hint="in the half-split layout, which feature is feature i's partner?",
                variant=lambda x, y: _position(x, y, mode="interleaved"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.7 ALiBi heads that look near (predict)
def _recent_heads(H=16, L=2048, n=100, first=1, uniform=False):
    slopes = 2.0 ** (-8.0 * (np.arange(H) + first) / H)
    d = np.arange(L)  # distance from the query, itself at 0
    count = 0
    for m in slopes:
        w = np.ones(L) if uniform else np.exp(-m * d)
        count += w[:n].sum() / w.sum() > 0.5
    return np.array(int(count))


register(
    Exercise(
        id="ch07.predict_alibi_recent_heads",
        number="7.7",
        title="predict how many ALiBi heads look mostly near",
        points=1,
        function="predict_alibi_recent_heads",
        kind="predict",
        description="A causal layer with ALiBi has 16 heads with the chapter's slopes "
        "$m_h = 2^{-8(h+1)/H}$, $H = 16$. Take the last query of a 2048-token sequence, and suppose "
        "its content scores $q \\cdot k_j/\\sqrt{d}$ are the same for all 2048 keys, so that only "
        "ALiBi's penalty tells the keys apart. In how many of the 16 heads does this query put more "
        "than half of its attention weight on the 100 most recent keys (itself and the 99 before it)? "
        "Return the count (exact).",
        solution='''
            def predict_alibi_recent_heads():
                """How many of 16 ALiBi heads put most of an equal-content query's weight on its 100 nearest keys."""
                ### BEGIN SOLUTION
                # weights fall geometrically with the distance d: e^(-m d) / sum_d e^(-m d), d = 0..2047;
                # the nearest 100 hold (1 - e^(-100 m)) / (1 - e^(-2048 m)): above 1/2 for m >= 2^(-7)
                # (0.542) but not for 2^(-7.5) (0.424): heads 0..13
                return 14
                ### END SOLUTION
        ''',
        reference=lambda: _recent_heads(),
        public_cases=lambda: grouped("prediction", Case("16 heads, 2048 keys, the 100 most recent")),
        tolerance=(0.0, 0.0),
        hint="with equal content scores, how does the weight on key j fall with the distance, and what share do the first 100 distances hold?",
        diagnoses=(
            Diagnosis(
                "that is the count if head 0's slope were 1",
                name="slopes start at 1",
                hint="head h has slope 2^(-8(h+1)/H)",
                variant=lambda: _recent_heads(first=0),
            ),
            Diagnosis(
                "that is the count with equal weights on every key, as if no head penalised distance",
                name="penalty ignored",
                hint="ALiBi subtracts m_h times the distance from each score",
                variant=lambda: _recent_heads(uniform=True),
            ),
        ),
    )
)
