"""What chapter 10's prompts promise about their inputs."""

from __future__ import annotations

import numpy as np

from ._rules import _array, dtype_in, finite, integer, ndim_in

FLOATS = ("float32", "float64")


def _positive_int(name, x):
    problems = integer(name, x)
    return problems or ([] if int(x) >= 1 else [f"{name} = {x}; the prompt needs at least 1"])


def _sizes_fit(sizes, H, W, P):
    """sizes (B, 2) integers, each image inside the H x W canvas; H and W multiples of P."""
    problems = _positive_int("H", H) + _positive_int("W", W) + _positive_int("P", P) + integer("sizes", sizes)
    problems += ndim_in("sizes", sizes, (2,))
    if problems:
        return problems
    s = _array(sizes)
    if s.shape[1] != 2:
        problems.append(f"sizes has shape {s.shape}, not (B, 2)")
    elif np.any(s < 1) or np.any(s[:, 0] > H) or np.any(s[:, 1] > W):
        problems.append(f"an image of sizes {s.tolist()} is empty or does not fit the {H} x {W} canvas")
    if H % P or W % P:
        problems.append(f"the {H} x {W} canvas is not cut into whole {P} x {P} patches")
    return problems


def resize_positions(inputs):
    pos, gh, gw, nh, nw = (inputs[k] for k in ("pos", "gh", "gw", "nh", "nw"))
    problems = [p for n in ("gh", "gw", "nh", "nw") for p in _positive_int(n, inputs[n])]
    problems += dtype_in("pos", pos, FLOATS) + finite("pos", pos) + ndim_in("pos", pos, (2,))
    if not problems and _array(pos).shape[0] != 1 + gh * gw:
        problems.append(f"pos has {_array(pos).shape[0]} rows, not 1 + gh * gw = {1 + gh * gw}")
    return problems


def window_attention_mask(inputs):  # 10.2: ints gh, gw, M >= 1
    return [p for n in ("gh", "gw", "M") for p in _positive_int(n, inputs[n])]


def predict_window_scores(inputs):
    return [] if not inputs else [f"a prediction takes no inputs; got {sorted(inputs)}"]


def conv_as_matmul(inputs):
    images, weight, bias, stride = (inputs[k] for k in ("images", "weight", "bias", "stride"))
    problems = _positive_int("stride", stride)
    for name, x, nd in (("images", images, 4), ("weight", weight, 4), ("bias", bias, 1)):
        problems += dtype_in(name, x, FLOATS) + finite(name, x) + ndim_in(name, x, (nd,))
    if problems:
        return problems
    B, C, H, W = _array(images).shape
    D, Cw, P, Q = _array(weight).shape
    if Cw != C or P != Q or _array(bias).shape != (D,):
        problems.append(f"weight {(D, Cw, P, Q)} / bias {_array(bias).shape} do not match (D, C, P, P), (D,)")
    if P > H or P > W:
        problems.append(f"a {P} x {P} kernel does not fit a {H} x {W} image")
    return problems


def padded_patch_mask(inputs):
    return _sizes_fit(inputs["sizes"], inputs["H"], inputs["W"], inputs["P"])


def pool_real_patches(inputs):
    tokens, key_mask, R = inputs["tokens"], inputs["key_mask"], inputs["n_registers"]
    problems = integer("n_registers", R) + dtype_in("key_mask", key_mask, ("bool",))
    problems += (
        dtype_in("tokens", tokens, FLOATS) + finite("tokens", tokens) + ndim_in("tokens", tokens, (3,))
    )
    problems += ndim_in("key_mask", key_mask, (2,))
    if problems:
        return problems
    t, m = _array(tokens), _array(key_mask)
    if R < 0:
        return [f"n_registers = {R} is negative"]
    if m.shape != t.shape[:2]:
        return [f"key_mask {m.shape} is not one column per token of tokens {t.shape}"]
    N = t.shape[1] - 1 - R
    if N < 1:
        problems.append("no patch token between [CLS] and the registers")
    if not m[:, 0].all() or not m[:, 1 + N :].all():
        problems.append("the key mask hides [CLS] or a register")
    if not m[:, 1 : 1 + N].any(axis=1).all():
        problems.append("an image has no patch that holds one of its pixels")
    return problems


PROMISES = {
    "ch10.resize_positions": resize_positions,
    "ch10.window_attention_mask": window_attention_mask,
    "ch10.predict_window_scores": predict_window_scores,
    "ch10.conv_as_matmul": conv_as_matmul,
    "ch10.padded_patch_mask": padded_patch_mask,
    "ch10.pool_real_patches": pool_real_patches,
}
