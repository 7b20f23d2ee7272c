"""Chapter 8 (a Transformer block): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch08.predict_zero_init_gradients": {
        "the literal": """
            def predict_zero_init_gradients():
                return 20608
        """,
        "counted from the chapter's nn layers": """
            def predict_zero_init_gradients():
                zeroed = [nn.Linear(64, 64), nn.Linear(256, 64)]  # out_proj and mlp.down
                return sum(p.numel() for layer in zeroed for p in layer.parameters())
        """,
        "a numpy integer": """
            def predict_zero_init_gradients():
                d = np.int64(64)
                return (d + 1) * d + (4 * d + 1) * d
        """,
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
    "ch08.block_head_count": {
        "torch, F.layer_norm and the handed-out attention": """
            def block_head_count(x, y, W_q, W_k, W_v, W_o, W_1, W_2):
                t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))
                x, y, W_q, W_k, W_v, W_o, W_1, W_2 = map(t, (x, y, W_q, W_k, W_v, W_o, W_1, W_2))
                d = x.shape[-1]
                for n in range(1, d + 1):
                    if d % n:
                        continue
                    h = F.layer_norm(x, (d,))
                    o, _ = scaled_dot_product_attention(split_heads(h @ W_q, n), split_heads(h @ W_k, n),
                                                        split_heads(h @ W_v, n), is_causal=True)
                    s = x + merge_heads(o) @ W_o
                    out = s + F.gelu(F.layer_norm(s, (d,)) @ W_1) @ W_2
                    if torch.allclose(out, y, rtol=1e-4, atol=1e-4):
                        return n
                return -1
        """,
        "numpy loops over heads, einsum scores": """
            def block_head_count(x, y, W_q, W_k, W_v, W_o, W_1, W_2):
                import math
                x = np.asarray(x, dtype=np.float64)
                y = np.asarray(y, dtype=np.float64)
                B, L, d = x.shape
                erf = np.vectorize(math.erf)

                def norm(a):
                    m = a.mean(-1, keepdims=True)
                    return (a - m) / np.sqrt(((a - m) ** 2).mean(-1, keepdims=True) + 1e-5)

                best = -1
                for n in [k for k in range(1, d + 1) if d % k == 0]:
                    dh = d // n
                    h = norm(x)
                    q, k, v = h @ W_q, h @ W_k, h @ W_v
                    heads = []
                    for i in range(n):
                        sl = slice(i * dh, (i + 1) * dh)
                        s = np.einsum("bld,bmd->blm", q[..., sl], k[..., sl]) / math.sqrt(dh)
                        s = s + np.triu(np.full((L, L), -np.inf), 1)
                        w = np.exp(s - s.max(-1, keepdims=True))
                        heads.append((w / w.sum(-1, keepdims=True)) @ v[..., sl])
                    s1 = x + np.concatenate(heads, -1) @ W_o
                    z = norm(s1) @ W_1
                    out = s1 + (z * 0.5 * (1 + erf(z / math.sqrt(2)))) @ W_2
                    if np.max(np.abs(out - y)) < 1e-3:
                        best = n
                return best
        """,
        "float32 torch with the chapter's nn.LayerNorm and nn.GELU": """
            def block_head_count(x, y, W_q, W_k, W_v, W_o, W_1, W_2):
                x, y = torch.as_tensor(x).float(), torch.as_tensor(y).float()
                Ws = [torch.as_tensor(W).float() for W in (W_q, W_k, W_v, W_o, W_1, W_2)]
                d = x.shape[-1]
                ln, act = nn.LayerNorm(d, elementwise_affine=False), nn.GELU()
                for n in (k for k in range(1, d + 1) if d % k == 0):
                    h = ln(x)
                    qkv = [split_heads(h @ W, n) for W in Ws[:3]]
                    o, _ = scaled_dot_product_attention(*qkv, is_causal=True)
                    s = x + merge_heads(o) @ Ws[3]
                    out = s + act(ln(s) @ Ws[4]) @ Ws[5]
                    if (out - y).abs().max() < 1e-3 * (1 + y.abs().max()):
                        return n
                return -1
        """,
    },
    "ch08.layer_norm_parameters": {
        "np.polyfit per feature": """
            def layer_norm_parameters(x, y):
                d = x.shape[-1]
                xs, ys = np.asarray(x, np.float64).reshape(-1, d), np.asarray(y, np.float64).reshape(-1, d)
                n = (xs - xs.mean(1, keepdims=True)) / np.sqrt(xs.var(1, keepdims=True) + 1e-5)
                fits = [np.polyfit(n[:, i], ys[:, i], 1) for i in range(d)]
                return np.array([f[0] for f in fits]), np.array([f[1] for f in fits])
        """,
        "torch least squares": """
            def layer_norm_parameters(x, y):
                x = torch.as_tensor(x, dtype=torch.float64)
                y = torch.as_tensor(y, dtype=torch.float64)
                d = x.shape[-1]
                n = F.layer_norm(x, (d,)).reshape(-1, d)
                y = y.reshape(-1, d)
                gamma, beta = torch.empty(d, dtype=torch.float64), torch.empty(d, dtype=torch.float64)
                for i in range(d):
                    A = torch.stack([n[:, i], torch.ones_like(n[:, i])], 1)
                    sol = torch.linalg.lstsq(A, y[:, i:i + 1]).solution
                    gamma[i], beta[i] = sol[0, 0], sol[1, 0]
                return gamma, beta
        """,
        "two most different rows, in float32": """
            def layer_norm_parameters(x, y):
                d = x.shape[-1]
                xs = np.asarray(x, np.float32).reshape(-1, d).astype(np.float64)
                ys = np.asarray(y, np.float32).reshape(-1, d).astype(np.float64)
                n = (xs - xs.mean(-1, keepdims=True)) / np.sqrt(xs.var(-1, keepdims=True) + 1e-5)
                gamma, beta = np.empty(d), np.empty(d)
                for i in range(d):
                    a, b = n[:, i].argmax(), n[:, i].argmin()
                    gamma[i] = (ys[a, i] - ys[b, i]) / (n[a, i] - n[b, i])
                    beta[i] = ys[a, i] - gamma[i] * n[a, i]
                return gamma, beta
        """,
    },
    "ch08.sampling_settings": {
        "slope between the two most likely tokens": """
            def sampling_settings(logits, probs):
                z, p = np.asarray(logits, np.float64), np.asarray(probs, np.float64)
                k = (p > 0).sum(-1)
                order = np.argsort(-z, axis=-1)
                T = []
                for i in range(len(z)):
                    a, b = order[i, 0], order[i, 1]
                    T.append((z[i, a] - z[i, b]) / np.log(p[i, a] / p[i, b]))
                return np.array(T), k
        """,
        "torch, least squares on log p": """
            def sampling_settings(logits, probs):
                z = torch.as_tensor(logits, dtype=torch.float64)
                p = torch.as_tensor(probs, dtype=torch.float64)
                kept = p > 0
                T = []
                for i in range(z.shape[0]):
                    zi, lp = z[i][kept[i]], p[i][kept[i]].log()
                    dz, dl = zi - zi.mean(), lp - lp.mean()
                    T.append(((dz * dl).sum() / (dz * dz).sum()).reciprocal())
                return torch.stack(T), kept.sum(-1)
        """,
        "plain Python loops, first and last kept token": """
            def sampling_settings(logits, probs):
                import math
                temps, ks = [], []
                for zr, pr in zip(np.asarray(logits).tolist(), np.asarray(probs).tolist()):
                    kept = [(z, q) for z, q in zip(zr, pr) if q > 0]
                    kept.sort()
                    (z0, p0), (z1, p1) = kept[0], kept[-1]
                    temps.append((z1 - z0) / (math.log(p1) - math.log(p0)))
                    ks.append(len(kept))
                return np.array(temps), np.array(ks)
        """,
    },
}

WRONG = {
    "ch08.predict_zero_init_gradients": {
        "the whole block": """
            def predict_zero_init_gradients():
                return 49984
        """,
        "weights of the zeroed layers only": """
            def predict_zero_init_gradients():
                return 64 * 64 + 256 * 64
        """,
        "the MLP's two layers and out_proj": """
            def predict_zero_init_gradients():
                return (64 * 64 + 64) + (64 * 256 + 256) + (256 * 64 + 64)
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
    "ch08.block_head_count": {
        "the closest head count, always": """
            def block_head_count(x, y, W_q, W_k, W_v, W_o, W_1, W_2):
                x, y = torch.as_tensor(x).double(), torch.as_tensor(y).double()
                Ws = [torch.as_tensor(W).double() for W in (W_q, W_k, W_v, W_o, W_1, W_2)]
                d = x.shape[-1]
                gaps = {}
                for n in (k for k in range(1, d + 1) if d % k == 0):
                    h = F.layer_norm(x, (d,))
                    o, _ = scaled_dot_product_attention(*[split_heads(h @ W, n) for W in Ws[:3]], is_causal=True)
                    s = x + merge_heads(o) @ Ws[3]
                    gaps[n] = float((s + F.gelu(F.layer_norm(s, (d,)) @ Ws[4]) @ Ws[5] - y).abs().max())
                return min(gaps, key=gaps.get)
        """,
        "a parallel block tried": """
            def block_head_count(x, y, W_q, W_k, W_v, W_o, W_1, W_2):
                x, y = torch.as_tensor(x).double(), torch.as_tensor(y).double()
                Ws = [torch.as_tensor(W).double() for W in (W_q, W_k, W_v, W_o, W_1, W_2)]
                d = x.shape[-1]
                for n in (k for k in range(1, d + 1) if d % k == 0):
                    h = F.layer_norm(x, (d,))
                    o, _ = scaled_dot_product_attention(*[split_heads(h @ W, n) for W in Ws[:3]], is_causal=True)
                    out = x + merge_heads(o) @ Ws[3] + F.gelu(h @ Ws[4]) @ Ws[5]
                    if (out - y).abs().max() < 1e-3:
                        return n
                return -1
        """,
        "attention without the causal mask": """
            def block_head_count(x, y, W_q, W_k, W_v, W_o, W_1, W_2):
                x, y = torch.as_tensor(x).double(), torch.as_tensor(y).double()
                Ws = [torch.as_tensor(W).double() for W in (W_q, W_k, W_v, W_o, W_1, W_2)]
                d = x.shape[-1]
                for n in (k for k in range(1, d + 1) if d % k == 0):
                    h = F.layer_norm(x, (d,))
                    o, _ = scaled_dot_product_attention(*[split_heads(h @ W, n) for W in Ws[:3]])
                    s = x + merge_heads(o) @ Ws[3]
                    out = s + F.gelu(F.layer_norm(s, (d,)) @ Ws[4]) @ Ws[5]
                    if (out - y).abs().max() < 1e-3:
                        return n
                return -1
        """,
    },
    "ch08.layer_norm_parameters": {
        "normalised over the rows": """
            def layer_norm_parameters(x, y):
                d = x.shape[-1]
                xs, ys = np.asarray(x, np.float64).reshape(-1, d), np.asarray(y, np.float64).reshape(-1, d)
                n = (xs - xs.mean(0)) / np.sqrt(xs.var(0) + 1e-5)
                fits = [np.polyfit(n[:, i], ys[:, i], 1) for i in range(d)]
                return np.array([f[0] for f in fits]), np.array([f[1] for f in fits])
        """,
        "ratio of spreads, beta the mean of y": """
            def layer_norm_parameters(x, y):
                d = x.shape[-1]
                xs, ys = np.asarray(x, np.float64).reshape(-1, d), np.asarray(y, np.float64).reshape(-1, d)
                n = (xs - xs.mean(1, keepdims=True)) / np.sqrt(xs.var(1, keepdims=True) + 1e-5)
                return ys.std(0) / n.std(0), ys.mean(0)
        """,
        "no epsilon, torch's unbiased var": """
            def layer_norm_parameters(x, y):
                x = torch.as_tensor(x, dtype=torch.float64)
                y = torch.as_tensor(y, dtype=torch.float64)
                d = x.shape[-1]
                n = ((x - x.mean(-1, keepdim=True)) / x.var(-1, keepdim=True).sqrt()).reshape(-1, d)
                y = y.reshape(-1, d)
                dn, dy = n - n.mean(0), y - y.mean(0)
                gamma = (dn * dy).sum(0) / (dn * dn).sum(0)
                return gamma, y.mean(0) - gamma * n.mean(0)
        """,
    },
    "ch08.sampling_settings": {
        "slope, not its reciprocal": """
            def sampling_settings(logits, probs):
                z, p = np.asarray(logits, np.float64), np.asarray(probs, np.float64)
                order = np.argsort(-z, axis=-1)
                T = [np.log(p[i, order[i, 0]] / p[i, order[i, 1]]) / (z[i, order[i, 0]] - z[i, order[i, 1]])
                     for i in range(len(z))]
                return np.array(T), (p > 0).sum(-1)
        """,
        "k is the vocabulary": """
            def sampling_settings(logits, probs):
                z, p = np.asarray(logits, np.float64), np.asarray(probs, np.float64)
                order = np.argsort(-z, axis=-1)
                T = [(z[i, order[i, 0]] - z[i, order[i, 1]]) / np.log(p[i, order[i, 0]] / p[i, order[i, 1]])
                     for i in range(len(z))]
                return np.array(T), np.full(len(z), z.shape[-1])
        """,
        "the highest and lowest logits overall, zeros floored": """
            def sampling_settings(logits, probs):
                z, p = np.asarray(logits, np.float64), np.asarray(probs, np.float64)
                lp = np.log(np.maximum(p, 1e-30))
                hi, lo = z.argmax(-1), z.argmin(-1)
                r = np.arange(len(z))
                return (z[r, hi] - z[r, lo]) / (lp[r, hi] - lp[r, lo]), (p > 0).sum(-1)
        """,
    },
}
