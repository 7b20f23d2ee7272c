"""Chapter 3 (scaling by sqrt(d_k)): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch03.scaled_scores": {
        "torch with the chapter's torch import": """
            def scaled_scores(q, k):
                q, k = torch.as_tensor(q), torch.as_tensor(k)
                return q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        """,
        "float32 einsum": """
            def scaled_scores(q, k):
                s = np.einsum("...le,...se->...ls", q.astype(np.float32), k.astype(np.float32))
                return s / np.float32(np.sqrt(q.shape[-1]))
        """,
        "helper in an added cell": [
            """
            def _scale_31(E):
                return 1.0 / np.sqrt(E)
            """,
            """
            def scaled_scores(q, k):
                return (q * _scale_31(q.shape[-1])) @ np.swapaxes(k, -1, -2)
            """,
        ],
    },
    "ch03.two_part_attention": {
        "torch with the chapter's F": """
            def two_part_attention(q_c, k_c, q_r, k_r, v):
                q_c, k_c, q_r, k_r, v = (torch.as_tensor(a) for a in (q_c, k_c, q_r, k_r, v))
                s = q_c @ k_c.transpose(-1, -2) + q_r @ k_r.unsqueeze(-3).transpose(-1, -2)
                w = F.softmax(s / (q_c.shape[-1] + q_r.shape[-1]) ** 0.5, dim=-1)
                return w @ v, w
        """,
        "one dot product over the concatenated parts, einsum": """
            def two_part_attention(q_c, k_c, q_r, k_r, v):
                k_r_heads = np.broadcast_to(k_r[..., None, :, :], k_c.shape[:-1] + k_r.shape[-1:])
                q = np.concatenate([q_c, q_r], axis=-1)
                k = np.concatenate([k_c, k_r_heads], axis=-1)
                w = softmax(np.einsum("...le,...se->...ls", q, k) / np.sqrt(q.shape[-1]))
                return np.einsum("...ls,...sd->...ld", w, v), w
        """,
        "float32, each part scaled, then the sum rescaled": """
            def two_part_attention(q_c, k_c, q_r, k_r, v):
                f = np.float32
                Dc, Dr = q_c.shape[-1], q_r.shape[-1]
                a = (q_c.astype(f) @ np.swapaxes(k_c.astype(f), -1, -2)) / f(np.sqrt(Dc))
                b = (q_r.astype(f) @ np.expand_dims(np.swapaxes(k_r.astype(f), -1, -2), -3)) / f(np.sqrt(Dr))
                w = softmax((a * f(np.sqrt(Dc)) + b * f(np.sqrt(Dr))) / f(np.sqrt(Dc + Dr)))
                return w @ v.astype(f), w
        """,
        "helper in an added cell, loops over heads": [
            """
            def _two_part_scores_32(q_c, k_c, q_r, k_r):
                heads = []
                for h in range(q_c.shape[-3]):
                    heads.append(q_c[..., h, :, :] @ np.swapaxes(k_c[..., h, :, :], -1, -2)
                                 + q_r[..., h, :, :] @ np.swapaxes(k_r, -1, -2))
                return np.stack(heads, axis=-3)
            """,
            """
            def two_part_attention(q_c, k_c, q_r, k_r, v):
                s = _two_part_scores_32(q_c, k_c, q_r, k_r) / np.sqrt(q_c.shape[-1] + q_r.shape[-1])
                w = softmax(s)
                return w @ v, w
            """,
        ],
    },
    "ch03.packed_head_attention": {
        "torch with the chapter's F, view and transpose": """
            def packed_head_attention(q, k, v, n_heads):
                def split(x):
                    x = torch.as_tensor(x)
                    return x.reshape(*x.shape[:-1], n_heads, -1).transpose(-2, -3)
                qh, kh, vh = split(q), split(k), split(v)
                w = F.softmax(qh @ kh.transpose(-1, -2) / qh.shape[-1] ** 0.5, dim=-1)
                o = (w @ vh).transpose(-2, -3)
                return o.reshape(*o.shape[:-2], -1), w
        """,
        "loops over the heads' blocks": """
            def packed_head_attention(q, k, v, n_heads):
                D, Dv = q.shape[-1] // n_heads, v.shape[-1] // n_heads
                outs, ws = [], []
                for h in range(n_heads):
                    qh, kh = q[..., h * D:(h + 1) * D], k[..., h * D:(h + 1) * D]
                    w = softmax(qh @ np.swapaxes(kh, -1, -2) / np.sqrt(D))
                    ws.append(w)
                    outs.append(w @ v[..., h * Dv:(h + 1) * Dv])
                return np.concatenate(outs, axis=-1), np.stack(ws, axis=-3)
        """,
        "the padded kernel kept, torch, the scale from the unpadded width": """
            def packed_head_attention(q, k, v, n_heads):
                q, k, v = (torch.as_tensor(x) for x in (q, k, v))
                D, Dv = q.shape[-1] // n_heads, v.shape[-1] // n_heads

                def heads(x, width):
                    x = x.reshape(*x.shape[:-1], n_heads, x.shape[-1] // n_heads)
                    x = F.pad(x, (0, width - x.shape[-1]))
                    return x.transpose(-2, -3)

                P, Pv = (D + 7) // 8 * 8, (Dv + 7) // 8 * 8
                qh, kh, vh = heads(q, P), heads(k, P), heads(v, Pv)
                w = torch.softmax(qh @ kh.transpose(-1, -2) / D**0.5, dim=-1)
                o = (w @ vh)[..., :Dv].transpose(-2, -3)
                return o.reshape(*o.shape[:-2], -1), w
        """,
        "float32 einsum, the scale on q": """
            def packed_head_attention(q, k, v, n_heads):
                f = np.float32
                qh = q.astype(f).reshape(*q.shape[:-1], n_heads, -1)  # (..., L, H, D)
                kh = k.astype(f).reshape(*k.shape[:-1], n_heads, -1)
                vh = v.astype(f).reshape(*v.shape[:-1], n_heads, -1)
                w = softmax(np.einsum("...lhd,...shd->...hls", qh / f(np.sqrt(qh.shape[-1])), kh))
                o = np.einsum("...hls,...shd->...lhd", w, vh)
                return o.reshape(*o.shape[:-2], -1), w
        """,
    },
    "ch03.predict_cosine_factor": {
        "the literal": """
            def predict_cosine_factor():
                return 11.3
        """,
        "the long way round": """
            def predict_cosine_factor():
                d_k = 128
                spread_normalised = (d_k / (d_k**0.5 * d_k**0.5) ** 2) ** 0.5  # std of q . k / (|q| |k|)
                return 1 / spread_normalised
        """,
        "numpy float32": """
            def predict_cosine_factor():
                return np.float32(8 * 2**0.5)
        """,
        "a one-element list": """
            def predict_cosine_factor():
                return [11.0]
        """,
    },
    "ch03.recover_scale": {
        "each candidate tried with torch's softmax": """
            def recover_scale(q, k, weights, candidates):
                s = torch.as_tensor(q) @ torch.as_tensor(k).transpose(-1, -2)
                w = torch.as_tensor(weights, dtype=s.dtype)
                errors = [float((torch.softmax(float(c) * s, dim=-1) - w).abs().sum()) for c in candidates]
                return float(candidates[errors.index(min(errors))])
        """,
        "float32, a loop, the smallest squared misfit": """
            def recover_scale(q, k, weights, candidates):
                s = q.astype(np.float32) @ np.swapaxes(k.astype(np.float32), -1, -2)
                best, best_err = None, np.inf
                for c in candidates:
                    err = ((softmax(np.float32(c) * s) - weights.astype(np.float32)) ** 2).sum()
                    if err < best_err:
                        best, best_err = float(c), err
                return best
        """,
        "torch least squares, each row centred": """
            def recover_scale(q, k, weights, candidates):
                q, k, w = (torch.as_tensor(a, dtype=torch.float64) for a in (q, k, weights))
                s = (q @ k.transpose(-1, -2)).expand_as(w)
                use = w > 1e-300
                logw = torch.where(use, w, torch.ones_like(w)).log()
                n = use.sum(-1, keepdim=True)
                s_c = torch.where(use, s - (s * use).sum(-1, keepdim=True) / n, torch.zeros_like(s))
                l_c = torch.where(use, logw - (logw * use).sum(-1, keepdim=True) / n, torch.zeros_like(s))
                return float((s_c * l_c).sum() / (s_c * s_c).sum())
        """,
        "loops over rows, the two largest weights": """
            def recover_scale(q, k, weights, candidates):
                s = np.einsum("...le,...se->...ls", q, k)
                s, w = np.broadcast_arrays(s, weights)
                s, w = s.reshape(-1, s.shape[-1]), w.reshape(-1, w.shape[-1])
                found = []
                for row in range(w.shape[0]):
                    order = np.argsort(w[row])
                    a, b = order[-1], order[-2]  # both above 0
                    if s[row, a] != s[row, b]:
                        found.append(np.log(w[row, a] / w[row, b]) / (s[row, a] - s[row, b]))
                return float(np.median(found))
        """,
        "float32, polyfit on each row's weights above 0": """
            def recover_scale(q, k, weights, candidates):
                s = (q.astype(np.float32) @ np.swapaxes(k.astype(np.float32), -1, -2)).astype(np.float64)
                s, w = np.broadcast_arrays(s, weights.astype(np.float64))
                slopes = []
                for s_row, w_row in zip(s.reshape(-1, s.shape[-1]), w.reshape(-1, w.shape[-1])):
                    keep = w_row > 0
                    slopes.append(np.polyfit(s_row[keep], np.log(w_row[keep]), 1)[0])
                return float(np.mean(slopes))
        """,
        "helper in an added cell": [
            """
            def _log_ratio_35(w, i, j):
                return np.log(w[..., i]) - np.log(w[..., j])
            """,
            """
            def recover_scale(q, k, weights, candidates):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2), weights.shape).reshape(-1, weights.shape[-1])
                w = weights.reshape(-1, weights.shape[-1])
                i, j = np.argsort(w[0])[-2:]
                return float(_log_ratio_35(w[0], i, j) / (s[0, i] - s[0, j]))
            """,
        ],
    },
    "ch03.weights_not_normalised": {
        "log space, float32, the normaliser of the scaled scores": """
            def scaled_dot_attention(q, k, v):
                f = np.float32
                x = (q.astype(f) @ np.swapaxes(k.astype(f), -1, -2)) / f(np.sqrt(q.shape[-1]))
                top = x.max(axis=-1, keepdims=True)
                log_total = top + np.log(np.exp(x - top).sum(axis=-1, keepdims=True))
                w = np.exp(x - log_total)
                return w @ v.astype(f), w
        """,
        "torch with the chapter's F": """
            def scaled_dot_attention(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                w = F.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
                return w @ v, w
        """,
        "float32": """
            def scaled_dot_attention(q, k, v):
                q32, k32 = q.astype(np.float32), k.astype(np.float32)
                w = softmax(q32 @ np.swapaxes(k32, -1, -2) / np.float32(np.sqrt(q.shape[-1])))
                return w @ v.astype(np.float32), w
        """,
        "helper in an added cell": [
            """
            def _softmax_36(s):
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
            """,
            """
            def scaled_dot_attention(q, k, v):
                w = _softmax_36(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return w @ v, w
            """,
        ],
    },
}

WRONG = {
    "ch03.scaled_scores": {
        "k.T on a batch": """
            def scaled_scores(q, k):
                return q @ k.T / np.sqrt(q.shape[-1])
        """,
        "scaled by the number of keys": """
            def scaled_scores(q, k):
                return q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-2])
        """,
        "multiplied by sqrt(E)": """
            def scaled_scores(q, k):
                return q @ np.swapaxes(k, -1, -2) * np.sqrt(q.shape[-1])
        """,
    },
    "ch03.two_part_attention": {
        "scaled by the content width": """
            def two_part_attention(q_c, k_c, q_r, k_r, v):
                s = q_c @ np.swapaxes(k_c, -1, -2) + q_r @ np.swapaxes(k_r, -1, -2)[..., None, :, :]
                w = softmax(s / np.sqrt(q_c.shape[-1]))
                return w @ v, w
        """,
        "each part by its own width": """
            def two_part_attention(q_c, k_c, q_r, k_r, v):
                a = q_c @ np.swapaxes(k_c, -1, -2) / np.sqrt(q_c.shape[-1])
                b = q_r @ np.swapaxes(k_r, -1, -2)[..., None, :, :] / np.sqrt(q_r.shape[-1])
                w = softmax(a + b)
                return w @ v, w
        """,
        "the roots added": """
            def two_part_attention(q_c, k_c, q_r, k_r, v):
                s = q_c @ np.swapaxes(k_c, -1, -2) + q_r @ np.swapaxes(k_r, -1, -2)[..., None, :, :]
                w = softmax(s / (np.sqrt(q_c.shape[-1]) + np.sqrt(q_r.shape[-1])))
                return w @ v, w
        """,
        "k_r without a head axis": """
            def two_part_attention(q_c, k_c, q_r, k_r, v):
                s = q_c @ np.swapaxes(k_c, -1, -2) + q_r @ np.swapaxes(k_r, -1, -2)
                w = softmax(s / np.sqrt(q_c.shape[-1] + q_r.shape[-1]))
                return w @ v, w
        """,
    },
    "ch03.packed_head_attention": {
        "the stub as given: the padded width": """
            def packed_head_attention(q, k, v, n_heads):
                D, Dv = q.shape[-1] // n_heads, v.shape[-1] // n_heads

                def heads(x, width):
                    x = x.reshape(*x.shape[:-1], n_heads, x.shape[-1] // n_heads)
                    pad = [(0, 0)] * (x.ndim - 1) + [(0, width - x.shape[-1])]
                    return np.swapaxes(np.pad(x, pad), -2, -3)

                def padded(w):
                    return -(-w // 8) * 8

                qh, kh, vh = heads(q, padded(D)), heads(k, padded(D)), heads(v, padded(Dv))
                scale = 1 / np.sqrt(qh.shape[-1])
                weights = softmax(qh @ np.swapaxes(kh, -1, -2) * scale)
                out = np.swapaxes((weights @ vh)[..., :Dv], -2, -3)
                return out.reshape(*out.shape[:-2], -1), weights
        """,
        "the whole width": """
            def packed_head_attention(q, k, v, n_heads):
                def heads(x):
                    x = x.reshape(*x.shape[:-1], n_heads, x.shape[-1] // n_heads)
                    return np.swapaxes(x, -2, -3)
                w = softmax(heads(q) @ np.swapaxes(heads(k), -1, -2) / np.sqrt(q.shape[-1]))
                o = np.swapaxes(w @ heads(v), -2, -3)
                return o.reshape(*o.shape[:-2], -1), w
        """,
        "the number of heads": """
            def packed_head_attention(q, k, v, n_heads):
                def heads(x):
                    x = x.reshape(*x.shape[:-1], n_heads, x.shape[-1] // n_heads)
                    return np.swapaxes(x, -2, -3)
                w = softmax(heads(q) @ np.swapaxes(heads(k), -1, -2) / np.sqrt(n_heads))
                o = np.swapaxes(w @ heads(v), -2, -3)
                return o.reshape(*o.shape[:-2], -1), w
        """,
        "heads dealt in turn (reshape the other way)": """
            def packed_head_attention(q, k, v, n_heads):
                def heads(x):
                    x = x.reshape(*x.shape[:-1], x.shape[-1] // n_heads, n_heads)
                    return np.moveaxis(x, -1, -3)
                qh = heads(q)
                w = softmax(qh @ np.swapaxes(heads(k), -1, -2) / np.sqrt(qh.shape[-1]))
                o = np.moveaxis(w @ heads(v), -3, -2)
                return o.reshape(*o.shape[:-2], -1), w
        """,
        "out left with a head axis": """
            def packed_head_attention(q, k, v, n_heads):
                def heads(x):
                    x = x.reshape(*x.shape[:-1], n_heads, x.shape[-1] // n_heads)
                    return np.swapaxes(x, -2, -3)
                qh = heads(q)
                w = softmax(qh @ np.swapaxes(heads(k), -1, -2) / np.sqrt(qh.shape[-1]))
                return w @ heads(v), w
        """,
    },
    "ch03.predict_cosine_factor": {
        "no factor": """
            def predict_cosine_factor():
                return 1.0
        """,
        "the unscaled scores' spread": """
            def predict_cosine_factor():
                return 128
        """,
        "a factor for each vector": """
            def predict_cosine_factor():
                return 128**0.25
        """,
        "divided": """
            def predict_cosine_factor():
                return 1 / 128**0.5
        """,
    },
    "ch03.recover_scale": {
        "the default assumed": """
            def recover_scale(q, k, weights, candidates):
                return 1 / np.sqrt(q.shape[-1])
        """,
        "the temperature": """
            def recover_scale(q, k, weights, candidates):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2), weights.shape).reshape(-1, weights.shape[-1])
                w = weights.reshape(-1, weights.shape[-1])
                i, j = np.argsort(w[0])[-2:]
                return float((s[0, i] - s[0, j]) / np.log(w[0, i] / w[0, j]))
        """,
        "against the default-scaled scores": """
            def recover_scale(q, k, weights, candidates):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), weights.shape)
                s, w = s.reshape(-1, weights.shape[-1]), weights.reshape(-1, weights.shape[-1])
                i, j = np.argsort(w[0])[-2:]
                return float(np.log(w[0, i] / w[0, j]) / (s[0, i] - s[0, j]))
        """,
        "the normaliser left out": """
            def recover_scale(q, k, weights, candidates):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2), weights.shape).reshape(-1, weights.shape[-1])
                w = weights.reshape(-1, weights.shape[-1])
                j = np.argmax(w[0])
                return float(np.log(w[0, j]) / s[0, j])
        """,
        "the largest and the smallest weight, zeros and all": """
            def recover_scale(q, k, weights, candidates):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2), weights.shape).reshape(-1, weights.shape[-1])
                w = weights.reshape(-1, weights.shape[-1])
                i, j = w.argmax(-1), w.argmin(-1)
                rows = np.arange(w.shape[0])
                with np.errstate(divide="ignore"):
                    c = np.log(w[rows, i] / w[rows, j]) / (s[rows, i] - s[rows, j])
                return float(c.mean())
        """,
    },
    "ch03.weights_not_normalised": {
        "the stub as given: log-sum-exp of the unscaled scores": """
            def scaled_dot_attention(q, k, v):
                scores = q @ np.swapaxes(k, -1, -2)
                top = scores.max(axis=-1, keepdims=True)
                log_total = top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))
                w = np.exp(scores / np.sqrt(q.shape[-1]) - log_total)
                return w @ v, w
        """,
        "still scaled after the softmax": """
            def scaled_dot_attention(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
                return w @ v, w
        """,
        "scaled by sqrt(Ev)": """
            def scaled_dot_attention(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(v.shape[-1]))
                return w @ v, w
        """,
        "k.T on a batch": """
            def scaled_dot_attention(q, k, v):
                w = softmax(q @ k.T / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
    },
}
