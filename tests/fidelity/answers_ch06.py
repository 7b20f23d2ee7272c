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
    "ch06.make_padding_mask": {
        "torch with the chapter's torch import": """
            def make_padding_mask(lengths, S):
                return torch.arange(S)[None, :] < torch.as_tensor(lengths)[:, None]
        """,
        "a loop": """
            def make_padding_mask(lengths, S):
                mask = np.zeros((len(lengths), S), dtype=bool)
                for b, n in enumerate(lengths):
                    mask[b, :n] = True
                return mask
        """,
        "helper in an added cell": [
            """
            def _row_62(n, S):
                return np.arange(S) < n
            """,
            """
            def make_padding_mask(lengths, S):
                return np.stack([_row_62(n, S) for n in np.asarray(lengths)]).reshape(len(lengths), S)
            """,
        ],
    },
    "ch06.masked_softmax": {
        "torch with the chapter's torch import": """
            def masked_softmax(scores, mask):
                s = torch.as_tensor(scores)
                m = torch.as_tensor(mask)
                w = torch.softmax(s.masked_fill(~m, float("-inf")), dim=-1)
                return torch.nan_to_num(w, nan=0.0)
        """,
        "float32, zero the masked exponentials": """
            def masked_softmax(scores, mask):
                s = np.asarray(scores, dtype=np.float32)
                mask = np.broadcast_to(mask, s.shape)
                top = np.where(mask, s, -np.inf).max(axis=-1, keepdims=True)
                e = np.where(mask, np.exp(s - np.where(np.isfinite(top), top, 0)), 0).astype(np.float32)
                total = e.sum(axis=-1, keepdims=True)
                return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        """,
        "helper in an added cell": [
            """
            def _safe_div_63(a, b):
                return a / np.where(b > 0, b, 1.0)
            """,
            """
            def masked_softmax(scores, mask):
                s = np.where(mask, scores, -np.inf)
                m = s.max(axis=-1, keepdims=True)
                e = np.exp(s - np.where(np.isinf(m), 0.0, m))
                return _safe_div_63(e, e.sum(axis=-1, keepdims=True))
            """,
        ],
    },
    "ch06.masked_attention": {
        "torch with the chapter's F": """
            def masked_attention(q, k, v, mask):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                s = (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(~torch.as_tensor(mask), float("-inf"))
                w = torch.nan_to_num(F.softmax(s, dim=-1), nan=0.0)
                return w @ v, w
        """,
        "float32 numpy": """
            def masked_attention(q, k, v, mask):
                q, k, v = (a.astype(np.float32) for a in (q, k, v))
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(np.float32(q.shape[-1]))
                w = softmax(np.where(mask, s, -np.inf))
                return w @ v, w
        """,
        "helper in an added cell": [
            """
            def _masked_weights_64(s, mask):
                s = np.where(mask, s, -np.inf)
                m = s.max(axis=-1, keepdims=True)
                e = np.exp(s - np.where(np.isinf(m), 0.0, m))
                t = e.sum(axis=-1, keepdims=True)
                return e / np.where(t > 0, t, 1.0)
            """,
            """
            def masked_attention(q, k, v, mask):
                w = _masked_weights_64(np.einsum("...le,...se->...ls", q, k) / np.sqrt(q.shape[-1]), mask)
                return w @ v, w
            """,
        ],
    },
    "ch06.mask_from_hf": {
        "torch with the chapter's torch import": """
            def mask_from_hf(attention_mask):
                return torch.as_tensor(attention_mask).bool()[:, None, None, :]
        """,
        "astype and reshape": """
            def mask_from_hf(attention_mask):
                m = np.asarray(attention_mask)
                return m.astype(bool).reshape(m.shape[0], 1, 1, m.shape[-1])
        """,
        "helper in an added cell": [
            """
            def _keep_65(m):
                return np.asarray(m) != 0
            """,
            """
            def mask_from_hf(attention_mask):
                return np.expand_dims(_keep_65(attention_mask), axis=(1, 2))
            """,
        ],
    },
    "ch06.masked_multi_head_attention": {
        "torch with the chapter's F": """
            def masked_multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads, mask):
                x, W_q, W_k, W_v, W_o = (torch.as_tensor(a) for a in (x, W_q, W_k, W_v, W_o))
                B, L, D = x.shape
                heads = lambda a: a.view(B, L, n_heads, D // n_heads).transpose(1, 2)
                q, k, v = heads(x @ W_q), heads(x @ W_k), heads(x @ W_v)
                s = (q @ k.transpose(-1, -2) / (D // n_heads) ** 0.5).masked_fill(~torch.as_tensor(mask), float("-inf"))
                w = torch.nan_to_num(F.softmax(s, dim=-1), nan=0.0)
                return (w @ v).transpose(1, 2).reshape(B, L, D) @ W_o, w
        """,
        "float32 numpy with the setup's split_heads": """
            def masked_multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads, mask):
                x32 = x.astype(np.float32)
                q, k, v = (split_heads(x32 @ W.astype(np.float32), n_heads) for W in (W_q, W_k, W_v))
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(np.float32(q.shape[-1]))
                w = softmax(np.where(mask, s, -np.inf))
                return merge_heads(w @ v) @ W_o.astype(np.float32), w
        """,
        "helper in an added cell, heads in a loop": [
            """
            def _head_66(q, k, v, mask):
                s = np.where(mask, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf)
                w = softmax(s)
                return w @ v, w
            """,
            """
            def masked_multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads, mask):
                d = x.shape[-1] // n_heads
                mask = np.broadcast_to(mask, (x.shape[0], n_heads, x.shape[1], x.shape[1]))
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                parts = [
                    _head_66(q[..., h * d : (h + 1) * d], k[..., h * d : (h + 1) * d], v[..., h * d : (h + 1) * d], mask[:, h])
                    for h in range(n_heads)
                ]
                out = np.concatenate([p[0] for p in parts], axis=-1) @ W_o
                return out, np.stack([p[1] for p in parts], axis=1)
            """,
        ],
    },
    "ch06.sliding_window_mask": {
        "torch triu and tril with the chapter's torch import": """
            def sliding_window_mask(L, window):
                ones = torch.ones(L, L, dtype=torch.bool)
                return ones.tril() & ones.triu(-(window - 1))
        """,
        "np.tri difference": """
            def sliding_window_mask(L, window):
                return np.tri(L, dtype=bool) & ~np.tri(L, k=-window, dtype=bool)
        """,
        "helper in an added cell": [
            """
            def _visible_67(i, j, window):
                return i - window < j <= i
            """,
            """
            def sliding_window_mask(L, window):
                return np.array([[_visible_67(i, j, window) for j in range(L)] for i in range(L)], dtype=bool).reshape(L, L)
            """,
        ],
    },
    "ch06.fix_causal_leak": {
        "torch with the chapter's F": """
            def decoder_attention(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                L = q.shape[-2]
                allowed = torch.ones(L, L, dtype=torch.bool).tril()
                s = (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(~allowed, float("-inf"))
                w = F.softmax(s, dim=-1)
                return w @ v, w
        """,
        "float32": """
            def decoder_attention(q, k, v):
                q, k, v = (a.astype(np.float32) for a in (q, k, v))
                L = q.shape[-2]
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(np.float32(q.shape[-1]))
                w = softmax(np.where(np.tri(L, dtype=bool), s, -np.inf))
                return w @ v, w
        """,
        "helper in an added cell": [
            """
            def _causal_68(L):
                return np.arange(L)[None, :] <= np.arange(L)[:, None]
            """,
            """
            def decoder_attention(q, k, v):
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(_causal_68(q.shape[-2]), s, -np.inf))
                return w @ v, w
            """,
        ],
    },
    "ch06.padded_cross_attention": {
        "torch with the chapter's F": """
            def padded_cross_attention(q, k, v, key_lengths):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                keep = torch.arange(k.shape[-2])[None, :] < torch.as_tensor(key_lengths)[:, None]
                s = (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(~keep[:, None, :], float("-inf"))
                w = torch.nan_to_num(F.softmax(s, dim=-1), nan=0.0)
                return w @ v, w
        """,
        "float32 einsum": """
            def padded_cross_attention(q, k, v, key_lengths):
                q, k, v = (a.astype(np.float32) for a in (q, k, v))
                keep = np.arange(k.shape[1]) < np.asarray(key_lengths)[:, None]
                s = np.einsum("ble,bse->bls", q, k) / np.sqrt(np.float32(q.shape[-1]))
                w = softmax(np.where(keep[:, None, :], s, -np.inf))
                return np.einsum("bls,bsv->blv", w, v), w
        """,
        "helper in an added cell, one source at a time": [
            """
            def _one_source_69(qb, kb, vb, n):
                if n == 0:
                    return np.zeros((qb.shape[0], vb.shape[-1])), np.zeros((qb.shape[0], kb.shape[0]))
                w = np.zeros((qb.shape[0], kb.shape[0]))
                w[:, :n] = softmax(qb @ kb[:n].T / np.sqrt(qb.shape[-1]))
                return w @ vb, w
            """,
            """
            def padded_cross_attention(q, k, v, key_lengths):
                parts = [_one_source_69(q[b], k[b], v[b], int(n)) for b, n in enumerate(key_lengths)]
                return np.stack([p[0] for p in parts]), np.stack([p[1] for p in parts])
            """,
        ],
    },
    "ch06.masked_uniform_entropy": {
        "torch with the chapter's torch import": """
            def masked_uniform_entropy(lengths, S):
                n = torch.as_tensor(lengths, dtype=torch.float64)
                return torch.log(n.clamp(min=1.0))
        """,
        "float32 with np.log of a maximum": """
            def masked_uniform_entropy(lengths, S):
                return np.log(np.maximum(np.asarray(lengths, dtype=np.float32), 1))
        """,
        "helper in an added cell, the definition": [
            """
            def _entropy_610(p):
                p = p[p > 0]
                return float(-(p * np.log(p)).sum())
            """,
            """
            def masked_uniform_entropy(lengths, S):
                return np.array([_entropy_610(np.full(int(n), 1.0 / n)) if n > 0 else 0.0 for n in np.asarray(lengths).ravel()]).reshape(np.shape(lengths))
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
    "ch06.make_padding_mask": {
        "inverted": """
            def make_padding_mask(lengths, S):
                return np.arange(S)[None, :] >= np.asarray(lengths)[:, None]
        """,
        "off by one": """
            def make_padding_mask(lengths, S):
                return np.arange(S)[None, :] <= np.asarray(lengths)[:, None]
        """,
        "0/1 integers": """
            def make_padding_mask(lengths, S):
                return (np.arange(S)[None, :] < np.asarray(lengths)[:, None]).astype(int)
        """,
    },
    "ch06.masked_softmax": {
        "NaN for a fully masked row": """
            def masked_softmax(scores, mask):
                s = np.where(mask, scores, -np.inf)
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "large negative": """
            def masked_softmax(scores, mask):
                s = np.where(mask, scores, -1e9)
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "zeroed after the softmax": """
            def masked_softmax(scores, mask):
                e = np.exp(scores - scores.max(axis=-1, keepdims=True))
                return np.where(mask, e / e.sum(axis=-1, keepdims=True), 0.0)
        """,
    },
    "ch06.masked_attention": {
        "inverted mask": """
            def masked_attention(q, k, v, mask):
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(mask, -np.inf, s))
                return w @ v, w
        """,
        "unscaled": """
            def masked_attention(q, k, v, mask):
                w = softmax(np.where(mask, q @ np.swapaxes(k, -1, -2), -np.inf))
                return w @ v, w
        """,
        "k.T on a batch": """
            def masked_attention(q, k, v, mask):
                w = softmax(np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -np.inf))
                return w @ v, w
        """,
    },
    "ch06.mask_from_hf": {
        "(B, S), not broadcastable": """
            def mask_from_hf(attention_mask):
                return np.asarray(attention_mask) == 1
        """,
        "inverted": """
            def mask_from_hf(attention_mask):
                return (np.asarray(attention_mask) == 0)[:, None, None, :]
        """,
        "(B, 1, S, 1)": """
            def mask_from_hf(attention_mask):
                return (np.asarray(attention_mask) == 1)[:, None, :, None]
        """,
    },
    "ch06.masked_multi_head_attention": {
        "scaled by sqrt(d_model)": """
            def masked_multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads, mask):
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1])
                w = softmax(np.where(mask, s, -np.inf))
                return merge_heads(w @ v) @ W_o, w
        """,
        "inverted mask": """
            def masked_multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads, mask):
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(mask, -np.inf, s))
                return merge_heads(w @ v) @ W_o, w
        """,
        "interleaved head split": """
            def masked_multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads, mask):
                B, L, D = x.shape
                def heads(a):
                    return a.reshape(B, L, D // n_heads, n_heads).transpose(0, 3, 1, 2)
                q, k, v = heads(x @ W_q), heads(x @ W_k), heads(x @ W_v)
                w = softmax(np.where(mask, q @ np.swapaxes(k, -1, -2) / np.sqrt(D // n_heads), -np.inf))
                return (w @ v).transpose(0, 2, 3, 1).reshape(B, L, D) @ W_o, w
        """,
        "mask ignored": """
            def masked_multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads, mask):
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return merge_heads(w @ v) @ W_o, w
        """,
    },
    "ch06.sliding_window_mask": {
        "one too wide": """
            def sliding_window_mask(L, window):
                i, j = np.arange(L)[:, None], np.arange(L)[None, :]
                return (j <= i) & (j >= i - window)
        """,
        "both ways": """
            def sliding_window_mask(L, window):
                i, j = np.arange(L)[:, None], np.arange(L)[None, :]
                return np.abs(i - j) < window
        """,
        "not causal": """
            def sliding_window_mask(L, window):
                i, j = np.arange(L)[:, None], np.arange(L)[None, :]
                return j > i - window
        """,
    },
    "ch06.fix_causal_leak": {
        "sees the next token": """
            def decoder_attention(q, k, v):
                L = q.shape[-2]
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(np.tril(np.ones((L, L), dtype=bool), k=1), s, -np.inf))
                return w @ v, w
        """,
        "misses itself": """
            def decoder_attention(q, k, v):
                L = q.shape[-2]
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(np.tril(np.ones((L, L), dtype=bool), k=-1), s, -np.inf))
                return w @ v, w
        """,
        "triu": """
            def decoder_attention(q, k, v):
                L = q.shape[-2]
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(np.triu(np.ones((L, L), dtype=bool)), s, -np.inf))
                return w @ v, w
        """,
    },
    "ch06.padded_cross_attention": {
        "masked queries": """
            def padded_cross_attention(q, k, v, key_lengths):
                L = q.shape[-2]
                real = np.arange(L)[None, :] < np.asarray(key_lengths)[:, None]
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(real[:, :, None], s, -np.inf))
                return w @ v, w
        """,
        "one too many keys": """
            def padded_cross_attention(q, k, v, key_lengths):
                real = np.arange(k.shape[-2])[None, :] <= np.asarray(key_lengths)[:, None]
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(real[:, None, :], s, -np.inf))
                return w @ v, w
        """,
        "unscaled": """
            def padded_cross_attention(q, k, v, key_lengths):
                real = np.arange(k.shape[-2])[None, :] < np.asarray(key_lengths)[:, None]
                w = softmax(np.where(real[:, None, :], q @ np.swapaxes(k, -1, -2), -np.inf))
                return w @ v, w
        """,
    },
    "ch06.masked_uniform_entropy": {
        "log S": """
            def masked_uniform_entropy(lengths, S):
                return np.full(np.shape(lengths), np.log(S))
        """,
        "bits": """
            def masked_uniform_entropy(lengths, S):
                n = np.asarray(lengths, dtype=float)
                return np.log2(np.where(n > 0, n, 1.0))
        """,
        "log(n + 1)": """
            def masked_uniform_entropy(lengths, S):
                return np.log(np.asarray(lengths, dtype=float) + 1)
        """,
    },
}
