"""The tiled attention of ``flash.py`` as one Triton kernel (forward only; optional).

``flash_attention`` runs its loop in Python and launches a handful of torch operations per
block.  A GPU kernel runs the same loop inside one program per block of queries: the block of
queries, the running max ``m``, the running sum ``l`` and the running output ``acc`` stay in
the GPU's fast on-chip memory while blocks of keys and values stream past; the ``L x S``
scores exist only as one ``BLOCK_M x BLOCK_N`` tile at a time.

Triton (``pip install triton``; Linux, bundled with PyTorch's CUDA wheels) compiles the kernel
for an NVIDIA or AMD GPU.  On the CPU, set ``TRITON_INTERPRET=1`` in the environment before
Python imports triton, and the same kernel runs in Triton's interpreter (slowly: it is for
testing and for reading).
"""

from __future__ import annotations

import os
from typing import Any, Optional

from ._backend import LOG2_E, AttentionInputError, AttentionTypeError
from ._validation import public
from .flash import validate_attention
from .functional import ungroup_query_heads

__all__ = ["triton_available", "triton_flash_attention"]

Array = Any
_KERNELS: dict = {}


def triton_available() -> bool:
    """True if ``import triton`` works."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def _kernel():
    """Build the kernel on first use (``triton.jit`` reads TRITON_INTERPRET when it decorates)."""
    mode = _interpreting()
    if mode in _KERNELS:
        return _KERNELS[mode]
    import triton
    import triton.language as tl

    @triton.jit
    def flash_forward(
        Q, K, V, Mask, Out,
        sq_b, sq_l, sq_e, sk_b, sk_s, sk_e, sv_b, sv_s, sv_e, sm_b, sm_l, sm_s, so_b, so_l, so_e,
        L, S, E, Ev, qk_scale,
        HAS_MASK: tl.constexpr, IS_CAUSAL: tl.constexpr, IEEE: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr,
    ):  # fmt: skip
        # One program: BLOCK_M queries of one (batch, head) pair.
        pid_m = tl.program_id(0)
        bh = tl.program_id(1)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        e = tl.arange(0, BLOCK_E)
        ev = tl.arange(0, BLOCK_EV)
        q = tl.load(
            Q + bh * sq_b + rows[:, None] * sq_l + e[None, :] * sq_e,
            mask=(rows[:, None] < L) & (e[None, :] < E),
            other=0.0,
        )  # (BLOCK_M, BLOCK_E)
        m = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max (base-2 units)
        l = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp2(s - m)
        acc = tl.zeros([BLOCK_M, BLOCK_EV], tl.float32)  # running sum of exp2(s - m) @ v
        hi = S
        if IS_CAUSAL:
            hi = tl.minimum(S, (pid_m + 1) * BLOCK_M)  # keys past the block's last query: skipped
        for j0 in range(0, hi, BLOCK_N):
            cols = j0 + tl.arange(0, BLOCK_N)
            kT = tl.load(
                K + bh * sk_b + cols[None, :] * sk_s + e[:, None] * sk_e,
                mask=(cols[None, :] < S) & (e[:, None] < E),
                other=0.0,
            )  # (BLOCK_E, BLOCK_N)
            if IEEE:
                s = tl.dot(q, kT, input_precision="ieee")
            else:
                s = tl.dot(q, kT)
            s = s * qk_scale  # (BLOCK_M, BLOCK_N), scale * log2(e) folded in
            allowed = (cols[None, :] < S) & (rows[:, None] < L)
            if IS_CAUSAL:
                allowed = allowed & (cols[None, :] <= rows[:, None])
            if HAS_MASK:
                user = tl.load(
                    Mask + bh * sm_b + rows[:, None] * sm_l + cols[None, :] * sm_s,
                    mask=(rows[:, None] < L) & (cols[None, :] < S),
                    other=0,
                )
                allowed = allowed & (user != 0)
            s = tl.where(allowed, s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, 1))
            shift = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row blocked so far
            p = tl.exp2(s - shift[:, None])
            alpha = tl.exp2(m - shift)
            l = l * alpha + tl.sum(p, 1)
            v = tl.load(
                V + bh * sv_b + cols[:, None] * sv_s + ev[None, :] * sv_e,
                mask=(cols[:, None] < S) & (ev[None, :] < Ev),
                other=0.0,
            )  # (BLOCK_N, BLOCK_EV)
            if IEEE:
                pv = tl.dot(p.to(v.dtype), v, input_precision="ieee")
            else:
                pv = tl.dot(p.to(v.dtype), v)
            acc = acc * alpha[:, None] + pv
            m = m_new
        out = acc / tl.where(l == 0.0, 1.0, l)[:, None]  # rows with nothing to attend to: zeros
        tl.store(
            Out + bh * so_b + rows[:, None] * so_l + ev[None, :] * so_e,
            out.to(Out.dtype.element_ty),
            mask=(rows[:, None] < L) & (ev[None, :] < Ev),
        )

    _KERNELS[mode] = flash_forward
    return flash_forward


def _pow2(n: int, least: int = 16) -> int:
    p = least
    while p < n:
        p *= 2
    return p


@public("triton_flash_attention")
def triton_flash_attention(
    q: Array,
    k: Array,
    v: Array,
    mask: Optional[Array] = None,
    *,
    is_causal: bool = False,
    scale: Optional[float] = None,
    block_m: int = 64,
    block_n: int = 64,
    enable_gqa: bool = False,
) -> Array:
    """``flash_attention`` as a Triton kernel: torch tensors on a GPU (or on the CPU under
    ``TRITON_INTERPRET=1``).  Forward only (no gradients).

    Same arguments, checks, mask semantics (boolean, True = may attend, broadcastable to
    ``(..., L, S)``; top-left ``is_causal``; all-masked rows give zeros) and result as
    ``flash_attention``.  ``block_m`` queries and ``block_n`` keys per tile (powers of two,
    at least 16).  float32 products are computed in full float32 (no TF32); float16 and
    bfloat16 multiply in their own precision and accumulate in float32.

    ``enable_gqa`` has the meaning of ``flash_attention``'s (query head ``h`` reads key/value head
    ``h // (H / H_kv)``).  The kernel runs one program per query head and reads its key/value
    head from a copy made per query head, so it gives the grouped result but not the memory saving.
    """
    ops, q, k, v, mask, scale, lead, (L, S, E, Ev), H = validate_attention(q, k, v, mask, scale, enable_gqa)
    if ops.name != "torch":
        raise AttentionTypeError("needs torch tensors; got numpy arrays. Use flash_attention for numpy.")
    if str(q.dtype) not in ("torch.float32", "torch.float16", "torch.bfloat16"):
        raise AttentionTypeError(
            f"the kernel computes in float32 at most; got {q.dtype}. Use flash_attention for float64."
        )
    for name, b in (("block_m", block_m), ("block_n", block_n)):
        if isinstance(b, bool) or not isinstance(b, int) or b < 16 or b & (b - 1):
            raise AttentionInputError(f"{name} must be a power of two >= 16; got {b!r}.")
    if not triton_available():
        raise ImportError(
            "triton_flash_attention needs Triton, which is not installed: pip install triton (Linux). "
            "flash_attention runs the same algorithm without it."
        )
    if q.device.type == "cpu" and not _interpreting():
        raise AttentionInputError(
            "q is on the CPU, and Triton kernels run on a GPU. Move the tensors to a GPU, "
            "or set the environment variable TRITON_INTERPRET=1 (before triton is imported) to run the "
            "kernel in Triton's interpreter on the CPU (slow; for tests), or use flash_attention."
        )
    import torch

    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        raise AttentionInputError(
            "the kernel is forward only (no gradients); use flash_attention for training."
        )
    out_dtype = q.dtype
    # One program per (block of queries, batch-and-head): flatten the broadcast leading dims.
    n = 1
    for d in lead:
        n *= d
    q3 = q.expand(*lead, L, E).reshape(n, L, E)
    k3 = k.expand(*lead, S, E).reshape(n, S, E)
    v3 = v.expand(*lead, S, Ev).reshape(n, S, Ev)
    if _interpreting() and q.dtype == torch.bfloat16:
        # Triton's interpreter (numpy underneath) gets tl.dot of bfloat16 wrong: multiply in float32.
        q3, k3, v3 = q3.float(), k3.float(), v3.float()
    if mask is not None:
        m3 = mask.expand(*lead, L, S).reshape(n, L, S).to(torch.int8)
        mask_strides = m3.stride()
    else:
        m3, mask_strides = q3, (0, 0, 0)  # a placeholder pointer, never read
    out = torch.empty((n, L, Ev), dtype=out_dtype, device=q.device)
    if n == 0 or L == 0:
        out = out.reshape(*lead, L, Ev)
        return ungroup_query_heads(out, H) if H else out
    grid = (max(1, -(-L // block_m)), n)
    _kernel()[grid](
        q3, k3, v3, m3, out,
        *q3.stride(), *k3.stride(), *v3.stride(), *mask_strides, *out.stride(),
        L, S, E, Ev, float(scale * LOG2_E),
        HAS_MASK=mask is not None, IS_CAUSAL=bool(is_causal), IEEE=q3.dtype == torch.float32,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_E=_pow2(E), BLOCK_EV=_pow2(Ev),
    )  # fmt: skip
    out = out.reshape(*lead, L, Ev)
    return ungroup_query_heads(out, H) if H else out  # (..., H_kv, H / H_kv, L, Ev) -> (..., H, L, Ev)
