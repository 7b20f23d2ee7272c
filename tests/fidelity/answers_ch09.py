"""Chapter 9 (efficient attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch09.add_sink": {
        "torch with the chapter's torch import": """
            def add_sink(out, lse, sink):
                out, lse, sink = (torch.as_tensor(a) for a in (out, lse, sink))
                z = sink.view(1, -1, 1).expand_as(lse)
                both = torch.logsumexp(torch.stack([lse, z]), dim=0)
                return out * torch.exp(lse - both).unsqueeze(-1), both, torch.exp(z - both)
        """,
        "float32 numpy, a sigmoid of the gap": """
            def add_sink(out, lse, sink):
                out, lse, sink = (np.asarray(a, dtype=np.float32) for a in (out, lse, sink))
                gap = lse - sink[None, :, None]  # -inf for a masked row
                keep = 1 / (1 + np.exp(-gap))  # the keys' share of the new sum
                with np.errstate(over="ignore"):
                    new_lse = np.where(gap > 0, lse + np.log1p(np.exp(-gap)), sink[None, :, None] + np.log1p(np.exp(gap)))
                return out * keep[..., None], new_lse, 1 - keep
        """,
        "loops over batch, heads and queries, a helper in an added cell": [
            """
            def _log_of_sum(a, b):
                top = max(a, b)
                return top + np.log(np.exp(a - top) + np.exp(b - top))
            """,
            """
            def add_sink(out, lse, sink):
                B, H, L, _ = out.shape
                new_out, new_lse, to_sink = np.zeros_like(out), np.zeros(lse.shape), np.zeros(lse.shape)
                for b in range(B):
                    for h in range(H):
                        for i in range(L):
                            total = _log_of_sum(lse[b, h, i], sink[h])
                            new_out[b, h, i] = out[b, h, i] * np.exp(lse[b, h, i] - total)
                            new_lse[b, h, i] = total
                            to_sink[b, h, i] = np.exp(sink[h] - total)
                return new_out, new_lse, to_sink
            """,
        ],
    },
    "ch09.beam_cache_step": {
        "torch, the bottom-right mask from the chapter's torch import": """
            def beam_cache_step(q, k_new, v_new, k_cache, v_cache, parents):
                q, k_new, v_new, k_cache, v_cache = (torch.as_tensor(a) for a in (q, k_new, v_new, k_cache, v_cache))
                idx = torch.as_tensor(parents, dtype=torch.long)
                k_all = torch.cat([k_cache.index_select(0, idx), k_new], dim=1)
                v_all = torch.cat([v_cache.index_select(0, idx), v_new], dim=1)
                n, S = q.shape[1], k_all.shape[1]
                visible = torch.ones(S, S, dtype=torch.bool).tril()[S - n :]
                scores = (q @ k_all.transpose(1, 2) / q.shape[-1] ** 0.5).masked_fill(~visible, float("-inf"))
                return torch.softmax(scores, dim=-1) @ v_all, k_all, v_all
        """,
        "loops over the beams and new tokens, a copy per beam": """
            def beam_cache_step(q, k_new, v_new, k_cache, v_cache, parents):
                B, n, _ = q.shape
                t = k_cache.shape[1]
                out = np.zeros((B, n, v_new.shape[-1]))
                ks, vs = [], []
                for b in range(B):
                    k_b = np.vstack([k_cache[parents[b]].copy(), k_new[b]])
                    v_b = np.vstack([v_cache[parents[b]].copy(), v_new[b]])
                    for i in range(n):
                        s = k_b[: t + i + 1] @ q[b, i] / np.sqrt(q.shape[-1])
                        w = softmax(s)
                        out[b, i] = w @ v_b[: t + i + 1]
                    ks.append(k_b)
                    vs.append(v_b)
                return out, np.stack(ks), np.stack(vs)
        """,
        "float32 einsum, np.take, the mask built from a helper in an added cell": [
            """
            def _new_token_mask(t, n):
                return np.triu(np.ones((n, t + n), dtype=bool), k=t + 1)  # True: hidden
            """,
            """
            def beam_cache_step(q, k_new, v_new, k_cache, v_cache, parents):
                q, k_new, v_new, k_cache, v_cache = (np.asarray(a, dtype=np.float32) for a in (q, k_new, v_new, k_cache, v_cache))
                k_all = np.concatenate([np.take(k_cache, parents, axis=0), k_new], axis=1)
                v_all = np.concatenate([np.take(v_cache, parents, axis=0), v_new], axis=1)
                s = np.einsum("bne,bse->bns", q, k_all) / np.float32(np.sqrt(q.shape[-1]))
                s[:, _new_token_mask(k_cache.shape[1], q.shape[1])] = -np.inf
                return np.einsum("bns,bsv->bnv", softmax(s), v_all), k_all, v_all
            """,
        ],
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
    "ch09.split_decode": {
        "the fix in place": """
            def split_decode(q, k, v, n_splits):
                E = q.shape[-1]
                outs, lses = [], []
                for k_part, v_part in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):
                    s = q @ np.swapaxes(k_part, -1, -2) / np.sqrt(E)
                    m = s.max(axis=-1, keepdims=True)
                    p = np.exp(s - m)
                    l = p.sum(axis=-1, keepdims=True)
                    outs.append(p @ v_part / l)
                    lses.append(np.log(l) + m)
                lses = np.stack(lses)
                w = np.exp(lses - lses.max(axis=0))
                return (w * np.stack(outs)).sum(axis=0) / w.sum(axis=0)
        """,
        "rewritten in torch, parts merged as they arrive": """
            def split_decode(q, k, v, n_splits):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                E = q.shape[-1]
                out, lse = None, None
                for k_part, v_part in zip(torch.tensor_split(k, n_splits, dim=-2), torch.tensor_split(v, n_splits, dim=-2)):
                    s = q @ k_part.transpose(-1, -2) / E**0.5
                    part_lse = torch.logsumexp(s, dim=-1, keepdim=True)
                    part_out = torch.softmax(s, dim=-1) @ v_part
                    if out is None:
                        out, lse = part_out, part_lse
                        continue
                    new = torch.logaddexp(lse, part_lse)
                    out = out * torch.exp(lse - new) + part_out * torch.exp(part_lse - new)
                    lse = new
                return out
        """,
        "float32, einsum, a helper in an added cell": [
            """
            def _log_sum_exp(s):
                m = s.max(axis=-1, keepdims=True)
                return m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True))
            """,
            """
            def split_decode(q, k, v, n_splits):
                q, k, v = (np.asarray(a, dtype=np.float32) for a in (q, k, v))
                E = q.shape[-1]
                outs, lses = [], []
                for k_part, v_part in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):
                    s = np.einsum("...qe,...te->...qt", q, k_part) / np.float32(np.sqrt(E))
                    lse = _log_sum_exp(s)
                    outs.append(np.einsum("...qt,...tv->...qv", np.exp(s - lse), v_part))
                    lses.append(lse)
                lses = np.stack(lses)
                w = np.exp(lses - lses.max(axis=0))
                return (w * np.stack(outs)).sum(axis=0) / w.sum(axis=0)
            """,
        ],
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
    "ch09.add_sink": {
        "exponentials taken directly (overflow near 750)": """
            def add_sink(out, lse, sink):
                total, e_sink = np.exp(lse), np.exp(sink)[None, :, None]
                new = total + e_sink
                return out * (total / new)[..., None], np.log(new), e_sink / new
        """,
        "the sink added to lse as a number": """
            def add_sink(out, lse, sink):
                new_lse = lse + sink[None, :, None]
                return out * np.exp(lse - new_lse)[..., None], new_lse, np.exp(sink[None, :, None] - new_lse)
        """,
        "the sink counted as one more key with the output's value": """
            def add_sink(out, lse, sink):
                new_lse = np.logaddexp(lse, sink[None, :, None])
                return out, new_lse, np.exp(sink[None, :, None] - new_lse)
        """,
        "lse rebuilt as lse plus a log1p (NaN on a masked row)": """
            def add_sink(out, lse, sink):
                z = sink[None, :, None]
                with np.errstate(over="ignore", invalid="ignore"):
                    new_lse = lse + np.log1p(np.exp(z - lse))
                return out * np.exp(lse - new_lse)[..., None], new_lse, np.exp(z - new_lse)
        """,
    },
    "ch09.beam_cache_step": {
        "the old caches kept in their rows": """
            def beam_cache_step(q, k_new, v_new, k_cache, v_cache, parents):
                t, n = k_cache.shape[1], q.shape[1]
                k_all, v_all = np.concatenate([k_cache, k_new], 1), np.concatenate([v_cache, v_new], 1)
                s = q @ np.swapaxes(k_all, 1, 2) / np.sqrt(q.shape[-1])
                s = np.where(np.arange(t + n)[None, :] <= t + np.arange(n)[:, None], s, -np.inf)
                return softmax(s) @ v_all, k_all, v_all
        """,
        "rows copied one by one in place": """
            def beam_cache_step(q, k_new, v_new, k_cache, v_cache, parents):
                t, n = k_cache.shape[1], q.shape[1]
                k_cache, v_cache = k_cache.copy(), v_cache.copy()
                for b, p in enumerate(parents):
                    k_cache[b] = k_cache[p]
                    v_cache[b] = v_cache[p]
                k_all, v_all = np.concatenate([k_cache, k_new], 1), np.concatenate([v_cache, v_new], 1)
                s = q @ np.swapaxes(k_all, 1, 2) / np.sqrt(q.shape[-1])
                s = np.where(np.arange(t + n)[None, :] <= t + np.arange(n)[:, None], s, -np.inf)
                return softmax(s) @ v_all, k_all, v_all
        """,
        "gathered after appending the new tokens": """
            def beam_cache_step(q, k_new, v_new, k_cache, v_cache, parents):
                t, n = k_cache.shape[1], q.shape[1]
                k_all = np.concatenate([k_cache, k_new], 1)[parents]
                v_all = np.concatenate([v_cache, v_new], 1)[parents]
                s = q @ np.swapaxes(k_all, 1, 2) / np.sqrt(q.shape[-1])
                s = np.where(np.arange(t + n)[None, :] <= t + np.arange(n)[:, None], s, -np.inf)
                return softmax(s) @ v_all, k_all, v_all
        """,
        "the causal mask of the first n tokens": """
            def beam_cache_step(q, k_new, v_new, k_cache, v_cache, parents):
                n = q.shape[1]
                k_all = np.concatenate([k_cache[parents], k_new], 1)
                v_all = np.concatenate([v_cache[parents], v_new], 1)
                s = q @ np.swapaxes(k_all, 1, 2) / np.sqrt(q.shape[-1])
                s = np.where(np.tril(np.ones((n, k_all.shape[1]), dtype=bool)), s, -np.inf)
                return softmax(s) @ v_all, k_all, v_all
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
    "ch09.split_decode": {
        "the code as handed out": """
            def split_decode(q, k, v, n_splits):
                E = q.shape[-1]
                outs, logw = [], []
                for k_part, v_part in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):
                    s = q @ np.swapaxes(k_part, -1, -2) / np.sqrt(E)
                    m = s.max(axis=-1, keepdims=True)
                    p = np.exp(s - m)
                    l = p.sum(axis=-1, keepdims=True)
                    outs.append(p @ v_part / l)
                    logw.append(np.log(l))
                logw = np.stack(logw)
                w = np.exp(logw - logw.max(axis=0))
                return (w * np.stack(outs)).sum(axis=0) / w.sum(axis=0)
        """,
        "weights e^m l taken directly (overflow near 750)": """
            def split_decode(q, k, v, n_splits):
                E = q.shape[-1]
                outs, ws = [], []
                for k_part, v_part in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):
                    s = q @ np.swapaxes(k_part, -1, -2) / np.sqrt(E)
                    m = s.max(axis=-1, keepdims=True)
                    p = np.exp(s - m)
                    l = p.sum(axis=-1, keepdims=True)
                    outs.append(p @ v_part / l)
                    ws.append(np.exp(m) * l)
                ws = np.stack(ws)
                return (ws * np.stack(outs)).sum(axis=0) / ws.sum(axis=0)
        """,
        "parts weighted by their largest score only": """
            def split_decode(q, k, v, n_splits):
                E = q.shape[-1]
                outs, lses = [], []
                for k_part, v_part in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):
                    s = q @ np.swapaxes(k_part, -1, -2) / np.sqrt(E)
                    m = s.max(axis=-1, keepdims=True)
                    p = np.exp(s - m)
                    l = p.sum(axis=-1, keepdims=True)
                    outs.append(p @ v_part / l)
                    lses.append(m)
                lses = np.stack(lses)
                w = np.exp(lses - lses.max(axis=0))
                return (w * np.stack(outs)).sum(axis=0) / w.sum(axis=0)
        """,
        "the outputs left unnormalised and the sums added": """
            def split_decode(q, k, v, n_splits):
                E = q.shape[-1]
                acc, total = 0, 0
                for k_part, v_part in zip(np.array_split(k, n_splits, axis=-2), np.array_split(v, n_splits, axis=-2)):
                    s = q @ np.swapaxes(k_part, -1, -2) / np.sqrt(E)
                    p = np.exp(s - s.max(axis=-1, keepdims=True))
                    acc = acc + p @ v_part
                    total = total + p.sum(axis=-1, keepdims=True)
                return acc / total
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
