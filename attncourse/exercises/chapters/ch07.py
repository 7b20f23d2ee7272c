"""Chapter 7 exercises: sinusoidal positional encoding, rotary embeddings (RoPE) and ALiBi."""

from __future__ import annotations

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
        "the last slot: in `x (B, L, E)` ($E$ even), sequence `b` has `L - lengths[b]` padding slots, "
        "then its `lengths[b]` real tokens. Apply the chapter's half-split RoPE (base 10000) to the batch "
        "so that every real token comes out exactly as it would if its sequence were rotated alone, "
        "without any padding; padding slots come back unchanged. Return the `(B, L, E)` result. numpy "
        "or torch; no attncourse function.",
        solution='''
            def rope_left_padded(x, lengths):
                """Half-split RoPE of left-padded x (B, L, E): each real token as its sequence alone would get it."""
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
        description="Return the table of angles by which the chapter's RoPE rotates the feature "
        "pairs of a vector of `E` features (`E` even) at each of the positions `positions (L,)`: an "
        "array `(L, E/2)` whose entry `[l, i]` is the angle, in radians, of pair `i` at position "
        "`positions[l]`. numpy or torch; no attncourse function.",
        solution='''
            def rotation_angles(positions, E):
                """RoPE's rotation angle for each of positions (L,) and each feature pair: shape (L, E/2)."""
                ### BEGIN SOLUTION
                i = np.arange(E // 2)  # (E/2,): one frequency per pair of features
                inv_freq = 10000.0 ** (-2 * i / E)  # from 1 down to almost 1/10000
                return np.asarray(positions)[:, None] * inv_freq  # (L, 1) * (E/2,) -> (L, E/2)
                ### END SOLUTION
        ''',
        reference=_angles,
        public_cases=_angle_cases,
        needs=("import numpy as np", "import torch"),
        diagnoses=(
            Diagnosis(
                "your frequencies fall too slowly from the first pair to the last",
                variant=lambda p, E: _angles(p, E, exponent=1),
            ),
            Diagnosis(
                "your frequencies grow from the first pair to the last: the last pairs must turn slowest",
                variant=lambda p, E: _angles(p, E, sign=1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.3 keys cached rotated, renumbered
def _move_keys(k, old, new, mode=None):
    """Keys rotated (half-split RoPE) at ``old``, as RoPE gives them at ``new``; ``mode`` names a mistake."""
    k = np.asarray(k)
    old, new = np.asarray(old), np.asarray(new)
    if mode == "rotated on top":  # the cached keys taken for unrotated ones
        return apply_rope(k, new)
    if mode == "reversed":
        return apply_rope(k, old - new)
    if mode == "unrotated":  # the rotation undone and not redone
        return apply_rope(k, -old)
    return apply_rope(k, new - old, interleaved=mode == "interleaved")


def _move_keys_case(label, shape, old, new, rng, dtype=np.float64):
    return Case(label, k=rng.normal(size=shape).astype(dtype), old=np.array(old), new=np.array(new))


def _move_keys_cases():
    rng = np.random.default_rng(733)
    return (
        grouped(
            "caches",
            _move_keys_case(
                "a window of 4 kept after 6 dropped tokens, E=8", (4, 8), [6, 7, 8, 9], [0, 1, 2, 3], rng
            ),
            _move_keys_case(
                "two sinks kept in front of a window, E=8",
                (5, 8),
                [0, 1, 37, 38, 39],
                [0, 1, 2, 3, 4],
                rng,
            ),
            _move_keys_case("keys moved later, E=6", (3, 6), [2, 0, 5], [20, 31, 9], rng),
        )
        + grouped(
            "batch dims",
            _move_keys_case(
                "batch and heads (2, 3), S=4, E=8", (2, 3, 4, 8), [10, 11, 12, 13], [0, 1, 2, 3], rng
            ),
        )
        + grouped(
            "dtype",
            _move_keys_case(
                "float32, S=4, E=16", (4, 16), [0, 50, 51, 52], [0, 1, 2, 3], rng, dtype=np.float32
            ),
        )
    )


register(
    Exercise(
        id="ch07.move_rotated_keys",
        number="7.3",
        title="renumber keys that were cached rotated",
        points=3,
        hint="what single turn of each pair takes a key from its old position to its new one?",
        function="move_rotated_keys",
        needs=("import numpy as np", "import torch"),
        description="A streaming cache stores its keys *after* the chapter's half-split RoPE (base "
        "10000): key `s` of `k (..., S, E)` ($E$ even) was rotated at the integer position `old[s]`, and "
        "the unrotated keys were not kept. When tokens are dropped the cache renumbers the keys it keeps: "
        "key `s` must now be exactly the key RoPE would have produced at position `new[s]`. Given `k` and "
        "the integer positions `old (S,)` and `new (S,)`, return the renumbered `(..., S, E)` keys. "
        "numpy or torch; no attncourse function.",
        solution='''
            def move_rotated_keys(k, old, new):
                """Keys k (..., S, E) rotated at positions old (S,), returned as rotated at new (S,)."""
                ### BEGIN SOLUTION
                E = k.shape[-1]
                inv_freq = 10000.0 ** (-2 * np.arange(E // 2) / E)  # (E/2,)
                # turning by old and then by new - old is turning by new
                angles = (np.asarray(new) - np.asarray(old))[:, None] * inv_freq  # (S, 1) * (E/2,) -> (S, E/2)
                cos = np.concatenate([np.cos(angles)] * 2, axis=-1)  # (S, E)
                sin = np.concatenate([np.sin(angles)] * 2, axis=-1)
                turned = np.concatenate([-k[..., E // 2:], k[..., :E // 2]], axis=-1)  # rotate_half(k)
                return k * cos + turned * sin
                ### END SOLUTION
        ''',
        reference=_move_keys,
        public_cases=_move_keys_cases,
        diagnoses=(
            Diagnosis(
                "your keys are turned as if the cache held them unrotated",
                name="rotated on top",
                hint="the cached keys already carry the rotation of their old positions",
                variant=lambda k, o, n: _move_keys(k, o, n, "rotated on top"),
            ),
            Diagnosis(
                "your keys are turned the wrong way",
                name="turned backwards",
                hint="a key moved to an earlier position turns back",
                variant=lambda k, o, n: _move_keys(k, o, n, "reversed"),
            ),
            Diagnosis(
                "your keys come back unrotated, not at their new positions",
                name="rotation undone only",
                hint="after undoing the old rotation, what is still missing?",
                variant=lambda k, o, n: _move_keys(k, o, n, "unrotated"),
            ),
            Diagnosis(
                "you paired neighbouring features (the interleaved layout); these keys were turned by the "
                "chapter's half-split RoPE",
                name="interleaved pairs",
                hint="in the half-split layout, which feature is feature i's partner?",
                variant=lambda k, o, n: _move_keys(k, o, n, "interleaved"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.4 learned ALiBi slopes, read back (inverse)
def _recover_slopes(scores, weights, mode=None):
    """Each head's slope, from its content scores and its weights; ``mode`` names a classic mistake."""
    s, w = np.asarray(scores, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    i = s.shape[-1] - 1  # the last query sees every key
    if mode == "content ignored":
        s = np.zeros_like(s)
    with np.errstate(divide="ignore"):
        near = np.log(w[..., i, i]) - s[..., i, i]  # -log Z
        back = np.log(w[..., i, i - 1]) - s[..., i, i - 1]  # -m - log Z
    slopes = near - back
    return -slopes if mode == "sign" else slopes


def _learned_alibi_case(label, slopes, L, rng, dtype=np.float64, scale=1.0):
    slopes = np.asarray(slopes, dtype=np.float64)
    H = slopes.shape[0]
    scores = scale * rng.normal(size=(H, L, L))
    distance = np.arange(L)[:, None] - np.arange(L)[None, :]
    biased = np.where(distance >= 0, scores - slopes[:, None, None] * distance, -np.inf)
    weights = softmax(biased)
    return Case(label, scores=scores.astype(dtype), weights=weights.astype(dtype))


def _recover_slopes_cases():
    rng = np.random.default_rng(704)
    return grouped(
        "heads",
        _learned_alibi_case("3 heads, L=5, learned slopes", [0.9, 0.31, 0.07], 5, rng),
        _learned_alibi_case("5 heads, L=4, one slope 0", [1.3, 0.0, 0.45, 0.2, 0.6], 4, rng),
        _learned_alibi_case("one head, L=2", [0.25], 2, rng),
    ) + grouped(
        "dtype",
        _learned_alibi_case("float32, 2 heads, L=6", [0.55, 0.12], 6, rng, dtype=np.float32),
    )


register(
    Exercise(
        id="ch07.recover_alibi_slopes",
        number="7.4",
        title="read a layer's learned distance penalties back",
        points=2,
        hint="take the logarithm of two weights of one row: what is left once the content scores are taken out?",
        function="recover_alibi_slopes",
        needs=("import numpy as np", "import torch"),
        kind="extend",
        description="A causal layer penalises distance as ALiBi does, one slope per head, but its "
        "slopes were learned during training, so the chapter's rule does not give them. For one "
        "sequence you have each head's content scores `scores (H, L, L)` ($q_i \\cdot k_j/\\sqrt{d}$, "
        "for every pair, before anything else is added) and the attention weights `weights (H, L, L)` the "
        "layer produced from them (0 where a key is after its query); $L \\ge 2$. Recover the slopes: "
        "return `(H,)`, head 0 first. numpy or torch; no attncourse function.",
        solution='''
            def recover_alibi_slopes(scores, weights):
                """Each head's distance slope, read back from its content scores and weights (H, L, L): (H,)."""
                ### BEGIN SOLUTION
                i = scores.shape[-1] - 1  # the last query: the key before it exists
                # log w_ij = s_ij - m (i - j) - log Z_i: take two keys of one row, and log Z_i cancels
                own = np.log(weights[:, i, i]) - scores[:, i, i]  # -log Z_i
                before = np.log(weights[:, i, i - 1]) - scores[:, i, i - 1]  # -m - log Z_i
                return own - before  # (H,)
                ### END SOLUTION
        ''',
        reference=_recover_slopes,
        public_cases=_recover_slopes_cases,
        diagnoses=(
            Diagnosis(
                "your slopes follow from the weights alone: the content scores also move the weights",
                name="content scores ignored",
                hint="the weights come from the content scores and the penalty together",
                variant=lambda s, w: _recover_slopes(s, w, "content ignored"),
            ),
            Diagnosis(
                "your slopes have the wrong sign: a key further back loses score",
                name="sign",
                hint="which of the two keys is penalised more?",
                variant=lambda s, w: _recover_slopes(s, w, "sign"),
            ),
            Diagnosis(
                "these are the chapter's fixed slopes; this layer learned its own",
                name="the chapter's rule",
                hint="the slopes are in the weights, not in a formula",
                variant=lambda s, w: 2.0 ** (-8.0 * np.arange(1, np.shape(s)[0] + 1) / np.shape(s)[0]),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 7.5 ALiBi for a chunk read against a cache (extend)
def _alibi_chunk(q, k, v, mode=None):
    """Causal ALiBi attention of the last C of S positions; ``mode`` names a classic mistake."""
    q, k, v = (np.asarray(a) for a in (q, k, v))
    H, C, S = q.shape[-3], q.shape[-2], k.shape[-2]
    first = 0 if mode == "slopes from 1" else 1
    slopes = 2.0 ** (-8.0 * (np.arange(H) + first) / H)  # (H,)
    i = np.arange(C)[:, None] + (0 if mode == "top-left" else S - C)  # (C, 1): each query's position
    j = np.arange(S)[None, :]  # (1, S)
    distance = np.abs(np.arange(C)[:, None] - j) if mode == "local distance" else i - j  # (C, S)
    sign = 1.0 if mode == "sign" else -1.0
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) + sign * slopes[:, None, None] * distance
    if mode != "no mask":
        scores = np.where(j <= i, scores, -np.inf)
    weights = softmax(scores)
    return weights @ v, weights


def _alibi_chunk_cases():
    rng = np.random.default_rng(705)
    n = rng.normal

    def case(label, B, H, C, S, d, Ev, dtype=np.float64):
        return Case(
            label,
            q=n(size=(B, H, C, d)).astype(dtype),
            k=n(size=(B, H, S, d)).astype(dtype),
            v=n(size=(B, H, S, Ev)).astype(dtype),
        )

    return grouped(
        "chunks",
        case("B=1, 2 heads, a chunk of 3 after 4 cached positions (S=7)", 1, 2, 3, 7, 4, 2),
        case("B=2, 4 heads, C=2, S=5", 2, 4, 2, 5, 3, 3),
        case("one new token, 8 heads, S=6", 1, 8, 1, 6, 2, 2),
        case("nothing cached before: C = S = 4, 2 heads", 1, 2, 4, 4, 3, 2),
    ) + grouped("dtype", case("float32, 4 heads, C=3, S=6", 1, 4, 3, 6, 8, 2, np.float32))


register(
    Exercise(
        id="ch07.alibi_chunk_attention",
        number="7.5",
        title="ALiBi for a chunk read against a cache",
        points=3,
        function="alibi_chunk_attention",
        hint="where in the sequence is query c of the chunk, and which keys came before it?",
        kind="extend",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="A long prompt is read a chunk at a time. The current chunk's queries "
        "`q (B, H, C, d)` are the last $C$ positions of the sequence so far; the cache holds the keys "
        "and values of all $S \\ge C$ positions, the chunk's own included: `k (B, H, S, d)`, "
        "`v (B, H, S, Ev)`, key $j$ at position $j$. Write the chunk's causal self-attention with the "
        "chapter's ALiBi ($H$ is a power of two) and return `(out (B, H, C, Ev), weights (B, H, C, S))`. "
        "`softmax` is handed out; PyTorch's attention functions are not.",
        solution='''
            def alibi_chunk_attention(q, k, v):
                """Causal ALiBi attention of a chunk, the last C of S positions: (out (B, H, C, Ev), weights (B, H, C, S))."""
                ### BEGIN SOLUTION
                H, C, S = q.shape[-3], q.shape[-2], k.shape[-2]
                slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)  # (H,): the chapter's slopes
                i = np.arange(S - C, S)[:, None]  # (C, 1): the chunk's queries sit at the end
                j = np.arange(S)[None, :]  # (1, S): every cached key
                bias = -slopes[:, None, None] * (i - j)  # (H, 1, 1) * (C, S) -> (H, C, S)
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) + bias  # (B, H, C, S)
                weights = softmax(np.where(j <= i, scores, -np.inf))  # no key after its query
                return weights @ v, weights  # (B, H, C, S) @ (B, H, S, Ev) -> (B, H, C, Ev)
                ### END SOLUTION
        ''',
        reference=_alibi_chunk,
        public_cases=_alibi_chunk_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "your chunk's queries are placed at the start of the sequence: each sees too few keys",
                name="queries at the start",
                hint="the chunk is the end of the sequence, not its beginning",
                variant=lambda q, k, v: (
                    _alibi_chunk(q, k, v, "top-left") if np.shape(q)[-2] < np.shape(k)[-2] else None
                ),
            ),
            Diagnosis(
                "your penalty is not the distance from each query back to its key",
                name="distance from the chunk's start",
                hint="measure the distance between positions in the sequence",
                variant=lambda q, k, v: (
                    _alibi_chunk(q, k, v, "local distance") if np.shape(q)[-2] < np.shape(k)[-2] else None
                ),
            ),
            Diagnosis(
                "your keys gain score with distance: ALiBi's keys lose it",
                name="sign",
                hint="a key further back is penalised more",
                variant=lambda q, k, v: _alibi_chunk(q, k, v, "sign"),
            ),
            Diagnosis(
                "your queries see keys after their own position",
                name="no mask",
                hint="the bias does not stop a query from reading ahead",
                variant=lambda q, k, v: _alibi_chunk(q, k, v, "no mask"),
            ),
            Diagnosis(
                "your slopes are one step too steep: head 0's slope is not the chapter's",
                name="slopes from 1",
                hint="head h's slope uses h + 1",
                variant=lambda q, k, v: _alibi_chunk(q, k, v, "slopes from 1"),
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
        needs=("import numpy as np", "import torch"),
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


# ----------------------------------------------------------------------------- 7.7 ALiBi in an encoder (predict)
def _encoder_weight(mode=None, h=1, H=8, n=4096, i=2):
    """The share of weight query ``i`` keeps on itself in a bidirectional ALiBi head, equal content scores."""
    slope = 2.0 ** (-8.0 * (h + (0 if mode == "heads from 0" else 1)) / H)
    j = np.arange(n)
    if mode == "middle":  # a query far from both ends
        i = n // 2
    distance = np.abs(i - j).astype(np.float64)
    if mode == "causal":
        distance = np.where(j <= i, distance, np.inf)
    if mode == "one side":
        distance = np.where(j >= i, distance, np.inf)
    weights = softmax(-slope * distance)
    return np.array(weights[i])


register(
    Exercise(
        id="ch07.predict_encoder_alibi_weight",
        number="7.7",
        title="predict a weight of ALiBi in an encoder",
        points=1,
        function="predict_encoder_alibi_weight",
        kind="predict",
        description="An encoder reads its whole input both ways, with no causal mask, and takes the "
        "chapter's ALiBi into it, with the chapter's slopes for $H = 8$ heads: a key three tokens "
        "after a query now costs it what a key three tokens before it costs. The input has 4096 "
        "tokens whose content scores are all the same. What share of its attention weight does the third "
        "token (position 2) keep on itself in head $h = 1$? Return it (within 0.5 %).",
        solution='''
            def predict_encoder_alibi_weight():
                """The share of weight position 2 of a 4096-token ALiBi encoder keeps on itself in head 1 of 8."""
                ### BEGIN SOLUTION
                # slope 2^(-8 * 2 / 8) = 1/4; with r = e^(-1/4) the unnormalised weights are r^|2 - j|:
                # 1 on itself, r + r^2 on the two keys before it, r + r^2 + ... (to 4093 terms) after it
                return 0.1693
                ### END SOLUTION
        ''',
        reference=lambda: _encoder_weight(),
        public_cases=lambda: grouped("prediction", Case("position 2 of 4096, head 1 of 8")),
        tolerance=(0.005, 0.0),
        hint="with equal content scores, how do the weights on the keys before and after the query add up?",
        diagnoses=(
            Diagnosis(
                "that is what a causal head gives: this query also reads the keys after it",
                name="causal",
                hint="no mask: every key of the input is read",
                variant=lambda: _encoder_weight(mode="causal"),
            ),
            Diagnosis(
                "that is the share of a query far from both ends of the input",
                name="far from the ends",
                hint="how many keys lie before position 2?",
                variant=lambda: _encoder_weight(mode="middle"),
            ),
            Diagnosis(
                "that is the share if only the keys on one side of the query counted",
                name="one side only",
                hint="the keys before the query are penalised too",
                variant=lambda: _encoder_weight(mode="one side"),
            ),
            Diagnosis(
                "that is the share with another head's slope",
                name="heads from 0",
                hint="the chapter's first head is h = 0",
                variant=lambda: _encoder_weight(mode="heads from 0"),
            ),
        ),
    )
)
