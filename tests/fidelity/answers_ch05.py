"""Chapter 5 (multi-head attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch05.heads_for_lookups": {
        "loops over offsets and heads": """
            def heads_for_lookups(weights, offsets, threshold):
                B, H, L, _ = weights.shape
                first = max(offsets)
                result = []
                for d in offsets:
                    means = [np.mean([weights[b, h, t, t - d] for b in range(B) for t in range(first, L)])
                             for h in range(H)]
                    best = int(np.argmax(means))
                    result.append(best if means[best] > threshold else -1)
                return np.array(result)
        """,
        "torch with the chapter's torch import": """
            def heads_for_lookups(weights, offsets, threshold):
                w = torch.as_tensor(weights)
                t = torch.arange(int(max(offsets)), w.shape[-1])
                shares = torch.stack([w[:, :, t, t - int(d)].mean(dim=(0, 2)) for d in offsets])  # (n, H)
                best = shares.argmax(dim=1)
                return torch.where(shares.max(dim=1).values > threshold, best, torch.full_like(best, -1))
        """,
        "helper in an added cell, diagonals": [
            """
            def _offset_diagonal_51(weights, d, first):
                # weights[..., t, t - d] for t >= first: the d-th diagonal below the main one
                diag = np.diagonal(weights, offset=-d, axis1=-2, axis2=-1)  # (B, H, L - d)
                return diag[..., first - d:]
            """,
            """
            def heads_for_lookups(weights, offsets, threshold):
                first = max(offsets)
                shares = np.stack([_offset_diagonal_51(weights, d, first).mean(axis=(0, 2)) for d in offsets])
                return np.where(shares.max(axis=1) > threshold, shares.argmax(axis=1), -1)
            """,
        ],
        "float32 with rearrange": """
            def heads_for_lookups(weights, offsets, threshold):
                w = rearrange(np.asarray(weights, dtype=np.float32), "b h q k -> h b q k")
                t = np.arange(max(offsets), w.shape[-1])
                shares = np.array([[w[h][:, t, t - d].mean() for h in range(w.shape[0])] for d in offsets])
                return np.where(shares.max(axis=1) > threshold, shares.argmax(axis=1), -1)
        """,
    },
    "ch05.predict_heads_for_three_lookups": {
        "an expression": """
            def predict_heads_for_three_lookups():
                return 2**2
        """,
        "a float": """
            def predict_heads_for_three_lookups():
                return 4.0
        """,
        "a numpy integer": """
            def predict_heads_for_three_lookups():
                return np.int64(2 * 2)
        """,
    },
    "ch05.predict_kdim_vdim_parameters": {
        "the literal": """
            def predict_kdim_vdim_parameters():
                return 13568
        """,
        "term by term": """
            def predict_kdim_vdim_parameters():
                q, k, v, o = 64 * 64 + 64, 32 * 64 + 64, 48 * 64 + 64, 64 * 64 + 64
                return q + k + v + o
        """,
        "a float": """
            def predict_kdim_vdim_parameters():
                return float(64 * (64 + 32 + 48 + 64) + 4 * 64)
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
    "ch05.weights_from_torch": {
        "torch chunk with the chapter's torch import": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                q, k, v = torch.as_tensor(in_proj_weight).chunk(3, dim=0)
                return q.T, k.T, v.T, torch.as_tensor(out_proj_weight).T
        """,
        "one transpose, then column blocks": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                d = in_proj_weight.shape[1]
                t = in_proj_weight.T
                return t[:, :d], t[:, d : 2 * d], t[:, 2 * d :], out_proj_weight.T
        """,
        "helper in an added cell": [
            """
            def _block_55(w, i):
                d = w.shape[1]
                return w[i * d : (i + 1) * d].T
            """,
            """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                return tuple(_block_55(in_proj_weight, i) for i in range(3)) + (out_proj_weight.T,)
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
    "ch05.heads_for_lookups": {
        "every query, negative keys wrap": """
            def heads_for_lookups(weights, offsets, threshold):
                t = np.arange(weights.shape[-1])
                shares = np.stack([weights[:, :, t, t - d].mean(axis=(0, 2)) for d in offsets])
                return np.where(shares.max(axis=1) > threshold, shares.argmax(axis=1), -1)
        """,
        "columns for rows": """
            def heads_for_lookups(weights, offsets, threshold):
                t = np.arange(max(offsets), weights.shape[-1])
                shares = np.stack([weights[:, :, t - d, t].mean(axis=(0, 2)) for d in offsets])
                return np.where(shares.max(axis=1) > threshold, shares.argmax(axis=1), -1)
        """,
        "no threshold": """
            def heads_for_lookups(weights, offsets, threshold):
                t = np.arange(max(offsets), weights.shape[-1])
                shares = np.stack([weights[:, :, t, t - d].mean(axis=(0, 2)) for d in offsets])
                return shares.argmax(axis=1)
        """,
        "the head with the largest single weight": """
            def heads_for_lookups(weights, offsets, threshold):
                t = np.arange(max(offsets), weights.shape[-1])
                peaks = np.stack([weights[:, :, t, t - d].max(axis=(0, 2)) for d in offsets])
                return np.where(peaks.max(axis=1) > threshold, peaks.argmax(axis=1), -1)
        """,
    },
    "ch05.predict_heads_for_three_lookups": {
        "one head per lookup, 3": """
            def predict_heads_for_three_lookups():
                return 3
        """,
        "the chapter's 2": """
            def predict_heads_for_three_lookups():
                return 2
        """,
    },
    "ch05.predict_kdim_vdim_parameters": {
        "kdim and vdim ignored": """
            def predict_kdim_vdim_parameters():
                return 4 * 64 * 64 + 4 * 64
        """,
        "no biases": """
            def predict_kdim_vdim_parameters():
                return 64 * 64 + 32 * 64 + 48 * 64 + 64 * 64
        """,
        "biases of the inputs' widths": """
            def predict_kdim_vdim_parameters():
                return 64 * 64 + 32 * 64 + 48 * 64 + 64 * 64 + 64 + 32 + 48 + 64
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
    "ch05.weights_from_torch": {
        "not transposed": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                W_q, W_k, W_v = np.split(in_proj_weight, 3, axis=0)
                return W_q, W_k, W_v, out_proj_weight
        """,
        "out_proj not transposed": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                W_q, W_k, W_v = np.split(in_proj_weight, 3, axis=0)
                return W_q.T, W_k.T, W_v.T, out_proj_weight
        """,
        "split along the wrong axis": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                W_q, W_k, W_v = np.split(in_proj_weight.T, 3, axis=0)
                return W_q.T, W_k.T, W_v.T, out_proj_weight.T
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
