"""Chapter 12: what each prompt promises about its inputs."""

from __future__ import annotations

import numpy as np

from ._rules import dtype_in, finite, integer, shape_is

FLOATS = ("float32", "float64")


def _none(case):
    return [] if not case else [f"a predict exercise takes no inputs, got {sorted(case)}"]


def _image(c):
    q, k, v = (np.asarray(c[n]) for n in ("q", "k", "v"))
    is_image, latent_image = np.asarray(c["is_image"]), np.asarray(c["latent_image"])
    B, L, E = q.shape
    S = k.shape[1]
    p = shape_is("k", k, (B, S, E)) + shape_is("v", v, (B, S, None))
    p += shape_is("is_image", is_image, (B, L)) + dtype_in("is_image", is_image, ("bool",))
    p += shape_is("latent_image", latent_image, (B, S)) + integer("latent_image", latent_image)
    for name, x in (("q", q), ("k", k), ("v", v)):
        p += dtype_in(name, x, FLOATS) + finite(name, x)
    if not isinstance(c["gate"], float) or not np.isfinite(c["gate"]):
        p.append("gate must be a finite float")
    for b in range(B):
        ids, n_images = latent_image[b], int(is_image[b].sum())
        real = ids[ids >= 0]
        # the latents of the example's images one after the other (0 first), then -1 padding
        if (ids[: len(real)] != real).any() or (ids[len(real) :] != -1).any() or (np.diff(real) < 0).any():
            p.append(f"example {b}: latent_image is not its images' latents in order, then -1 padding")
        if set(real.tolist()) != set(range(n_images)):
            p.append(f"example {b}: latent_image does not hold a latent for each of its {n_images} images")
    return p


def _prefix(c):
    p = integer("S", c["S"]) + integer("L", c["L"])
    return p + ([] if not p and c["S"] >= 1 and c["L"] >= 1 else ["S and L are token counts >= 1"])


def _remove(c):
    w, v, keep = (np.asarray(c[n]) for n in ("weights", "v", "keep"))
    B, L, S = w.shape
    p = shape_is("v", v, (B, S, None)) + shape_is("keep", keep, (B, S)) + dtype_in("keep", keep, ("bool",))
    p += dtype_in("weights", w, FLOATS) + dtype_in("v", v, FLOATS) + finite("weights", w) + finite("v", v)
    if not np.allclose(w.sum(-1), 1.0, atol=1e-5) or (w < 0).any():
        p.append("weights rows must be non-negative and sum to 1")
    return p


def _resample(c):
    latents, features = np.asarray(c["latents"]), np.asarray(c["features"])
    R, d = latents.shape
    B, N = features.shape[:2]
    E, Ev = np.asarray(c["W_q"]).shape[1], np.asarray(c["W_v"]).shape[1]
    p = shape_is("features", features, (B, N, d)) + shape_is("W_q", c["W_q"], (d, E))
    p += shape_is("W_k", c["W_k"], (d, E)) + shape_is("W_v", c["W_v"], (d, Ev))
    for name in ("latents", "features", "W_q", "W_k", "W_v"):
        p += dtype_in(name, c[name], FLOATS) + finite(name, c[name])
    pad = np.asarray(c["feature_padding"])
    p += shape_is("feature_padding", pad, (B, N)) + dtype_in("feature_padding", pad, ("bool",))
    if not p and (np.diff(pad.astype(int), axis=-1) > 0).any():
        p.append("feature_padding: padding comes after an example's real features")
    return p


def _packed(c):
    p = []
    for n in ("src_lengths", "tgt_lengths"):
        p += integer(n, c[n])
        if np.asarray(c[n]).ndim != 1 or (np.asarray(c[n]) < 1).any():
            p.append(f"{n} must be a 1-d array of lengths >= 1")
    if len(c["src_lengths"]) != len(c["tgt_lengths"]):
        p.append("one source and one target per example")
    return p


def _weights(c, d):
    H = c["n_heads"]
    p = integer("n_heads", H)
    if not p and (H < 1 or d % H):
        p.append("n_heads must divide d")
    d_ff = np.asarray(c["W1"]).shape[0]
    shapes = {
        "attn_w": (2, 4, d, d),
        "attn_b": (2, 4, d),
        "W1": (d_ff, d),
        "b1": (d_ff,),
        "W2": (d, d_ff),
        "b2": (d,),
        "norms": (3, 2, d),
    }
    for n, shape in shapes.items():
        p += shape_is(n, c[n], shape) + dtype_in(n, c[n], FLOATS) + finite(n, c[n])
    return p


def _padding(c, B, S):
    pad = c["src_padding"]
    p = dtype_in("src_padding", pad, ("bool",)) + shape_is("src_padding", pad, (B, S))
    if not p and not np.asarray(pad).any(-1).all():
        p.append("every source has at least one real token")
    return p


def _packed_block(c):
    x, memory = np.asarray(c["x"]), np.asarray(c["memory"])
    T, d = x.shape
    p = _packed(c) + shape_is("memory", memory, (None, d)) + _weights(c, d)
    if not p and (int(np.sum(c["tgt_lengths"])) != T or int(np.sum(c["src_lengths"])) != memory.shape[0]):
        p.append("T = sum(tgt_lengths) and M = sum(src_lengths)")
    for n in ("x", "memory"):
        p += dtype_in(n, c[n], FLOATS) + finite(n, c[n])
    return p


def _beam(c):
    x = np.asarray(c["x_new"])
    BK, one, d = x.shape
    B, S = np.asarray(c["cross_k"]).shape[:2]
    p = [] if one == 1 else ["x_new must be (B * K, 1, d)"]
    if BK % B:
        p.append("the rows are K hypotheses for each of the B sources")
    K = BK // B
    t = np.asarray(c["self_k"]).shape[1]
    p += shape_is("self_k", c["self_k"], (BK, t, d)) + shape_is("self_v", c["self_v"], (BK, t, d))
    p += shape_is("cross_v", c["cross_v"], (B, S, d))
    for n in ("x_new", "self_k", "self_v", "cross_k", "cross_v"):
        p += dtype_in(n, c[n], FLOATS) + finite(n, c[n])
    parents = np.asarray(c["parents"])
    p += integer("parents", parents) + shape_is("parents", parents, (BK,))
    if not p and (parents // K != np.arange(BK) // K).any():
        p.append("parents[r] is a row of the same source as r")
    return p + _padding(c, B, S) + _weights(c, d)


PROMISES = {
    "ch12.predict_beam_cache_bytes": _none,
    "ch12.interleaved_image_attention": _image,
    "ch12.prefix_decoder_mask": _prefix,
    "ch12.remove_source_tokens": _remove,
    "ch12.latent_resampler": _resample,
    "ch12.packed_cross_mask": _packed,
    "ch12.packed_decoder_block": _packed_block,
    "ch12.beam_decoder_step": _beam,
}
