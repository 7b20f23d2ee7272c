"""Appendix A exercises: spot the bug.

The appendix page teaches the symptoms and how to look for them; each exercise here is a bug the page
does not show: A.1 from serving code, A.2-A.4 from the code of chapters 10 and 13 (fixed 2-D
positions, attention rollout, a Gated DeltaNet recurrence), A.5 from a checkpoint's fused layout;
A.6-A.10, the bugs of chapters 7, 11 and 12's code and one prediction of a symptom, are in
``bugs_modern``.  The student version of each cell shows working-looking code with the bug in it
(the ``stub``); the student returns the function fixed.  Ids, titles and stub comments name the
function or the symptom, never the cause; the diagnoses recognise the bug itself, and name its
cause as a hint.
"""

from __future__ import annotations

import numpy as np

from ... import delta_rule, sinusoidal_positional_encoding, softmax
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register
from ._shared import swap

__all__: list = []

TORCH_NEEDS = ("import torch", "from torch import nn")
NUMPY_NEEDS = ("import numpy as np", "from attncourse import softmax")


def _masked_softmax(scores, allowed):
    return softmax(np.where(allowed, scores, -np.inf))


# ----------------------------------------------------------------------------- A.1 chunk_window_weights
def _window_allowed(L, S, window, how="right"):
    """(L, S) boolean: query i of the chunk is token S - L + i; it sees the `window` latest tokens up to itself."""
    i = np.arange(L)[:, None] + (S - L)  # each query's place in the text
    if how == "top left":  # the chunk's queries numbered from 0, as if there were no cache
        i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    if how == "stub":  # the handed-out code: far-future keys let through, the past never cut
        return (j <= i) | (j - i > window)
    if how == "causal only":
        return j <= i
    lo = {"right": window, "one more": window + 1, "one fewer": window - 1, "top left": window}[how]
    return (j <= i) & (j > i - lo)


def _chunk_window_weights(q, k, window, how="right"):
    L, S = q.shape[-2], k.shape[-2]
    allowed = _window_allowed(L, S, window, how)
    if not allowed.any(axis=-1).all():
        return None  # a row with nothing to read: that idea has no weights here
    return _masked_softmax(q @ swap(k) / np.sqrt(q.shape[-1]), allowed)


def _chunk_case(name, rng, lead, L, S, E, window, dtype=np.float64):
    return Case(
        name,
        q=rng.normal(size=(*lead, L, E)).astype(dtype),
        k=rng.normal(size=(*lead, S, E)).astype(dtype),
        window=window,
    )


def _chunk_cases():
    rng = np.random.default_rng(9101)
    return (
        grouped(
            "chunk after a cache",
            _chunk_case("a chunk of 3 after 4 cached tokens, window 3", rng, (), 3, 7, 4, 3),
            _chunk_case("a batch of 2, one new token after 5 cached, window 4", rng, (2,), 1, 6, 3, 4),
            _chunk_case("4 heads, a chunk of 5 after 3 cached, window 2", rng, (4,), 5, 8, 2, 2),
        )
        + grouped(
            "prompt, no cache",
            _chunk_case("the whole prompt of 6, window 4", rng, (), 6, 6, 3, 4),
            _chunk_case("a prompt of 4, window 1: each token sees itself", rng, (2,), 4, 4, 2, 1),
        )
        + grouped(
            "dtype",
            _chunk_case("float32, a chunk of 4 after 2 cached, window 3", rng, (), 4, 6, 4, 3, np.float32),
        )
    )


