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
    "ch09.predict_tile_size": {
        "solved with the chapter's math": """
            def predict_tile_size():
                b = (-192 + math.sqrt(192**2 + 4 * 58368)) / 2
                return 16 * math.floor(b / 16)
        """,
        "a search in numpy": """
            def predict_tile_size():
                b = np.arange(16, 1024, 16)
                fits = 3 * b * 128 * 2 + 4 * b**2 <= 228 * 1024
                return b[fits].max()
        """,
        "the literal as a float": """
            def predict_tile_size():
                return 160.0
        """,
        "helper in an added cell": [
            """
            def _tile_bytes(b, d=128):
                return 3 * b * d * 2 + b * b * 4
            """,
            """
            def predict_tile_size():
                return max(b for b in range(16, 512, 16) if _tile_bytes(b) <= 233472)
            """,
        ],
    },
    "ch09.predict_causal_tiles": {
        "the chapter's math.comb": """
            def predict_causal_tiles():
                return math.comb(17, 2)
        """,
        "a sum": """
            def predict_causal_tiles():
                return sum(i + 1 for i in range(4096 // 256))
        """,
        "a numpy count of the grid": """
            def predict_causal_tiles():
                n = 16
                return np.tril(np.ones((n, n), dtype=int)).sum()
        """,
        "helper in an added cell": [
            """
            def _tiles_on_or_below_diagonal(n):
                return n * (n + 1) // 2
            """,
            """
            def predict_causal_tiles():
                return _tiles_on_or_below_diagonal(4096 // 256)
            """,
        ],
    },
    "ch09.online_attention": {
        "started at the float's most negative number": """
            def online_attention(scores, values, block_size):
                dtype = np.result_type(scores, values)
                m = np.full(scores.shape[:-1], np.finfo(dtype).min, dtype=dtype)
                l = np.zeros(scores.shape[:-1], dtype=dtype)
                acc = np.zeros(scores.shape[:-1] + (values.shape[-1],), dtype=dtype)
                for j in range(0, scores.shape[-1], block_size):
                    s = scores[..., j : j + block_size]
                    m_new = np.maximum(m, s.max(axis=-1))
                    p = np.exp(s - m_new[..., None])
                    rescale = np.exp(m - m_new)
                    l = l * rescale + p.sum(axis=-1)
                    acc = acc * rescale[..., None] + p @ values[..., j : j + block_size, :]
                    m = m_new
                return acc / l[..., None]
        """,
        "torch, started from the first block's maximum": """
            def online_attention(scores, values, block_size):
                s_all, v_all = torch.as_tensor(scores), torch.as_tensor(values)
                m = s_all[..., :block_size].amax(dim=-1)
                l = torch.zeros_like(m)
                acc = torch.zeros(*m.shape, v_all.shape[-1], dtype=v_all.dtype)
                for j in range(0, s_all.shape[-1], block_size):
                    s = s_all[..., j : j + block_size]
                    m_new = torch.maximum(m, s.amax(dim=-1))
                    p = torch.exp(s - m_new[..., None])
                    r = torch.exp(m - m_new)
                    l, acc = l * r + p.sum(-1), acc * r[..., None] + p @ v_all[..., j : j + block_size, :]
                    m = m_new
                return (acc / l[..., None]).numpy()
        """,
        "helper in an added cell": [
            """
            def _fold(state, s, v):
                m, l, acc = state
                m_new = np.maximum(m, s.max(axis=-1))
                r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                return m_new, l * r + p.sum(axis=-1), acc * r[..., None] + p @ v
            """,
            """
            def online_attention(scores, values, block_size):
                dtype = np.result_type(scores, values)
                state = (
                    np.full(scores.shape[:-1], -np.inf, dtype=dtype),
                    np.zeros(scores.shape[:-1], dtype=dtype),
                    np.zeros(scores.shape[:-1] + (values.shape[-1],), dtype=dtype),
                )
                for j in range(0, scores.shape[-1], block_size):
                    state = _fold(state, scores[..., j : j + block_size], values[..., j : j + block_size, :])
                return state[2] / state[1][..., None]
            """,
        ],
    },
    "ch09.causal_tiled_attention": {
        "torch with the chapter's torch and math imports": """
            def causal_tiled_attention(q, k, v, block_size):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                L = q.shape[-2]
                out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
                n_tiles = 0
                for i0 in range(0, L, block_size):
                    i1 = min(i0 + block_size, L)
                    m = torch.full(q.shape[:-2] + (i1 - i0,), float("-inf"), dtype=q.dtype)
                    l = torch.zeros_like(m)
                    acc = torch.zeros(*m.shape, v.shape[-1], dtype=q.dtype)
                    for j0 in range(0, i1, block_size):
                        j1 = min(j0 + block_size, L)
                        n_tiles += 1
                        s = q[..., i0:i1, :] @ k[..., j0:j1, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
                        future = torch.arange(j0, j1)[None, :] > torch.arange(i0, i1)[:, None]
                        s = s.masked_fill(future, float("-inf"))
                        m_new = torch.maximum(m, s.amax(-1))
                        r, p = torch.exp(m - m_new), torch.exp(s - m_new.unsqueeze(-1))
                        l, acc, m = l * r + p.sum(-1), acc * r.unsqueeze(-1) + p @ v[..., j0:j1, :], m_new
                    out[..., i0:i1, :] = acc / l.unsqueeze(-1)
                return out, n_tiles
        """,
        "float32 numpy": """
            def causal_tiled_attention(q, k, v, block_size):
                q, k, v = q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)
                L, scale = q.shape[-2], np.float32(1 / np.sqrt(q.shape[-1]))
                out = np.zeros(q.shape[:-1] + (v.shape[-1],), dtype=np.float32)
                n_tiles = 0
                for i0 in range(0, L, block_size):
                    qi = q[..., i0 : i0 + block_size, :]
                    rows = np.arange(i0, i0 + qi.shape[-2])
                    m = np.full(qi.shape[:-1], -np.inf, dtype=np.float32)
                    l = np.zeros_like(m)
                    acc = np.zeros(qi.shape[:-1] + (v.shape[-1],), dtype=np.float32)
                    for j0 in range(0, rows[-1] + 1, block_size):
                        n_tiles += 1
                        kj, vj = k[..., j0 : j0 + block_size, :], v[..., j0 : j0 + block_size, :]
                        s = qi @ np.swapaxes(kj, -1, -2) * scale
                        s = np.where(np.arange(j0, j0 + kj.shape[-2])[None, :] <= rows[:, None], s, -np.inf)
                        m_new = np.maximum(m, s.max(-1))
                        r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                        l, acc, m = l * r + p.sum(-1), acc * r[..., None] + p @ vj, m_new
                    out[..., i0 : i0 + block_size, :] = acc / l[..., None]
                return out, n_tiles
        """,
        "helper in an added cell": [
            """
            def _causal_tile_update(m, l, acc, s, v_blk):
                m_new = np.maximum(m, s.max(axis=-1))
                r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                return m_new, l * r + p.sum(axis=-1), acc * r[..., None] + p @ v_blk
            """,
            """
            def causal_tiled_attention(q, k, v, block_size):
                L, E = q.shape[-2], q.shape[-1]
                outs, n_tiles = [], 0
                for i0 in range(0, L, block_size):
                    i1 = min(i0 + block_size, L)
                    m, l, acc = np.full(q.shape[:-2] + (i1 - i0,), -np.inf), 0.0, 0.0
                    for j0 in range(0, L, block_size):
                        if j0 > i1 - 1:
                            break  # every key of this block comes after every query
                        n_tiles += 1
                        j1 = min(j0 + block_size, L)
                        s = np.einsum("...ie,...je->...ij", q[..., i0:i1, :], k[..., j0:j1, :]) / np.sqrt(E)
                        s[..., np.arange(j0, j1)[None, :] > np.arange(i0, i1)[:, None]] = -np.inf
                        m, l, acc = _causal_tile_update(m, l, acc, s, v[..., j0:j1, :])
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
    "ch09.predict_tile_size": {
        "the scores' bytes forgotten": """
            def predict_tile_size():
                return 16 * ((228 * 1024 // (3 * 128 * 2)) // 16)
        """,
        "the root rounded up": """
            def predict_tile_size():
                return 16 * math.ceil(163.9 / 16)
        """,
    },
    "ch09.predict_causal_tiles": {
        "every tile of the grid": """
            def predict_causal_tiles():
                return 16 * 16
        """,
    },
    "ch09.online_attention": {
        "started at -1e4": """
            def online_attention(scores, values, block_size):
                m = np.full(scores.shape[:-1], -1e4)
                l = np.zeros(scores.shape[:-1])
                acc = np.zeros(scores.shape[:-1] + (values.shape[-1],))
                for j in range(0, scores.shape[-1], block_size):
                    s = scores[..., j : j + block_size]
                    m_new = np.maximum(m, s.max(axis=-1))
                    p = np.exp(s - m_new[..., None])
                    r = np.exp(m - m_new)
                    l, acc, m = l * r + p.sum(axis=-1), acc * r[..., None] + p @ values[..., j : j + block_size, :], m_new
                return acc / l[..., None]
        """,
        "each row's mean in place of a running maximum": """
            def online_attention(scores, values, block_size):
                m = scores.mean(axis=-1)
                l = np.zeros(scores.shape[:-1])
                acc = np.zeros(scores.shape[:-1] + (values.shape[-1],))
                for j in range(0, scores.shape[-1], block_size):
                    p = np.exp(scores[..., j : j + block_size] - m[..., None])
                    l, acc = l + p.sum(axis=-1), acc + p @ values[..., j : j + block_size, :]
                return acc / l[..., None]
        """,
        "a large negative start that is not large enough": """
            def online_attention(scores, values, block_size):
                dtype = np.result_type(scores, values)
                m = np.full(scores.shape[:-1], -100.0, dtype=dtype)
                l = np.zeros(scores.shape[:-1], dtype=dtype)
                acc = np.zeros(scores.shape[:-1] + (values.shape[-1],), dtype=dtype)
                for j in range(0, scores.shape[-1], block_size):
                    s = scores[..., j : j + block_size]
                    m_new = np.maximum(m, s.max(axis=-1))
                    p = np.exp(s - m_new[..., None])
                    rescale = np.exp(m - m_new)
                    l = l * rescale + p.sum(axis=-1)
                    acc = acc * rescale[..., None] + p @ values[..., j : j + block_size, :]
                    m = m_new
                return acc / l[..., None]
        """,
        "NaN rows replaced by zeros": """
            def online_attention(scores, values, block_size):
                dtype = np.result_type(scores, values)
                m = np.zeros(scores.shape[:-1], dtype=dtype)
                l = np.zeros(scores.shape[:-1], dtype=dtype)
                acc = np.zeros(scores.shape[:-1] + (values.shape[-1],), dtype=dtype)
                for j in range(0, scores.shape[-1], block_size):
                    s = scores[..., j : j + block_size]
                    m_new = np.maximum(m, s.max(axis=-1))
                    p = np.exp(s - m_new[..., None])
                    rescale = np.exp(m - m_new)
                    l = l * rescale + p.sum(axis=-1)
                    acc = acc * rescale[..., None] + p @ values[..., j : j + block_size, :]
                    m = m_new
                return np.nan_to_num(acc / np.maximum(l, 1e-300)[..., None])
        """,
    },
    "ch09.causal_tiled_attention": {
        "the tiles below the diagonal counted, the diagonal ones not": """
            def causal_tiled_attention(q, k, v, block_size):
                L, E = q.shape[-2], q.shape[-1]
                out = np.zeros(q.shape[:-1] + (v.shape[-1],))
                n_tiles = 0
                for i0 in range(0, L, block_size):
                    i1 = min(i0 + block_size, L)
                    m, l, acc = np.full(q.shape[:-2] + (i1 - i0,), -np.inf), 0.0, 0.0
                    for j0 in range(0, i1, block_size):
                        j1 = min(j0 + block_size, L)
                        if j0 < i0:
                            n_tiles += 1
                        s = q[..., i0:i1, :] @ np.swapaxes(k[..., j0:j1, :], -1, -2) / np.sqrt(E)
                        s = np.where(np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None], s, -np.inf)
                        m_new = np.maximum(m, s.max(-1))
                        r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                        l, acc, m = l * r + p.sum(-1), acc * r[..., None] + p @ v[..., j0:j1, :], m_new
                    out[..., i0:i1, :] = acc / l[..., None]
                return out, n_tiles
        """,
        "the diagonal tiles skipped": """
            def causal_tiled_attention(q, k, v, block_size):
                L, E = q.shape[-2], q.shape[-1]
                out = np.zeros(q.shape[:-1] + (v.shape[-1],))
                n_tiles = 0
                for i0 in range(0, L, block_size):
                    i1 = min(i0 + block_size, L)
                    m, l, acc = np.full(q.shape[:-2] + (i1 - i0,), -np.inf), 0.0, 0.0
                    for j0 in range(0, i0, block_size):
                        n_tiles += 1
                        s = q[..., i0:i1, :] @ np.swapaxes(k[..., j0 : j0 + block_size, :], -1, -2) / np.sqrt(E)
                        m_new = np.maximum(m, s.max(-1))
                        r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                        l, acc, m = l * r + p.sum(-1), acc * r[..., None] + p @ v[..., j0 : j0 + block_size, :], m_new
                    out[..., i0:i1, :] = acc / l[..., None]
                return out, n_tiles
        """,
    },
}
