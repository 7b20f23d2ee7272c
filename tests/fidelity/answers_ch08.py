"""Chapter 8 (a Transformer block): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch08.predict_block_parameters": {
        "counted with the chapter's nn layers": """
            def predict_block_parameters():
                layers = [nn.Linear(64, 64) for _ in range(4)] + [nn.Linear(64, 256), nn.Linear(256, 64)]
                layers += [nn.LayerNorm(64), nn.LayerNorm(64)]
                return sum(p.numel() for layer in layers for p in layer.parameters())
        """,
        "the literal": """
            def predict_block_parameters():
                return 49984
        """,
        "a float from numpy": """
            def predict_block_parameters():
                d = np.float64(64)
                return 4 * d * d + 4 * d + 4 * d + 2 * 4 * d * d + 4 * d + d
        """,
        "helper in an added cell": [
            """
            def _block_linear(n_in, n_out):
                return n_in * n_out + n_out
            """,
            """
            def predict_block_parameters():
                return 4 * _block_linear(64, 64) + _block_linear(64, 256) + _block_linear(256, 64) + 2 * 2 * 64
            """,
        ],
    },
    "ch08.post_norm_blocks": {
        "torch, per block, with allclose": """
            def post_norm_blocks(streams):
                s = torch.as_tensor(streams).double()
                flags = []
                for o in s[1:]:
                    m = o.mean(dim=-1)
                    v = ((o - m[..., None]) ** 2).mean(dim=-1)
                    flags.append(bool(torch.allclose(m, torch.zeros_like(m), atol=5e-4)
                                      and torch.allclose(v, torch.ones_like(v), atol=5e-4)))
                return np.array(flags)
        """,
        "loops over rows in plain Python": """
            def post_norm_blocks(streams):
                s = np.asarray(streams, dtype=np.float64)
                n, B, L, d = s.shape
                out = np.ones(n - 1, dtype=bool)
                for i in range(1, n):
                    for b in range(B):
                        for t in range(L):
                            row = [float(z) for z in s[i, b, t]]
                            mu = sum(row) / d
                            var = sum((z - mu) ** 2 for z in row) / d
                            if abs(mu) > 2e-3 or abs(var - 1) > 2e-3:
                                out[i - 1] = False
                return out
        """,
        "einsum in float32: re-normalise and compare": """
            def post_norm_blocks(streams):
                s = np.asarray(streams, dtype=np.float32)[1:]
                c = s - s.mean(-1, keepdims=True)
                var = np.einsum("nbld,nbld->nbl", c, c) / s.shape[-1]
                z = c / np.sqrt(var[..., None] + np.float32(1e-5))
                return np.abs(z - s).max(axis=(1, 2, 3)) < 5e-3
        """,
    },
    "ch08.parallel_block": {
        "torch by hand: layer norm, heads and causal softmax": """
            def parallel_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
                B, L, d = x.shape
                dh = d // n_heads
                mu = x.mean(dim=-1, keepdim=True)
                h = (x - mu) / torch.sqrt(((x - mu) ** 2).mean(dim=-1, keepdim=True) + 1e-5)
                q, k, v = ((h @ W).view(B, L, n_heads, dh).transpose(1, 2) for W in (W_q, W_k, W_v))
                s = q @ k.transpose(-1, -2) / dh ** 0.5
                s = s.masked_fill(torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1), float("-inf"))
                att = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, L, d) @ W_o
                z = h @ W_1
                return x + att + 0.5 * z * (1 + torch.erf(z / 2 ** 0.5)) @ W_2
        """,
        "float32 with the chapter's F": """
            def parallel_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
                x, W_q, W_k, W_v, W_o, W_1, W_2 = (t.float() for t in (x, W_q, W_k, W_v, W_o, W_1, W_2))
                h = F.layer_norm(x, (x.shape[-1],))
                q, k, v = (split_heads(h @ W, n_heads) for W in (W_q, W_k, W_v))
                out, _ = scaled_dot_product_attention(q, k, v, is_causal=True)
                mlp = F.gelu(h @ W_1) @ W_2
                return mlp + merge_heads(out) @ W_o + x
        """,
        "helper in an added cell, nn.GELU and einsum": [
            """
            def _pb_attention(h, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (split_heads(torch.einsum("bld,de->ble", h, W), n_heads) for W in (W_q, W_k, W_v))
                out, _ = scaled_dot_product_attention(q, k, v, is_causal=True)
                return merge_heads(out) @ W_o
            """,
            """
            def parallel_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
                h = nn.LayerNorm(x.shape[-1], elementwise_affine=False, dtype=x.dtype)(x)
                return x + _pb_attention(h, W_q, W_k, W_v, W_o, n_heads) + nn.GELU()(h @ W_1) @ W_2
            """,
        ],
    },
    "ch08.head_removal_cost": {
        "loops over heads with the chapter's torch": """
            def head_removal_cost(weights, v, W_o, u):
                w, vv, Wo, uu = (torch.as_tensor(a) for a in (weights, v, W_o, u))
                H, d = vv.shape[1], vv.shape[-1]
                costs = []
                for h in range(H):
                    written = (w[:, h] @ vv[:, h]) @ Wo[h * d:(h + 1) * d]
                    costs.append((written * uu).sum(-1).mean())
                return torch.stack(costs)
        """,
        "float32 throughout": """
            def head_removal_cost(weights, v, W_o, u):
                weights, v, W_o, u = (np.asarray(a, dtype=np.float32) for a in (weights, v, W_o, u))
                B, H, L, d = v.shape
                full = np.einsum("bhlk,bhkd->bhld", weights, v)
                logit = np.einsum("bhld,hdm,blm->bhl", full, W_o.reshape(H, d, -1), u)
                return logit.mean(axis=(0, 2))
        """,
        "helper in an added cell: zero the rows and compare": [
            """
            def _correct_logit_84(weights, v, W_o, u):
                B, H, L, d = v.shape
                merged = np.swapaxes(weights @ v, 1, 2).reshape(B, L, H * d)
                return ((merged @ W_o) * u).sum(-1)
            """,
            """
            def head_removal_cost(weights, v, W_o, u):
                H, d = v.shape[1], v.shape[-1]
                full = _correct_logit_84(weights, v, W_o, u)
                costs = []
                for h in range(H):
                    W = np.array(W_o, dtype=np.float64)
                    W[h * d:(h + 1) * d] = 0
                    costs.append((full - _correct_logit_84(weights, v, W, u)).mean())
                return np.array(costs)
            """,
        ],
    },
    "ch08.next_token_loss": {
        "F.cross_entropy with the chapter's torch and F": """
            def next_token_loss(logits, tokens, lengths):
                lg = torch.as_tensor(logits, dtype=torch.float64)
                tk = torch.as_tensor(tokens)
                L = lg.shape[1]
                real = torch.arange(1, L)[None, :] < torch.as_tensor(lengths)[:, None]
                return F.cross_entropy(lg[:, :-1][real], tk[:, 1:][real])
        """,
        "torch with ignore_index": """
            def next_token_loss(logits, tokens, lengths):
                lg = torch.as_tensor(logits, dtype=torch.float64)[:, :-1]
                targets = torch.as_tensor(tokens)[:, 1:].clone()
                pad = torch.arange(1, lg.shape[1] + 1)[None, :] >= torch.as_tensor(lengths)[:, None]
                targets[pad] = -100
                return F.cross_entropy(lg.reshape(-1, lg.shape[-1]), targets.reshape(-1), ignore_index=-100)
        """,
        "float32 logsumexp": """
            def next_token_loss(logits, tokens, lengths):
                lg = np.asarray(logits, dtype=np.float32)
                top = lg.max(axis=-1, keepdims=True)
                lse = top[..., 0] + np.log(np.exp(lg - top).sum(axis=-1))
                B, L, V = lg.shape
                total, count = np.float32(0), 0
                for b in range(B):
                    for t in range(L - 1):
                        if t + 1 < lengths[b]:
                            total += lse[b, t] - lg[b, t, tokens[b, t + 1]]
                            count += 1
                return total / count
        """,
        "helper in an added cell, loops": [
            """
            def _row_log_softmax(row):
                m = max(row)
                return row - (m + np.log(np.sum(np.exp(row - m))))
            """,
            """
            def next_token_loss(logits, tokens, lengths):
                losses = []
                for b in range(logits.shape[0]):
                    for t in range(int(lengths[b]) - 1):
                        losses.append(-_row_log_softmax(logits[b, t])[tokens[b, t + 1]])
                return np.mean(losses)
            """,
        ],
    },
}

WRONG = {
    "ch08.predict_block_parameters": {
        "d_ff = d_model": """
            def predict_block_parameters():
                d = 64
                return 4 * (d * d + d) + 4 * d + 2 * (d * d + d)
        """,
        "attention without biases": """
            def predict_block_parameters():
                d, d_ff = 64, 256
                return 4 * d * d + 4 * d + (d * d_ff + d_ff) + (d_ff * d + d)
        """,
    },
    "ch08.post_norm_blocks": {
        "mean 0 only": """
            def post_norm_blocks(streams):
                s = np.asarray(streams, dtype=np.float64)[1:]
                return (np.abs(s.mean(-1)) < 1e-3).reshape(len(s), -1).all(axis=1)
        """,
        "norm sqrt(d) per row, as the chapter printed": """
            def post_norm_blocks(streams):
                s = torch.as_tensor(streams).double()[1:]
                d = s.shape[-1]
                return ((s.norm(dim=-1) - d ** 0.5).abs() < 1e-3).flatten(1).all(dim=1).numpy()
        """,
        "whole-output statistics": """
            def post_norm_blocks(streams):
                s = np.asarray(streams, dtype=np.float64)[1:]
                return np.array([abs(o.mean()) < 1e-3 and abs(o.var() - 1) < 1e-3 for o in s])
        """,
        "a loose tolerance": """
            def post_norm_blocks(streams):
                s = np.asarray(streams, dtype=np.float64)[1:]
                ok = (np.abs(s.mean(-1)) < 0.05) & (np.abs(s.var(-1) - 1) < 0.05)
                return ok.reshape(len(s), -1).all(axis=1)
        """,
        "torch's unbiased var()": """
            def post_norm_blocks(streams):
                s = torch.as_tensor(streams).double()[1:]
                ok = (s.mean(-1).abs() < 1e-3) & ((s.var(-1) - 1).abs() < 1e-3)
                return ok.flatten(1).all(dim=1).numpy()
        """,
    },
    "ch08.parallel_block": {
        "torch's var(): the unbiased variance": """
            def parallel_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
                h = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5)
                q, k, v = (split_heads(h @ W, n_heads) for W in (W_q, W_k, W_v))
                return x + merge_heads(scaled_dot_product_attention(q, k, v, is_causal=True)[0]) @ W_o + F.gelu(h @ W_1) @ W_2
        """,
        "ReLU instead of GELU": """
            def parallel_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
                h = F.layer_norm(x, (x.shape[-1],))
                q, k, v = (split_heads(h @ W, n_heads) for W in (W_q, W_k, W_v))
                return x + merge_heads(scaled_dot_product_attention(q, k, v, is_causal=True)[0]) @ W_o + F.relu(h @ W_1) @ W_2
        """,
        "the MLP reads the un-normalised x": """
            def parallel_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
                h = F.layer_norm(x, (x.shape[-1],))
                q, k, v = (split_heads(h @ W, n_heads) for W in (W_q, W_k, W_v))
                return x + merge_heads(scaled_dot_product_attention(q, k, v, is_causal=True)[0]) @ W_o + F.gelu(x @ W_1) @ W_2
        """,
        "the tanh approximation of GELU": """
            def parallel_block(x, W_q, W_k, W_v, W_o, W_1, W_2, n_heads):
                h = F.layer_norm(x, (x.shape[-1],))
                q, k, v = (split_heads(h @ W, n_heads) for W in (W_q, W_k, W_v))
                return x + merge_heads(scaled_dot_product_attention(q, k, v, is_causal=True)[0]) @ W_o + F.gelu(h @ W_1, approximate="tanh") @ W_2
        """,
    },
    "ch08.head_removal_cost": {
        "head h's columns of W_o (square W_o read as (d_model, H * d_head))": """
            def head_removal_cost(weights, v, W_o, u):
                H, d = v.shape[1], v.shape[-1]
                heads = weights @ v
                return np.array([((heads[:, h] @ W_o.T[h * d:(h + 1) * d]) * u).sum(-1).mean() for h in range(H)]) if W_o.shape[0] == W_o.shape[1] else np.zeros(H)
        """,
        "the mean over the sequences only (returns (L, H))": """
            def head_removal_cost(weights, v, W_o, u):
                H, d = v.shape[1], v.shape[-1]
                written = np.einsum("bhld,hdm->bhlm", weights @ v, W_o.reshape(H, d, -1))
                return (written * u[:, None]).sum(-1).mean(axis=0).T
        """,
        "the norm of what each head writes, not the correct logit": """
            def head_removal_cost(weights, v, W_o, u):
                H, d = v.shape[1], v.shape[-1]
                written = np.einsum("bhld,hdm->bhlm", weights @ v, W_o.reshape(H, d, -1))
                return np.linalg.norm(written, axis=-1).mean(axis=(0, 2))
        """,
    },
    "ch08.next_token_loss": {
        "log of a naive softmax (overflows)": """
            def next_token_loss(logits, tokens, lengths):
                p = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
                L = logits.shape[1]
                picked = np.take_along_axis(np.log(p[:, :-1]), tokens[:, 1:, None], axis=-1)[..., 0]
                real = np.arange(1, L)[None, :] < lengths[:, None]
                return -picked[real].mean()
        """,
        "one padded target too many (t < lengths)": """
            def next_token_loss(logits, tokens, lengths):
                s = logits - logits.max(axis=-1, keepdims=True)
                log_p = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))
                L = logits.shape[1]
                picked = np.take_along_axis(log_p[:, :-1], tokens[:, 1:, None], axis=-1)[..., 0]
                real = np.arange(L - 1)[None, :] < lengths[:, None]
                return -picked[real].mean()
        """,
        "the sum, not the mean": """
            def next_token_loss(logits, tokens, lengths):
                s = logits - logits.max(axis=-1, keepdims=True)
                log_p = s - np.log(np.exp(s).sum(axis=-1, keepdims=True))
                L = logits.shape[1]
                picked = np.take_along_axis(log_p[:, :-1], tokens[:, 1:, None], axis=-1)[..., 0]
                real = np.arange(1, L)[None, :] < lengths[:, None]
                return -picked[real].sum()
        """,
    },
}
