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
    "ch05.predict_summed_scores_rank": {
        "an expression": """
            def predict_summed_scores_rank():
                return 4 * 2
        """,
        "a float": """
            def predict_summed_scores_rank():
                return 8.0
        """,
        "a numpy integer": """
            def predict_summed_scores_rank():
                return np.int64(8)
        """,
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
    "ch05.merge_single_heads": {
        "loops and slices": """
            def merge_single_heads(W_q, W_k, W_v, W_o):
                H, d, d_head = W_q.shape
                out = [np.zeros((d, d)) for _ in range(4)]
                for h in range(H):
                    block = slice(h * d_head, (h + 1) * d_head)
                    out[0][:, block], out[1][:, block], out[2][:, block] = W_q[h], W_k[h], W_v[h]
                    out[3][block, :] = W_o[h]
                out[0] /= np.sqrt(H)  # modules divide by sqrt(d_model) = sqrt(H) * sqrt(d_head)
                return tuple(out)
        """,
        "rearrange in torch float32": """
            def merge_single_heads(W_q, W_k, W_v, W_o):
                t = [torch.as_tensor(W, dtype=torch.float32) for W in (W_q, W_k, W_v, W_o)]
                q, k, v = (rearrange(W, "h d e -> d (h e)") for W in t[:3])
                H, d, d_head = t[0].shape
                return q * (d_head / d) ** 0.5, k, v, rearrange(t[3], "h e d -> (h e) d")
        """,
        "hstack and vstack": """
            def merge_single_heads(W_q, W_k, W_v, W_o):
                return np.hstack(W_q) / math.sqrt(len(W_q)), np.hstack(W_k), np.hstack(W_v), np.vstack(W_o)
        """,
        "transpose and reshape, helper in an added cell": [
            """
            def _side_by_side_55(W):
                H, d, d_head = W.shape
                return W.transpose(1, 0, 2).reshape(d, H * d_head)  # (d, H, d_head) -> (d, H*d_head)
            """,
            """
            def merge_single_heads(W_q, W_k, W_v, W_o):
                scale = math.sqrt(W_q.shape[-1] / W_q.shape[1])  # sqrt(d_head / d_model)
                q, k, v = _side_by_side_55(W_q) * scale, _side_by_side_55(W_k), _side_by_side_55(W_v)
                return q, k, v, W_o.reshape(-1, W_o.shape[-1])
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
        "rearrange from the chapter's import": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (rearrange(x @ W, "b l (h d) -> b h l d", h=n_heads) for W in (W_q, W_k, W_v))
                weights = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]))
                out = rearrange(weights @ v, "b h l d -> b l (h d)")
                return out @ W_o, weights
        """,
        "torch float32": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                x, W_q, W_k, W_v, W_o = (torch.as_tensor(a, dtype=torch.float32) for a in (x, W_q, W_k, W_v, W_o))
                B, L, D = x.shape
                q, k, v = ((x @ W).view(B, L, n_heads, D // n_heads).transpose(1, 2) for W in (W_q, W_k, W_v))
                weights = torch.softmax(q @ k.transpose(-1, -2) / (D // n_heads) ** 0.5, dim=-1)
                return (weights @ v).transpose(1, 2).reshape(B, L, D) @ W_o, weights
        """,
        "folded with W_o transposed first, torch einsum": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                x, W_q, W_k, W_v, W_o = (torch.as_tensor(a) for a in (x, W_q, W_k, W_v, W_o))
                B, L, D = x.shape
                d = D // n_heads
                q, k = ((x @ W).view(B, L, n_heads, d).transpose(1, 2) for W in (W_q, W_k))
                weights = torch.softmax(q @ k.transpose(-1, -2) / d**0.5, dim=-1)
                # W_o.T's columns are W_o's rows
                W_ov = torch.einsum("dhe,fhe->hdf", W_v.reshape(D, n_heads, d), W_o.T.reshape(D, n_heads, d))
                return torch.einsum("bhls,bsd,hdf->blf", weights, x, W_ov), weights
        """,
        "helper in an added cell, a loop over heads": [
            """
            def _one_head_57(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return w @ v, w
            """,
            """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                d = x.shape[-1] // n_heads
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                outs, maps = zip(*(_one_head_57(q[..., h * d:(h + 1) * d], k[..., h * d:(h + 1) * d],
                                                 v[..., h * d:(h + 1) * d]) for h in range(n_heads)))
                return np.concatenate(outs, axis=-1) @ W_o, np.stack(maps, axis=1)
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
    "ch05.predict_summed_scores_rank": {
        "one head's bound": """
            def predict_summed_scores_rank():
                return 2
        """,
        "the matrix's size": """
            def predict_summed_scores_rank():
                return 10
        """,
        "the head count": """
            def predict_summed_scores_rank():
                return 4
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
    "ch05.merge_single_heads": {
        "the modules' scale left out": """
            def merge_single_heads(W_q, W_k, W_v, W_o):
                return np.hstack(W_q), np.hstack(W_k), np.hstack(W_v), np.vstack(W_o)
        """,
        "the scale on W_o instead of W_q": """
            def merge_single_heads(W_q, W_k, W_v, W_o):
                return np.hstack(W_q), np.hstack(W_k), np.hstack(W_v), np.vstack(W_o) / math.sqrt(len(W_q))
        """,
        "reshaped without moving the head axis": """
            def merge_single_heads(W_q, W_k, W_v, W_o):
                H, d, d_head = W_q.shape
                return W_q.reshape(d, d), W_k.reshape(d, d), W_v.reshape(d, d), W_o.reshape(d, d)
        """,
        "features dealt": """
            def merge_single_heads(W_q, W_k, W_v, W_o):
                H, d, d_head = W_q.shape
                q, k, v = (np.stack(list(W), axis=-1).reshape(d, d) for W in (W_q, W_k, W_v))
                return q / np.sqrt(H), k, v, np.stack(list(W_o), axis=1).reshape(d, d)
        """,
        "W_o's blocks side by side, transposed": """
            def merge_single_heads(W_q, W_k, W_v, W_o):
                return np.hstack(W_q), np.hstack(W_k), np.hstack(W_v), np.hstack(W_o).T
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
        "the chapter's W_O block, transposed, in a loop": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                d = x.shape[-1] // n_heads
                q, k = split_heads(x @ W_q, n_heads), split_heads(x @ W_k, n_heads)
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d))
                out = 0
                for h in range(n_heads):
                    cols = slice(h * d, (h + 1) * d)
                    out = out + weights[:, h] @ x @ (W_v[:, cols] @ W_o[:, cols].T)
                return out, weights
        """,
        "rows, dealt out": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                B, L, d_model = x.shape
                d_head = d_model // n_heads
                q, k = split_heads(x @ W_q, n_heads), split_heads(x @ W_k, n_heads)
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head))
                W_v_heads = W_v.reshape(d_model, n_heads, d_head)
                W_o_heads = W_o.reshape(d_head, n_heads, d_model)
                W_ov = np.einsum("dhe,ehf->hdf", W_v_heads, W_o_heads)
                return np.einsum("bhls,bsd,hdf->blf", weights, x, W_ov), weights
        """,
        "one fold for all heads": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                d_head = x.shape[-1] // n_heads
                q, k = split_heads(x @ W_q, n_heads), split_heads(x @ W_k, n_heads)
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head))
                return np.einsum("bhls,bsd->bld", weights, x) @ W_v @ W_o, weights
        """,
        "scaled by d_model": """
            def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (rearrange(x @ W, "b l (h d) -> b h l d", h=n_heads) for W in (W_q, W_k, W_v))
                weights = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(x.shape[-1]))
                return rearrange(weights @ v, "b h l d -> b l (h d)") @ W_o, weights
        """,
    },
}
