"""Appendix A (common bugs): answers in students' styles, correct and wrong."""

CORRECT = {
    "bugs.chunk_window_weights": {
        "a boolean window and torch.where": """
            def chunk_window_weights(q, k, window):
                L, S = q.shape[-2], k.shape[-2]
                i = torch.arange(L)[:, None] + (S - L)
                j = torch.arange(S)[None, :]
                seen = (j <= i) & (j > i - window)
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
                return torch.softmax(torch.where(seen, scores, float("-inf")), dim=-1)
        """,
        "numpy, a loop over the queries, in float32": """
            def chunk_window_weights(q, k, window):
                qn, kn = q.numpy().astype(np.float32), k.numpy().astype(np.float32)
                L, S = qn.shape[-2], kn.shape[-2]
                out = np.zeros(qn.shape[:-1] + (S,), dtype=np.float32)
                for r in range(L):
                    t = S - L + r
                    lo = max(0, t - window + 1)
                    s = np.einsum("...e,...je->...j", qn[..., r, :], kn[..., lo : t + 1, :]) / np.float32(np.sqrt(qn.shape[-1]))
                    e = np.exp(s - s.max(-1, keepdims=True))
                    out[..., r, lo : t + 1] = e / e.sum(-1, keepdims=True)
                return out
        """,
        "the additive mask fixed in place, in an added cell": [
            """
            def _window_bias(L, S, window, dtype):
                bias = torch.zeros(L, S, dtype=dtype)
                bias.masked_fill_(torch.ones(L, S, dtype=torch.bool).triu(S - L + 1), float("-inf"))
                bias.masked_fill_(torch.ones(L, S, dtype=torch.bool).tril(S - L - window), float("-inf"))
                return bias
            """,
            """
            def chunk_window_weights(q, k, window):
                scores = torch.einsum("...le,...se->...ls", q, k) / q.shape[-1] ** 0.5
                return torch.softmax(scores + _window_bias(q.shape[-2], k.shape[-2], window, scores.dtype), -1)
            """,
        ],
    },
    "bugs.grid_positions": {
        "divmod over the patch index, angles in a loop": """
            def grid_positions(grid_h, grid_w, d_model):
                half = d_model // 2
                out = np.zeros((grid_h * grid_w, d_model))
                for m in range(grid_h * grid_w):
                    r, c = divmod(m, grid_w)
                    for i in range(half // 2):
                        f = 10000 ** (2 * i / half)
                        out[m, 2 * i], out[m, 2 * i + 1] = np.sin(r / f), np.cos(r / f)
                        out[m, half + 2 * i], out[m, half + 2 * i + 1] = np.sin(c / f), np.cos(c / f)
                return out
        """,
        "torch, broadcast and repeated, in float32": """
            def grid_positions(grid_h, grid_w, d_model):
                half = d_model // 2
                freq = 10000.0 ** (-torch.arange(0, half, 2, dtype=torch.float32) / half)

                def code(n):
                    a = torch.arange(n, dtype=torch.float32)[:, None] * freq
                    return torch.stack([a.sin(), a.cos()], -1).reshape(n, half)

                rows = code(grid_h).repeat_interleave(grid_w, dim=0)
                cols = code(grid_w).repeat(grid_h, 1)
                return torch.cat([rows, cols], -1).numpy()
        """,
        "the stub with the two arrays transposed back, in an added cell": [
            """
            def _grid(grid_h, grid_w):
                cols, rows = np.meshgrid(np.arange(grid_w), np.arange(grid_h))
                return rows, cols
            """,
            """
            def grid_positions(grid_h, grid_w, d_model):
                half = d_model // 2
                rows, cols = _grid(grid_h, grid_w)
                i = np.arange(0, half, 2) / half
                def code(p):
                    a = p.ravel()[:, None] / 10000 ** i
                    out = np.empty((a.shape[0], half))
                    out[:, 0::2], out[:, 1::2] = np.sin(a), np.cos(a)
                    return out
                return np.hstack([code(rows), code(cols)])
            """,
        ],
    },
    "bugs.cls_rollout": {
        "einsum, the layers taken last to first": """
            def cls_rollout(weights):
                n_layers, B, H, N, _ = weights.shape
                A = (weights.mean(axis=2) + np.eye(N)) / 2
                R = np.broadcast_to(np.eye(N), (B, N, N))
                for layer in range(n_layers):
                    R = np.einsum("bij,bjk->bik", A[layer], R)
                return R[:, 0]
        """,
        "only row 0 carried, a vector times the layers from the top, in torch float32": """
            def cls_rollout(weights):
                w = torch.as_tensor(weights, dtype=torch.float32)
                N = w.shape[-1]
                A = (w.mean(2) + torch.eye(N)) / 2
                row = torch.zeros(w.shape[1], N)
                row[:, 0] = 1
                for layer in reversed(range(w.shape[0])):
                    row = (row[:, None, :] @ A[layer])[:, 0]
                return row.numpy()
        """,
        "functools.reduce over the layers, in an added cell": [
            """
            from functools import reduce
            """,
            """
            def cls_rollout(weights):
                N = weights.shape[-1]
                layers = [(w.mean(axis=1) + np.eye(N)) / 2 for w in weights]
                return reduce(lambda R, A: A @ R, layers)[:, 0]
            """,
        ],
    },
    "bugs.gated_delta_layer": {
        "the whole head vectorised, einsum": """
            def gated_delta_layer(q, k, v, a, b, A_log, dt_bias):
                H, L, E = q.shape
                q = q / np.sqrt((q * q).sum(-1, keepdims=True))
                k = k / np.sqrt((k * k).sum(-1, keepdims=True))
                beta = 1 / (1 + np.exp(-b))
                alpha = np.exp(-np.exp(A_log)[:, None] * np.log1p(np.exp(a + dt_bias[:, None])))
                S = np.zeros((H, E, v.shape[-1]))
                outs = []
                for t in range(L):
                    S = alpha[:, t, None, None] * S
                    u = beta[:, t, None] * (v[:, t] - np.einsum("he,hef->hf", k[:, t], S))
                    S = S + np.einsum("he,hf->hef", k[:, t], u)
                    outs.append(np.einsum("he,hef->hf", q[:, t], S) / np.sqrt(E))
                return np.stack(outs, axis=1)
        """,
        "torch, head by head, in float32": """
            def gated_delta_layer(q, k, v, a, b, A_log, dt_bias):
                q, k, v, a, b, A_log, dt_bias = (torch.tensor(np.asarray(x), dtype=torch.float32) for x in (q, k, v, a, b, A_log, dt_bias))
                q = torch.nn.functional.normalize(q, dim=-1)
                k = torch.nn.functional.normalize(k, dim=-1)
                alpha = torch.exp(-A_log.exp()[:, None] * torch.nn.functional.softplus(a + dt_bias[:, None]))
                beta = torch.sigmoid(b)
                out = torch.zeros(v.shape)
                for h in range(q.shape[0]):
                    S = torch.zeros(q.shape[-1], v.shape[-1])
                    for t in range(q.shape[1]):
                        S = alpha[h, t] * S
                        S = S + torch.outer(k[h, t], beta[h, t] * (v[h, t] - k[h, t] @ S))
                        out[h, t] = q[h, t] @ S / q.shape[-1] ** 0.5
                return out.numpy()
        """,
        "the state written as (I - beta k^T k) times the decayed state, in an added cell": [
            """
            def _step(S, k_t, v_t, alpha, beta):
                E = k_t.shape[0]
                return (np.eye(E) - beta * np.outer(k_t, k_t)) @ (alpha * S) + beta * np.outer(k_t, v_t)
            """,
            """
            def gated_delta_layer(q, k, v, a, b, A_log, dt_bias):
                H, L, E = q.shape
                qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
                kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
                sp = np.where(a + dt_bias[:, None] > 20, a + dt_bias[:, None], np.log1p(np.exp(a + dt_bias[:, None])))
                alpha = np.exp(-np.exp(A_log)[:, None] * sp)
                beta = 1 / (1 + np.exp(-b))
                out = np.zeros(v.shape)
                for h in range(H):
                    S = np.zeros((E, v.shape[-1]))
                    for t in range(L):
                        S = _step(S, kn[h, t], v[h, t], alpha[h, t], beta[h, t])
                        out[h, t] = qn[h, t] @ S / np.sqrt(E)
                return out
            """,
        ],
    },
    "bugs.fused_qkv_attention": {
        "a loop over heads, column slices": """
            def fused_qkv_attention(x, W, n_heads):
                d = W.shape[0]
                dh = d // n_heads
                outs = []
                for h in range(n_heads):
                    cols = W[:, 3 * dh * h : 3 * dh * (h + 1)]
                    q, k, v = x @ cols[:, :dh], x @ cols[:, dh : 2 * dh], x @ cols[:, 2 * dh :]
                    outs.append(softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(dh)) @ v)
                return np.concatenate(outs, axis=-1)
        """,
        "torch, einsum, in float32": """
            def fused_qkv_attention(x, W, n_heads):
                xt, Wt = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(W, dtype=torch.float32)
                d = Wt.shape[0]
                dh = d // n_heads
                qkv = (xt @ Wt).unflatten(-1, (n_heads, 3, dh))
                q, k, v = qkv.unbind(-2)
                w = torch.softmax(torch.einsum("...lhe,...mhe->...hlm", q, k) / dh**0.5, -1)
                return torch.einsum("...hlm,...mhe->...lhe", w, v).flatten(-2).numpy()
        """,
        "the weights reordered to [Q | K | V] in an added cell": [
            """
            def _to_thirds(W, n_heads):
                d = W.shape[0]
                return W.reshape(d, n_heads, 3, d // n_heads).transpose(0, 2, 1, 3).reshape(d, 3 * d)
            """,
            """
            def fused_qkv_attention(x, W, n_heads):
                d = W.shape[0]
                dh = d // n_heads
                q, k, v = np.split(x @ _to_thirds(W, n_heads), 3, axis=-1)
                heads = lambda t: np.swapaxes(t.reshape(*t.shape[:-1], n_heads, dh), -2, -3)
                out = softmax(heads(q) @ np.swapaxes(heads(k), -1, -2) / np.sqrt(dh)) @ heads(v)
                return np.swapaxes(out, -2, -3).reshape(*x.shape[:-1], d)
            """,
        ],
    },
    "bugs.yarn_scores": {
        "einsum, the factor squared on the unscaled rotation": """
            def yarn_scores(q, k, factor, original_length):
                scaling = {"rope_type": "yarn", "factor": factor,
                           "original_max_position_embeddings": original_length}
                L, E = q.shape[-2], q.shape[-1]
                inv_freq, a = rope_frequencies(E, scaling=scaling)
                ang = np.arange(L)[:, None] * inv_freq
                c, s = np.cos(ang), np.sin(ang)
                def rot(x):
                    x1, x2 = x[..., : E // 2], x[..., E // 2 :]
                    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)
                return a * a * np.einsum("...ie,...je->...ij", rot(q), rot(k)) / np.sqrt(E)
        """,
        "torch in float32": """
            def yarn_scores(q, k, factor, original_length):
                scaling = {"rope_type": "yarn", "factor": factor,
                           "original_max_position_embeddings": original_length}
                qt, kt = torch.as_tensor(q).float(), torch.as_tensor(k).float()
                L, E = qt.shape[-2], qt.shape[-1]
                inv_freq, a = rope_frequencies(E, scaling=scaling)
                ang = torch.arange(L, dtype=torch.float32)[:, None] * torch.as_tensor(inv_freq).float()
                c, s = torch.cos(ang) * a, torch.sin(ang) * a
                def rot(x):
                    x1, x2 = x[..., : E // 2], x[..., E // 2 :]
                    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], -1)
                return (rot(qt) @ rot(kt).transpose(-1, -2) / E ** 0.5).numpy()
        """,
        "complex numbers, helper in an added cell": [
            """
            def _yarn_rotate(x, inv_freq, factor):
                E = x.shape[-1]
                z = (x[..., : E // 2] + 1j * x[..., E // 2 :]) * np.exp(1j * np.arange(x.shape[-2])[:, None] * inv_freq)
                return factor * np.concatenate([z.real, z.imag], -1)
            """,
            """
            def yarn_scores(q, k, factor, original_length):
                scaling = {"rope_type": "yarn", "factor": factor,
                           "original_max_position_embeddings": original_length}
                inv_freq, a = rope_frequencies(q.shape[-1], scaling=scaling)
                rq, rk = _yarn_rotate(q, inv_freq, a), _yarn_rotate(k, inv_freq, a)
                return rq @ np.swapaxes(rk, -1, -2) / np.sqrt(q.shape[-1])
        """,
        ],
    },
    "bugs.partial_rope_attention": {
        "torch, masked_fill": """
            def partial_rope_attention(q, k, v, rotary_dim):
                R, L = rotary_dim, q.shape[-2]
                qt = torch.cat([torch.as_tensor(apply_rope(q[..., :R])), torch.as_tensor(q[..., R:])], -1)
                kt = torch.cat([torch.as_tensor(apply_rope(k[..., :R])), torch.as_tensor(k[..., R:])], -1)
                s = qt @ kt.transpose(-1, -2) / qt.shape[-1] ** 0.5
                s = s.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
                return (torch.softmax(s, -1) @ torch.as_tensor(v)).numpy()
        """,
        "a loop over queries in float32": """
            def partial_rope_attention(q, k, v, rotary_dim):
                R = rotary_dim
                q, k, v = q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)
                q = q.copy(); k = k.copy()
                q[..., :R], k[..., :R] = apply_rope(q[..., :R]), apply_rope(k[..., :R])
                rows = []
                for i in range(q.shape[-2]):
                    s = np.einsum("...e,...je->...j", q[..., i, :], k[..., : i + 1, :]) / np.float32(np.sqrt(q.shape[-1]))
                    rows.append(np.einsum("...j,...je->...e", softmax(s), v[..., : i + 1, :]))
                return np.stack(rows, axis=-2)
        """,
        "the rotation by hand in an added cell": [
            """
            def _rotate_part(x, R):
                L = x.shape[-2]
                ang = np.arange(L)[:, None] * 10000.0 ** (-np.arange(0, R, 2) / R)
                a, b, rest = x[..., : R // 2], x[..., R // 2 : R], x[..., R:]
                return np.concatenate([a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang), rest], -1)
            """,
            """
            def partial_rope_attention(q, k, v, rotary_dim):
                L = q.shape[-2]
                s = _rotate_part(q, rotary_dim) @ np.swapaxes(_rotate_part(k, rotary_dim), -1, -2) / np.sqrt(q.shape[-1])
                return softmax(s + np.triu(np.full((L, L), -np.inf), 1)) @ v
            """,
        ],
    },
    "bugs.sink_cache_weights": {
        "offsets within the cache, torch": """
            def sink_cache_weights(q, k, n_sink, window):
                L, E = q.shape
                out = torch.zeros(L, L, dtype=torch.float64)
                for t in range(L):
                    kept = [j for j in range(t + 1) if j < n_sink or j > t - window]
                    n = len(kept)
                    qt = torch.as_tensor(apply_rope(q[t : t + 1], positions=np.array([n - 1]))).double()
                    kt = torch.as_tensor(apply_rope(k[kept], positions=np.arange(n))).double()
                    out[t, kept] = torch.softmax(qt @ kt.T / E ** 0.5, -1)[0]
                return out.numpy()
        """,
        "the query at 0 and the keys at negative offsets, float32": """
            def sink_cache_weights(q, k, n_sink, window):
                L, E = q.shape
                w = np.zeros((L, L), dtype=np.float32)
                for t in range(L):
                    kept = np.array([j for j in range(t + 1) if j < n_sink or j > t - window])
                    pos = np.arange(len(kept)) - (len(kept) - 1)  # only the offsets matter
                    qt = apply_rope(q[t : t + 1].astype(np.float32), positions=np.array([0]))
                    kt = apply_rope(k[kept].astype(np.float32), positions=pos)
                    w[t, kept] = softmax(qt @ kt.T / np.float32(np.sqrt(E)))[0]
                return w
        """,
        "helper in an added cell": [
            """
            def _cache_slots(t, n_sink, window):
                sinks = list(range(min(n_sink, t + 1)))
                return sinks + [j for j in range(max(0, t - window + 1), t + 1) if j not in sinks]
            """,
            """
            def sink_cache_weights(q, k, n_sink, window):
                L, E = q.shape
                weights = np.zeros((L, L))
                for t in range(L):
                    slots = _cache_slots(t, n_sink, window)
                    p = np.arange(len(slots))
                    s = apply_rope(q[t : t + 1], positions=p[-1:]) @ apply_rope(k[slots], positions=p).T
                    weights[t, slots] = softmax(s / np.sqrt(E))[0]
                return weights
        """,
        ],
    },
    "bugs.predict_first_drift": {
        "the integer": """
            def predict_first_drift():
                return 1024
        """,
        "a float": """
            def predict_first_drift():
                return 1024.0
        """,
        "worked out": """
            def predict_first_drift():
                n_sink, window = 4, 1020
                return n_sink + window  # the first step whose cache leaves a token out
        """,
    },
    "bugs.cross_decode": {
        "all steps at once, einsum": """
            def cross_decode(memory, y, W_q, W_k, W_v):
                s = np.einsum("te,se->ts", y @ W_q, memory @ W_k) / np.sqrt(W_q.shape[1])
                return softmax(s) @ (memory @ W_v)
        """,
        "torch, a cache filled on the first step, float32": """
            def cross_decode(memory, y, W_q, W_k, W_v):
                m, ys = torch.as_tensor(memory).float(), torch.as_tensor(y).float()
                Wq, Wk, Wv = (torch.as_tensor(w).float() for w in (W_q, W_k, W_v))
                K, V = m @ Wk, m @ Wv
                rows = [torch.softmax(ys[t] @ Wq @ K.T / Wq.shape[1] ** 0.5, -1) @ V for t in range(ys.shape[0])]
                return torch.stack(rows).numpy()
        """,
        "loops over steps and source tokens, helper in an added cell": [
            """
            def _source_kv(memory, W_k, W_v):
                return [(m @ W_k, m @ W_v) for m in memory]
            """,
            """
            def cross_decode(memory, y, W_q, W_k, W_v):
                kv = _source_kv(memory, W_k, W_v)
                out = []
                for x in y:
                    q = x @ W_q
                    s = np.array([q @ k for k, _ in kv]) / np.sqrt(len(q))
                    w = np.exp(s - s.max())
                    w = w / w.sum()
                    out.append(sum(wi * v for wi, (_, v) in zip(w, kv)))
                return np.array(out)
            """,
        ],
    },
}

