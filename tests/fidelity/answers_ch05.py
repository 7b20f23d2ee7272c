"""Chapter 5 (multi-head attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch05.weights_from_dealt_heads": {
        "loops over heads and places": """
            def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
                d = W_q.shape[0]
                d_head = d // n_heads
                order = [e * n_heads + h for h in range(n_heads) for e in range(d_head)]
                q, k, v, o = (np.empty_like(W) for W in (W_q, W_k, W_v, W_o))
                for new, old in enumerate(order):
                    q[:, new], k[:, new], v[:, new] = W_q[:, old], W_k[:, old], W_v[:, old]
                    o[new] = W_o[old]
                return q, k, v, o
        """,
        "rearrange, in torch float32": """
            def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
                t = [torch.as_tensor(W, dtype=torch.float32) for W in (W_q, W_k, W_v, W_o)]
                cols = "i (e h) -> i (h e)"  # the library's feature e*H + h becomes h*d_head + e
                q, k, v = (rearrange(W, cols, h=n_heads) for W in t[:3])
                o = rearrange(t[3], "(e h) o -> (h e) o", h=n_heads)
                return q, k, v, o
        """,
        "a permutation matrix, helper in an added cell": [
            """
            def _dealt_to_blocks_51(d, n_heads):
                # P[j, p] = 1 where the course's feature p is the library's feature j
                P = np.zeros((d, d))
                for p in range(d):
                    h, e = divmod(p, d // n_heads)
                    P[e * n_heads + h, p] = 1.0
                return P
            """,
            """
            def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
                P = _dealt_to_blocks_51(W_q.shape[0], n_heads)
                return W_q @ P, W_k @ P, W_v @ P, P.T @ W_o
            """,
        ],
        "argsort of the head of each feature": """
            def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
                head_of = np.arange(W_q.shape[0]) % n_heads  # the library's head of each feature
                order = np.argsort(head_of, kind="stable")  # by head, each head's features in order
                return W_q[:, order], W_k[:, order], W_v[:, order], W_o[order, :]
        """,
    },
    "ch05.merge_copied_heads": {
        "loops over pairs and slices": """
            def merge_copied_heads(W_q, W_k, W_v, W_o, n_heads):
                dh = W_q.shape[0] // n_heads
                cols = [slice(h * dh, (h + 1) * dh) for h in range(n_heads)]
                for b in range(n_heads):
                    for a in range(b):
                        if all((W[:, cols[a]] == W[:, cols[b]]).all() for W in (W_q, W_k, W_v)):
                            first, second = a, b
                keep = [h for h in range(n_heads) if h != second]
                o = [W_o[cols[h]] + (W_o[cols[second]] if h == first else 0) for h in keep]
                q, k, v = (np.concatenate([W[:, cols[h]] for h in keep], axis=1) for W in (W_q, W_k, W_v))
                return q, k, v, np.concatenate(o, axis=0)
        """,
        "torch float32, a boolean mask of the features kept": """
            def merge_copied_heads(W_q, W_k, W_v, W_o, n_heads):
                t = [torch.as_tensor(W, dtype=torch.float32) for W in (W_q, W_k, W_v, W_o)]
                d = t[0].shape[0]
                heads = [rearrange(torch.cat(t[:3], dim=0), "i (h e) -> h (i e)", h=n_heads)]
                same = [(a, b) for b in range(n_heads) for a in range(b) if torch.equal(heads[0][a], heads[0][b])]
                a, b = same[0]
                o = rearrange(t[3].clone(), "(h e) j -> h e j", h=n_heads)
                o[a] += o[b]
                keep = torch.ones(d, dtype=torch.bool)
                keep[b * (d // n_heads) : (b + 1) * (d // n_heads)] = False
                return t[0][:, keep], t[1][:, keep], t[2][:, keep], rearrange(o, "h e j -> (h e) j")[keep]
        """,
        "a selection matrix, helper in an added cell": [
            """
            def _copies_52(W_q, W_k, W_v, n_heads):
                dh = W_q.shape[0] // n_heads
                blocks = [np.concatenate([W[:, h * dh:(h + 1) * dh] for W in (W_q, W_k, W_v)]) for h in range(n_heads)]
                return next((a, b) for b in range(n_heads) for a in range(b) if np.array_equal(blocks[a], blocks[b]))
            """,
            """
            def merge_copied_heads(W_q, W_k, W_v, W_o, n_heads):
                a, b = _copies_52(W_q, W_k, W_v, n_heads)
                d = W_q.shape[0]
                dh = d // n_heads
                kept = [j for j in range(d) if not b * dh <= j < (b + 1) * dh]
                S = np.eye(d)[:, kept]  # (d, d - dh): picks the kept features
                A = np.eye(d)  # adds the later copy's rows of W_o onto the earlier one's
                A[a * dh:(a + 1) * dh, b * dh:(b + 1) * dh] = np.eye(dh)
                return W_q @ S, W_k @ S, W_v @ S, S.T @ A @ W_o
            """,
        ],
    },
    "ch05.predict_causal_top_keys": {
        "an int": """
            def predict_causal_top_keys():
                return 12
        """,
        "a float": """
            def predict_causal_top_keys():
                return 12.0
        """,
        "a numpy integer from arithmetic": """
            def predict_causal_top_keys():
                return np.int64(3 * 4)
        """,
    },
    "ch05.multi_head_attention": {
        "torch, rearrange and math from the chapter's imports": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                x, W_q, W_k, W_v, W_o = (torch.as_tensor(a) for a in (x, W_q, W_k, W_v, W_o))
                q, k, v = (rearrange(x @ W, "b l (h d) -> b h l d", h=n_heads) for W in (W_q, W_k, W_v))
                w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
                return rearrange(w @ v, "b h l d -> b l (h d)") @ W_o, w
        """,
        "float32 numpy with the setup's split_heads": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                x32 = x.astype(np.float32)
                q, k, v = (split_heads(x32 @ W.astype(np.float32), n_heads) for W in (W_q, W_k, W_v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(np.float32(q.shape[-1])))
                return merge_heads(w @ v) @ W_o.astype(np.float32), w
        """,
        "helper in an added cell, a loop over heads": [
            """
            def _one_head_53(q, k, v):
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                w = e / e.sum(axis=-1, keepdims=True)
                return w @ v, w
            """,
            """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                d = x.shape[-1] // n_heads
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                outs, ws = [], []
                for h in range(n_heads):
                    cols = slice(h * d, (h + 1) * d)
                    o, w = _one_head_53(q[..., cols], k[..., cols], v[..., cols])
                    outs.append(o)
                    ws.append(w)
                return np.concatenate(outs, axis=-1) @ W_o, np.stack(ws, axis=-3)
            """,
        ],
    },
    "ch05.mha_uneven_heads": {
        "np.split at the running sum": """
            def mha_uneven_heads(x, W_q, W_k, W_v, W_o, widths):
                cuts = np.cumsum(widths)[:-1]
                qs, ks, vs = (np.split(x @ W, cuts, axis=-1) for W in (W_q, W_k, W_v))
                ws = [softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])) for q, k in zip(qs, ks)]
                return np.concatenate([w @ v for w, v in zip(ws, vs)], axis=-1) @ W_o, np.stack(ws, axis=1)
        """,
        "torch float32, einsum": """
            def mha_uneven_heads(x, W_q, W_k, W_v, W_o, widths):
                x, W_q, W_k, W_v, W_o = (torch.as_tensor(a, dtype=torch.float32) for a in (x, W_q, W_k, W_v, W_o))
                qs, ks, vs = (torch.split(x @ W, list(widths), dim=-1) for W in (W_q, W_k, W_v))
                ws = [torch.softmax(torch.einsum("bid,bjd->bij", q, k) / math.sqrt(q.shape[-1]), dim=-1)
                      for q, k in zip(qs, ks)]
                heads = [torch.einsum("bij,bjd->bid", w, v) for w, v in zip(ws, vs)]
                return torch.cat(heads, dim=-1) @ W_o, torch.stack(ws, dim=1)
        """,
        "loops over tokens, helper in an added cell": [
            """
            def _head_55(q, k, v):
                L = q.shape[0]
                w = np.zeros((L, L))
                for i in range(L):
                    s = np.array([q[i] @ k[j] for j in range(L)]) / math.sqrt(len(q[i]))
                    e = np.exp(s - s.max())
                    w[i] = e / e.sum()
                return w @ v, w
            """,
            """
            def mha_uneven_heads(x, W_q, W_k, W_v, W_o, widths):
                B, L, d = x.shape
                out, maps = np.zeros((B, L, d)), np.zeros((B, len(widths), L, L))
                for b in range(B):
                    q, k, v = x[b] @ W_q, x[b] @ W_k, x[b] @ W_v
                    lo = 0
                    for h, width in enumerate(widths):
                        o, maps[b, h] = _head_55(q[:, lo:lo + width], k[:, lo:lo + width], v[:, lo:lo + width])
                        out[b] += o @ W_o[lo:lo + width]  # this head's rows of W_o
                        lo += width
                return out, maps
            """,
        ],
    },
    "ch05.heads_from_averaged_weights": {
        "torch, the closest head count": """
            def heads_from_averaged_weights(q, k, weights):
                q, k, w = (torch.as_tensor(a, dtype=torch.float64) for a in (q, k, weights))
                B, L, d = q.shape
                errs = {}
                for H in [h for h in range(1, d + 1) if d % h == 0]:
                    qh = q.view(B, L, H, d // H).transpose(1, 2)
                    kh = k.view(B, L, H, d // H).transpose(1, 2)
                    maps = torch.softmax(qh @ kh.transpose(-1, -2) / (d // H) ** 0.5, dim=-1).mean(1)
                    errs[H] = (maps - w).abs().max().item()
                return min(errs, key=errs.get)
        """,
        "einsum in float32, first count within 1e-4": """
            def heads_from_averaged_weights(q, k, weights):
                q, k = np.asarray(q, np.float32), np.asarray(k, np.float32)
                B, L, d = q.shape
                for H in range(1, d + 1):
                    if d % H:
                        continue
                    qh, kh = q.reshape(B, L, H, d // H), k.reshape(B, L, H, d // H)
                    s = np.einsum("bqhe,bkhe->bhqk", qh, kh) / np.sqrt(np.float32(d // H))
                    p = np.exp(s - s.max(-1, keepdims=True))
                    maps = (p / p.sum(-1, keepdims=True)).mean(1)
                    if np.abs(maps - weights).max() < 1e-4:
                        return H
        """,
        "loops over heads with the chapter's softmax": """
            def heads_from_averaged_weights(q, k, weights):
                d = q.shape[-1]
                best = None
                for H in range(d, 0, -1):
                    if d % H:
                        continue
                    dh = d // H
                    maps = 0
                    for h in range(H):
                        qs, ks = q[..., h * dh:(h + 1) * dh], k[..., h * dh:(h + 1) * dh]
                        maps = maps + softmax(qs @ ks.swapaxes(-1, -2) / np.sqrt(dh), axis=-1) / H
                    err = np.abs(maps - weights).max()
                    if best is None or err < best[0]:
                        best = (err, H)
                return best[1]
        """,
    },
    "ch05.mha_forward": {
        "the unfolding fixed with a transpose": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                B, L, d_model = x.shape
                d_head = d_model // n_heads

                def fold(t):
                    return t.reshape(B, L, n_heads, d_head).transpose(0, 2, 1, 3).reshape(B * n_heads, L, d_head)

                def unfold(t):  # rows are b * n_heads + h
                    return t.reshape(B, n_heads, L, t.shape[-1]).transpose(0, 1, 2, 3)

                q, k, v = fold(x @ W_q), fold(x @ W_k), fold(x @ W_v)
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head))
                heads = unfold(weights @ v)
                return heads.transpose(0, 2, 1, 3).reshape(B, L, d_model) @ W_o, unfold(weights)
        """,
        "heads first in the fold, so the unfolding is right": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                B, L, d_model = x.shape
                d_head = d_model // n_heads

                def fold(t):  # rows h * B + b
                    return t.reshape(B, L, n_heads, d_head).transpose(2, 0, 1, 3).reshape(n_heads * B, L, d_head)

                def unfold(t):
                    return t.reshape(n_heads, B, L, t.shape[-1]).transpose(1, 0, 2, 3)

                q, k, v = fold(x @ W_q), fold(x @ W_k), fold(x @ W_v)
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head))
                heads = unfold(weights @ v)
                return heads.transpose(0, 2, 1, 3).reshape(B, L, d_model) @ W_o, unfold(weights)
        """,
        "torch float32, rearrange": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                x, W_q, W_k, W_v, W_o = (torch.as_tensor(a, dtype=torch.float32) for a in (x, W_q, W_k, W_v, W_o))
                B = x.shape[0]
                q, k, v = (rearrange(x @ W, "b l (h d) -> (b h) l d", h=n_heads) for W in (W_q, W_k, W_v))
                w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
                out = rearrange(w @ v, "(b h) l d -> b l (h d)", b=B)
                return out @ W_o, rearrange(w, "(b h) l s -> b h l s", b=B)
        """,
        "a loop over sequences and heads, helper in an added cell": [
            """
            def _one_head_57(q, k, v):
                w = softmax(q @ k.T / np.sqrt(q.shape[-1]))
                return w @ v, w
            """,
            """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                B, L, D = x.shape
                d = D // n_heads
                out, maps = np.zeros((B, L, D)), np.zeros((B, n_heads, L, L))
                for b in range(B):
                    q, k, v = x[b] @ W_q, x[b] @ W_k, x[b] @ W_v
                    concat = np.zeros((L, D))
                    for h in range(n_heads):
                        c = slice(h * d, (h + 1) * d)
                        concat[:, c], maps[b, h] = _one_head_57(q[:, c], k[:, c], v[:, c])
                    out[b] = concat @ W_o
                return out, maps
            """,
        ],
    },
}

WRONG = {
    "ch05.weights_from_dealt_heads": {
        "the order run backwards": """
            def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
                d = W_q.shape[0]
                order = np.arange(d).reshape(n_heads, d // n_heads).T.ravel()
                return W_q[:, order], W_k[:, order], W_v[:, order], W_o[order]
        """,
        "W_o left alone": """
            def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
                d = W_q.shape[0]
                order = np.arange(d).reshape(d // n_heads, n_heads).T.ravel()
                return W_q[:, order], W_k[:, order], W_v[:, order], W_o
        """,
        "W_o's columns reordered": """
            def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
                d = W_q.shape[0]
                order = np.arange(d).reshape(d // n_heads, n_heads).T.ravel()
                return W_q[:, order], W_k[:, order], W_v[:, order], W_o[:, order]
        """,
        "rows of the projections reordered": """
            def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
                d = W_q.shape[0]
                order = np.arange(d).reshape(d // n_heads, n_heads).T.ravel()
                return W_q[order], W_k[order], W_v[order], W_o[order]
        """,
    },
    "ch05.merge_copied_heads": {
        "the copy deleted, its W_o rows too": """
            def merge_copied_heads(W_q, W_k, W_v, W_o, n_heads):
                dh = W_q.shape[0] // n_heads
                b = next(b for b in range(n_heads) for a in range(b)
                         if np.array_equal(W_q[:, a * dh:(a + 1) * dh], W_q[:, b * dh:(b + 1) * dh]))
                gone = np.arange(b * dh, (b + 1) * dh)
                return (np.delete(W_q, gone, 1), np.delete(W_k, gone, 1), np.delete(W_v, gone, 1),
                        np.delete(W_o, gone, 0))
        """,
        "the W_o rows averaged": """
            def merge_copied_heads(W_q, W_k, W_v, W_o, n_heads):
                dh = W_q.shape[0] // n_heads
                a, b = next((a, b) for b in range(n_heads) for a in range(b)
                            if np.array_equal(W_q[:, a * dh:(a + 1) * dh], W_q[:, b * dh:(b + 1) * dh]))
                W_o = W_o.copy()
                W_o[a * dh:(a + 1) * dh] = (W_o[a * dh:(a + 1) * dh] + W_o[b * dh:(b + 1) * dh]) / 2
                gone = np.arange(b * dh, (b + 1) * dh)
                return (np.delete(W_q, gone, 1), np.delete(W_k, gone, 1), np.delete(W_v, gone, 1),
                        np.delete(W_o, gone, 0))
        """,
        "the earlier copy removed": """
            def merge_copied_heads(W_q, W_k, W_v, W_o, n_heads):
                dh = W_q.shape[0] // n_heads
                a, b = next((a, b) for b in range(n_heads) for a in range(b)
                            if np.array_equal(W_q[:, a * dh:(a + 1) * dh], W_q[:, b * dh:(b + 1) * dh]))
                W_o = W_o.copy()
                W_o[b * dh:(b + 1) * dh] += W_o[a * dh:(a + 1) * dh]
                gone = np.arange(a * dh, (a + 1) * dh)
                return (np.delete(W_q, gone, 1), np.delete(W_k, gone, 1), np.delete(W_v, gone, 1),
                        np.delete(W_o, gone, 0))
        """,
        "W_o's columns added and removed": """
            def merge_copied_heads(W_q, W_k, W_v, W_o, n_heads):
                dh = W_q.shape[0] // n_heads
                a, b = next((a, b) for b in range(n_heads) for a in range(b)
                            if np.array_equal(W_q[:, a * dh:(a + 1) * dh], W_q[:, b * dh:(b + 1) * dh]))
                W_o = W_o.copy()
                W_o[:, a * dh:(a + 1) * dh] += W_o[:, b * dh:(b + 1) * dh]
                gone = np.arange(b * dh, (b + 1) * dh)
                return (np.delete(W_q, gone, 1), np.delete(W_k, gone, 1), np.delete(W_v, gone, 1),
                        np.delete(W_o, gone, 1).T)
        """,
    },
    "ch05.predict_causal_top_keys": {
        "the unmasked two": """
            def predict_causal_top_keys():
                return 2
        """,
        "one per query but the first": """
            def predict_causal_top_keys():
                return 11
        """,
        "half of them": """
            def predict_causal_top_keys():
                return 6
        """,
    },
    "ch05.multi_head_attention": {
        "scaled by sqrt(d_model)": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1]))
                return merge_heads(w @ v) @ W_o, w
        """,
        "interleaved head split": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                B, L, D = x.shape
                def heads(a):
                    return a.reshape(B, L, D // n_heads, n_heads).transpose(0, 3, 1, 2)
                q, k, v = heads(x @ W_q), heads(x @ W_k), heads(x @ W_v)
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(D // n_heads))
                return (w @ v).transpose(0, 2, 3, 1).reshape(B, L, D) @ W_o, w
        """,
        "no W_o": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return merge_heads(w @ v), w
        """,
        "W transposed": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (split_heads(x @ W.T, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return merge_heads(w @ v) @ W_o.T, w
        """,
    },
    "ch05.mha_uneven_heads": {
        "scaled by the mean width": """
            def mha_uneven_heads(x, W_q, W_k, W_v, W_o, widths):
                cuts = np.cumsum(widths)[:-1]
                qs, ks, vs = (np.split(x @ W, cuts, axis=-1) for W in (W_q, W_k, W_v))
                c = np.sqrt(x.shape[-1] / len(widths))
                ws = [softmax(q @ np.swapaxes(k, -1, -2) / c) for q, k in zip(qs, ks)]
                return np.concatenate([w @ v for w, v in zip(ws, vs)], axis=-1) @ W_o, np.stack(ws, axis=1)
        """,
        "scaled by d_model": """
            def mha_uneven_heads(x, W_q, W_k, W_v, W_o, widths):
                cuts = np.cumsum(widths)[:-1]
                qs, ks, vs = (np.split(x @ W, cuts, axis=-1) for W in (W_q, W_k, W_v))
                ws = [softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1])) for q, k in zip(qs, ks)]
                return np.concatenate([w @ v for w, v in zip(ws, vs)], axis=-1) @ W_o, np.stack(ws, axis=1)
        """,
        "cut at the widths, not at their running sum": """
            def mha_uneven_heads(x, W_q, W_k, W_v, W_o, widths):
                qs, ks, vs = (np.split(x @ W, list(widths)[:-1], axis=-1) for W in (W_q, W_k, W_v))
                ws = [softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])) for q, k in zip(qs, ks)]
                return np.concatenate([w @ v for w, v in zip(ws, vs)], axis=-1) @ W_o, np.stack(ws, axis=1)
        """,
        "the largest width's scale for every head": """
            def mha_uneven_heads(x, W_q, W_k, W_v, W_o, widths):
                cuts = np.cumsum(widths)[:-1]
                qs, ks, vs = (np.split(x @ W, cuts, axis=-1) for W in (W_q, W_k, W_v))
                ws = [softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(max(widths))) for q, k in zip(qs, ks)]
                return np.concatenate([w @ v for w, v in zip(ws, vs)], axis=-1) @ W_o, np.stack(ws, axis=1)
        """,
    },
    "ch05.heads_from_averaged_weights": {
        "scaled by sqrt(d_model)": """
            def heads_from_averaged_weights(q, k, weights):
                d = q.shape[-1]
                errs = {}
                for H in [h for h in range(1, d + 1) if d % h == 0]:
                    s = split_heads(q, H) @ split_heads(k, H).swapaxes(-1, -2) / np.sqrt(d)
                    errs[H] = np.abs(softmax(s, axis=-1).mean(1) - weights).max()
                return min(errs, key=errs.get)
        """,
        "summed over heads, not averaged": """
            def heads_from_averaged_weights(q, k, weights):
                d = q.shape[-1]
                errs = {}
                for H in [h for h in range(1, d + 1) if d % h == 0]:
                    s = split_heads(q, H) @ split_heads(k, H).swapaxes(-1, -2) / np.sqrt(d // H)
                    errs[H] = np.abs(softmax(s, axis=-1).sum(1) - weights).max()
                return min(errs, key=errs.get)
        """,
        "a loose threshold, smallest count first": """
            def heads_from_averaged_weights(q, k, weights):
                d = q.shape[-1]
                for H in [h for h in range(1, d + 1) if d % h == 0]:
                    s = split_heads(q, H) @ split_heads(k, H).swapaxes(-1, -2) / np.sqrt(d // H)
                    if np.abs(softmax(s, axis=-1).mean(1) - weights).max() < 0.2:
                        return H
        """,
    },
    "ch05.mha_forward": {
        "the stub's unfolding kept": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                B, L, d_model = x.shape
                d_head = d_model // n_heads
                q, k, v = ((x @ W).reshape(B, L, n_heads, d_head).transpose(0, 2, 1, 3).reshape(B * n_heads, L, d_head)
                           for W in (W_q, W_k, W_v))
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head))
                heads = (weights @ v).reshape(n_heads, B, L, d_head).transpose(1, 0, 2, 3)
                w = weights.reshape(n_heads, B, L, L).transpose(1, 0, 2, 3)
                return heads.transpose(0, 2, 1, 3).reshape(B, L, d_model) @ W_o, w
        """,
        "folded without moving the head axis": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                B, L, d_model = x.shape
                d_head = d_model // n_heads
                q, k, v = ((x @ W).reshape(B * n_heads, L, d_head) for W in (W_q, W_k, W_v))
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head))
                heads = (weights @ v).reshape(B, n_heads, L, d_head)
                return heads.transpose(0, 2, 1, 3).reshape(B, L, d_model) @ W_o, weights.reshape(B, n_heads, L, L)
        """,
        "merged without moving the head axis back": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                B, L, d_model = x.shape
                q, k, v = (rearrange(x @ W, "b l (h d) -> (b h) l d", h=n_heads) for W in (W_q, W_k, W_v))
                weights = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]))
                heads = (weights @ v).reshape(B, n_heads, L, -1)
                return heads.reshape(B, L, d_model) @ W_o, weights.reshape(B, n_heads, L, L)
        """,
        "scaled by d_model": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (rearrange(x @ W, "b l (h d) -> b h l d", h=n_heads) for W in (W_q, W_k, W_v))
                weights = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(x.shape[-1]))
                return rearrange(weights @ v, "b h l d -> b l (h d)") @ W_o, weights
        """,
    },
}
