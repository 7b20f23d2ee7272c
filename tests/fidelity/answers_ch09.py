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
    "ch09.tiled_attention": {
        "torch with the chapter's torch and math imports": """
            def tiled_attention(q, k, v, block_size):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                S = k.shape[-2]
                m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
                l = torch.zeros(q.shape[:-1], dtype=q.dtype)
                acc = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
                for j in range(0, S, block_size):
                    s = q @ k[..., j : j + block_size, :].transpose(-1, -2) / math.sqrt(q.shape[-1])
                    m_new = torch.maximum(m, s.amax(dim=-1))
                    r = torch.exp(m - m_new)
                    p = torch.exp(s - m_new.unsqueeze(-1))
                    l = l * r + p.sum(-1)
                    acc = acc * r.unsqueeze(-1) + p @ v[..., j : j + block_size, :]
                    m = m_new
                return acc / l.unsqueeze(-1)
        """,
        "float32 numpy blocks": """
            def tiled_attention(q, k, v, block_size):
                q, k, v = q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)
                scale = np.float32(1 / np.sqrt(q.shape[-1]))
                m = np.full(q.shape[:-1], -np.inf, dtype=np.float32)
                l = np.zeros(q.shape[:-1], dtype=np.float32)
                acc = np.zeros(q.shape[:-1] + (v.shape[-1],), dtype=np.float32)
                for j in range(0, k.shape[-2], block_size):
                    s = q @ np.swapaxes(k[..., j : j + block_size, :], -1, -2) * scale
                    m_new = np.maximum(m, s.max(axis=-1))
                    r = np.exp(m - m_new)
                    p = np.exp(s - m_new[..., None])
                    l, acc, m = l * r + p.sum(axis=-1), acc * r[..., None] + p @ v[..., j : j + block_size, :], m_new
                return acc / l[..., None]
        """,
        "helper in an added cell": [
            """
            def _tile_step(state, s, v_blk):
                m, l, acc = state
                m_new = np.maximum(m, s.max(axis=-1))
                r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                return m_new, l * r + p.sum(axis=-1), acc * r[..., None] + p @ v_blk
            """,
            """
            def tiled_attention(q, k, v, block_size):
                state = (np.full(q.shape[:-1], -np.inf), np.zeros(q.shape[:-1]), 0.0)
                for j in range(0, k.shape[-2], block_size):
                    s = np.einsum("...le,...se->...ls", q, k[..., j : j + block_size, :]) / np.sqrt(q.shape[-1])
                    state = _tile_step(state, s, v[..., j : j + block_size, :])
                m, l, acc = state
                return acc / l[..., None]
            """,
        ],
        "two passes: the maxima first, then the sums": """
            def tiled_attention(q, k, v, block_size):
                S, scale = k.shape[-2], 1 / np.sqrt(q.shape[-1])
                blocks = range(0, S, block_size)
                m = np.full(q.shape[:-1], -np.inf)
                for j in blocks:
                    m = np.maximum(m, (q @ np.swapaxes(k[..., j : j + block_size, :], -1, -2) * scale).max(-1))
                l, acc = 0.0, 0.0
                for j in blocks:
                    p = np.exp(q @ np.swapaxes(k[..., j : j + block_size, :], -1, -2) * scale - m[..., None])
                    l, acc = l + p.sum(-1), acc + p @ v[..., j : j + block_size, :]
                return acc / l[..., None]
        """,
    },
    "ch09.decode_step": {
        "torch with the chapter's torch and F": """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                q, kn, vn, kc, vc = (torch.as_tensor(a) for a in (q_new, k_new, v_new, k_cache, v_cache))
                k_all, v_all = torch.cat([kc, kn], dim=-2), torch.cat([vc, vn], dim=-2)
                w = F.softmax(q @ k_all.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
                return w @ v_all, k_all, v_all
        """,
        "float32 numpy": """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                k_all = np.concatenate([k_cache, k_new], axis=-2).astype(np.float32)
                v_all = np.concatenate([v_cache, v_new], axis=-2).astype(np.float32)
                s = np.einsum("...qe,...se->...qs", q_new.astype(np.float32), k_all) / np.float32(np.sqrt(q_new.shape[-1]))
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                return (e / e.sum(axis=-1, keepdims=True)) @ v_all, k_all, v_all
        """,
        "helper in an added cell with the chapter's ac.softmax": [
            """
            def _append_to_cache(cache, new):
                return np.concatenate((cache, new), axis=cache.ndim - 2)
            """,
            """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                k_all, v_all = _append_to_cache(k_cache, k_new), _append_to_cache(v_cache, v_new)
                w = ac.softmax(q_new @ np.swapaxes(k_all, -1, -2) / np.sqrt(q_new.shape[-1]))
                return w @ v_all, k_all, v_all
            """,
        ],
    },
    "ch09.predict_kv_cache_bytes": {
        "an expression with the chapter's math import": """
            def predict_kv_cache_bytes():
                return math.prod([2, 24, 8, 128, 8192, 2])
        """,
        "the literal in GiB, converted": """
            def predict_kv_cache_bytes():
                return 0.75 * 2**30
        """,
        "a numpy int64": """
            def predict_kv_cache_bytes():
                return np.int64(2 * 24 * 8 * 128 * 2) * np.int64(8192)
        """,
        "helper in an added cell": [
            """
            def _cache_bytes_per_token(layers, kv_heads, d_head, bytes_per_number):
                return 2 * layers * kv_heads * d_head * bytes_per_number
            """,
            """
            def predict_kv_cache_bytes():
                return _cache_bytes_per_token(24, 8, 128, 2) * 8192
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
    "ch09.fix_cache_alignment": {
        "torch with the chapter's torch and F": """
            def attend_new_tokens(q, k_all, v_all):
                q, k_all, v_all = torch.as_tensor(q), torch.as_tensor(k_all), torch.as_tensor(v_all)
                L, S = q.shape[-2], k_all.shape[-2]
                allowed = torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)
                s = (q @ k_all.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(~allowed, float("-inf"))
                w = F.softmax(s, dim=-1)
                return w @ v_all, w
        """,
        "float32 numpy": """
            def attend_new_tokens(q, k_all, v_all):
                L, S = q.shape[-2], k_all.shape[-2]
                allowed = np.tril(np.ones((L, S), dtype=bool), k=S - L)
                s = (q.astype(np.float32) @ np.swapaxes(k_all, -1, -2).astype(np.float32)) / np.float32(np.sqrt(q.shape[-1]))
                w = softmax(np.where(allowed, s, -np.inf))
                return w @ v_all.astype(np.float32), w
        """,
        "helper in an added cell: the last L rows of the full causal mask": [
            """
            def _chunk_mask(L, S):
                return np.tril(np.ones((S, S), dtype=bool))[S - L :]
            """,
            """
            def attend_new_tokens(q, k_all, v_all):
                L, S = q.shape[-2], k_all.shape[-2]
                scores = q @ np.swapaxes(k_all, -1, -2) / np.sqrt(q.shape[-1])
                weights = ac.softmax(np.where(_chunk_mask(L, S), scores, -np.inf))
                return weights @ v_all, weights
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
    "ch09.tiled_attention": {
        "the whole score matrix at once": """
            def tiled_attention(q, k, v, block_size):
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True) @ v
        """,
        "the sum rescaled, the output not": """
            def tiled_attention(q, k, v, block_size):
                m = np.full(q.shape[:-1], -np.inf)
                l = np.zeros(q.shape[:-1])
                acc = np.zeros(q.shape[:-1] + (v.shape[-1],))
                for j in range(0, k.shape[-2], block_size):
                    s = q @ np.swapaxes(k[..., j : j + block_size, :], -1, -2) / np.sqrt(q.shape[-1])
                    m_new = np.maximum(m, s.max(axis=-1))
                    p = np.exp(s - m_new[..., None])
                    l = l * np.exp(m - m_new) + p.sum(axis=-1)
                    acc = acc + p @ v[..., j : j + block_size, :]
                    m = m_new
                return acc / l[..., None]
        """,
        "scaled by sqrt(block_size)": """
            def tiled_attention(q, k, v, block_size):
                m = np.full(q.shape[:-1], -np.inf)
                l = np.zeros(q.shape[:-1])
                acc = np.zeros(q.shape[:-1] + (v.shape[-1],))
                for j in range(0, k.shape[-2], block_size):
                    s = q @ np.swapaxes(k[..., j : j + block_size, :], -1, -2) / np.sqrt(block_size)
                    m_new = np.maximum(m, s.max(axis=-1))
                    r, p = np.exp(m - m_new), np.exp(s - m_new[..., None])
                    l, acc, m = l * r + p.sum(axis=-1), acc * r[..., None] + p @ v[..., j : j + block_size, :], m_new
                return acc / l[..., None]
        """,
    },
    "ch09.decode_step": {
        "appended along axis 0": """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                k_all, v_all = np.concatenate([k_cache, k_new]), np.concatenate([v_cache, v_new])
                w = softmax(q_new @ np.swapaxes(k_all, -1, -2) / np.sqrt(q_new.shape[-1]))
                return w @ v_all, k_all, v_all
        """,
        "unscaled scores": """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                k_all = np.concatenate([k_cache, k_new], axis=-2)
                v_all = np.concatenate([v_cache, v_new], axis=-2)
                w = softmax(q_new @ np.swapaxes(k_all, -1, -2))
                return w @ v_all, k_all, v_all
        """,
        "the cache returned as it came": """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                k_all = np.concatenate([k_cache, k_new], axis=-2)
                v_all = np.concatenate([v_cache, v_new], axis=-2)
                w = softmax(q_new @ np.swapaxes(k_all, -1, -2) / np.sqrt(q_new.shape[-1]))
                return w @ v_all, k_cache, v_cache
        """,
    },
    "ch09.predict_kv_cache_bytes": {
        "in GiB, not bytes": """
            def predict_kv_cache_bytes():
                return 2 * 24 * 8 * 128 * 8192 * 2 / 2**30
        """,
        "keys only": """
            def predict_kv_cache_bytes():
                return 24 * 8 * 128 * 8192 * 2
        """,
    },
    "ch09.predict_causal_tiles": {
        "every tile of the grid": """
            def predict_causal_tiles():
                return 16 * 16
        """,
    },
    "ch09.fix_cache_alignment": {
        "the diagonal shifted one too far (sees the next token)": """
            def attend_new_tokens(q, k_all, v_all):
                L, S = q.shape[-2], k_all.shape[-2]
                allowed = np.tril(np.ones((L, S), dtype=bool), k=S - L + 1)
                scores = q @ np.swapaxes(k_all, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(allowed, scores, -np.inf))
                return weights @ v_all, weights
        """,
        "the diagonal shifted one too few": """
            def attend_new_tokens(q, k_all, v_all):
                L, S = q.shape[-2], k_all.shape[-2]
                allowed = np.tril(np.ones((L, S), dtype=bool), k=S - L - 1)
                scores = q @ np.swapaxes(k_all, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(allowed, scores, -np.inf))
                return weights @ v_all, weights
        """,
        "the first L rows of the full causal mask": """
            def attend_new_tokens(q, k_all, v_all):
                L, S = q.shape[-2], k_all.shape[-2]
                allowed = np.tril(np.ones((S, S), dtype=bool))[:L]
                scores = q @ np.swapaxes(k_all, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(allowed, scores, -np.inf))
                return weights @ v_all, weights
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
