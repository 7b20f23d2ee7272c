"""Chapter 12 exercises: the memory of a beam search's two caches, gated cross-attention over
images interleaved with text, a prefix decoder that sees the future, a source token removed after
the softmax, a resampler whose queries are learned latents and the cross-attention mask of packed sequences."""

from __future__ import annotations

import numpy as np

from ... import softmax
from ..engine.registry import Case, Diagnosis, Exercise, grouped, register

__all__: list = []

NO_FUSED = ("torch.nn.functional.scaled_dot_product_attention", "attncourse.scaled_dot_product_attention")


# ----------------------------------------------------------------------------- 12.1 the caches of a beam search (predict)
def _beam_bytes(
    *, cross_per_beam=False, self_per_clip=False, nbytes=2, kv=2, layers=4, parts=("self", "cross")
):
    clips, beams, frames, written, d = 8, 5, 1500, 120, 384
    cross = layers * kv * (clips * beams if cross_per_beam else clips) * frames * d * nbytes
    self_ = layers * kv * (clips if self_per_clip else clips * beams) * written * d * nbytes
    return np.array(float(("cross" in parts) * cross + ("self" in parts) * self_))


register(
    Exercise(
        id="ch12.predict_beam_cache_bytes",
        number="12.1",
        title="predict the memory of a beam search's caches",
        points=1,
        function="predict_beam_cache_bytes",
        hint="two caches per layer: one grows with the tokens written and belongs to a hypothesis, the other is as long as the source and belongs to a clip",
        kind="predict",
        description="A speech recogniser of Whisper's shape transcribes 8 audio clips at once: its encoder "
        "turns each clip into 1500 frames, and its decoder (4 layers, $d_\\text{model} = 384$) "
        "searches with 5 beams per clip, so each clip has 5 hypotheses, 5 rows of the decoder's batch. "
        "The decoder keeps both caches of this chapter, in float16. The 5 hypotheses of a clip share one "
        "copy of whatever depends only on the clip, and of nothing else: each keeps its own copy of "
        "whatever depends on the tokens it wrote, even where two hypotheses begin alike. Before running anything: how many bytes do the "
        "decoder's caches hold, keys and values of every layer together, once every hypothesis has "
        "written 120 tokens? Within 2% passes.",
        solution='''
            def predict_beam_cache_bytes():
                """Bytes of the decoder's two caches after 120 tokens per hypothesis."""
                ### BEGIN SOLUTION
                cross = 4 * 2 * 8 * 1500 * 384 * 2  # per layer K and V, once per clip, float16
                own = 4 * 2 * (8 * 5) * 120 * 384 * 2  # per layer K and V, per hypothesis
                return cross + own  # 1.03e8
                ### END SOLUTION
        ''',
        reference=_beam_bytes,
        public_cases=lambda: grouped("prediction", Case("8 clips x 5 beams, 1500 frames, 120 tokens")),
        tolerance=(0.02, 0.0),
        diagnoses=(
            Diagnosis(
                "every hypothesis keeps its own copy of something its clip's hypotheses could share: which cache depends only on the clip?",
                name="cross-attention cache per hypothesis",
                hint="the cross-attention's keys and values come from the clip's encoder output alone",
                variant=lambda: _beam_bytes(cross_per_beam=True),
            ),
            Diagnosis(
                "the hypotheses of a clip share a cache that differs between them: whose tokens fill the self-attention cache?",
                name="self-attention cache per clip",
                hint="each hypothesis has written its own tokens",
                variant=lambda: _beam_bytes(self_per_clip=True),
            ),
            Diagnosis(
                "the size of a number is not float16's: how many bytes does a float16 number take?",
                name="float32 bytes",
                hint="float16 takes 2 bytes",
                variant=lambda: _beam_bytes(nbytes=4),
            ),
            Diagnosis(
                "part of what a cache keeps for every position is missing: what does it keep?",
                name="keys only",
                hint="a key and a value for every position",
                variant=lambda: _beam_bytes(kv=1),
            ),
            Diagnosis(
                "one of the two caches is missing: which caches does the decoder keep?",
                name="cross-attention cache only",
                hint="the self-attention's cache and the cross-attention's",
                variant=lambda: _beam_bytes(parts=("cross",)),
            ),
            Diagnosis(
                "one of the two caches is missing: which caches does the decoder keep?",
                name="self-attention cache only",
                hint="the self-attention's cache and the cross-attention's",
                variant=lambda: _beam_bytes(parts=("self",)),
            ),
            Diagnosis(
                "only one layer's caches are counted: how many layers keep caches?",
                name="one layer",
                hint="every decoder layer keeps both caches",
                variant=lambda: _beam_bytes(layers=1),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.2 interleaved images (implement)
def _image(q, k, v, is_image, latent_image, gate, *, reads="last", gate_fn=np.tanh, scale=True):
    seen = np.cumsum(is_image, axis=-1)  # (B, L): images met so far, the marker's own included
    if reads == "strict":  # a marker reads the image before it
        seen = seen - is_image
    current = seen if reads == "from 1" else seen - 1  # (B, L): the image each position reads, -1 = none
    ids, cur = latent_image[:, None, :], current[:, :, None]  # (B, 1, S), (B, L, 1)
    if reads == "every":
        allowed = np.broadcast_to(ids >= 0, ids.shape[:1] + cur.shape[1:2] + ids.shape[2:])
    elif reads == "earlier":
        allowed = (ids >= 0) & (ids <= cur)
    else:
        allowed = (ids == cur) & (cur >= 0)
    scores = q @ np.swapaxes(k, -1, -2)  # (B, L, S)
    if scale:
        scores = scores / np.sqrt(q.shape[-1])
    weights = softmax(np.where(allowed, scores, -np.inf))
    return gate_fn(gate) * (weights @ v), weights


def image_inputs(rng, name, markers, latents, *, L, E=4, Ev=3, gate=1.5, dtype=np.float64):
    """A case: per example, the positions of its image markers and each image's number of latents;
    the latents of an example's images one after the other, padded with -1 to the longest."""
    B, S = len(markers), max(sum(n) for n in latents)
    is_image = np.zeros((B, L), dtype=bool)
    latent_image = np.full((B, S), -1, dtype=np.int64)
    for b, (at, counts) in enumerate(zip(markers, latents)):
        assert len(at) == len(counts)
        is_image[b, list(at)] = True
        latent_image[b, : sum(counts)] = np.repeat(np.arange(len(counts)), counts)
    n = rng.normal
    return Case(
        name,
        q=n(size=(B, L, E)).astype(dtype),
        k=n(size=(B, S, E)).astype(dtype),
        v=n(size=(B, S, Ev)).astype(dtype),
        is_image=is_image,
        latent_image=latent_image,
        gate=float(gate),
    )


def _image_cases():
    rng = np.random.default_rng(1222)
    return (
        grouped(
            "one image",
            image_inputs(rng, "B=1, L=4, the image at position 1, 3 latents", [[1]], [[3]], L=4),
            image_inputs(
                rng, "B=2, L=3, images at 0 and 2, gate -0.8", [[0], [2]], [[2], [2]], L=3, gate=-0.8
            ),
        )
        + grouped(
            "several images",
            image_inputs(rng, "B=1, L=6, images at 0, 2 and 4", [[0, 2, 4]], [[2, 3, 1]], L=6),
            image_inputs(
                rng, "B=1, L=5, two images side by side at 1 and 2", [[1, 2]], [[2, 2]], L=5, gate=2.0
            ),
        )
        + grouped(
            "padding latents",
            image_inputs(
                rng,
                "B=2, L=5, three images and one, 6 and 2 latents",
                [[0, 1, 3], [2]],
                [[2, 2, 2], [2]],
                L=5,
            ),
        )
        + grouped(
            "dtype",
            image_inputs(
                rng, "float32, B=2, L=4", [[0, 2], [1]], [[1, 2], [3]], L=4, gate=0.9, dtype=np.float32
            ),
        )
    )


def _image_wrong(**how):
    return lambda q, k, v, is_image, latent_image, gate: _image(q, k, v, is_image, latent_image, gate, **how)


register(
    Exercise(
        id="ch12.interleaved_image_attention",
        number="12.2",
        title="gated cross-attention over interleaved images",
        points=2,
        function="image_cross_attention",
        hint="count the image markers up to each position to find the one image it reads; scale the result by tanh of the gate",
        kind="implement",
        forbids=NO_FUSED,
        description="A Flamingo-style layer: text with images between its words. `is_image (B, L)` boolean "
        "marks the text positions where an image was inserted. The images' latent vectors are the keys "
        "`k (B, S, E)` and values `v (B, S, Ev)`, one image after the other; `latent_image (B, S)` "
        "integer says which image each latent belongs to (0 for the example's first image in the text, "
        "1 for its second, ...; -1 for padding when an example has fewer latents). Each text position, "
        "with queries `q (B, L, E)`, reads only the latents of the last image inserted at or before it; "
        "a position before any image reads nothing (all-zero weights and output, never NaN). Scale the "
        "scores by $1/\\sqrt{E}$ and the output by $\\tanh(\\text{gate})$, the gate a float. Return "
        "`(out (B, L, Ev), weights (B, L, S))`.",
        solution='''
            def image_cross_attention(q, k, v, is_image, latent_image, gate):
                """Gated cross-attention of text positions to their image's latents: (out, weights)."""
                ### BEGIN SOLUTION
                current = np.cumsum(is_image, axis=-1) - 1  # (B, L): the last image at or before, -1 = none
                allowed = (latent_image[:, None, :] == current[:, :, None]) & (current[:, :, None] >= 0)
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, L, S)
                weights = softmax(np.where(allowed, scores, -np.inf))  # a row with nothing allowed: zeros
                return np.tanh(gate) * (weights @ v), weights  # (B, L, S) @ (B, S, Ev) -> (B, L, Ev)
                ### END SOLUTION
        ''',
        reference=_image,
        public_cases=_image_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "a position reads the latents of images other than the last one before it: which image does it read?",
                name="every image read",
                hint="only the latents of the last image at or before the position",
                variant=_image_wrong(reads="every"),
            ),
            Diagnosis(
                "a position after two images reads the latents of both: which image does it read?",
                name="all earlier images read",
                hint="only the latents of the last image at or before the position",
                variant=_image_wrong(reads="earlier"),
            ),
            Diagnosis(
                "a position reads the image after its own: what does the count of markers up to it number?",
                name="images counted from 1",
                hint="the first image is image 0: subtract 1 from the count of markers so far",
                variant=_image_wrong(reads="from 1"),
            ),
            Diagnosis(
                "an image's own marker position reads the image before it: does the count include the marker?",
                name="marker excluded",
                hint="the last image inserted at or before the position: the marker's own image counts",
                variant=_image_wrong(reads="strict"),
            ),
            Diagnosis(
                "the output's size is wrong by a factor that depends on the gate: how does the gate scale the output?",
                name="raw gate",
                hint="scale by tanh(gate)",
                variant=_image_wrong(gate_fn=lambda g: g),
            ),
            Diagnosis(
                "the weights are too peaked: what are the scores divided by?",
                name="no scaling",
                hint="divide the scores by sqrt(E)",
                variant=_image_wrong(scale=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.3 prefix decoder (diagnose)
def _prefix(S, L, *, source_sees_target=False, target_not_causal=False, source_causal=False):
    n = S + L
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = j <= i  # causal everywhere
    mask = mask | ((i < S) & (j < S))  # the source reads itself both ways
    if source_sees_target:
        mask = mask | (i < S)
    if target_not_causal:
        mask = mask | ((i >= S) & (j >= S))
    if source_causal:
        mask = j <= i  # a plain causal decoder: the source reads only its own past
    return mask


def _prefix_cases():
    return grouped(
        "prefix mask",
        Case("S=3 source, L=2 target", S=3, L=2),
        Case("S=2 source, L=4 target", S=2, L=4),
    ) + grouped(
        "one side empty or short", Case("S=1 source, L=3 target", S=1, L=3), Case("S=4, L=1", S=4, L=1)
    )


register(
    Exercise(
        id="ch12.prefix_decoder_mask",
        former_ids=("ch12.fix_prefix_mask",),
        number="12.3",
        title="the mask of a prefix decoder",
        points=2,
        function="prefix_mask",
        hint="which rows of the mask are the source's, and which columns hold the target?",
        kind="diagnose",
        description="A decoder-only model can do the encoder–decoder's job by reading the source and "
        "the target as one sequence of `S + L` tokens: the source reads itself in both directions (as "
        "the encoder did), each target token reads the whole source and the target up to itself. "
        "`prefix_mask(S, L)` should return that boolean `(S + L, S + L)` mask (True = may attend). "
        "Symptom: trained with it, the loss falls almost to zero, yet generating one token at a time "
        "gives nonsense. Find the bug and fix it.",
        solution='''
            def prefix_mask(S, L):
                """(S + L, S + L) mask: the source bidirectional, the target causal and reading the source."""
                i = np.arange(S + L)[:, None]  # query position
                ### BEGIN SOLUTION
                j = np.arange(S + L)[None, :]  # key position
                source_block = (i < S) & (j < S)  # the source reads all of the source, and nothing else
                ### END SOLUTION
                return causal_mask(S + L) | source_block  # the target: everything up to itself
        ''',
        stub="""
            source_block = i < S
        """,
        reference=_prefix,
        public_cases=_prefix_cases,
        outputs=("mask",),
        needs=("import numpy as np", "from attncourse import causal_mask"),
        diagnoses=(
            Diagnosis(
                "a source position's output changes when a target token changes: which tokens may the source read?",
                name="source rows see the target",
                hint="the source's rows may read only the source's columns",
                variant=lambda S, L: _prefix(S, L, source_sees_target=True),
            ),
            Diagnosis(
                "a target token reads later target tokens: is the target written one token at a time?",
                name="target not causal",
                hint="within the target the mask is causal",
                variant=lambda S, L: _prefix(S, L, target_not_causal=True),
            ),
            Diagnosis(
                "a source token cannot read later source tokens: the whole source is known before writing",
                name="causal source",
                hint="the source block is all True, as in the encoder",
                variant=lambda S, L: _prefix(S, L, source_causal=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.4 remove a source token after the softmax (extend)
def _remove(weights, v, keep, *, renormalise=True, inverted=False):
    kept = ~keep if inverted else keep
    w = weights * kept[..., None, :]  # (B, L, S) * (B, 1, S): zero the removed columns
    if renormalise:
        total = w.sum(-1, keepdims=True)
        w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    return w @ v, w


def _remove_cases():
    rng = np.random.default_rng(1204)

    def case(name, B, L, S, Ev, keep, dtype=np.float64):
        scores = rng.normal(size=(B, L, S))
        return Case(
            name,
            weights=softmax(scores).astype(dtype),
            v=rng.normal(size=(B, S, Ev)).astype(dtype),
            keep=np.array(keep, dtype=bool),
        )

    return (
        grouped(
            "removed tokens",
            case("B=1, L=3, S=4, source token 1 removed", 1, 3, 4, 2, [[True, False, True, True]]),
            case(
                "B=2, L=2, S=5, two removed in one",
                2,
                2,
                5,
                3,
                [[True] * 5, [False, True, True, False, True]],
            ),
        )
        + grouped(
            "every token removed",
            case("B=2, L=2, S=3, all of sequence 1 removed", 2, 2, 3, 2, [[True, True, False], [False] * 3]),
        )
        + grouped(
            "dtype", case("float32, B=1, L=2, S=4", 1, 2, 4, 3, [[False, True, True, True]], dtype=np.float32)
        )
    )


register(
    Exercise(
        id="ch12.remove_source_tokens",
        number="12.4",
        title="remove source tokens without recomputing the scores",
        points=2,
        function="remove_source_tokens",
        hint="masking a key before the softmax gives the other keys the same scores: their weights keep their ratios and must again sum to 1",
        kind="extend",
        description="An ablation removes source tokens from cross-attention. Given the weights already "
        "computed, `weights (B, L, S)` (rows sum to 1), the values `v (B, S, Ev)` and `keep (B, S)` "
        "boolean (True = the token stays), return `(out (B, L, Ev), new_weights (B, L, S))` equal to "
        "what masked attention would give with the removed tokens' keys masked out before the softmax, "
        "without the scores. A row whose kept tokens carry no weight at all (none kept, or their weights "
        "are exactly 0) gets all-zero weights and output, the course's convention.",
        solution='''
            def remove_source_tokens(weights, v, keep):
                """Cross-attention with the tokens keep=False masked out: (out, new_weights)."""
                ### BEGIN SOLUTION
                w = weights * keep[:, None, :]  # (B, L, S) * (B, 1, S): removed columns to 0
                total = w.sum(-1, keepdims=True)  # (B, L, 1): what the kept tokens had
                w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)  # renormalise; empty rows stay 0
                return w @ v, w  # (B, L, S) @ (B, S, Ev) -> (B, L, Ev)
                ### END SOLUTION
        ''',
        reference=_remove,
        public_cases=_remove_cases,
        outputs=("out", "new_weights"),
        needs=("import numpy as np", "from attncourse import softmax"),
        distributions=("new_weights",),
        diagnoses=(
            Diagnosis(
                "the kept weights sum to less than 1: does a softmax over fewer keys give them the same weights?",
                name="not renormalised",
                hint="a softmax over the kept keys keeps their ratios and sums to 1 over them",
                variant=lambda weights, v, keep: _remove(weights, v, keep, renormalise=False),
            ),
            Diagnosis(
                "the removed tokens are the only ones with weight: which tokens does keep=True mark?",
                name="inverted keep",
                hint="True in keep means the token stays",
                variant=lambda weights, v, keep: _remove(weights, v, keep, inverted=True),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.5 latent resampler (implement)
def _resample(
    latents,
    features,
    W_q,
    W_k,
    W_v,
    feature_padding,
    *,
    keys="both",
    latents_first=False,
    padding=True,
    scale=True,
):
    B = features.shape[0]
    lat = np.broadcast_to(
        latents, (B,) + latents.shape
    )  # (R, d) -> (B, R, d): the same queries for every example
    real = feature_padding if padding else np.ones(feature_padding.shape, dtype=bool)
    if keys == "features":
        source, visible = features, real
    else:
        parts, vis = [features, lat], [real, np.ones(lat.shape[:2], dtype=bool)]
        if latents_first:
            parts, vis = parts[::-1], vis[::-1]
        source, visible = np.concatenate(parts, axis=1), np.concatenate(vis, axis=1)  # (B, N + R, ...)
    q = lat @ W_q  # (B, R, E)
    k, v = source @ W_k, source @ W_v
    scores = q @ np.swapaxes(k, -1, -2)  # (B, R, N + R)
    if scale:
        scores = scores / np.sqrt(q.shape[-1])
    weights = softmax(np.where(visible[:, None, :], scores, -np.inf))
    return weights @ v, weights


def resampler_inputs(rng, name, lengths, *, N, R=3, d=4, E=3, Ev=2, dtype=np.float64):
    """A case: per example, how many of its N feature vectors are real (the rest padding)."""
    B, n = len(lengths), rng.normal
    return Case(
        name,
        latents=n(size=(R, d)).astype(dtype),
        features=n(size=(B, N, d)).astype(dtype),
        W_q=n(size=(d, E)).astype(dtype),
        W_k=n(size=(d, E)).astype(dtype),
        W_v=n(size=(d, Ev)).astype(dtype),
        feature_padding=np.arange(N) < np.array(lengths)[:, None],
    )


def _resample_cases():
    rng = np.random.default_rng(1225)
    return (
        grouped(
            "shape",
            resampler_inputs(rng, "B=1, N=5 features, R=3 latents", [5], N=5),
            resampler_inputs(rng, "B=2, N=2, R=4, E=5", [2, 2], N=2, R=4, E=5),
        )
        + grouped(
            "feature padding",
            resampler_inputs(rng, "B=2, N=6, 6 and 3 real features", [6, 3], N=6),
        )
        + grouped(
            "an example with no features",
            resampler_inputs(rng, "B=2, N=4, 4 and 0 real features", [4, 0], N=4, R=2),
        )
        + grouped(
            "dtype",
            resampler_inputs(rng, "float32, B=2, N=5, 2 and 5 real", [2, 5], N=5, dtype=np.float32),
        )
    )


def _resample_wrong(**how):
    return lambda latents, features, W_q, W_k, W_v, feature_padding: _resample(
        latents, features, W_q, W_k, W_v, feature_padding, **how
    )


register(
    Exercise(
        id="ch12.latent_resampler",
        number="12.5",
        title="a resampler whose queries are learned latents",
        points=2,
        function="resample",
        hint="the queries are the latents themselves, the same for every example; keys and values come from the features followed by the latents, and only the features have padding",
        kind="implement",
        forbids=NO_FUSED,
        description="Flamingo's Perceiver Resampler turns a variable number of image features into a fixed "
        "number of vectors. One head of it: the queries come from `R` learned latent vectors "
        "`latents (R, d)`, the same for every example; the keys and values come from the example's "
        "features `features (B, N, d)` followed by the latents themselves (the features first). "
        "`feature_padding (B, N)` boolean marks the real features (True); the latents are never padding. "
        "Projections `W_q, W_k (d, E)`, `W_v (d, Ev)`; scale by $1/\\sqrt{E}$. Return "
        "`(out (B, R, Ev), weights (B, R, N + R))`.",
        solution='''
            def resample(latents, features, W_q, W_k, W_v, feature_padding):
                """One head of a latent resampler: (out (B, R, Ev), weights (B, R, N + R))."""
                ### BEGIN SOLUTION
                B, R = features.shape[0], latents.shape[0]
                lat = np.broadcast_to(latents, (B,) + latents.shape)  # (B, R, d): the same latents for every example
                source = np.concatenate([features, lat], axis=1)  # (B, N + R, d): features, then latents
                visible = np.concatenate([feature_padding, np.ones((B, R), dtype=bool)], axis=1)  # (B, N + R)
                q, k, v = lat @ W_q, source @ W_k, source @ W_v
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, R, N + R)
                weights = softmax(np.where(visible[:, None, :], scores, -np.inf))
                return weights @ v, weights  # (B, R, N + R) @ (B, N + R, Ev) -> (B, R, Ev)
                ### END SOLUTION
        ''',
        reference=_resample,
        public_cases=_resample_cases,
        outputs=("out", "weights"),
        distributions=("weights",),
        needs=("import numpy as np", "from attncourse import softmax"),
        diagnoses=(
            Diagnosis(
                "the weights on the latents' own columns are not where the prompt puts them: in what order are the keys?",
                name="latents first",
                hint="the features first, then the latents",
                variant=_resample_wrong(latents_first=True),
            ),
            Diagnosis(
                "padded features get weight: which keys does the padding hide?",
                name="padding ignored",
                hint="the padding hides the padded features' keys; the latents are always visible",
                variant=_resample_wrong(padding=False),
            ),
            Diagnosis(
                "the weights are too peaked: what are the scores divided by?",
                name="no scaling",
                hint="divide the scores by sqrt(E)",
                variant=_resample_wrong(scale=False),
            ),
        ),
    )
)


# ----------------------------------------------------------------------------- 12.6 packed cross mask (extend)
def _packed(src_lengths, tgt_lengths, *, all_pairs=False, transposed=False, causal=False):
    src_id = np.repeat(np.arange(len(src_lengths)), src_lengths)  # which example each source token is
    tgt_id = np.repeat(np.arange(len(tgt_lengths)), tgt_lengths)
    if transposed:
        mask = src_id[:, None] == tgt_id[None, :]
    elif all_pairs:
        mask = np.ones((len(tgt_id), len(src_id)), dtype=bool)
    else:
        mask = tgt_id[:, None] == src_id[None, :]  # (sum L, sum S)
    if causal:
        mask = mask & np.tril(np.ones(mask.shape, dtype=bool))
    return mask


def _packed_cases():
    return grouped(
        "packed examples",
        Case("sources 3, 2; targets 2, 4", src_lengths=np.array([3, 2]), tgt_lengths=np.array([2, 4])),
        Case(
            "sources 1, 4, 2; targets 3, 1, 2",
            src_lengths=np.array([1, 4, 2]),
            tgt_lengths=np.array([3, 1, 2]),
        ),
    ) + grouped(
        "one example", Case("source 4, target 2", src_lengths=np.array([4]), tgt_lengths=np.array([2]))
    )


register(
    Exercise(
        id="ch12.packed_cross_mask",
        number="12.6",
        title="the cross-attention mask of packed examples",
        points=2,
        function="packed_cross_mask",
        hint="label every source token and every target token with the example it belongs to; a target token may read a source token with the same label",
        kind="extend",
        description="To avoid padding, a batch packs several examples into one row: their sources one "
        "after another (`src_lengths`), their targets one after another (`tgt_lengths`, in the same "
        "order). Return the boolean cross-attention mask `(sum(tgt_lengths), sum(src_lengths))`: a "
        "target token may read every source token of its own example and none of the others'.",
        solution='''
            def packed_cross_mask(src_lengths, tgt_lengths):
                """(sum L, sum S) mask: each target token reads its own example's source."""
                ### BEGIN SOLUTION
                src_example = np.repeat(np.arange(len(src_lengths)), src_lengths)  # (sum S,)
                tgt_example = np.repeat(np.arange(len(tgt_lengths)), tgt_lengths)  # (sum L,)
                return tgt_example[:, None] == src_example[None, :]  # (sum L, 1) vs (1, sum S)
                ### END SOLUTION
        ''',
        reference=_packed,
        public_cases=_packed_cases,
        outputs=("mask",),
        diagnoses=(
            Diagnosis(
                "a target token reads the other examples' sources: what separates the examples?",
                name="examples read each other",
                hint="a target token may read only its own example's source tokens",
                variant=lambda src_lengths, tgt_lengths: _packed(src_lengths, tgt_lengths, all_pairs=True),
            ),
            Diagnosis(
                "the mask has a source token per row: which side are the queries?",
                name="transposed",
                hint="rows are target tokens (queries), columns source tokens (keys)",
                variant=lambda src_lengths, tgt_lengths: _packed(src_lengths, tgt_lengths, transposed=True),
            ),
            Diagnosis(
                "a target token cannot read its example's later source tokens: is cross-attention causal?",
                name="causal cross mask",
                hint="cross-attention is not causal: every source token of the example is known",
                variant=lambda src_lengths, tgt_lengths: _packed(src_lengths, tgt_lengths, causal=True),
            ),
        ),
    )
)


from . import _ch12_decoder  # noqa: E402,F401  (12.7 and 12.8: a packed decoder block, a beam step)
