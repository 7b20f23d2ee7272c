"""Chapter 6 (masked attention, both exercise modules): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch06.make_causal_mask": {
        "torch.tril with the chapter's torch import": """
            def make_causal_mask(L, S):
                return torch.ones(L, S, dtype=torch.bool).tril()
        """,
        "index comparison": """
            def make_causal_mask(L, S):
                return np.arange(S)[None, :] <= np.arange(L)[:, None]
        """,
        "helper in an added cell, loops": [
            """
            def _sees_61(i, j):
                return j <= i
            """,
            """
            def make_causal_mask(L, S):
                return np.array([[_sees_61(i, j) for j in range(S)] for i in range(L)], dtype=bool).reshape(L, S)
            """,
        ],
    },
    "ch06.packed_causal_mask": {
        "torch with the chapter's torch import": """
            def packed_causal_mask(doc_ids):
                d = torch.as_tensor(doc_ids)
                L = d.shape[-1]
                return (d[:, :, None] == d[:, None, :]) & torch.ones(L, L, dtype=torch.bool).tril()
        """,
        "document starts and a cumulative sum": """
            def packed_causal_mask(doc_ids):
                d = np.asarray(doc_ids)
                starts = np.concatenate([np.ones((d.shape[0], 1), dtype=int), (d[:, 1:] != d[:, :-1]).astype(int)], axis=1)
                doc = np.cumsum(starts, axis=1)
                i, j = np.indices((d.shape[1], d.shape[1]))
                return (doc[:, :, None] == doc[:, None, :]) & (j <= i)
        """,
        "helper in an added cell, loops": [
            """
            def _sees_62(ids, i, j):
                return j <= i and ids[i] == ids[j]
            """,
            """
            def packed_causal_mask(doc_ids):
                B, L = np.shape(doc_ids)
                out = np.zeros((B, L, L), dtype=bool)
                for b in range(B):
                    for i in range(L):
                        for j in range(L):
                            out[b, i, j] = _sees_62(list(doc_ids[b]), i, j)
                return out
            """,
        ],
    },
    "ch06.masked_logsumexp": {
        "torch.logsumexp with the chapter's torch import": """
            def masked_logsumexp(scores, mask):
                s = torch.as_tensor(scores)
                m = torch.as_tensor(np.broadcast_to(mask, s.shape))
                return torch.logsumexp(s.masked_fill(~m, float("-inf")), dim=-1)
        """,
        "float32 numpy": """
            def masked_logsumexp(scores, mask):
                s = np.where(mask, np.asarray(scores, dtype=np.float32), np.float32(-np.inf))
                top = np.max(s, axis=-1)
                top = np.where(np.isneginf(top), np.float32(0), top)
                with np.errstate(divide="ignore"):
                    return top + np.log(np.sum(np.exp(s - top[..., None]), axis=-1))
        """,
        "helper in an added cell, a loop over rows": [
            """
            def _row_lse_63(row):
                if len(row) == 0:
                    return -np.inf
                m = max(row)
                return m + np.log(sum(np.exp(x - m) for x in row))
            """,
            """
            def masked_logsumexp(scores, mask):
                scores = np.asarray(scores, dtype=float)
                m = np.broadcast_to(mask, scores.shape)
                flat_s, flat_m = scores.reshape(-1, scores.shape[-1]), m.reshape(-1, scores.shape[-1])
                out = [_row_lse_63(list(r[k])) for r, k in zip(flat_s, flat_m)]
                return np.array(out).reshape(scores.shape[:-1])
            """,
        ],
    },
    "ch06.ring_cache_attention": {
        "torch, the real slots gathered one sequence at a time": """
            def ring_cache_attention(q, k_cache, v_cache, pos):
                q, k, v = (torch.as_tensor(a) for a in (q, k_cache, v_cache))
                B, W = k.shape[:2]
                out, weights = [], torch.zeros(B, W, dtype=q.dtype)
                for b in range(B):
                    n = min(int(pos[b]) + 1, W)
                    w = F.softmax(k[b, :n] @ q[b] / q.shape[-1] ** 0.5, dim=-1)
                    weights[b, :n] = w
                    out.append(w @ v[b, :n])
                return torch.stack(out), weights
        """,
        "float32, unrolled to position order and rolled back": """
            def ring_cache_attention(q, k_cache, v_cache, pos):
                q, k, v = (np.asarray(a, dtype=np.float32) for a in (q, k_cache, v_cache))
                B, W = k.shape[:2]
                out, weights = [], np.zeros((B, W), dtype=np.float32)
                for b in range(B):
                    p = int(pos[b])
                    slots = [t % W for t in range(max(0, p - W + 1), p + 1)]  # the window, oldest first
                    s = np.einsum("e,we->w", q[b], k[b, slots]) / np.float32(np.sqrt(q.shape[-1]))
                    w = np.exp(s - s.max())
                    w = w / w.sum()
                    weights[b, slots] = w
                    out.append(w @ v[b, slots])
                return np.stack(out), weights
        """,
        "helper in an added cell: an additive bias": [
            """
            def _ring_bias_64(W, pos):
                return np.where(np.arange(W)[None, :] > np.asarray(pos)[:, None], -np.inf, 0.0)
            """,
            """
            def ring_cache_attention(q, k_cache, v_cache, pos):
                s = (k_cache @ q[:, :, None])[..., 0] / np.sqrt(q.shape[-1])
                w = softmax(s + _ring_bias_64(k_cache.shape[1], pos))
                return (w[:, None, :] @ v_cache)[:, 0], w
            """,
        ],
    },
    "ch06.mask_from_additive": {
        "torch with the chapter's torch import": """
            def mask_from_additive(bias):
                t = torch.as_tensor(bias)
                return t > torch.finfo(t.dtype).min
        """,
        "a fixed threshold in float64": """
            def mask_from_additive(bias):
                return np.asarray(bias, dtype=np.float64) > -62000.0
        """,
        "helper in an added cell, a loop": [
            """
            def _kept_65(x, lowest):
                return bool(np.isfinite(x)) and x != lowest
            """,
            """
            def mask_from_additive(bias):
                b = np.asarray(bias)
                lowest = np.finfo(b.dtype).min
                return np.array([_kept_65(x, lowest) for x in b.ravel()], dtype=bool).reshape(b.shape)
            """,
        ],
        "above its own dtype's minimum": """
            def mask_from_additive(bias):
                return bias > np.finfo(bias.dtype).min
        """,
    },
    "ch06.local_global_attention": {
        "torch with the chapter's torch and F": """
            def local_global_attention(x, W_q, W_k, W_v, W_o, n_heads, window):
                xt = torch.as_tensor(x)
                B, L, D = xt.shape
                d = D // n_heads
                q, k, v = ((xt @ torch.as_tensor(W)).view(B, L, n_heads, d).transpose(1, 2) for W in (W_q, W_k, W_v))
                pos = torch.arange(L)
                causal = pos[None, :] <= pos[:, None]
                local = causal & (pos[None, :] > pos[:, None] - window)
                mask = torch.stack([local if h < n_heads // 2 else causal for h in range(n_heads)])
                w = F.softmax((q @ k.transpose(-1, -2) / d ** 0.5).masked_fill(~mask, float("-inf")), dim=-1)
                return (w @ v).transpose(1, 2).reshape(B, L, D) @ torch.as_tensor(W_o), w
        """,
        "float32 with the handed-out helpers": """
            def local_global_attention(x, W_q, W_k, W_v, W_o, n_heads, window):
                x, W_q, W_k, W_v, W_o = (np.asarray(a, dtype=np.float32) for a in (x, W_q, W_k, W_v, W_o))
                L = x.shape[1]
                i, j = np.indices((L, L))
                is_local = (np.arange(n_heads) < n_heads // 2)[:, None, None]  # (H, 1, 1)
                mask = (j <= i) & (~is_local | (i - j < window))
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(np.where(mask, q @ np.swapaxes(k, -1, -2) / np.sqrt(np.float32(q.shape[-1])), -np.inf))
                return merge_heads(w @ v) @ W_o, w
        """,
        "helper in an added cell, one head at a time": [
            """
            def _head_mask_66(L, local, window):
                return np.array([[j <= i and (not local or j > i - window) for j in range(L)] for i in range(L)])
            """,
            """
            def local_global_attention(x, W_q, W_k, W_v, W_o, n_heads, window):
                L, D = x.shape[-2], x.shape[-1]
                d = D // n_heads
                outs, ws = [], []
                for h in range(n_heads):
                    cols = slice(h * d, (h + 1) * d)
                    q, k, v = x @ W_q[:, cols], x @ W_k[:, cols], x @ W_v[:, cols]
                    m = _head_mask_66(L, h < n_heads // 2, window)
                    w = softmax(np.where(m, q @ np.swapaxes(k, -1, -2) / np.sqrt(d), -np.inf))
                    outs.append(w @ v)
                    ws.append(w)
                return np.concatenate(outs, axis=-1) @ W_o, np.stack(ws, axis=1)
            """,
        ],
    },
    "ch06.streaming_settings": {
        "torch, counted from both ends": """
            def streaming_settings(weights):
                seen = torch.as_tensor(weights)[:, -1] > 0  # (H, L)
                n_sink = torch.cumprod(seen.int(), dim=-1).sum(dim=-1)
                window = torch.cumprod(seen.flip(-1).int(), dim=-1).sum(dim=-1)
                return window.numpy(), n_sink.numpy()
        """,
        "loops over heads and keys": """
            def streaming_settings(weights):
                H, L, _ = weights.shape
                windows, sinks = [], []
                for h in range(H):
                    row = weights[h, L - 1]
                    s = 0
                    while row[s] > 0:
                        s += 1
                    w = 0
                    while row[L - 1 - w] > 0:
                        w += 1
                    windows.append(w)
                    sinks.append(s)
                return np.array(windows), np.array(sinks)
        """,
        "helper in an added cell, from the columns' counts": [
            """
            def _visible_67(weights):
                return np.asarray(weights, dtype=np.float32) != 0  # (H, L, L)
            """,
            """
            def streaming_settings(weights):
                seen = _visible_67(weights)
                L = seen.shape[-1]
                # key j is seen by every query from j on exactly when it is a sink (or within the last window)
                full = seen.sum(axis=-2) == L - np.arange(L)  # (H, L)
                n_sink = np.argmin(full, axis=-1)
                window = seen[:, -1].sum(axis=-1) - n_sink
                return window, n_sink
            """,
        ],
    },
    "ch06.key_major_decoder": {
        "torch with the chapter's F, rewritten query-major": """
            def key_major_decoder(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                L = q.shape[-2]
                allowed = torch.ones(L, L, dtype=torch.bool).tril()
                s = (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(~allowed, float("-inf"))
                w = F.softmax(s, dim=-1)
                return w @ v, w.transpose(-1, -2)
        """,
        "float32 einsum, key-major": """
            def key_major_decoder(q, k, v):
                q, k, v = (np.asarray(a, dtype=np.float32) for a in (q, k, v))
                L = q.shape[-2]
                s = np.einsum("...je,...te->...jt", k, q) / np.float32(np.sqrt(q.shape[-1]))
                j, t = np.indices((L, L))
                w = softmax(np.where(j <= t, s, -np.inf), axis=-2)
                return np.einsum("...jt,...jv->...tv", w, v), w
        """,
        "helper in an added cell: loops over the queries": [
            """
            def _keys_up_to_68(t):
                return slice(0, t + 1)
            """,
            """
            def key_major_decoder(q, k, v):
                L = q.shape[-2]
                w = np.zeros(q.shape[:-2] + (L, L))
                for t in range(L):
                    s = (k[..., _keys_up_to_68(t), :] * q[..., t : t + 1, :]).sum(-1) / np.sqrt(q.shape[-1])
                    e = np.exp(s - s.max(axis=-1, keepdims=True))
                    w[..., : t + 1, t] = e / e.sum(axis=-1, keepdims=True)
                return np.swapaxes(w, -1, -2) @ v, w
            """,
        ],
    },
    "ch06.lengths_from_output": {
        "torch, every candidate mask at once": """
            def lengths_from_output(q, k, v, out):
                q, k, v, out = (torch.as_tensor(a, dtype=torch.float64) for a in (q, k, v, out))
                S = k.shape[1]
                keep = torch.arange(S)[None, :] < torch.arange(S + 1)[:, None]  # (S + 1, S): one mask per length
                s = (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5)[:, None]  # (B, 1, S, S)
                s = s.masked_fill(~keep[None, :, None, :], float("-inf"))  # (B, S + 1, S, S)
                w = torch.nan_to_num(torch.softmax(s, dim=-1), nan=0.0)
                gap = (w @ v[:, None] - out[:, None]).abs().amax(dim=(-2, -1))  # (B, S + 1)
                return gap.argmin(dim=-1).numpy()
        """,
        "float32 einsum, the first length that fits": """
            def lengths_from_output(q, k, v, out):
                q, k, v = (a.astype(np.float32) for a in (q, k, v))
                B, S = k.shape[:2]
                s = np.einsum("bie,bje->bij", q, k) / np.sqrt(np.float32(q.shape[-1]))
                found = np.zeros(B, dtype=int)
                for b in range(B):
                    best = np.inf
                    for n in range(S + 1):
                        w = softmax(np.where(np.arange(S) < n, s[b], -np.inf))
                        gap = np.abs(np.einsum("ij,jv->iv", w, v[b]) - out[b]).max()
                        if gap < best:
                            best, found[b] = gap, n
                return found
        """,
        "helper in an added cell, a relative tolerance": [
            """
            def _attend_69(qb, kb, vb, n):
                o = np.zeros((qb.shape[0], vb.shape[1]))
                if n:
                    o = softmax(qb @ kb[:n].T / np.sqrt(qb.shape[1])) @ vb[:n]
                return o
            """,
            """
            def lengths_from_output(q, k, v, out):
                result = []
                for b in range(q.shape[0]):
                    fits = [n for n in range(k.shape[1] + 1)
                            if np.allclose(_attend_69(q[b], k[b], v[b], n), out[b], rtol=1e-3, atol=1e-4)]
                    result.append(fits[0])
                return np.array(result)
            """,
        ],
    },
    "ch06.first_wrong_cached_output": {
        "torch, the rows above the diagonal": """
            def first_wrong_cached_output(masks):
                m = torch.as_tensor(masks)
                L = m.shape[-1]
                ahead = torch.triu(m, diagonal=1).any(dim=-1)  # (N, L)
                idx = torch.arange(L).expand_as(ahead)
                return torch.where(ahead, idx, L).min(dim=-1).values
        """,
        "loops, a simulated cache's key sets": """
            def first_wrong_cached_output(masks):
                out = []
                for m in np.asarray(masks):
                    L = len(m)
                    t = next((t for t in range(L) if set(np.flatnonzero(m[t])) != set(np.flatnonzero(m[t, : t + 1]))), L)
                    out.append(t)
                return np.array(out)
        """,
        "helper in an added cell: the cumulative count of future keys": [
            """
            def _future_keys_610(m):
                L = m.shape[-1]
                return (m & (np.arange(L)[None, :] > np.arange(L)[:, None])).sum(axis=-1)
            """,
            """
            def first_wrong_cached_output(masks):
                bad = _future_keys_610(np.asarray(masks)) > 0  # (N, L)
                return np.array([np.flatnonzero(row)[0] if row.any() else len(row) for row in bad])
            """,
        ],
    },
}

WRONG = {
    "ch06.make_causal_mask": {
        "square (L, L)": """
            def make_causal_mask(L, S):
                return np.tril(np.ones((L, L), dtype=bool))
        """,
        "triu": """
            def make_causal_mask(L, S):
                return np.triu(np.ones((L, S), dtype=bool))
        """,
        "strictly below the diagonal": """
            def make_causal_mask(L, S):
                return np.tril(np.ones((L, S), dtype=bool), k=-1)
        """,
    },
    "ch06.packed_causal_mask": {
        "(L, L) for the first row only": """
            def packed_causal_mask(doc_ids):
                d = np.asarray(doc_ids)[0]
                return (d[:, None] == d[None, :]) & np.tril(np.ones((len(d), len(d)), dtype=bool))
        """,
        "documents counted by id order (sorted ids assumed)": """
            def packed_causal_mask(doc_ids):
                d = np.asarray(doc_ids)
                L = d.shape[-1]
                return (d[:, None, :] >= d[:, :, None]) & np.tril(np.ones((L, L), dtype=bool))
        """,
        "strictly earlier tokens": """
            def packed_causal_mask(doc_ids):
                d = np.asarray(doc_ids)
                L = d.shape[-1]
                return (d[:, :, None] == d[:, None, :]) & np.tril(np.ones((L, L), dtype=bool), k=-1)
        """,
    },
    "ch06.masked_logsumexp": {
        "keepdims (..., 1)": """
            def masked_logsumexp(scores, mask):
                s = np.where(mask, scores, -np.inf)
                top = s.max(axis=-1, keepdims=True)
                top = np.where(np.isfinite(top), top, 0.0)
                with np.errstate(divide="ignore"):
                    return top + np.log(np.exp(s - top).sum(axis=-1, keepdims=True))
        """,
        "the log of the masked softmax's sum": """
            def masked_logsumexp(scores, mask):
                s = np.where(mask, scores, -np.inf)
                top = s.max(axis=-1, keepdims=True)
                top = np.where(np.isfinite(top), top, 0.0)
                e = np.exp(s - top)
                return np.log(e.sum(axis=-1) + 1e-30)
        """,
        "the mean instead of the sum": """
            def masked_logsumexp(scores, mask):
                s = np.where(mask, scores, -np.inf)
                top = s.max(axis=-1, keepdims=True)
                top = np.where(np.isfinite(top), top, 0.0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    n = np.broadcast_to(mask, np.shape(scores)).sum(axis=-1)
                    return top[..., 0] + np.log(np.exp(s - top).sum(axis=-1) / np.maximum(n, 1))
        """,
    },
    "ch06.ring_cache_attention": {
        "every slot attended": """
            def ring_cache_attention(q, k_cache, v_cache, pos):
                w = softmax(np.einsum("be,bwe->bw", q, k_cache) / np.sqrt(q.shape[-1]))
                return np.einsum("bw,bwv->bv", w, v_cache), w
        """,
        "the ring read as a causal row": """
            def ring_cache_attention(q, k_cache, v_cache, pos):
                W = k_cache.shape[1]
                m = np.arange(W)[None, :] <= (np.asarray(pos) % W)[:, None]
                s = np.einsum("be,bwe->bw", q, k_cache) / np.sqrt(q.shape[-1])
                w = softmax(np.where(m, s, -np.inf))
                return np.einsum("bw,bwv->bv", w, v_cache), w
        """,
        "a window of W - 1 keys": """
            def ring_cache_attention(q, k_cache, v_cache, pos):
                W = k_cache.shape[1]
                p = np.asarray(pos)[:, None]
                s_ = np.arange(W)[None, :]
                m = (s_ <= p) & ((s_ != (p + 1) % W) | (p < W - 1))
                s = np.einsum("be,bwe->bw", q, k_cache) / np.sqrt(q.shape[-1])
                w = softmax(np.where(m, s, -np.inf))
                return np.einsum("bw,bwv->bv", w, v_cache), w
        """,
        "weights in position order": """
            def ring_cache_attention(q, k_cache, v_cache, pos):
                W = k_cache.shape[1]
                m = np.arange(W)[None, :] <= np.asarray(pos)[:, None]
                s = np.einsum("be,bwe->bw", q, k_cache) / np.sqrt(q.shape[-1])
                w = softmax(np.where(m, s, -np.inf))
                oldest = [(int(p) + 1) % W if p >= W - 1 else 0 for p in pos]
                return np.einsum("bw,bwv->bv", w, v_cache), np.stack([np.roll(r, -o) for r, o in zip(w, oldest)])
        """,
    },
    "ch06.mask_from_additive": {
        "np.isfinite": """
            def mask_from_additive(bias):
                return np.isfinite(bias)
        """,
        "astype(bool)": """
            def mask_from_additive(bias):
                return np.asarray(bias).astype(bool)
        """,
        "a (B, S) result": """
            def mask_from_additive(bias):
                b = np.asarray(bias) > np.finfo(bias.dtype).min
                return b.reshape(b.shape[0], -1)
        """,
        "a threshold below float16's minimum": """
            def mask_from_additive(bias):
                return np.asarray(bias, dtype=np.float64) > -1e9
        """,
        "only a bias of 0 kept": """
            def mask_from_additive(bias):
                return np.asarray(bias) == 0
        """,
        "above half of its own dtype's minimum": """
            def mask_from_additive(bias):
                return bias > np.finfo(bias.dtype).min / 2
        """,
    },
    "ch06.local_global_attention": {
        "scaled by sqrt(d_model)": """
            def local_global_attention(x, W_q, W_k, W_v, W_o, n_heads, window):
                L = x.shape[-2]
                i, j = np.indices((L, L))
                local = (np.arange(n_heads) < n_heads // 2)[:, None, None]
                mask = (j <= i) & (~local | (i - j < window))
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(np.where(mask, q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1]), -np.inf))
                return merge_heads(w @ v) @ W_o, w
        """,
        "a two-sided window in the local heads": """
            def local_global_attention(x, W_q, W_k, W_v, W_o, n_heads, window):
                L = x.shape[-2]
                i, j = np.indices((L, L))
                local = (np.arange(n_heads) < n_heads // 2)[:, None, None]
                mask = np.where(local, np.abs(i - j) < window, j <= i)
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(np.where(mask, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf))
                return merge_heads(w @ v) @ W_o, w
        """,
        "the local heads chosen as the even ones": """
            def local_global_attention(x, W_q, W_k, W_v, W_o, n_heads, window):
                L = x.shape[-2]
                i, j = np.indices((L, L))
                local = (np.arange(n_heads) % 2 == 0)[:, None, None]
                mask = (j <= i) & (~local | (i - j < window))
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(np.where(mask, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf))
                return merge_heads(w @ v) @ W_o, w
        """,
    },
    "ch06.streaming_settings": {
        "window without the query itself": """
            def streaming_settings(weights):
                seen = weights[:, -1] != 0
                return np.argmin(seen[:, ::-1], axis=-1) - 1, np.argmin(seen, axis=-1)
        """,
        "window counts the sinks": """
            def streaming_settings(weights):
                seen = weights[:, -1] != 0
                return seen.sum(axis=-1), np.argmin(seen, axis=-1)
        """,
        "keys read along the queries": """
            def streaming_settings(weights):
                seen = weights[:, :, -1] != 0
                return np.argmin(seen[:, ::-1], axis=-1), np.argmin(seen, axis=-1)
        """,
        "read from the middle query": """
            def streaming_settings(weights):
                seen = weights[:, weights.shape[1] // 2] != 0
                last = weights.shape[1] // 2
                return np.argmin(seen[:, last::-1], axis=-1), np.argmin(seen, axis=-1)
        """,
    },
    "ch06.key_major_decoder": {
        "the stub as given": """
            def key_major_decoder(q, k, v):
                L = q.shape[-2]
                scores = k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1])
                allowed = np.tril(np.ones((L, L), dtype=bool))
                weights = softmax(np.where(allowed, scores, -np.inf), axis=-2)
                return np.swapaxes(weights, -1, -2) @ v, weights
        """,
        "triu, but normalised over the last axis": """
            def key_major_decoder(q, k, v):
                L = q.shape[-2]
                scores = k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(np.triu(np.ones((L, L), dtype=bool)), scores, -np.inf))
                return np.swapaxes(weights, -1, -2) @ v, weights
        """,
        "fixed, but weights returned query-major": """
            def key_major_decoder(q, k, v):
                L = q.shape[-2]
                scores = k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(np.triu(np.ones((L, L), dtype=bool)), scores, -np.inf), axis=-2)
                return np.swapaxes(weights, -1, -2) @ v, np.swapaxes(weights, -1, -2)
        """,
        "triu above the diagonal only": """
            def key_major_decoder(q, k, v):
                L = q.shape[-2]
                scores = k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(np.triu(np.ones((L, L), dtype=bool), k=1), scores, -np.inf), axis=-2)
                return np.swapaxes(weights, -1, -2) @ v, weights
        """,
    },
    "ch06.lengths_from_output": {
        "counts the queries with a nonzero output": """
            def lengths_from_output(q, k, v, out):
                return (np.abs(out).max(axis=-1) > 0).sum(axis=-1)
        """,
        "never tries length 0": """
            def lengths_from_output(q, k, v, out):
                S = k.shape[1]
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                gaps = [np.abs(softmax(np.where(np.arange(S) < n, s, -np.inf)) @ v - out).max(axis=(-2, -1))
                        for n in range(1, S + 1)]
                return np.argmin(np.stack(gaps), axis=0) + 1
        """,
        "unscaled candidates": """
            def lengths_from_output(q, k, v, out):
                S = k.shape[1]
                s = q @ np.swapaxes(k, -1, -2)
                gaps = [np.abs(softmax(np.where(np.arange(S) < n, s, -np.inf)) @ v - out).max(axis=(-2, -1))
                        for n in range(S + 1)]
                return np.argmin(np.stack(gaps), axis=0)
        """,
        "causal candidates": """
            def lengths_from_output(q, k, v, out):
                S = k.shape[1]
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                causal = np.tril(np.ones((S, S), dtype=bool))
                gaps = [np.abs(softmax(np.where((np.arange(S) < n) & causal, s, -np.inf)) @ v - out).max(axis=(-2, -1))
                        for n in range(S + 1)]
                return np.argmin(np.stack(gaps), axis=0)
        """,
    },
    "ch06.first_wrong_cached_output": {
        "the first row that is not the causal row": """
            def first_wrong_cached_output(masks):
                m = np.asarray(masks)
                L = m.shape[-1]
                bad = (m != np.tril(np.ones((L, L), dtype=bool))).any(axis=-1)
                return np.where(bad.any(axis=-1), bad.argmax(axis=-1), L)
        """,
        "the diagonal counted as the future": """
            def first_wrong_cached_output(masks):
                m = np.asarray(masks)
                L = m.shape[-1]
                bad = np.triu(m).any(axis=-1)
                return np.where(bad.any(axis=-1), bad.argmax(axis=-1), L)
        """,
        "the first key seen too early": """
            def first_wrong_cached_output(masks):
                m = np.asarray(masks)
                L = m.shape[-1]
                bad = np.triu(m, k=1).any(axis=-2)
                return np.where(bad.any(axis=-1), bad.argmax(axis=-1), L)
        """,
    },
}