register(
    Exercise(
        id="bugs.chunk_window_weights",
        number="A.1",
        title="sliding-window weights of new tokens against a cache",
        points=2,
        function="chunk_window_weights",
        hint="torch.tril(x, diagonal=d) keeps the entries with column - row <= d and zeroes the others: "
        "the window needs its own -inf entries, those with key <= query's position - window, added to "
        "the causal ones",
        kind="diagnose",
        description="A server reads a prompt in chunks through a model with a sliding window: a chunk of "
        "`L` new tokens is scored against a cache that holds all `S` tokens so far, the chunk included "
        "(the chunk is the last `L` of them, `L <= S`). Query `i` of the chunk, token `S - L + i` of the "
        "text, may attend to the `window` latest tokens up to and including itself (`window >= 1`). "
        "`q (..., L, E)` and `k (..., S, E)` are torch tensors, `window` an int; returns the scaled "
        "softmax weights `(..., L, S)`. The code builds its mask as an additive float mask, as the server "
        "it comes from does. Symptom: when the window holds the whole cache the weights are right; with a "
        "shorter window they are not. Find the bug and fix it; you may call `torch`.",
        solution='''
            def chunk_window_weights(q, k, window):
                """Sliding-window weights (..., L, S) of a chunk of L new queries against S cached keys."""
                L, S = q.shape[-2], k.shape[-2]
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (..., L, E) @ (..., E, S) -> (..., L, S)
                minus_inf = torch.full((L, S), float("-inf"), dtype=scores.dtype)
                masked = torch.triu(minus_inf, diagonal=S - L + 1)  # (L, S): -inf after each query's token
                ### BEGIN SOLUTION
                # Fixed in huggingface/transformers, pull request 41228 (reported in issue 41184).
                masked = masked + torch.tril(minus_inf, diagonal=S - L - window)
                ### END SOLUTION
                return torch.softmax(scores + masked, dim=-1)
        ''',
        stub="masked = torch.tril(masked, diagonal=S - L + window)",
        reference=_chunk_window_weights,
        public_cases=_chunk_cases,
        outputs=("weights",),
        distributions=("weights",),
        needs=TORCH_NEEDS,
        array_kind="torch",
        diagnoses=(
            Diagnosis(
                "your weights reach tokens older than the window, and with a window shorter than the "
                "chunk they reach tokens after the query's own: what does that line do to the entries it "
                "does not keep?",
                name="window cut by tril",
                hint="tril zeroes the entries above its diagonal, and a zero in an additive mask lets the "
                "key through: add a second -inf matrix, tril(minus_inf, diagonal=S - L - window)",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "stub"),
            ),
            Diagnosis(
                "your weights are causal but reach every older token: where does the window end?",
                name="no window",
                hint="block the keys at least `window` tokens before the query's own",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "causal only"),
            ),
            Diagnosis(
                "each query reads one token more than the window holds",
                name="window one too wide",
                hint="the window counts the query's own token: keys from position - window + 1 on",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "one more"),
            ),
            Diagnosis(
                "each query reads one token fewer than the window holds",
                name="window one too narrow",
                hint="the window counts the query's own token, and `window` tokens in all",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "one fewer"),
            ),
            Diagnosis(
                "your weights are right without a cache but not for a chunk after one: which token of the "
                "text is query i of the chunk?",
                name="queries numbered from the cache's start",
                hint="query i is token S - L + i: the diagonals shift by S - L",
                variant=lambda q, k, w: _chunk_window_weights(q, k, w, "top left"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.2 grid_positions
def _code_1d(pos, width):
    """Chapter 7's sinusoidal code of integer positions `pos (n,)`: (n, width), sin and cos interleaved."""
    return sinusoidal_positional_encoding(int(pos.max()) + 1, width)[pos]


def _grid_positions(grid_h, grid_w, d_model, how="right"):
    r, c = np.divmod(np.arange(grid_h * grid_w), grid_w)  # patch m is (row m // gw, column m % gw)
    if how == "column by column":  # the patches listed column after column
        if grid_h == 1 or grid_w == 1:
            return None
        c, r = np.divmod(np.arange(grid_h * grid_w), grid_h)
    half = d_model // 2
    if how == "sin then cos":  # each half as [sin ... | cos ...] instead of interleaved
        codes = []
        for pos in (r, c):
            code = _code_1d(pos, half)
            codes.append(np.concatenate([code[:, 0::2], code[:, 1::2]], axis=-1))
        return np.concatenate(codes, axis=-1)
    first, second = (c, r) if how == "column half first" else (r, c)
    return np.concatenate([_code_1d(first, half), _code_1d(second, half)], axis=-1)


def _grid_cases(*shapes):
    return tuple(
        Case(f"a {gh} x {gw} grid, d_model={d}", grid_h=gh, grid_w=gw, d_model=d) for gh, gw, d in shapes
    )


register(
    Exercise(
        id="bugs.grid_positions",
        number="A.2",
        title="fixed 2-D positions for a grid of patches",
        points=2,
        function="grid_positions",
        hint="np.meshgrid's default indexing is 'xy': its first output varies along the columns and has "
        "shape (len(second), len(first)). Pass indexing='ij' to get (grid_h, grid_w) arrays",
        kind="diagnose",
        description="A ViT with fixed 2-D positions, laid out as chapter 10's `sinusoidal_positions_2d`: "
        "the patches are listed row by row over a `grid_h x grid_w` grid, and the vector of the patch "
        "in row `r`, column `c` is chapter 7's sinusoidal encoding of `r` in `d_model / 2` features (as "
        "`ac.sinusoidal_positional_encoding` gives it) followed by the same encoding of `c`. `grid_positions(grid_h, grid_w, d_model)` (ints, `d_model` a multiple "
        "of 4) returns `(grid_h * grid_w, d_model)`. Symptom: on a grid of one row the vectors are "
        "right; on other grids every vector it returns is one that some patch of the grid should get, "
        "but not always the patch it is listed for. Find the bug and fix it; numpy only.",
        solution='''
            def grid_positions(grid_h, grid_w, d_model):
                """Fixed 2-D positions (grid_h * grid_w, d_model), the patches listed row by row."""
                half = d_model // 2

                def code(pos):  # chapter 7's encoding of integer positions: (n,) -> (n, half)
                    angles = pos[:, None] / 10000 ** (np.arange(0, half, 2) / half)  # (n, half / 2)
                    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(len(pos), half)

                ### BEGIN SOLUTION
                rows, cols = np.meshgrid(np.arange(grid_h), np.arange(grid_w), indexing="ij")
                ### END SOLUTION
                return np.concatenate([code(rows.ravel()), code(cols.ravel())], axis=-1)  # (gh * gw, d)
        ''',
        stub="rows, cols = np.meshgrid(np.arange(grid_h), np.arange(grid_w))",
        reference=_grid_positions,
        public_cases=lambda: (
            grouped("grids", *_grid_cases((2, 5, 8), (3, 3, 8), (2, 4, 4)))
            + grouped("wide and tall", *_grid_cases((4, 2, 12), (3, 5, 16)))
        ),
        outputs=("positions",),
        needs=("import numpy as np",),
        diagnoses=(
            Diagnosis(
                "the vector listed for patch m is that of the patch m would be if the grid were listed "
                "column by column: in which order do the two arrays you flatten list the patches?",
                name="patches listed column by column",
                hint="np.meshgrid(a, b) returns arrays of shape (len(b), len(a)) unless indexing='ij': "
                "rows, cols = np.meshgrid(np.arange(grid_h), np.arange(grid_w), indexing='ij')",
                variant=lambda gh, gw, d: _grid_positions(gh, gw, d, "column by column"),
            ),
            Diagnosis(
                "your first half encodes each patch's column and your second half its row",
                name="column half first",
                hint="the row's encoding comes first, then the column's",
                variant=lambda gh, gw, d: _grid_positions(gh, gw, d, "column half first"),
            ),
            Diagnosis(
                "each half holds the sines, then the cosines: chapter 7 interleaves them",
                name="sines then cosines",
                hint="PE[pos, 2i] is the sine and PE[pos, 2i + 1] the cosine",
                variant=lambda gh, gw, d: _grid_positions(gh, gw, d, "sin then cos"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.3 cls_rollout
def _rollout(weights, how="right"):
    w = np.asarray(weights, dtype=np.float64)  # (n_layers, B, H, N, N)
    n_layers, H, N = w.shape[0], w.shape[2], w.shape[-1]
    if (how == "reversed" and n_layers == 1) or (how == "heads apart" and H == 1):
        return None  # the mistake cannot show
    if how == "heads apart":  # each head rolled out on its own, then the heads' maps averaged
        return np.mean([_rollout(w[:, :, h : h + 1]) for h in range(H)], axis=0)
    A = w.mean(axis=2)  # (n_layers, B, N, N): the heads averaged
    if how == "not halved":
        A = A + np.eye(N)
    elif how != "no residual":
        A = (A + np.eye(N)) / 2
    R = np.broadcast_to(np.eye(N), A.shape[1:])
    for layer in range(n_layers):
        R = R @ A[layer] if how == "reversed" else A[layer] @ R
    return R[:, 0]


def _rollout_case(name, rng, n_layers, B, H, N, sharp=3.0, dtype=np.float64):
    scores = sharp * rng.normal(size=(n_layers, B, H, N, N))
    return Case(name, weights=softmax(scores).astype(dtype))


def _rollout_cases():
    rng = np.random.default_rng(9103)
    return grouped(
        "layers",
        _rollout_case("2 layers, 2 images, 3 heads, N=5", rng, 2, 2, 3, 5),
        _rollout_case("2 layers, 1 image, 4 heads, N=5", rng, 2, 1, 4, 5),
        _rollout_case("3 layers, 2 images, 2 heads, N=7", rng, 3, 2, 2, 7),
    ) + grouped(
        "dtype",
        _rollout_case("float32, 4 layers, 2 images, 2 heads, N=4", rng, 4, 2, 2, 4, dtype=np.float32),
    )


register(
    Exercise(
        id="bugs.cls_rollout",
        number="A.3",
        title="where a ViT's [CLS] token gets its information, layer after layer",
        points=2,
        function="cls_rollout",
        hint="rollout multiplies the layers with the last one on the left, R = A_L ... A_1: each new "
        "layer's matrix goes on the left of what the layers below it gave, R = A @ R",
        kind="diagnose",
        description="Attention rollout as chapter 10 computes it (`ac.attention_rollout` with its residual "
        "term), for a ViT whose [CLS] token is token 0: `weights (n_layers, B, H, N, N)` are each layer's "
        "attention weights, layer 0 first (every row a distribution). `cls_rollout(weights)` returns `(B, "
        "N)`: row 0 of each image's rollout, how much of the last layer's [CLS] comes from each input "
        "token. Symptom: for a model of one layer the maps are right; for deeper models they are not, "
        "though each map still sums to 1. Find the bug and fix it; numpy only.",
        solution='''
            def cls_rollout(weights):
                """Row 0 of the attention rollout: weights (n_layers, B, H, N, N) -> (B, N)."""
                n_layers, B, H, N, _ = weights.shape
                R = np.broadcast_to(np.eye(N), (B, N, N))  # no layer yet: each token is itself
                for layer in range(n_layers):
                    A = weights[layer].mean(axis=1)  # (B, N, N): the heads averaged
                    A = (A + np.eye(N)) / 2  # the residual path; each row still sums to 1
                    ### BEGIN SOLUTION
                    R = A @ R
                    ### END SOLUTION
                return R[:, 0]  # (B, N)
        ''',
        stub="R = R @ A",
        reference=_rollout,
        public_cases=_rollout_cases,
        outputs=("shares",),
        needs=("import numpy as np",),
        diagnoses=(
            Diagnosis(
                "your maps are right for one layer and not for more: in which order do the layers' "
                "matrices compose?",
                name="layers multiplied first to last",
                hint="the last layer's matrix is the leftmost factor: R = A @ R",
                variant=lambda w: _rollout(w, "reversed"),
            ),
            Diagnosis(
                "your maps leave out the path that carries each token past the attention",
                name="no residual term",
                hint="average the heads, then mix in the identity: (A + I) / 2",
                variant=lambda w: _rollout(w, "no residual"),
            ),
            Diagnosis(
                "your maps sum to more than 1: after the identity is added, are the rows still "
                "distributions?",
                name="identity added without renormalising",
                hint="(A + I) / 2 keeps each row a distribution",
                variant=lambda w: _rollout(w, "not halved"),
            ),
            Diagnosis(
                "you rolled out each head on its own and then averaged: rollout averages the heads "
                "of each layer first",
                name="heads rolled out apart",
                hint="average the heads of a layer before multiplying through the layers",
                variant=lambda w: _rollout(w, "heads apart"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.4 gated_delta_layer
def _gates(a, b, A_log, dt_bias):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    A_log, dt_bias = np.asarray(A_log, dtype=np.float64), np.asarray(dt_bias, dtype=np.float64)
    decay = np.exp(-np.exp(A_log)[:, None] * np.logaddexp(0.0, a + dt_bias[:, None]))  # (H, L)
    return decay, 1.0 / (1.0 + np.exp(-b))


def _unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _gated_delta(q, k, v, a, b, A_log, dt_bias, how="right"):
    decay, beta = _gates(a, b, A_log, dt_bias)
    v = np.asarray(v, dtype=np.float64)
    if how == "right":
        return delta_rule(_unit(q), _unit(k), v, beta, decay=decay)[0]
    q, k = (_unit(q), _unit(k)) if how != "raw keys" else (_unit(q), np.asarray(k, dtype=np.float64))
    H, L, E = q.shape
    S = np.zeros((H, E, v.shape[-1]))
    out = np.zeros(v.shape)
    for t in range(L):
        k_t, v_t = k[:, t, :, None], v[:, t, None, :]  # (H, E, 1), (H, 1, Ev)
        al, be = decay[:, t, None, None], beta[:, t, None, None]
        read = np.swapaxes(k_t, -1, -2)
        if how == "read before decay":  # the stub: the error read from the undecayed state
            S = al * S + k_t @ (be * (v_t - read @ S))
        elif how == "decay after write":
            S = al * (S + k_t @ (be * (v_t - read @ S)))
        elif how == "beta on v only":
            S = al * S
            S = S + k_t @ (be * v_t - read @ S)
        else:  # "raw keys" or "no scale": the rule itself right
            S = al * S
            S = S + k_t @ (be * (v_t - read @ S))
        out[:, t] = (q[:, t, None, :] @ S)[:, 0] / (1.0 if how == "no scale" else np.sqrt(E))
    return out


def _delta_case(name, rng, H, L, E, Ev, dtype=np.float64):
    n = rng.normal
    return Case(
        name,
        q=n(size=(H, L, E)).astype(dtype),
        k=(2 * n(size=(H, L, E))).astype(dtype),
        v=n(size=(H, L, Ev)).astype(dtype),
        a=n(size=(H, L)).astype(dtype),
        b=(n(size=(H, L)) + 1.0).astype(dtype),
        A_log=rng.uniform(-1.5, 0.5, size=H).astype(dtype),
        dt_bias=rng.uniform(-1.0, 1.0, size=H).astype(dtype),
    )


def _delta_cases():
    rng = np.random.default_rng(9104)
    return grouped(
        "recurrence",
        _delta_case("2 heads, L=6, E=4, Ev=3", rng, 2, 6, 4, 3),
        _delta_case("1 head, L=9, E=8, Ev=2", rng, 1, 9, 8, 2),
        _delta_case("3 heads, L=4, E=2, Ev=5", rng, 3, 4, 2, 5),
    ) + grouped("dtype", _delta_case("float32, 2 heads, L=7, E=4, Ev=4", rng, 2, 7, 4, 4, np.float32))


register(
    Exercise(
        id="bugs.gated_delta_layer",
        number="A.4",
        title="the recurrence of a Gated DeltaNet layer",
        points=2,
        function="gated_delta_layer",
        hint="Gated DeltaNet decays the state first and computes the correction from the decayed state: "
        "S = alpha * S, then u = beta * (v - k S), then S = S + k^T u",
        kind="diagnose",
        description="The recurrence of a Gated DeltaNet layer, as chapter 13 describes the real layer "
        "(Qwen3-Next's linear layers): per head and token, the decay is `exp(-exp(A_log) * "
        "softplus(a + dt_bias))` and the writing strength `sigmoid(b)`; the queries and keys are "
        "L2-normalised; then the gated delta rule of chapter 13 runs from a zero state "
        "(`ac.delta_rule` with `decay=`, outputs scaled by `1/sqrt(E)`). `q, k (H, L, E)`, `v (H, L, "
        "Ev)`, `a, b (H, L)`, `A_log, dt_bias (H,)`; returns `out (H, L, Ev)`. Symptom: when the decays "
        "are all close to 1 the outputs are close to right; the faster a head forgets, the further off "
        "they are, and a key written at full strength (`b` large) does not read back its value right "
        "after the write. Find the bug and fix it; numpy only.",
        solution='''
            def gated_delta_layer(q, k, v, a, b, A_log, dt_bias):
                """Outputs (H, L, Ev) of a Gated DeltaNet layer's recurrence, one token at a time."""
                H, L, E = q.shape
                q = q / np.linalg.norm(q, axis=-1, keepdims=True)  # unit-length queries and keys
                k = k / np.linalg.norm(k, axis=-1, keepdims=True)
                beta = 1 / (1 + np.exp(-b))  # (H, L): writing strengths
                decay = np.exp(-np.exp(A_log)[:, None] * np.logaddexp(0, a + dt_bias[:, None]))  # (H, L)
                S = np.zeros((H, E, v.shape[-1]))  # one state per head
                out = np.zeros(v.shape)
                for t in range(L):
                    k_t, v_t = k[:, t, :, None], v[:, t, None, :]  # (H, E, 1), (H, 1, Ev)
                    alpha, strength = decay[:, t, None, None], beta[:, t, None, None]  # (H, 1, 1)
                    ### BEGIN SOLUTION
                    S = alpha * S
                    u = strength * (v_t - np.swapaxes(k_t, -1, -2) @ S)  # (H, 1, Ev)
                    S = S + k_t @ u  # (H, E, Ev)
                    ### END SOLUTION
                    out[:, t] = (q[:, t, None, :] @ S)[:, 0] / np.sqrt(E)  # (H, 1, E) @ (H, E, Ev)
                return out
        ''',
        stub="u = strength * (v_t - np.swapaxes(k_t, -1, -2) @ S)  # (H, 1, Ev)\n"
        "S = alpha * S + k_t @ u  # (H, E, Ev)",
        reference=_gated_delta,
        public_cases=_delta_cases,
        outputs=("out",),
        needs=("import numpy as np",),
        diagnoses=(
            Diagnosis(
                "right after a full-strength write your state does not read the key back as its value, "
                "unless nothing decays: which state does the correction compare v with?",
                name="correction read before the decay",
                hint="decay the state first, S = alpha * S, then compute u = beta * (v - k S) from it",
                variant=lambda *args: _gated_delta(*args, how="read before decay"),
            ),
            Diagnosis(
                "your decay also shrinks the token's own write: when does the state forget?",
                name="decay after the write",
                hint="the decay multiplies the state before the write, not after it",
                variant=lambda *args: _gated_delta(*args, how="decay after write"),
            ),
            Diagnosis(
                "your writing strength scales the value but not what the state already holds for the key",
                name="strength on the value only",
                hint="u = beta * (v - k S): the strength scales the whole correction",
                variant=lambda *args: _gated_delta(*args, how="beta on v only"),
            ),
            Diagnosis(
                "your layer writes with keys of their raw length",
                name="keys not normalised",
                hint="divide each key by its L2 norm before the rule",
                variant=lambda *args: _gated_delta(*args, how="raw keys"),
            ),
            Diagnosis(
                "your outputs are the right ones times sqrt(E)",
                name="outputs not scaled",
                hint="scale each output by 1/sqrt(E), as ac.delta_rule does",
                variant=lambda *args: _gated_delta(*args, how="no scale"),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- A.5 fused_qkv_attention
def _fused(x, W, n_heads, layout="per head", scale="head"):
    """Multi-head self-attention, no mask, heads concatenated, from x @ W laid out per head."""
    x, W = np.asarray(x, dtype=np.float64), np.asarray(W, dtype=np.float64)
    qkv = x @ W  # (..., L, 3d)
    d = qkv.shape[-1] // 3
    dh = d // n_heads
    if layout == "thirds":  # read as [Q | K | V], each then cut into heads
        parts = [t.reshape(*t.shape[:-1], n_heads, dh) for t in np.split(qkv, 3, axis=-1)]
    elif layout == "features first":  # each head's block read as (d_head, 3)
        per_head = qkv.reshape(*qkv.shape[:-1], n_heads, dh, 3)
        parts = [per_head[..., i] for i in range(3)]
    else:
        per_head = qkv.reshape(*qkv.shape[:-1], n_heads, 3, dh)
        parts = [per_head[..., i, :] for i in range(3)]
    q, k, v = (np.moveaxis(t, -2, -3) for t in parts)  # (..., H, L, dh)
    width = d if scale == "model" else dh
    out = softmax(q @ swap(k) / np.sqrt(width)) @ v  # (..., H, L, dh)
    return np.moveaxis(out, -3, -2).reshape(*out.shape[:-3], out.shape[-2], d)


def _fused_case(name, rng, lead, L, d, n_heads, dtype=np.float64):
    return Case(
        name,
        x=rng.normal(size=(*lead, L, d)).astype(dtype),
        W=(rng.normal(size=(d, 3 * d)) / np.sqrt(d)).astype(dtype),
        n_heads=n_heads,
    )


def _fused_cases():
    rng = np.random.default_rng(9105)
    return grouped(
        "heads",
        _fused_case("L=4, d=6, 2 heads", rng, (), 4, 6, 2),
        _fused_case("a batch of 2, L=3, d=8, 4 heads", rng, (2,), 3, 8, 4),
        _fused_case("L=5, d=9, 3 heads", rng, (), 5, 9, 3),
    ) + grouped(
        "dtype",
        _fused_case("float32, L=3, d=6, 3 heads", rng, (), 3, 6, 3, np.float32),
    )


register(
    Exercise(
        id="bugs.fused_qkv_attention",
        number="A.5",
        title="multi-head attention from one fused projection",
        points=1,
        function="fused_qkv_attention",
        hint="this checkpoint's columns go head by head, each head's query, key and value side by side: "
        "reshape x @ W to (..., L, n_heads, 3, d_head) and take q, k, v from the axis of 3",
        kind="diagnose",
        description="A model converted from Megatron-LM computes its queries, keys and values with one "
        "fused matrix `W (d, 3d)`. Megatron lays its columns out head by head: the first `3 * d_head` "
        "columns are head 0's query, key and value (`d_head` columns each, in that order), the next "
        "`3 * d_head` head 1's, and so on (`d_head = d / n_heads`). `fused_qkv_attention` takes `x (..., L, "
        "d)`, `W` and `n_heads` and returns multi-head self-attention (no mask, each head scaled by "
        "`1/sqrt(d_head)`) with the heads' outputs concatenated in head order, `(..., L, d)`, before any "
        "output projection. Symptom: with one head the outputs are right; with several they are not. "
        "Find the bug and fix it; numpy and `softmax` only.",
        solution='''
            def fused_qkv_attention(x, W, n_heads):
                """Self-attention (..., L, d) from x (..., L, d) and a fused W (d, 3d) laid out head by head."""
                qkv = x @ W  # (..., L, 3d)
                d = W.shape[0]
                d_head = d // n_heads
                ### BEGIN SOLUTION
                # The layouts transformers converts between in fix_query_key_value_ordering
                # (models/megatron_gpt2/convert_megatron_gpt2_checkpoint.py).
                per_head = qkv.reshape(*qkv.shape[:-1], n_heads, 3, d_head)  # (..., L, H, 3, d_head)
                q, k, v = (np.moveaxis(per_head[..., i, :], -2, -3) for i in range(3))  # (..., H, L, d_head)
                ### END SOLUTION
                out = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head)) @ v  # (..., H, L, d_head)
                return np.moveaxis(out, -3, -2).reshape(*x.shape[:-1], d)  # (..., L, H, d_head) -> (..., L, d)
        ''',
        stub="q, k, v = (\n"
        "    np.moveaxis(t.reshape(*t.shape[:-1], n_heads, d_head), -2, -3)  # (..., H, L, d_head)\n"
        "    for t in np.split(qkv, 3, axis=-1)\n"
        ")",
        reference=_fused,
        public_cases=_fused_cases,
        outputs=("out",),
        needs=NUMPY_NEEDS,
        diagnoses=(
            Diagnosis(
                "with one head your outputs are right, with several they are not: which columns of W "
                "does each head's query, key and value come from?",
                name="read as [Q | K | V]",
                hint="the columns go head by head, [q_0 k_0 v_0 q_1 k_1 v_1 ...], not [Q | K | V]: reshape "
                "to (..., n_heads, 3, d_head)",
                variant=lambda x, W, H: _fused(x, W, H, layout="thirds"),
            ),
            Diagnosis(
                "your heads take their features from the right columns, but mixed up among q, k and v",
                name="each head read as (d_head, 3)",
                hint="within a head the query's d_head columns come first, then the key's, then the value's",
                variant=lambda x, W, H: _fused(x, W, H, layout="features first"),
            ),
            Diagnosis(
                "the weights are flatter than they should be: which width scales one head's scores?",
                name="scaled by the model width",
                hint="divide each head's scores by sqrt(d_head)",
                variant=lambda x, W, H: None if H == 1 else _fused(x, W, H, scale="model"),
            ),
        ),
    )
)


# A.6 - A.10, the bugs of chapters 7, 11 and 12's code, live in their own module (registered on import)
from . import bugs_modern  # noqa: E402,F401
