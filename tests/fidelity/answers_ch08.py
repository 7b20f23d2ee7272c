"""Chapter 8 (a Transformer block): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch08.value_ablation_difference": {
        "torch, both ablations run with made-up queries and keys": """
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))
                x, Wv, bv, Wo, bo = map(t, (x, v_weight, v_bias, out_weight, out_bias))
                B, L, d = x.shape
                dh = d // n_heads
                g = torch.Generator().manual_seed(0)
                Wq, Wk = (torch.randn(d, d, generator=g, dtype=torch.float64) for _ in range(2))

                def sublayer(Wv, Wo):
                    def heads(a):
                        return a.view(B, L, n_heads, dh).transpose(1, 2)

                    q, k, v = heads(x @ Wq.T), heads(x @ Wk.T), heads(x @ Wv.T + bv)
                    s = q @ k.transpose(-1, -2) / dh**0.5
                    s = s.masked_fill(torch.ones(L, L).triu(1).bool(), float("-inf"))
                    o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, L, d)
                    return o @ Wo.T + bo

                Wo1, Wv2 = Wo.clone(), Wv.clone()
                Wo1[:, head * dh : (head + 1) * dh] = 0
                Wv2[head * dh : (head + 1) * dh, :] = 0
                return (sublayer(Wv2, Wo) - sublayer(Wv, Wo1)).numpy()
        """,
        "einsum, with ones for the positions": """
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                d = len(v_bias)
                mine = np.zeros(d)
                mine[head * (d // n_heads) : (head + 1) * (d // n_heads)] = 1
                left = np.einsum("ij,j,j->i", out_weight, mine, v_bias)
                return np.einsum("bl,i->bli", np.ones(np.shape(x)[:2]), left)
        """,
        "plain Python loops": """
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                B, L, d = np.shape(x)
                dh = d // n_heads
                out = np.zeros((B, L, d))
                for i in range(d):
                    s = 0.0
                    for j in range(head * dh, head * dh + dh):
                        s += float(out_weight[i][j]) * float(v_bias[j])
                    for b in range(B):
                        for t in range(L):
                            out[b, t, i] = s
                return out
        """,
        "float32 throughout": """
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                W = np.asarray(out_weight, dtype=np.float32)
                b = np.asarray(v_bias, dtype=np.float32)
                dh = W.shape[0] // n_heads
                h = slice(head * dh, (head + 1) * dh)
                return np.zeros_like(np.asarray(x, dtype=np.float32)) + W[:, h] @ b[h]
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
    "ch08.attention_head_count": {
        "torch, least squares with the weights' sum as an extra row": """
            def attention_head_count(x, h, W_v, W_o):
                x, h, W_v, W_o = (torch.as_tensor(a).double() for a in (x, h, W_v, W_o))
                B, L, d = x.shape
                merged = torch.linalg.solve(W_o.T, (h - x).reshape(-1, d).T).T.reshape(B, L, d)
                v = F.layer_norm(x, (d,)) @ W_v
                tol = 1e-3 * (1 + merged.abs().max())
                for H in [n for n in range(1, d + 1) if d % n == 0]:
                    dh, ok = d // H, True
                    for b in range(B):
                        for t in range(1, L):
                            for j in range(H):
                                c = slice(j * dh, (j + 1) * dh)
                                A = torch.cat([v[b, : t + 1, c].T, 1e4 * torch.ones(1, t + 1, dtype=x.dtype)])
                                rhs = torch.cat([merged[b, t, c], torch.tensor([1e4], dtype=x.dtype)])
                                w = torch.linalg.lstsq(A, rhs[:, None], driver="gelsd").solution[:, 0]
                                ok &= bool((A[:-1] @ w - rhs[:-1]).abs().max() < tol)
                    if ok:
                        return H
        """,
        "position 1 only: one ratio per head, in float32": """
            def attention_head_count(x, h, W_v, W_o):
                x, h, W_v, W_o = (np.asarray(a, dtype=np.float32) for a in (x, h, W_v, W_o))
                d = x.shape[-1]
                u = (h - x) @ np.linalg.inv(W_o)  # the heads' outputs side by side
                n = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
                v = n @ W_v
                # position 1 reads keys 0 and 1: u = p v0 + (1 - p) v1, one p per head
                r = (u[:, 1] - v[:, 1]) / (v[:, 0] - v[:, 1])  # (B, d): p, column by column
                for H in (k for k in range(1, d + 1) if d % k == 0):
                    p = r.reshape(len(r), H, d // H)
                    if np.all(np.abs(p - p[..., :1]) < 1e-3 * (1 + np.abs(p).max())):
                        return H
        """,
        "loops, the head's mix solved from its first columns and checked on the rest": """
            def attention_head_count(x, h, W_v, W_o):
                x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
                B, L, d = x.shape
                u = np.linalg.solve(W_o.T, np.moveaxis(h - x, -1, 0).reshape(d, -1))
                u = np.moveaxis(u.reshape(d, B, L), 0, -1)
                mu = x.mean(-1, keepdims=True)
                v = ((x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)) @ W_v
                scale = 1 + np.abs(u).max()
                best = d
                for H in sorted((k for k in range(1, d + 1) if d % k == 0), reverse=True):
                    dh, fits = d // H, True
                    for b in range(B):
                        for t in range(1, L):
                            for j in range(H):
                                V = v[b, : t + 1, j * dh:(j + 1) * dh]  # (t + 1, dh)
                                A = np.vstack([V.T, np.ones(t + 1)])  # values, and the sum of the weights
                                rhs = np.append(u[b, t, j * dh:(j + 1) * dh], 1.0)
                                w = np.linalg.pinv(A) @ rhs
                                if np.abs(A @ w - rhs).max() > 1e-3 * scale:
                                    fits = False
                    if fits:
                        best = H
                return best
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
    "ch08.value_ablation_difference": {
        "the two ablations taken as equal": """
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                return np.zeros(np.shape(x))
        """,
        "every head's value bias": """
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                return np.zeros(np.shape(x)) + np.asarray(out_weight) @ np.asarray(v_bias)
        """,
        "out_proj's bias added": """
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                dh = len(v_bias) // n_heads
                h = slice(head * dh, (head + 1) * dh)
                return np.zeros(np.shape(x)) + out_weight[:, h] @ v_bias[h] + out_bias
        """,
        "a head's features every n_heads-th": """
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                h = slice(head, None, n_heads)
                return np.zeros(np.shape(x)) + out_weight[:, h] @ v_bias[h]
        """,
        "the value bias summed over the keys": """
            def value_ablation_difference(x, v_weight, v_bias, out_weight, out_bias, n_heads, head):
                B, L, d = np.shape(x)
                dh = d // n_heads
                h = slice(head * dh, (head + 1) * dh)
                keys = np.arange(1, L + 1)[:, None]  # causal: position t reads t + 1 keys
                return np.zeros((B, L, d)) + keys * (out_weight[:, h] @ v_bias[h])
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
    "ch08.attention_head_count": {
        "the most heads that fit": """
            def attention_head_count(x, h, W_v, W_o):
                x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
                d = x.shape[-1]
                u = (h - x) @ np.linalg.inv(W_o)
                v = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) @ W_v
                r = (u[:, 1] - v[:, 1]) / (v[:, 0] - v[:, 1])
                fits = [H for H in range(1, d + 1) if d % H == 0
                        and np.allclose(r.reshape(len(r), H, -1), r.reshape(len(r), H, -1)[..., :1], atol=1e-4)]
                return max(fits)
        """,
        "weights left free (not adding to one)": """
            def attention_head_count(x, h, W_v, W_o):
                x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
                B, L, d = x.shape
                u = (h - x) @ np.linalg.inv(W_o)
                v = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) @ W_v
                for H in (k for k in range(1, d + 1) if d % k == 0):
                    dh, ok = d // H, True
                    for b in range(B):
                        for t in range(1, L):
                            for j in range(H):
                                A, y = v[b, : t + 1, j * dh:(j + 1) * dh].T, u[b, t, j * dh:(j + 1) * dh]
                                w = np.linalg.lstsq(A, y, rcond=None)[0]
                                ok &= np.abs(A @ w - y).max() < 1e-6 * (1 + np.abs(u).max())
                    if ok:
                        return H
        """,
        "the values read from x, no layer norm": """
            def attention_head_count(x, h, W_v, W_o):
                x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
                d = x.shape[-1]
                u = (h - x) @ np.linalg.inv(W_o)
                v = x @ W_v
                r = (u[:, 1] - v[:, 1]) / (v[:, 0] - v[:, 1])
                for H in (k for k in range(1, d + 1) if d % k == 0):
                    p = r.reshape(len(r), H, -1)
                    if np.allclose(p, p[..., :1], atol=1e-4):
                        return H
        """,
        "a layer norm without epsilon": """
            def attention_head_count(x, h, W_v, W_o):
                x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
                B, L, d = x.shape
                u = (h - x) @ np.linalg.inv(W_o)
                v = (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True) @ W_v
                for H in (k for k in range(1, d + 1) if d % k == 0):
                    dh, ok = d // H, True
                    for b in range(B):
                        for t in range(1, L):
                            for j in range(H):
                                c = slice(j * dh, (j + 1) * dh)
                                A = np.vstack([v[b, : t + 1, c].T, np.ones(t + 1)])
                                rhs = np.append(u[b, t, c], 1.0)
                                w = np.linalg.lstsq(A, rhs, rcond=None)[0]
                                ok &= np.abs(A @ w - rhs).max() < 1e-3 * (1 + np.abs(u).max())
                    if ok:
                        return H
                return d
        """,
        "h taken as the attention's output, the residual left in": """
            def attention_head_count(x, h, W_v, W_o):
                x, h, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x, h, W_v, W_o))
                d = x.shape[-1]
                u = h @ np.linalg.inv(W_o)
                v = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) @ W_v
                r = (u[:, 1] - v[:, 1]) / (v[:, 0] - v[:, 1])
                for H in (k for k in range(1, d + 1) if d % k == 0):
                    p = r.reshape(len(r), H, -1)
                    if np.allclose(p, p[..., :1], atol=1e-4):
                        return H
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