WRONG = {
    "bugs.chunk_window_weights": {
        "the window counted from the chunk's first query, as without a cache": """
            def chunk_window_weights(q, k, window):
                L, S = q.shape[-2], k.shape[-2]
                minus_inf = torch.full((L, S), float("-inf"), dtype=q.dtype)
                masked = torch.triu(minus_inf, diagonal=1) + torch.tril(minus_inf, diagonal=-window)
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
                return torch.softmax(scores + masked, dim=-1)
        """,
        "a window one token too wide": """
            def chunk_window_weights(q, k, window):
                L, S = q.shape[-2], k.shape[-2]
                minus_inf = torch.full((L, S), float("-inf"), dtype=q.dtype)
                masked = torch.triu(minus_inf, diagonal=S - L + 1) + torch.tril(minus_inf, diagonal=S - L - window - 1)
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
                return torch.softmax(scores + masked, dim=-1)
        """,
        "causal only, the window dropped": """
            def chunk_window_weights(q, k, window):
                L, S = q.shape[-2], k.shape[-2]
                masked = torch.triu(torch.full((L, S), float("-inf"), dtype=q.dtype), diagonal=S - L + 1)
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
                return torch.softmax(scores + masked, dim=-1)
        """,
    },
    "bugs.grid_positions": {
        "the columns' code first, then the rows'": """
            def grid_positions(grid_h, grid_w, d_model):
                half = d_model // 2
                rows, cols = np.meshgrid(np.arange(grid_h), np.arange(grid_w), indexing="ij")
                def code(p):
                    a = p.ravel()[:, None] / 10000 ** (np.arange(0, half, 2) / half)
                    return np.stack([np.sin(a), np.cos(a)], -1).reshape(len(a), half)
                return np.concatenate([code(cols), code(rows)], axis=-1)
        """,
        "the sines of a half, then its cosines": """
            def grid_positions(grid_h, grid_w, d_model):
                half = d_model // 2
                rows, cols = np.meshgrid(np.arange(grid_h), np.arange(grid_w), indexing="ij")
                def code(p):
                    a = p.ravel()[:, None] / 10000 ** (np.arange(0, half, 2) / half)
                    return np.concatenate([np.sin(a), np.cos(a)], -1)
                return np.concatenate([code(rows), code(cols)], axis=-1)
        """,
        "the frequencies of the full width in each half": """
            def grid_positions(grid_h, grid_w, d_model):
                half = d_model // 2
                rows, cols = np.meshgrid(np.arange(grid_h), np.arange(grid_w), indexing="ij")
                def code(p):
                    a = p.ravel()[:, None] / 10000 ** (np.arange(0, half, 2) / d_model)
                    return np.stack([np.sin(a), np.cos(a)], -1).reshape(len(a), half)
                return np.concatenate([code(rows), code(cols)], axis=-1)
        """,
    },
    "bugs.cls_rollout": {
        "the layers multiplied first to last": """
            def cls_rollout(weights):
                N = weights.shape[-1]
                R = np.eye(N)
                for w in weights:
                    R = R @ ((w.mean(axis=1) + np.eye(N)) / 2)
                return R[:, 0]
        """,
        "no residual term": """
            def cls_rollout(weights):
                R = np.eye(weights.shape[-1])
                for w in weights:
                    R = w.mean(axis=1) @ R
                return R[:, 0]
        """,
        "the last layer's heads only": """
            def cls_rollout(weights):
                N = weights.shape[-1]
                return ((weights[-1].mean(axis=1) + np.eye(N)) / 2)[:, 0]
        """,
        "column 0 instead of row 0": """
            def cls_rollout(weights):
                N = weights.shape[-1]
                R = np.eye(N)
                for w in weights:
                    R = ((w.mean(axis=1) + np.eye(N)) / 2) @ R
                return R[:, :, 0]
        """,
    },
    "bugs.gated_delta_layer": {
        "the decay applied after the write": """
            def gated_delta_layer(q, k, v, a, b, A_log, dt_bias):
                H, L, E = q.shape
                q = q / np.linalg.norm(q, axis=-1, keepdims=True)
                k = k / np.linalg.norm(k, axis=-1, keepdims=True)
                beta = 1 / (1 + np.exp(-b))
                decay = np.exp(-np.exp(A_log)[:, None] * np.logaddexp(0, a + dt_bias[:, None]))
                out = np.zeros(v.shape)
                for h in range(H):
                    S = np.zeros((E, v.shape[-1]))
                    for t in range(L):
                        S = S + np.outer(k[h, t], beta[h, t] * (v[h, t] - k[h, t] @ S))
                        S = decay[h, t] * S
                        out[h, t] = q[h, t] @ S / np.sqrt(E)
                return out
        """,
        "the writing strength on the value only": """
            def gated_delta_layer(q, k, v, a, b, A_log, dt_bias):
                H, L, E = q.shape
                q = q / np.linalg.norm(q, axis=-1, keepdims=True)
                k = k / np.linalg.norm(k, axis=-1, keepdims=True)
                beta = 1 / (1 + np.exp(-b))
                decay = np.exp(-np.exp(A_log)[:, None] * np.logaddexp(0, a + dt_bias[:, None]))
                out = np.zeros(v.shape)
                for h in range(H):
                    S = np.zeros((E, v.shape[-1]))
                    for t in range(L):
                        S = decay[h, t] * S
                        S = S + np.outer(k[h, t], beta[h, t] * v[h, t] - k[h, t] @ S)
                        out[h, t] = q[h, t] @ S / np.sqrt(E)
                return out
        """,
        "the decay without the softplus": """
            def gated_delta_layer(q, k, v, a, b, A_log, dt_bias):
                H, L, E = q.shape
                q = q / np.linalg.norm(q, axis=-1, keepdims=True)
                k = k / np.linalg.norm(k, axis=-1, keepdims=True)
                beta = 1 / (1 + np.exp(-b))
                decay = np.exp(-np.exp(A_log)[:, None] * (a + dt_bias[:, None]))
                out = np.zeros(v.shape)
                for h in range(H):
                    S = np.zeros((E, v.shape[-1]))
                    for t in range(L):
                        S = decay[h, t] * S
                        S = S + np.outer(k[h, t], beta[h, t] * (v[h, t] - k[h, t] @ S))
                        out[h, t] = q[h, t] @ S / np.sqrt(E)
                return out
        """,
    },
    "bugs.fused_qkv_attention": {
        "the heads' blocks read as (d_head, 3)": """
            def fused_qkv_attention(x, W, n_heads):
                d = W.shape[0]
                dh = d // n_heads
                t = (x @ W).reshape(*x.shape[:-1], n_heads, dh, 3)
                q, k, v = (np.moveaxis(t[..., i], -2, -3) for i in range(3))
                out = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(dh)) @ v
                return np.moveaxis(out, -3, -2).reshape(*x.shape[:-1], d)
        """,
        "the right split, scaled by sqrt(d)": """
            def fused_qkv_attention(x, W, n_heads):
                d = W.shape[0]
                dh = d // n_heads
                t = (x @ W).reshape(*x.shape[:-1], n_heads, 3, dh)
                q, k, v = (np.moveaxis(t[..., i, :], -2, -3) for i in range(3))
                out = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d)) @ v
                return np.moveaxis(out, -3, -2).reshape(*x.shape[:-1], d)
        """,
        "one head over the whole width": """
            def fused_qkv_attention(x, W, n_heads):
                d = W.shape[0]
                dh = d // n_heads
                t = (x @ W).reshape(*x.shape[:-1], n_heads, 3, dh)
                q, k, v = (t[..., i, :].reshape(*x.shape[:-1], d) for i in range(3))
                return softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(dh)) @ v
        """,
    },
    "bugs.yarn_scores": {
        "the factor applied to q only": """
            def yarn_scores(q, k, factor, original_length):
                scaling = {"rope_type": "yarn", "factor": factor,
                           "original_max_position_embeddings": original_length}
                L, E = q.shape[-2], q.shape[-1]
                inv_freq, a = rope_frequencies(E, scaling=scaling)
                ang = np.arange(L)[:, None] * inv_freq
                c, s = np.cos(ang), np.sin(ang)
                def rot(x):
                    x1, x2 = x[..., : E // 2], x[..., E // 2 :]
                    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)
                return (a * rot(q)) @ np.swapaxes(rot(k), -1, -2) / np.sqrt(E)
        """,
        "the factor dropped everywhere": """
            def yarn_scores(q, k, factor, original_length):
                scaling = {"rope_type": "yarn", "factor": factor,
                           "original_max_position_embeddings": original_length}
                L, E = q.shape[-2], q.shape[-1]
                inv_freq, a = rope_frequencies(E, scaling=scaling)
                ang = np.arange(L)[:, None] * inv_freq
                c, s = np.cos(ang), np.sin(ang)
                def rot(x):
                    x1, x2 = x[..., : E // 2], x[..., E // 2 :]
                    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)
                return rot(q) @ np.swapaxes(rot(k), -1, -2) / np.sqrt(E)
        """,
        "the factor divided out of the scale instead": """
            def yarn_scores(q, k, factor, original_length):
                scaling = {"rope_type": "yarn", "factor": factor,
                           "original_max_position_embeddings": original_length}
                L, E = q.shape[-2], q.shape[-1]
                inv_freq, a = rope_frequencies(E, scaling=scaling)
                ang = np.arange(L)[:, None] * inv_freq
                c, s = np.cos(ang) * a, np.sin(ang) * a
                def rot(x):
                    x1, x2 = x[..., : E // 2], x[..., E // 2 :]
                    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)
                return rot(q) @ np.swapaxes(rot(k), -1, -2) / np.sqrt(E) / a
        """,
    },
    "bugs.partial_rope_attention": {
        "the whole head rotated": """
            def partial_rope_attention(q, k, v, rotary_dim):
                L = q.shape[-2]
                s = apply_rope(q) @ np.swapaxes(apply_rope(k), -1, -2) / np.sqrt(q.shape[-1])
                return softmax(np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)) @ v
        """,
        "the last rotary_dim features rotated": """
            def partial_rope_attention(q, k, v, rotary_dim):
                L, E = q.shape[-2], q.shape[-1]
                rot = lambda x: np.concatenate([x[..., : E - rotary_dim], apply_rope(x[..., E - rotary_dim :])], -1)
                s = rot(q) @ np.swapaxes(rot(k), -1, -2) / np.sqrt(E)
                return softmax(np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)) @ v
        """,
        "pairs within rotary_dim, frequencies of the whole head": """
            def partial_rope_attention(q, k, v, rotary_dim):
                L, E, R = q.shape[-2], q.shape[-1], rotary_dim
                ang = np.arange(L)[:, None] * 10000.0 ** (-np.arange(0, R, 2) / E)
                def rot(x):
                    a, b = x[..., : R // 2], x[..., R // 2 : R]
                    return np.concatenate([a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang), x[..., R:]], -1)
                s = rot(q) @ np.swapaxes(rot(k), -1, -2) / np.sqrt(E)
                return softmax(np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)) @ v
        """,
    },
    "bugs.sink_cache_weights": {
        "the query kept at its text position": """
            def sink_cache_weights(q, k, n_sink, window):
                L, E = q.shape
                w = np.zeros((L, L))
                for t in range(L):
                    kept = np.array([j for j in range(t + 1) if j < n_sink or j > t - window])
                    qt = apply_rope(q[t : t + 1], positions=np.array([t]))
                    kt = apply_rope(k[kept], positions=np.arange(len(kept)))
                    w[t, kept] = softmax(qt @ kt.T / np.sqrt(E))[0]
                return w
        """,
        "the window renumbered, the sinks at their text positions": """
            def sink_cache_weights(q, k, n_sink, window):
                L, E = q.shape
                w = np.zeros((L, L))
                for t in range(L):
                    kept = np.array([j for j in range(t + 1) if j < n_sink or j > t - window])
                    pos = np.where(kept < n_sink, kept, np.arange(len(kept)) + (t - len(kept) + 1))
                    qt = apply_rope(q[t : t + 1], positions=np.array([t]))
                    kt = apply_rope(k[kept], positions=pos)
                    w[t, kept] = softmax(qt @ kt.T / np.sqrt(E))[0]
                return w
        """,
        "the window without its newest token": """
            def sink_cache_weights(q, k, n_sink, window):
                L, E = q.shape
                w = np.zeros((L, L))
                for t in range(L):
                    kept = np.array([j for j in range(t + 1) if j < n_sink or j > t - window - 1 and j < t] + [t])
                    kept = np.unique(kept)
                    p = np.arange(len(kept))
                    qt = apply_rope(q[t : t + 1], positions=p[-1:])
                    w[t, kept] = softmax(qt @ apply_rope(k[kept], positions=p).T / np.sqrt(E))[0]
                return w
        """,
    },
    "bugs.predict_first_drift": {
        "the step that fills the cache": """
            def predict_first_drift():
                return 1023
        """,
        "the window alone": """
            def predict_first_drift():
                return 1020
        """,
        "one step late": """
            def predict_first_drift():
                return 1025
        """,
    },
    "bugs.cross_decode": {
        "keys and values from the decoder's states so far": """
            def cross_decode(memory, y, W_q, W_k, W_v):
                out = []
                for t in range(y.shape[0]):
                    K, V = y[: t + 1] @ W_k, y[: t + 1] @ W_v
                    out.append(softmax((y[t] @ W_q) @ K.T / np.sqrt(W_q.shape[1])) @ V)
                return np.array(out)
        """,
        "the cache refilled from each step's state": """
            def cross_decode(memory, y, W_q, W_k, W_v):
                out = []
                for t in range(y.shape[0]):
                    x = y[t : t + 1]
                    K, V = x @ W_k, x @ W_v
                    out.append(softmax((x @ W_q) @ K.T / np.sqrt(W_q.shape[1])) @ V)
                return np.concatenate(out)
        """,
        "the source's keys and values, unscaled scores": """
            def cross_decode(memory, y, W_q, W_k, W_v):
                return softmax((y @ W_q) @ (memory @ W_k).T) @ (memory @ W_v)
        """,
    },
}
