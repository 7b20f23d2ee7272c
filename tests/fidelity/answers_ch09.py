"""Chapter 9 (efficient attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch09.merge_partials": {
        "torch with the chapter's torch import": """
            def merge_partials(m1, l1, acc1, m2, l2, acc2):
                m1, l1, acc1, m2, l2, acc2 = (torch.as_tensor(a) for a in (m1, l1, acc1, m2, l2, acc2))
                m = torch.maximum(m1, m2)
                shift = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
                a1, a2 = torch.exp(m1 - shift), torch.exp(m2 - shift)
                return m, a1 * l1 + a2 * l2, a1.unsqueeze(-1) * acc1 + a2.unsqueeze(-1) * acc2
        """,
        "float32 numpy": """
            def merge_partials(m1, l1, acc1, m2, l2, acc2):
                m1, l1, acc1, m2, l2, acc2 = (np.asarray(a, dtype=np.float32) for a in (m1, l1, acc1, m2, l2, acc2))
                m = np.maximum(m1, m2)
                safe = np.where(m == -np.inf, np.float32(0), m)
                a1, a2 = np.exp(m1 - safe), np.exp(m2 - safe)
                return m, a1 * l1 + a2 * l2, a1[..., None] * acc1 + a2[..., None] * acc2
        """,
        "helper in an added cell": [
            """
            def _merge_factor(m_half, m):
                with np.errstate(invalid="ignore"):
                    f = np.exp(m_half - m)
                return np.nan_to_num(f, nan=0.0)  # -inf - -inf: a half with no key weighs nothing
            """,
            """
            def merge_partials(m1, l1, acc1, m2, l2, acc2):
                m = np.fmax(m1, m2)
                a1, a2 = _merge_factor(m1, m), _merge_factor(m2, m)
                return m, a1 * l1 + a2 * l2, np.expand_dims(a1, -1) * acc1 + np.expand_dims(a2, -1) * acc2
            """,
        ],
    },
    "ch09.key_block_grads": {
        "einsum": """
            def key_block_grads(q, k_blk, v_blk, dout, out, lse):
                c = 1 / math.sqrt(q.shape[-1])
                P = np.exp(np.einsum("...le,...be->...lb", q, k_blk) * c - lse[..., None])
                dP = np.einsum("...lv,...bv->...lb", dout, v_blk)
                D = np.einsum("...lv,...lv->...l", dout, out)
                dS = P * (dP - D[..., None])
                return np.einsum("...lb,...le->...be", dS, q) * c, np.einsum("...lb,...lv->...bv", P, dout)
        """,
        "torch autograd through the block's weights": """
            def key_block_grads(q, k_blk, v_blk, dout, out, lse):
                q_, o_, do_, lse_ = (torch.as_tensor(a) for a in (q, out, dout, lse))
                k = torch.as_tensor(k_blk).clone().requires_grad_(True)
                v = torch.as_tensor(v_blk).clone().requires_grad_(True)
                P = torch.exp(q_ @ k.transpose(-1, -2) / math.sqrt(q_.shape[-1]) - lse_[..., None])
                # out = P @ v + (the other keys' share, constant here); softmax's row sum ties them:
                # d out / d s_j = P_j (v_j - out), so the loss's gradient flows through this surrogate
                surrogate = (do_ * (P @ v)).sum() - ((do_ * o_).sum(-1, keepdim=True) * P).sum()
                surrogate.backward()
                return k.grad, v.grad
        """,
        "float32 loops over the block's keys": """
            def key_block_grads(q, k_blk, v_blk, dout, out, lse):
                q, k_blk, v_blk = q.astype(np.float32), k_blk.astype(np.float32), v_blk.astype(np.float32)
                dout, out, lse = dout.astype(np.float32), out.astype(np.float32), lse.astype(np.float32)
                c = np.float32(1 / np.sqrt(q.shape[-1]))
                D = (dout * out).sum(-1)
                dk, dv = np.zeros_like(k_blk), np.zeros_like(v_blk)
                for j in range(k_blk.shape[-2]):
                    p = np.exp((q * k_blk[..., j : j + 1, :]).sum(-1) * c - lse)  # (..., L)
                    dv[..., j, :] = (p[..., None] * dout).sum(-2)
                    dp = (dout * v_blk[..., j : j + 1, :]).sum(-1)
                    dk[..., j, :] = ((p * (dp - D))[..., None] * q).sum(-2) * c
                return dk, dv
        """,
    },
    "ch09.static_cache_step": {
        "torch with the chapter's F": """
            def static_cache_step(q_new, k_new, v_new, k_cache, v_cache, lengths):
                q, kn, vn = (torch.as_tensor(a) for a in (q_new, k_new, v_new))
                k, v = torch.as_tensor(k_cache).clone(), torch.as_tensor(v_cache).clone()
                rows, n = torch.arange(k.shape[0]), torch.as_tensor(lengths)
                k[rows, n], v[rows, n] = kn[:, 0], vn[:, 0]
                s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
                hidden = torch.arange(k.shape[1])[None, None, :] > n[:, None, None]
                w = F.softmax(s.masked_fill(hidden, float("-inf")), dim=-1)
                return (w @ v).numpy(), k.numpy(), v.numpy()
        """,
        "a loop over the sequences in float32": """
            def static_cache_step(q_new, k_new, v_new, k_cache, v_cache, lengths):
                k_cache, v_cache = k_cache.astype(np.float32), v_cache.astype(np.float32)
                outs = []
                for b, n in enumerate(lengths):
                    k_cache[b, n], v_cache[b, n] = k_new[b, 0], v_new[b, 0]
                    k, v = k_cache[b, : n + 1], v_cache[b, : n + 1]  # this sequence's tokens only
                    s = q_new[b].astype(np.float32) @ k.T / np.float32(np.sqrt(k.shape[-1]))
                    outs.append(softmax(s) @ v)
                return np.stack(outs), k_cache, v_cache
        """,
        "helper in an added cell": [
            """
            def _write_slot(cache, new, lengths):
                cache = cache.copy()
                cache[np.arange(len(lengths)), lengths] = new[:, 0]
                return cache
            """,
            """
            def static_cache_step(q_new, k_new, v_new, k_cache, v_cache, lengths):
                k_all, v_all = _write_slot(k_cache, k_new, lengths), _write_slot(v_cache, v_new, lengths)
                s = np.einsum("bqe,bte->bqt", q_new, k_all) / np.sqrt(q_new.shape[-1])
                s[np.arange(k_all.shape[1])[None, None, :] > lengths[:, None, None]] = -np.inf
                return softmax(s) @ v_all, k_all, v_all
            """,
        ],
    },
    "ch09.remove_keys": {
        "einsum with logsumexp arithmetic": """
            def remove_keys(q, k_rm, v_rm, out, lse):
                s = np.einsum("...le,...re->...lr", q, k_rm) / math.sqrt(q.shape[-1])
                lse_rm = np.log(np.exp(s - lse[..., None]).sum(-1)) + lse  # log-sum of the removed keys
                lse_new = lse + np.log(-np.expm1(lse_rm - lse))  # log(e^lse - e^lse_rm)
                w_rm = np.exp(s - lse_new[..., None])  # removed keys, over the new sum
                scale = np.exp(lse - lse_new)[..., None]  # old sum / new sum
                return out * scale - np.einsum("...lr,...rv->...lv", w_rm, v_rm), lse_new
        """,
        "torch, one removed key at a time": """
            def remove_keys(q, k_rm, v_rm, out, lse):
                q, k_rm, v_rm = torch.as_tensor(q), torch.as_tensor(k_rm), torch.as_tensor(v_rm)
                o, l = torch.as_tensor(out).clone(), torch.as_tensor(lse).clone()
                for j in range(k_rm.shape[-2]):
                    s = (q @ k_rm[..., j, :].unsqueeze(-1)).squeeze(-1) / math.sqrt(q.shape[-1])  # (..., L)
                    w = torch.exp(s - l)  # this key's weight among the keys still in
                    o = (o - w.unsqueeze(-1) * v_rm[..., j, :].unsqueeze(-2)) / (1 - w).unsqueeze(-1)
                    l = l + torch.log1p(-w)
                return o, l
        """,
        "float32 numpy": """
            def remove_keys(q, k_rm, v_rm, out, lse):
                q, k_rm, v_rm, out, lse = (np.asarray(a, dtype=np.float32) for a in (q, k_rm, v_rm, out, lse))
                w = np.exp(q @ np.swapaxes(k_rm, -1, -2) / np.float32(np.sqrt(q.shape[-1])) - lse[..., None])
                keep = 1 - w.sum(-1)
                return (out - w @ v_rm) / keep[..., None], lse + np.log(keep)
        """,
        "helper in an added cell": [
            """
            def _weights_in_finished_pass(q, k, lse):
                return np.exp(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) - lse[..., None])
            """,
            """
            def remove_keys(q, k_rm, v_rm, out, lse):
                w = _weights_in_finished_pass(q, k_rm, lse)
                rest = 1.0 - w.sum(axis=-1, keepdims=True)
                return (out - w @ v_rm) / rest, lse + np.log(rest[..., 0])
            """,
        ],
    },
    "ch09.rope_decode": {
        "the cache keeps unrotated keys and rotates them all, each at its own position": """
            def rope_decode(x, W_q, W_k, W_v):
                E = W_q.shape[1]
                k_cache = np.zeros((0, E))
                v_cache = np.zeros((0, W_v.shape[1]))
                outs = []
                for t in range(x.shape[0]):
                    x_t = x[t : t + 1]
                    q_t, k_t, v_t = x_t @ W_q, x_t @ W_k, x_t @ W_v
                    k_cache = np.concatenate([k_cache, k_t])
                    v_cache = np.concatenate([v_cache, v_t])
                    k_rot = apply_rope(k_cache)  # positions 0..t, from the unrotated keys
                    q_t = apply_rope(q_t, np.array([t]))
                    scores = q_t @ k_rot.T / np.sqrt(E)
                    outs.append(softmax(scores) @ v_cache)
                return np.concatenate(outs)
        """,
        "torch, a list as the cache": """
            def rope_decode(x, W_q, W_k, W_v):
                x, W_q, W_k, W_v = (torch.as_tensor(a) for a in (x, W_q, W_k, W_v))
                keys, values, outs = [], [], []
                for t in range(x.shape[0]):
                    x_t = x[t : t + 1]
                    pos = torch.tensor([t])
                    keys.append(apply_rope(x_t @ W_k, pos))
                    values.append(x_t @ W_v)
                    q_t = apply_rope(x_t @ W_q, pos)
                    K, V = torch.cat(keys), torch.cat(values)
                    w = torch.softmax(q_t @ K.T / math.sqrt(W_q.shape[1]), dim=-1)
                    outs.append(w @ V)
                return torch.cat(outs).numpy()
        """,
        "float32, the rotation written out by hand": """
            def rope_decode(x, W_q, W_k, W_v):
                x, W_q, W_k, W_v = (np.asarray(a, dtype=np.float32) for a in (x, W_q, W_k, W_v))
                E = W_q.shape[1]
                inv = (10000.0 ** (-np.arange(0, E, 2) / E)).astype(np.float32)  # (E/2,)

                def rot(v, t):  # half-split: pair feature i with feature i + E/2
                    a, b = v[..., : E // 2], v[..., E // 2 :]
                    c, s = np.cos(t * inv), np.sin(t * inv)
                    return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)

                k_cache = np.zeros((0, E), np.float32)
                v_cache = np.zeros((0, W_v.shape[1]), np.float32)
                outs = []
                for t in range(x.shape[0]):
                    x_t = x[t : t + 1]
                    k_cache = np.concatenate([k_cache, rot(x_t @ W_k, t)])
                    v_cache = np.concatenate([v_cache, x_t @ W_v])
                    s = rot(x_t @ W_q, t) @ k_cache.T / np.sqrt(E)
                    e = np.exp(s - s.max())
                    outs.append(e / e.sum() @ v_cache)
                return np.concatenate(outs)
        """,
    },
    "ch09.causal_tiled_attention": {
        "torch with the chapter's torch and math imports": """
            def causal_tiled_attention(q, k, v, block_size):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                L, S = q.shape[-2], k.shape[-2]
                out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
                n_tiles = 0
                for i0 in range(0, L, block_size):
                    i1 = min(i0 + block_size, L)
                    pos = torch.arange(i0, i1) + (S - L)
                    m = torch.full(q.shape[:-2] + (i1 - i0,), float("-inf"), dtype=q.dtype)
                    l = torch.zeros_like(m)
                    acc = torch.zeros(*m.shape, v.shape[-1], dtype=q.dtype)
                    for j0 in range(0, S, block_size):
                        if j0 > pos[-1]:
                            break
                        j1 = min(j0 + block_size, S)
                        n_tiles += 1
                        s = q[..., i0:i1, :] @ k[..., j0:j1, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
                        s = s.masked_fill(torch.arange(j0, j1)[None, :] > pos[:, None], float("-inf"))
                        m_new = torch.maximum(m, s.amax(-1))
                        r, p = torch.exp(m - m_new), torch.exp(s - m_new.unsqueeze(-1))
                        l, acc, m = l * r + p.sum(-1), acc * r.unsqueeze(-1) + p @ v[..., j0:j1, :], m_new
                    out[..., i0:i1, :] = acc / l.unsqueeze(-1)
                return out, n_tiles
        """,
        "float32 numpy, the visible key blocks counted first": """
            def causal_tiled_attention(q, k, v, block_size):
                q, k, v = q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)
                L, S, scale = q.shape[-2], k.shape[-2], np.float32(1 / np.sqrt(q.shape[-1]))
                outs, n_tiles = [], 0
                for i0 in range(0, L, block_size):
                    qi = q[..., i0 : i0 + block_size, :]
                    rows = S - L + np.arange(i0, i0 + qi.shape[-2])
                    n_visible = rows[-1] // block_size + 1  # key blocks starting at or before the last query
                    m = np.full(qi.shape[:-1], -np.inf, dtype=np.float32)
                    l = np.zeros_like(m)
                    acc = np.zeros(qi.shape[:-1] + (v.shape[-1],), dtype=np.float32)
                    for jb in range(n_visible):
                        j0 = jb * block_size
                        kj, vj = k[..., j0 : j0 + block_size, :], v[..., j0 : j0 + block_size, :]
                        n_tiles += 1
                        s = qi @ np.swapaxes(kj, -1, -2) * scale
                        s = np.where(np.arange(j0, j0 + kj.shape[-2])[None, :] <= rows[:, None], s, -np.inf)
                        m_new = np.maximum(m, s.max(-1))
                        r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                        l, acc, m = l * r + p.sum(-1), acc * r[..., None] + p @ vj, m_new
                    outs.append(acc / l[..., None])
                return np.concatenate(outs, axis=-2), n_tiles
        """,
        "helper in an added cell, einsum": [
            """
            def _tile_update(m, l, acc, s, v_blk):
                m_new = np.maximum(m, s.max(axis=-1))
                r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                return m_new, l * r + p.sum(axis=-1), acc * r[..., None] + p @ v_blk
            """,
            """
            def causal_tiled_attention(q, k, v, block_size):
                L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
                outs, n_tiles = [], 0
                for i0 in range(0, L, block_size):
                    i1 = min(i0 + block_size, L)
                    first, last = S - L + i0, S - L + i1 - 1  # positions of the block's queries
                    m, l, acc = np.full(q.shape[:-2] + (i1 - i0,), -np.inf), 0.0, 0.0
                    for j0 in range(0, last + 1, block_size):
                        n_tiles += 1
                        j1 = min(j0 + block_size, S)
                        s = np.einsum("...ie,...je->...ij", q[..., i0:i1, :], k[..., j0:j1, :]) / np.sqrt(E)
                        if j1 - 1 > first:  # some key comes after some query: mask those pairs
                            s = np.where(np.arange(j0, j1)[None, :] > np.arange(first, last + 1)[:, None], -np.inf, s)
                        m, l, acc = _tile_update(m, l, acc, s, v[..., j0:j1, :])
                    outs.append(acc / l[..., None])
                return np.concatenate(outs, axis=-2), n_tiles
            """,
        ],
    },
}

WRONG = {
    "ch09.merge_partials": {
        "the factors broadcast without a new axis": """
            def merge_partials(m1, l1, acc1, m2, l2, acc2):
                m = np.maximum(m1, m2)
                shift = np.where(np.isfinite(m), m, 0.0)
                a1, a2 = np.exp(m1 - shift), np.exp(m2 - shift)
                return m, a1 * l1 + a2 * l2, (a1 * acc1.T).T + a2 * acc2
        """,
        "only the sums rescaled, not the outputs": """
            def merge_partials(m1, l1, acc1, m2, l2, acc2):
                m = np.maximum(m1, m2)
                shift = np.where(np.isfinite(m), m, 0.0)
                a1, a2 = np.exp(m1 - shift), np.exp(m2 - shift)
                return m, a1 * l1 + a2 * l2, acc1 + acc2
        """,
        "the larger half kept, the other dropped": """
            def merge_partials(m1, l1, acc1, m2, l2, acc2):
                first = m1 >= m2
                return np.maximum(m1, m2), np.where(first, l1, l2), np.where(first[..., None], acc1, acc2)
        """,
    },
    "ch09.key_block_grads": {
        "the block's own softmax": """
            def key_block_grads(q, k_blk, v_blk, dout, out, lse):
                c = 1 / np.sqrt(q.shape[-1])
                P = softmax(q @ np.swapaxes(k_blk, -1, -2) * c)
                dS = P * (dout @ np.swapaxes(v_blk, -1, -2) - (dout * out).sum(-1, keepdims=True))
                return np.swapaxes(dS, -1, -2) @ q * c, np.swapaxes(P, -1, -2) @ dout
        """,
        "no row term": """
            def key_block_grads(q, k_blk, v_blk, dout, out, lse):
                c = 1 / np.sqrt(q.shape[-1])
                P = np.exp(q @ np.swapaxes(k_blk, -1, -2) * c - lse[..., None])
                dS = P * (dout @ np.swapaxes(v_blk, -1, -2))
                return np.swapaxes(dS, -1, -2) @ q * c, np.swapaxes(P, -1, -2) @ dout
        """,
        "the row term summed over the block only": """
            def key_block_grads(q, k_blk, v_blk, dout, out, lse):
                c = 1 / np.sqrt(q.shape[-1])
                P = np.exp(q @ np.swapaxes(k_blk, -1, -2) * c - lse[..., None])
                dP = dout @ np.swapaxes(v_blk, -1, -2)
                dS = P * (dP - (P * dP).sum(-1, keepdims=True))
                return np.swapaxes(dS, -1, -2) @ q * c, np.swapaxes(P, -1, -2) @ dout
        """,
        "dk without the scale": """
            def key_block_grads(q, k_blk, v_blk, dout, out, lse):
                c = 1 / np.sqrt(q.shape[-1])
                P = np.exp(q @ np.swapaxes(k_blk, -1, -2) * c - lse[..., None])
                dS = P * (dout @ np.swapaxes(v_blk, -1, -2) - (dout * out).sum(-1, keepdims=True))
                return np.swapaxes(dS, -1, -2) @ q, np.swapaxes(P, -1, -2) @ dout
        """,
    },
    "ch09.static_cache_step": {
        "every sequence read up to the longest length": """
            def static_cache_step(q_new, k_new, v_new, k_cache, v_cache, lengths):
                B, T = k_cache.shape[:2]
                k_cache, v_cache = k_cache.copy(), v_cache.copy()
                k_cache[np.arange(B), lengths] = k_new[:, 0]
                v_cache[np.arange(B), lengths] = v_new[:, 0]
                s = q_new @ np.swapaxes(k_cache, -1, -2) / np.sqrt(q_new.shape[-1])
                s[..., np.arange(T) > lengths.max()] = -np.inf
                return softmax(s) @ v_cache, k_cache, v_cache
        """,
        "concatenated after the buffer, as the chapter's cache does": """
            def static_cache_step(q_new, k_new, v_new, k_cache, v_cache, lengths):
                k_all = np.concatenate([k_cache, k_new], axis=-2)
                v_all = np.concatenate([v_cache, v_new], axis=-2)
                s = q_new @ np.swapaxes(k_all, -1, -2) / np.sqrt(q_new.shape[-1])
                return softmax(s) @ v_all, k_all, v_all
        """,
    },
    "ch09.remove_keys": {
        "the removed share subtracted, the rest not renormalised": """
            def remove_keys(q, k_rm, v_rm, out, lse):
                w = np.exp(q @ np.swapaxes(k_rm, -1, -2) / np.sqrt(q.shape[-1]) - lse[..., None])
                return out - w @ v_rm, lse + np.log1p(-w.sum(-1))
        """,
        "exp of the scores and of lse taken directly": """
            def remove_keys(q, k_rm, v_rm, out, lse):
                e = np.exp(q @ np.swapaxes(k_rm, -1, -2) / np.sqrt(q.shape[-1]))
                total = np.exp(lse)
                rest = total - e.sum(-1)
                return (out * total[..., None] - e @ v_rm) / rest[..., None], np.log(rest)
        """,
        "lse left as it was": """
            def remove_keys(q, k_rm, v_rm, out, lse):
                w = np.exp(q @ np.swapaxes(k_rm, -1, -2) / np.sqrt(q.shape[-1]) - lse[..., None])
                return (out - w @ v_rm) / (1 - w.sum(-1))[..., None], lse
        """,
        "the removed keys' weights normalised among themselves": """
            def remove_keys(q, k_rm, v_rm, out, lse):
                s = q @ np.swapaxes(k_rm, -1, -2) / np.sqrt(q.shape[-1])
                e = np.exp(s - s.max(-1, keepdims=True))
                w = e / e.sum(-1, keepdims=True)
                return out - w @ v_rm, lse - np.log(e.sum(-1)) - s.max(-1)
        """,
    },
    "ch09.rope_decode": {
        "the code as handed out": """
            def rope_decode(x, W_q, W_k, W_v):
                E = W_q.shape[1]
                k_cache = np.zeros((0, E))
                v_cache = np.zeros((0, W_v.shape[1]))
                outs = []
                for t in range(x.shape[0]):
                    x_t = x[t : t + 1]
                    q_t, k_t, v_t = x_t @ W_q, x_t @ W_k, x_t @ W_v
                    k_cache = np.concatenate([k_cache, k_t])
                    v_cache = np.concatenate([v_cache, v_t])
                    k_cache = apply_rope(k_cache)
                    q_t = apply_rope(q_t, np.array([t]))
                    scores = q_t @ k_cache.T / np.sqrt(E)
                    outs.append(softmax(scores) @ v_cache)
                return np.concatenate(outs)
        """,
        "the new key rotated at position 0": """
            def rope_decode(x, W_q, W_k, W_v):
                E = W_q.shape[1]
                k_cache = np.zeros((0, E))
                v_cache = np.zeros((0, W_v.shape[1]))
                outs = []
                for t in range(x.shape[0]):
                    x_t = x[t : t + 1]
                    q_t, k_t, v_t = x_t @ W_q, x_t @ W_k, x_t @ W_v
                    k_cache = np.concatenate([k_cache, apply_rope(k_t)])
                    v_cache = np.concatenate([v_cache, v_t])
                    q_t = apply_rope(q_t, np.array([t]))
                    outs.append(softmax(q_t @ k_cache.T / np.sqrt(E)) @ v_cache)
                return np.concatenate(outs)
        """,
        "the new key rotated at the cache's new length": """
            def rope_decode(x, W_q, W_k, W_v):
                E = W_q.shape[1]
                k_cache = np.zeros((0, E))
                v_cache = np.zeros((0, W_v.shape[1]))
                outs = []
                for t in range(x.shape[0]):
                    x_t = x[t : t + 1]
                    q_t, k_t, v_t = x_t @ W_q, x_t @ W_k, x_t @ W_v
                    k_cache = np.concatenate([k_cache, apply_rope(k_t, np.array([len(k_cache) + 1]))])
                    v_cache = np.concatenate([v_cache, v_t])
                    q_t = apply_rope(q_t, np.array([t]))
                    outs.append(softmax(q_t @ k_cache.T / np.sqrt(E)) @ v_cache)
                return np.concatenate(outs)
        """,
        "the cache rotated again, the query not at all": """
            def rope_decode(x, W_q, W_k, W_v):
                E = W_q.shape[1]
                k_cache = np.zeros((0, E))
                v_cache = np.zeros((0, W_v.shape[1]))
                outs = []
                for t in range(x.shape[0]):
                    x_t = x[t : t + 1]
                    q_t, k_t, v_t = x_t @ W_q, x_t @ W_k, x_t @ W_v
                    k_cache = np.concatenate([k_cache, apply_rope(k_t, np.array([t]))])
                    v_cache = np.concatenate([v_cache, v_t])
                    outs.append(softmax(q_t @ k_cache.T / np.sqrt(E)) @ v_cache)
                return np.concatenate(outs)
        """,
    },
    "ch09.causal_tiled_attention": {
        "the queries taken for the first L tokens (top-left)": """
            def causal_tiled_attention(q, k, v, block_size):
                L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
                out = np.zeros(q.shape[:-1] + (v.shape[-1],))
                n_tiles = 0
                for i0 in range(0, L, block_size):
                    i1 = min(i0 + block_size, L)
                    m, l, acc = np.full(q.shape[:-2] + (i1 - i0,), -np.inf), 0.0, 0.0
                    for j0 in range(0, i1, block_size):
                        j1 = min(j0 + block_size, S)
                        n_tiles += 1
                        s = q[..., i0:i1, :] @ np.swapaxes(k[..., j0:j1, :], -1, -2) / np.sqrt(E)
                        s = np.where(np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None], s, -np.inf)
                        m_new = np.maximum(m, s.max(-1))
                        r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                        l, acc, m = l * r + p.sum(-1), acc * r[..., None] + p @ v[..., j0:j1, :], m_new
                    out[..., i0:i1, :] = acc / l[..., None]
                return out, n_tiles
        """,
        "every key block visited, the masked ones counted too": """
            def causal_tiled_attention(q, k, v, block_size):
                L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
                out = np.zeros(q.shape[:-1] + (v.shape[-1],))
                n_tiles = 0
                for i0 in range(0, L, block_size):
                    i1 = min(i0 + block_size, L)
                    rows = S - L + np.arange(i0, i1)
                    m, l, acc = np.full(q.shape[:-2] + (i1 - i0,), -np.inf), 0.0, 0.0
                    for j0 in range(0, S, block_size):
                        j1 = min(j0 + block_size, S)
                        n_tiles += 1
                        s = q[..., i0:i1, :] @ np.swapaxes(k[..., j0:j1, :], -1, -2) / np.sqrt(E)
                        s = np.where(np.arange(j0, j1)[None, :] <= rows[:, None], s, -np.inf)
                        m_new = np.maximum(m, s.max(-1))
                        with np.errstate(invalid="ignore"):
                            r = np.where(m_new == -np.inf, 1.0, np.exp(m - m_new))
                            p = np.exp(s - np.where(m_new == -np.inf, 0.0, m_new)[..., None])
                        l, acc, m = l * r + p.sum(-1), acc * r[..., None] + p @ v[..., j0:j1, :], m_new
                    out[..., i0:i1, :] = acc / l[..., None]
                return out, n_tiles
        """,
        "the tiles skipped at the right place, no mask inside them": """
            def causal_tiled_attention(q, k, v, block_size):
                L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
                out = np.zeros(q.shape[:-1] + (v.shape[-1],))
                n_tiles = 0
                for i0 in range(0, L, block_size):
                    i1 = min(i0 + block_size, L)
                    m, l, acc = np.full(q.shape[:-2] + (i1 - i0,), -np.inf), 0.0, 0.0
                    for j0 in range(0, S - L + i1, block_size):
                        j1 = min(j0 + block_size, S)
                        n_tiles += 1
                        s = q[..., i0:i1, :] @ np.swapaxes(k[..., j0:j1, :], -1, -2) / np.sqrt(E)
                        m_new = np.maximum(m, s.max(-1))
                        r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                        l, acc, m = l * r + p.sum(-1), acc * r[..., None] + p @ v[..., j0:j1, :], m_new
                    out[..., i0:i1, :] = acc / l[..., None]
                return out, n_tiles
        """,
    },
}
