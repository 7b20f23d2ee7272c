"""Chapter 3 exercises: scaling the scores by 1/sqrt(d_k); 3.5 and 3.6 are in ``_ch03_layers``."""

from __future__ import annotations

import numpy as np

from ... import softmax
from ..engine.registry import STUB_LINE, Case, Diagnosis, Exercise, grouped, register
from ._shared import DIVIDED_BY_E, TIMES_SQRT, UNSCALED, swap

__all__: list = []


# ----------------------------------------------------------------------------- 3.1 scaled scores
def _scores(q, k, scale):
    return q @ swap(k) * scale


def _scores_cases():
    rng = np.random.default_rng(301)
    n = rng.normal
    return grouped(
        "values",
        Case("L=3, S=5, E=4", q=n(size=(3, 4)), k=n(size=(5, 4))),
        Case("L=S=2, E=9", q=n(size=(2, 9)), k=n(size=(2, 9))),
    ) + grouped(
        "batch dimensions",
        Case("a batch of 2, E=9", q=n(size=(2, 2, 9)), k=n(size=(2, 3, 9))),
        Case("batch and heads (2, 2), L=2, S=3, E=4", q=n(size=(2, 2, 2, 4)), k=n(size=(2, 2, 3, 4))),
    )


register(
    Exercise(
        id="ch03.scaled_scores",
        number="3.1",
        title="scaled scores",
        points=1,
        hint="q k^T, divided by the square root of the last dimension",
        function="scaled_scores",
        stub=STUB_LINE,
        needs=("import numpy as np", "from attncourse import softmax"),
        description="The scores $q k^\\top / \\sqrt{E}$ for `q (..., L, E)` and `k (..., S, E)`.",
        solution='''
            def scaled_scores(q, k):
                """Scores q k^T / sqrt(E): (..., L, E), (..., S, E) -> (..., L, S)."""
                ### BEGIN SOLUTION
                E = q.shape[-1]
                return q @ np.swapaxes(k, -1, -2) / np.sqrt(E)  # (..., L, E) @ (..., E, S) -> (..., L, S)
                ### END SOLUTION
        ''',
        reference=lambda q, k: _scores(q, k, 1 / np.sqrt(q.shape[-1])),
        public_cases=_scores_cases,
        diagnoses=(
            Diagnosis(UNSCALED, variant=lambda q, k: _scores(q, k, 1.0)),
            Diagnosis(DIVIDED_BY_E, variant=lambda q, k: _scores(q, k, 1 / q.shape[-1])),
            Diagnosis(TIMES_SQRT, variant=lambda q, k: _scores(q, k, np.sqrt(q.shape[-1]))),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.2 two-part scores (extend)
def _two_part(q_c, k_c, q_r, k_r, v, how="right"):
    """Attention whose score is q_c . k_c + q_r . k_r, k_r shared by the heads, scaled as `how` says."""
    Dc, Dr = q_c.shape[-1], q_r.shape[-1]
    content = q_c @ swap(k_c)  # (..., H, L, Dc) @ (..., H, Dc, S) -> (..., H, L, S)
    if how == "k_r on the head axis":  # k_r's batch axis meets the head axis
        try:
            shared = q_r @ swap(k_r)
            np.broadcast_shapes(shared.shape, content.shape)
        except ValueError:
            return None
        if shared.shape != content.shape or np.ndim(k_r) < 3:
            return None
    else:
        shared = q_r @ swap(k_r)[..., None, :, :]  # (..., H, L, Dr) @ (..., 1, Dr, S) -> (..., H, L, S)
    if how == "each part":
        s = content / np.sqrt(Dc) + shared / np.sqrt(Dr)
    else:
        scale = {
            "right": 1 / np.sqrt(Dc + Dr),
            "k_r on the head axis": 1 / np.sqrt(Dc + Dr),
            "content width": 1 / np.sqrt(Dc),
            "sum of roots": 1 / (np.sqrt(Dc) + np.sqrt(Dr)),
            "unscaled": 1.0,
        }[how]
        s = (content + shared) * scale
    w = softmax(s)
    return w @ v, w  # (..., H, L, S) @ (..., H, S, Dv) -> (..., H, L, Dv)


def _two_part_case(label, rng, batch, H, L, S, Dc, Dr, Dv, dtype=np.float64):
    n = rng.normal
    return Case(
        label,
        q_c=n(size=(*batch, H, L, Dc)).astype(dtype),
        k_c=n(size=(*batch, H, S, Dc)).astype(dtype),
        q_r=n(size=(*batch, H, L, Dr)).astype(dtype),
        k_r=n(size=(*batch, S, Dr)).astype(dtype),
        v=n(size=(*batch, H, S, Dv)).astype(dtype),
    )


def _two_part_cases():
    rng = np.random.default_rng(302)
    # Dc and Dr differ (so a scale from one part's width shows) and neither is 1
    return grouped(
        "values",
        _two_part_case("H=2, L=3, S=5, Dc=16, Dr=4, Dv=3", rng, (), 2, 3, 5, 16, 4, 3),
        _two_part_case("H=1, L=2, S=4, Dc=8, Dr=24, Dv=2", rng, (), 1, 2, 4, 8, 24, 2),
    ) + grouped(
        "batch dimensions",
        _two_part_case("a batch of 3, H=2, L=2, S=6, Dc=32, Dr=8, Dv=4", rng, (3,), 2, 2, 6, 32, 8, 4),
        _two_part_case("batch (2, 1), H=4, L=1, S=3, Dc=9, Dr=16, Dv=2", rng, (2, 1), 4, 1, 3, 9, 16, 2),
        # a batch as long as the head axis: k_r's batch axis lines up with the heads without an error
        _two_part_case("a batch of 2, H=2, L=2, S=4, Dc=12, Dr=6, Dv=3", rng, (2,), 2, 2, 4, 12, 6, 3),
    )


register(
    Exercise(
        id="ch03.two_part_attention",
        number="3.2",
        title="scores made of two dot products",
        points=3,
        function="two_part_attention",
        stub=STUB_LINE,
        kind="extend",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        hint="at initialisation, what is the variance of q_c . k_c + q_r . k_r?",
        description="Some models give every query and key two parts, a content part and a position "
        "part, and the score of a query and a key is the sum of the two parts' dot products, "
        "$q_c \\cdot k_c + q_r \\cdot k_r$. To save memory the keys' position part is one for all "
        "heads. Inputs: `q_c (..., H, L, Dc)`, `k_c (..., H, S, Dc)`, `q_r (..., H, L, Dr)`, "
        "`k_r (..., S, Dr)` (no head axis: every head uses it) and `v (..., H, S, Dv)`. Return "
        "`(out (..., H, L, Dv), weights (..., H, L, S))`, `weights` the softmax over the keys of the "
        "scores times one scale, chosen so that when every entry of every part is independent with "
        "mean 0 and variance 1 the scores spread as much as the chapter's scaled scores do, whatever "
        "`Dc` and `Dr` are.",
        solution='''
            def two_part_attention(q_c, k_c, q_r, k_r, v):
                """Attention with scores q_c . k_c + q_r . k_r, k_r shared by the H heads.

                q_c (..., H, L, Dc), k_c (..., H, S, Dc), q_r (..., H, L, Dr), k_r (..., S, Dr),
                v (..., H, S, Dv) -> (out (..., H, L, Dv), weights (..., H, L, S)).
                """
                ### BEGIN SOLUTION
                # the two dot products are independent sums of Dc and Dr unit-variance products,
                # so their sum has variance Dc + Dr
                width = q_c.shape[-1] + q_r.shape[-1]
                content = q_c @ np.swapaxes(k_c, -1, -2)  # -> (..., H, L, S)
                k_r_t = np.swapaxes(k_r, -1, -2)[..., None, :, :]  # (..., S, Dr) -> (..., 1, Dr, S)
                weights = softmax((content + q_r @ k_r_t) / np.sqrt(width))  # -> (..., H, L, S)
                return weights @ v, weights  # -> (..., H, L, Dv)
                ### END SOLUTION
        ''',
        reference=_two_part,
        public_cases=_two_part_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "your scores spread as if they were only the content part's dot product: what does the "
                "position part add to their spread?",
                name="scaled by the content width",
                hint="the score is one dot product over Dc + Dr coordinates",
                variant=lambda *a: _two_part(*a, how="content width"),
            ),
            Diagnosis(
                "you scaled each part on its own, so each has the chapter's spread and their sum has "
                "more than that",
                name="each part scaled by its own width",
                hint="variances of independent terms add: one scale for the sum",
                variant=lambda *a: _two_part(*a, how="each part"),
            ),
            Diagnosis(
                "your scale adds the two parts' standard deviations: is that how the spread of a sum of "
                "independent terms grows?",
                name="the roots of the widths added",
                hint="what adds up for a sum of independent terms: standard deviations or variances?",
                variant=lambda *a: _two_part(*a, how="sum of roots"),
            ),
            Diagnosis(
                "with a batch axis your shared keys meet the wrong axis: k_r has no head axis, so its "
                "batch axis must not be matched with the heads",
                name="k_r broadcast against the head axis",
                hint="give k_r a head axis of size 1 before the product",
                variant=lambda *a: _two_part(*a, how="k_r on the head axis"),
            ),
            Diagnosis(UNSCALED, variant=lambda *a: _two_part(*a, how="unscaled")),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.3 heads padded for a kernel (diagnose)
def _padded_width(D):
    """The next multiple of 8 at or above D: the widths the handed-out kernel takes."""
    return -(-D // 8) * 8


def _packed(q, k, v, n_heads, how="right"):
    """Attention of n_heads heads laid side by side in the last axis of q, k and v.

    Zero padding of a head's features changes no dot product, so the right answer needs none.
    """

    def heads(x):  # (..., N, H * W) -> (..., H, N, W)
        return np.swapaxes(x.reshape(*x.shape[:-1], n_heads, x.shape[-1] // n_heads), -2, -3)

    width = q.shape[-1] // n_heads
    scale = {
        "right": 1 / np.sqrt(width),
        "padded width": 1 / np.sqrt(_padded_width(width)),
        "packed width": 1 / np.sqrt(q.shape[-1]),
        "number of heads": 1 / np.sqrt(n_heads),
        "unscaled": 1.0,
    }[how]
    qh, kh, vh = heads(q), heads(k), heads(v)
    w = softmax(qh @ swap(kh) * scale)  # (..., H, L, S)
    out = np.swapaxes(w @ vh, -2, -3)  # (..., L, H, Dv)
    return out.reshape(*out.shape[:-2], -1), w


def _packed_case(label, rng, batch, H, L, S, D, Dv, dtype=np.float64):
    n = rng.normal
    return Case(
        label,
        q=n(size=(*batch, L, H * D)).astype(dtype),
        k=n(size=(*batch, S, H * D)).astype(dtype),
        v=n(size=(*batch, S, H * Dv)).astype(dtype),
        n_heads=H,
    )


def _packed_cases():
    rng = np.random.default_rng(303)
    # several heads in every case; in every group a head width D that is not a multiple of 8, and the
    # padded width, n_heads, n_heads * D and D all different, so a scale from any of them shows
    return grouped(
        "values",
        _packed_case("4 heads, L=2, S=5, D=12, Dv=3", rng, (), 4, 2, 5, 12, 3),
        _packed_case("2 heads, L=3, S=6, D=5, Dv=9", rng, (), 2, 3, 6, 5, 9),
    ) + grouped(
        "batch dimensions",
        _packed_case("a batch of 2, 3 heads, L=2, S=4, D=20, Dv=2", rng, (2,), 3, 2, 4, 20, 2),
        _packed_case("batch (2, 2), 6 heads, L=1, S=3, D=3, Dv=6", rng, (2, 2), 6, 1, 3, 3, 6),
    )


register(
    Exercise(
        id="ch03.packed_head_attention",
        number="3.3",
        title="attention for heads laid side by side, run by a kernel with padded widths",
        points=2,
        function="packed_head_attention",
        hint="what does a feature that is 0 in every query and key add to the scores, and what does the "
        "scale stand for?",
        kind="diagnose",
        forbids=("torch.nn.functional.scaled_dot_product_attention",),
        description="This function runs `n_heads` attention heads at once. Their queries, keys and values "
        "lie side by side in the last axis: `q (..., L, n_heads * D)`, `k (..., S, n_heads * D)`, "
        "`v (..., S, n_heads * Dv)`, head `h` reading the `h`-th block of `D` (or `Dv`) entries. It "
        "should return `out (..., L, n_heads * Dv)`, the heads' outputs side by side, and "
        "`weights (..., n_heads, L, S)`, each head's scaled dot-product attention weights. It was "
        "written for a kernel that takes only head widths that are multiples of 8, so it pads each "
        "head's features with zeros and cuts the padding off the output. Symptom: on its unit tests, "
        "with heads of width 16, 32 and 64, it agrees with `F.scaled_dot_product_attention` run on each "
        "head's block; in a model whose heads are 12 wide, its weights and outputs differ from torch's. "
        "Find the bug and fix it.",
        solution='''
            def packed_head_attention(q, k, v, n_heads):
                """n_heads attention heads whose q, k, v lie side by side in the last axis.

                q (..., L, n_heads * D), k (..., S, n_heads * D), v (..., S, n_heads * Dv) ->
                (out (..., L, n_heads * Dv), weights (..., n_heads, L, S)).
                """
                D, Dv = q.shape[-1] // n_heads, v.shape[-1] // n_heads

                def heads(x, width):  # (..., N, n_heads * W) -> (..., n_heads, N, width)
                    x = x.reshape(*x.shape[:-1], n_heads, x.shape[-1] // n_heads)
                    pad = [(0, 0)] * (x.ndim - 1) + [(0, width - x.shape[-1])]
                    return np.swapaxes(np.pad(x, pad), -2, -3)

                def padded(w):  # the kernel takes widths that are multiples of 8
                    return -(-w // 8) * 8

                qh, kh, vh = heads(q, padded(D)), heads(k, padded(D)), heads(v, padded(Dv))
                ### BEGIN SOLUTION
                scale = 1 / np.sqrt(D)
                ### END SOLUTION
                weights = softmax(qh @ np.swapaxes(kh, -1, -2) * scale)  # -> (..., n_heads, L, S)
                out = np.swapaxes((weights @ vh)[..., :Dv], -2, -3)  # -> (..., L, n_heads, Dv)
                return out.reshape(*out.shape[:-2], -1), weights
        ''',
        stub="scale = 1 / np.sqrt(qh.shape[-1])",
        reference=_packed,
        public_cases=_packed_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "your weights are as flat as a scale of one over the square root of a head's padded "
                "width: how many of the terms in a padded head's dot product can differ from 0?",
                name="scaled by the padded width",
                hint="the padding adds zeros to every dot product and nothing to its spread: the scale "
                "is 1/sqrt(D), D the width before padding",
                variant=lambda q, k, v, h: _packed(q, k, v, h, "padded width"),
            ),
            Diagnosis(
                "your weights are as flat as a scale of one over the square root of the whole last "
                "axis of q: how many entries does one head's dot product add up?",
                name="scaled by the width of all the heads",
                hint="each head's dot products have D = q.shape[-1] // n_heads terms",
                variant=lambda q, k, v, h: _packed(q, k, v, h, "packed width"),
            ),
            Diagnosis(
                "your weights are as peaked as a scale of 1/sqrt(n_heads): the scale follows the "
                "length of each dot product, not the number of heads",
                name="scaled by the number of heads",
                hint="each head's dot products have D = q.shape[-1] // n_heads terms",
                variant=lambda q, k, v, h: _packed(q, k, v, h, "number of heads"),
            ),
            Diagnosis(UNSCALED, variant=lambda q, k, v, h: _packed(q, k, v, h, "unscaled")),
        ),
    )
)


# ----------------------------------------------------------------------------- 3.4 unit-length q and k (predict)
_COSINE_DK = 128


def _cosine_factor(how="right", d_k=_COSINE_DK):
    length = np.sqrt(d_k)  # |q| and |k|: about sqrt(d_k) each, so q_hat . k_hat is about q . k / d_k
    return np.array(
        {
            "right": length,  # Var(q . k / d_k) = 1 / d_k: the factor sqrt(d_k) gives spread 1
            "none": 1.0,
            "unscaled": length**2,
            "divided": 1 / length,
            "each vector": np.sqrt(length),
        }[how]
    )


register(
    Exercise(
        id="ch03.predict_cosine_factor",
        number="3.4",
        title="a factor for queries and keys of unit length",
        points=1,
        function="predict_cosine_factor",
        stub=STUB_LINE,
        kind="predict",
        description="Some models normalise every query and every key to length 1 before the dot product, "
        "and then multiply the scores by a fixed factor $\\tau$ instead of dividing them by "
        "$\\sqrt{d_k}$. Before normalising, the queries and keys of this one have $d_k = 128$ "
        "independent $\\mathcal{N}(0, 1)$ entries, the chapter's setting. Before running anything, "
        "write down the $\\tau$ for which its scores spread as much (standard deviation over random "
        "independent `q` and `k`) as the chapter's scaled scores $q \\cdot k / \\sqrt{d_k}$ do. Return "
        "$\\tau$; anything within 5% passes.",
        solution='''
            def predict_cosine_factor():
                """The factor tau for unit-length q and k, d_k = 128."""
                ### BEGIN SOLUTION
                # |q| and |k| are each about sqrt(128), so q_hat . k_hat is about q . k / 128, whose
                # variance is 128 / 128^2 = 1 / 128; a spread of 1 needs tau = sqrt(128)
                return 128**0.5
                ### END SOLUTION
        ''',
        reference=_cosine_factor,
        public_cases=lambda: grouped("the number", Case("d_k = 128, N(0, 1) entries, then unit length")),
        tolerance=(0.05, 0.0),
        hint="a vector of d_k independent N(0, 1) entries has a length of about sqrt(d_k): what does "
        "normalising q and k do to q . k, and so to its variance?",
        diagnoses=(
            Diagnosis(
                "with that factor the normalised scores keep their own spread: how long were q and k "
                "before they were normalised?",
                name="no factor",
                hint="normalising divides q . k by |q| |k|, about d_k",
                variant=lambda: _cosine_factor("none"),
            ),
            Diagnosis(
                "your factor gives back the unscaled scores' spread, not the scaled ones'",
                name="the unscaled scores",
                hint="the scaled scores have standard deviation 1; the normalised ones 1 / sqrt(d_k)",
                variant=lambda: _cosine_factor("unscaled"),
            ),
            Diagnosis(
                "your factor shrinks the scores, and the normalised scores are already narrower than "
                "the scaled ones",
                name="divided, not multiplied",
                hint="the normalised scores spread by 1 / sqrt(d_k): multiply them back up",
                variant=lambda: _cosine_factor("divided"),
            ),
            Diagnosis(
                "your factor would do if it multiplied q and k each; it multiplies their dot product once",
                name="a factor for each vector",
                hint="the dot product of two vectors each multiplied by a is multiplied by a squared",
                variant=lambda: _cosine_factor("each vector"),
            ),
        ),
    )
)


# 3.5 and 3.6 (a layer's scale picked out by its weights, a softmax in log space) are in _ch03_layers
from . import _ch03_layers  # noqa: E402,F401
