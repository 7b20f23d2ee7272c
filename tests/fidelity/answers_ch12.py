"""Chapter 12 (cross-attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch12.predict_cross_kv_cost": {
        "the literal": """
            def predict_cross_kv_cost():
                return 3.15e9
        """,
        "a numpy int64 with the chapter's np": """
            def predict_cross_kv_cost():
                return np.int64(6) * 2 * 1000 * 512**2
        """,
        "helper in an added cell": [
            """
            def _projection_macs(rows, d_in, d_out):
                return rows * d_in * d_out
            """,
            """
            def predict_cross_kv_cost():
                return 6 * (_projection_macs(1000, 512, 512) + _projection_macs(1000, 512, 512))
            """,
        ],
    },
    "ch12.interleaved_image_attention": {
        "einsum with a running image index": """
            def image_cross_attention(q, k, v, is_image, latent_image, gate):
                which = np.cumsum(is_image.astype(int), axis=1) - 1
                ok = np.equal(latent_image[:, None, :], which[:, :, None]) & (which >= 0)[:, :, None]
                s = np.einsum("ble,bse->bls", q, k) / np.sqrt(q.shape[-1])
                w = softmax(np.where(ok, s, -np.inf), axis=-1)
                return np.tanh(gate) * np.einsum("bls,bse->ble", w, v), w
        """,
        "loops over examples and positions": """
            def image_cross_attention(q, k, v, is_image, latent_image, gate):
                B, L, _ = q.shape
                S, Ev = k.shape[1], v.shape[2]
                out, w = np.zeros((B, L, Ev)), np.zeros((B, L, S))
                for b in range(B):
                    image = -1
                    for i in range(L):
                        if is_image[b, i]:
                            image += 1
                        if image < 0:
                            continue
                        cols = [j for j in range(S) if latent_image[b, j] == image]
                        sc = np.array([q[b, i] @ k[b, j] for j in cols]) / np.sqrt(q.shape[-1])
                        e = np.exp(sc - sc.max())
                        w[b, i, cols] = e / e.sum()
                        out[b, i] = np.tanh(gate) * (w[b, i, cols] @ v[b, cols])
                return out, w
        """,
        "torch with the chapter's torch": """
            def image_cross_attention(q, k, v, is_image, latent_image, gate):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                which = torch.as_tensor(is_image).long().cumsum(-1) - 1
                ids = torch.as_tensor(latent_image)
                ok = (ids[:, None, :] == which[:, :, None]) & (which[:, :, None] >= 0)
                s = (q @ k.transpose(1, 2) / q.shape[-1] ** 0.5).masked_fill(~ok, float("-inf"))
                w = torch.softmax(s, dim=-1).nan_to_num(0.0)
                return (torch.tanh(torch.tensor(gate)) * (w @ v)).numpy(), w.numpy()
        """,
        "float32 throughout, a helper in an added cell": [
            """
            def _current_image(is_image):
                return np.cumsum(is_image, axis=-1) - 1
            """,
            """
            def image_cross_attention(q, k, v, is_image, latent_image, gate):
                q, k, v = (a.astype(np.float32) for a in (q, k, v))
                cur = _current_image(is_image)
                ok = (latent_image[:, None, :] == cur[:, :, None]) & (cur[:, :, None] > -1)
                s = q @ k.transpose(0, 2, 1) / np.float32(np.sqrt(q.shape[-1]))
                w = softmax(np.where(ok, s, -np.inf))
                return np.float32(np.tanh(gate)) * (w @ v), w
            """,
        ],
    },
    "ch12.prefix_decoder_mask": {
        "blocks written out": """
            def prefix_mask(S, L):
                mask = np.zeros((S + L, S + L), dtype=bool)
                mask[:S, :S] = True
                mask[S:, :S] = True
                mask[S:, S:] = np.tril(np.ones((L, L), dtype=bool))
                return mask
        """,
        "torch with the chapter's torch": """
            def prefix_mask(S, L):
                i = torch.arange(S + L)[:, None]
                j = torch.arange(S + L)[None, :]
                return ((j <= i) | ((i < S) & (j < S))).numpy()
        """,
        "helper in an added cell, the package's causal mask": [
            """
            def _source_block(S, n):
                block = np.zeros((n, n), dtype=bool)
                block[:S, :S] = True
                return block
            """,
            """
            def prefix_mask(S, L):
                return np.asarray(ac.causal_mask(S + L)) | _source_block(S, S + L)
            """,
        ],
    },
    "ch12.remove_source_tokens": {
        "a loop over the rows": """
            def remove_source_tokens(weights, v, keep):
                w = np.zeros_like(weights)
                for b in range(weights.shape[0]):
                    for t in range(weights.shape[1]):
                        kept = weights[b, t] * keep[b]
                        if kept.sum() > 0:
                            w[b, t] = kept / kept.sum()
                return w @ v, w
        """,
        "the logs' softmax with the package's softmax": """
            def remove_source_tokens(weights, v, keep):
                with np.errstate(divide="ignore"):
                    scores = np.where(keep[:, None, :], np.log(weights), -np.inf)
                w = softmax(scores)
                return w @ v, w
        """,
        "torch, float32": """
            def remove_source_tokens(weights, v, keep):
                w = torch.as_tensor(weights, dtype=torch.float32) * torch.as_tensor(keep)[:, None, :]
                total = w.sum(-1, keepdim=True)
                w = torch.where(total > 0, w / total.clamp_min(1e-30), torch.zeros_like(w))
                return (w @ torch.as_tensor(v, dtype=torch.float32)).numpy(), w.numpy()
        """,
    },
    "ch12.latent_resampler": {
        "einsum over the concatenation": """
            def resample(latents, features, W_q, W_k, W_v, feature_padding):
                B, R = features.shape[0], latents.shape[0]
                lat = np.repeat(latents[None], B, axis=0)
                kv = np.concatenate([features, lat], axis=1)
                ok = np.concatenate([feature_padding, np.full((B, R), True)], axis=1)
                s = np.einsum("re,bse->brs", latents @ W_q, np.einsum("bsd,de->bse", kv, W_k))
                s = np.where(ok[:, None, :], s / np.sqrt(W_q.shape[1]), -np.inf)
                w = softmax(s, axis=-1)
                return np.einsum("brs,bse->bre", w, np.einsum("bsd,de->bse", kv, W_v)), w
        """,
        "loops, the latents' keys computed once": """
            def resample(latents, features, W_q, W_k, W_v, feature_padding):
                B, N, _ = features.shape
                R = latents.shape[0]
                q, k_lat, v_lat = latents @ W_q, latents @ W_k, latents @ W_v
                out, w = np.zeros((B, R, W_v.shape[1])), np.zeros((B, R, N + R))
                for b in range(B):
                    k = np.vstack([features[b] @ W_k, k_lat])
                    v = np.vstack([features[b] @ W_v, v_lat])
                    ok = np.concatenate([feature_padding[b], np.ones(R, bool)])
                    for r in range(R):
                        sc = np.where(ok, k @ q[r] / np.sqrt(q.shape[1]), -np.inf)
                        e = np.exp(sc - sc.max())
                        w[b, r] = e / e.sum()
                        out[b, r] = w[b, r] @ v
                return out, w
        """,
        "torch with the chapter's torch": """
            def resample(latents, features, W_q, W_k, W_v, feature_padding):
                lat, f = torch.as_tensor(latents), torch.as_tensor(features)
                B, R = f.shape[0], lat.shape[0]
                kv = torch.cat([f, lat.expand(B, -1, -1)], dim=1)
                ok = torch.cat([torch.as_tensor(feature_padding), torch.ones(B, R, dtype=torch.bool)], dim=1)
                q = lat @ torch.as_tensor(W_q)
                s = (q @ (kv @ torch.as_tensor(W_k)).transpose(1, 2)) / q.shape[-1] ** 0.5
                w = torch.softmax(s.masked_fill(~ok[:, None, :], float("-inf")), dim=-1)
                return (w @ (kv @ torch.as_tensor(W_v))).numpy(), w.numpy()
        """,
        "float32 throughout, a helper in an added cell": [
            """
            def _with_latents(features, latents):
                lat = np.broadcast_to(latents, (features.shape[0],) + latents.shape)
                return np.concatenate([features, lat], axis=1).astype(np.float32)
            """,
            """
            def resample(latents, features, W_q, W_k, W_v, feature_padding):
                kv = _with_latents(features, latents)
                ok = np.pad(feature_padding, ((0, 0), (0, latents.shape[0])), constant_values=True)
                q = latents.astype(np.float32) @ W_q.astype(np.float32)
                s = q @ np.swapaxes(kv @ W_k.astype(np.float32), 1, 2) / np.float32(np.sqrt(q.shape[-1]))
                w = softmax(np.where(ok[:, None, :], s, -np.inf))
                return w @ (kv @ W_v.astype(np.float32)), w
            """,
        ],
    },
    "ch12.packed_cross_mask": {
        "cumulative sums": """
            def packed_cross_mask(src_lengths, tgt_lengths):
                s_end, t_end = np.cumsum(src_lengths), np.cumsum(tgt_lengths)
                mask = np.zeros((t_end[-1], s_end[-1]), dtype=bool)
                for a, b, c, d in zip(t_end - tgt_lengths, t_end, s_end - src_lengths, s_end):
                    mask[a:b, c:d] = True
                return mask
        """,
        "torch with the chapter's torch": """
            def packed_cross_mask(src_lengths, tgt_lengths):
                s = torch.repeat_interleave(torch.arange(len(src_lengths)), torch.tensor(src_lengths))
                t = torch.repeat_interleave(torch.arange(len(tgt_lengths)), torch.tensor(tgt_lengths))
                return (t[:, None] == s[None, :]).numpy()
        """,
        "helper in an added cell, lists": [
            """
            def _labels(lengths):
                return [i for i, n in enumerate(lengths) for _ in range(n)]
            """,
            """
            def packed_cross_mask(src_lengths, tgt_lengths):
                return np.array([[a == b for b in _labels(src_lengths)] for a in _labels(tgt_lengths)])
            """,
        ],
    },
    "ch12.decoder_block": {
        "einsum, helpers in an added cell": [
            """
            def linear(h, W, b):
                return h @ W.T + b

            def norm(h, wb):
                m = h.mean(-1, keepdims=True)
                return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]

            def mha(h, src, w, b, H, keep):
                B, L, d = h.shape
                q = linear(h, w[0], b[0]).reshape(B, L, H, d // H)
                k = linear(src, w[1], b[1]).reshape(B, -1, H, d // H)
                v = linear(src, w[2], b[2]).reshape(B, -1, H, d // H)
                s = np.einsum("blhe,bshe->bhls", q, k) / np.sqrt(d // H)
                a = softmax(np.where(keep[:, None], s, -np.inf))
                return linear(np.einsum("bhls,bshe->blhe", a, v).reshape(B, L, d), w[3], b[3])
            """,
            """
            def decoder_block(x, memory, src_padding, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
                L = x.shape[1]
                x = norm(x + mha(x, x, attn_w[0], attn_b[0], n_heads, np.tri(L, dtype=bool)[None]), norms[0])
                x = norm(x + mha(x, memory, attn_w[1], attn_b[1], n_heads, src_padding[:, None, :]), norms[1])
                return norm(x + linear(np.maximum(linear(x, W1, b1), 0), W2, b2), norms[2])
            """,
        ],
        "torch tensors, heads in a loop": """
            def decoder_block(x, memory, src_padding, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
                T = lambda a: torch.as_tensor(np.asarray(a))
                x, memory, aw, ab = T(x), T(memory), T(attn_w), T(attn_b)
                B, L, d = x.shape
                dh = d // n_heads
                def attend(h, src, i, keep):
                    q = h @ aw[i, 0].T + ab[i, 0]
                    k, v = src @ aw[i, 1].T + ab[i, 1], src @ aw[i, 2].T + ab[i, 2]
                    heads = []
                    for hh in range(n_heads):
                        sl = slice(hh * dh, (hh + 1) * dh)
                        s = q[..., sl] @ k[..., sl].transpose(-1, -2) / dh ** 0.5
                        heads.append(torch.softmax(s.masked_fill(~keep, float("-inf")), -1) @ v[..., sl])
                    return torch.cat(heads, -1) @ aw[i, 3].T + ab[i, 3]
                ln = lambda h, wb: torch.nn.functional.layer_norm(h, (d,), T(wb[0]), T(wb[1]), 1e-5)
                causal = torch.ones(L, L, dtype=torch.bool).tril()[None]
                x = ln(x + attend(x, x, 0, causal), norms[0])
                x = ln(x + attend(x, memory, 1, T(src_padding)[:, None, :]), norms[1])
                h = torch.relu(x @ T(W1).T + T(b1)) @ T(W2).T + T(b2)
                return ln(x + h, norms[2]).numpy()
        """,
        "loops over batch and positions, float32": """
            def decoder_block(x, memory, src_padding, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
                f = lambda a: np.asarray(a, dtype=np.float32)
                x, memory, attn_w, attn_b = f(x), f(memory), f(attn_w), f(attn_b)
                B, L, d = x.shape
                dh = d // n_heads
                def ln(h, wb):
                    return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * f(wb[0]) + f(wb[1])
                def attend(h, src, i, allowed):
                    out = np.zeros_like(h)
                    for b in range(B):
                        q = h[b] @ attn_w[i, 0].T + attn_b[i, 0]
                        k = src[b] @ attn_w[i, 1].T + attn_b[i, 1]
                        v = src[b] @ attn_w[i, 2].T + attn_b[i, 2]
                        for t in range(h.shape[1]):
                            keys = [s for s in range(src.shape[1]) if allowed(b, t, s)]
                            for hh in range(n_heads):
                                sl = slice(hh * dh, (hh + 1) * dh)
                                sc = np.array([q[t, sl] @ k[s, sl] for s in keys]) / np.sqrt(dh)
                                w = np.exp(sc - sc.max()); w /= w.sum()
                                out[b, t, sl] = w @ v[keys, sl]
                    return out @ attn_w[i, 3].T + attn_b[i, 3]
                x = ln(x + attend(x, x, 0, lambda b, t, s: s <= t), norms[0])
                x = ln(x + attend(x, memory, 1, lambda b, t, s: src_padding[b, s]), norms[1])
                return ln(x + np.maximum(x @ f(W1).T + f(b1), 0) @ f(W2).T + f(b2), norms[2])
        """,
    },
    "ch12.decoder_step": {
        "einsum, helpers in an added cell": [
            """
            def linear(h, W, b):
                return h @ W.T + b

            def norm(h, wb):
                m = h.mean(-1, keepdims=True)
                return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]

            def mha(h, src, w, b, H, keep):
                B, L, d = h.shape
                q = linear(h, w[0], b[0]).reshape(B, L, H, d // H)
                k = linear(src, w[1], b[1]).reshape(B, -1, H, d // H)
                v = linear(src, w[2], b[2]).reshape(B, -1, H, d // H)
                s = np.einsum("blhe,bshe->bhls", q, k) / np.sqrt(d // H)
                a = softmax(np.where(keep[:, None], s, -np.inf))
                return linear(np.einsum("bhls,bshe->blhe", a, v).reshape(B, L, d), w[3], b[3])
            """,
            """
            def decoder_step(x_new, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms):
                B, _, d = x_new.shape
                H, dh = n_heads, d // n_heads
                def read(h, K, V, w, b, keep):
                    q = linear(h, w[0], b[0]).reshape(B, 1, H, dh)
                    s = np.einsum("blhe,bshe->bhls", q, K.reshape(B, -1, H, dh)) / np.sqrt(dh)
                    a = softmax(np.where(keep[:, None, None, :], s, -np.inf))
                    return linear(np.einsum("bhls,bshe->blhe", a, V.reshape(B, -1, H, dh)).reshape(B, 1, d), w[3], b[3])
                K = np.concatenate([self_k, linear(x_new, attn_w[0, 1], attn_b[0, 1])], 1)
                V = np.concatenate([self_v, linear(x_new, attn_w[0, 2], attn_b[0, 2])], 1)
                x = norm(x_new + read(x_new, K, V, attn_w[0], attn_b[0], np.ones(K.shape[:2], bool)), norms[0])
                x = norm(x + read(x, cross_k, cross_v, attn_w[1], attn_b[1], src_padding), norms[1])
                return norm(x + linear(np.maximum(linear(x, W1, b1), 0), W2, b2), norms[2]), K, V
            """,
        ],
        "torch, heads as a dimension": """
            def decoder_step(x_new, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms):
                T = lambda a: torch.as_tensor(np.asarray(a))
                x, aw, ab = T(x_new), T(attn_w), T(attn_b)
                B, _, d = x.shape
                heads = lambda a: a.reshape(B, a.shape[1], n_heads, -1).transpose(1, 2)
                def read(h, K, V, i, keep):
                    q = heads(h @ aw[i, 0].T + ab[i, 0])
                    s = (q @ heads(K).transpose(-1, -2)) / (d // n_heads) ** 0.5
                    s = s.masked_fill(~keep[:, None, None, :], float("-inf"))
                    o = (torch.softmax(s, -1) @ heads(V)).transpose(1, 2).reshape(B, 1, d)
                    return o @ aw[i, 3].T + ab[i, 3]
                K = torch.cat([T(self_k), x @ aw[0, 1].T + ab[0, 1]], 1)
                V = torch.cat([T(self_v), x @ aw[0, 2].T + ab[0, 2]], 1)
                ln = lambda h, wb: torch.nn.functional.layer_norm(h, (d,), T(wb[0]), T(wb[1]), 1e-5)
                x = ln(x + read(x, K, V, 0, torch.ones(K.shape[:2], dtype=torch.bool)), norms[0])
                x = ln(x + read(x, T(cross_k), T(cross_v), 1, T(src_padding)), norms[1])
                x = ln(x + torch.relu(x @ T(W1).T + T(b1)) @ T(W2).T + T(b2), norms[2])
                return x.numpy(), K.numpy(), V.numpy()
        """,
        "a loop over the heads, float32": """
            def decoder_step(x_new, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms):
                f = lambda a: np.asarray(a, dtype=np.float32)
                x, aw, ab = f(x_new), f(attn_w), f(attn_b)
                d = x.shape[-1]
                dh = d // n_heads
                ln = lambda h, wb: (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * f(wb[0]) + f(wb[1])
                def read(h, K, V, i, keep):
                    q = h @ aw[i, 0].T + ab[i, 0]
                    parts = []
                    for hh in range(n_heads):
                        sl = slice(hh * dh, (hh + 1) * dh)
                        s = q[..., sl] @ np.swapaxes(K[..., sl], -1, -2) / np.sqrt(dh)
                        parts.append(softmax(np.where(keep[:, None, :], s, -np.inf)) @ V[..., sl])
                    return np.concatenate(parts, -1) @ aw[i, 3].T + ab[i, 3]
                K = np.concatenate([f(self_k), x @ aw[0, 1].T + ab[0, 1]], 1)
                V = np.concatenate([f(self_v), x @ aw[0, 2].T + ab[0, 2]], 1)
                x = ln(x + read(x, K, V, 0, np.ones(K.shape[:2], bool)), norms[0])
                x = ln(x + read(x, f(cross_k), f(cross_v), 1, src_padding), norms[1])
                return ln(x + np.maximum(x @ f(W1).T + f(b1), 0) @ f(W2).T + f(b2), norms[2]), K, V
        """,
    },
}

WRONG = {
    "ch12.decoder_block": {
        "pre-norm": [
            """
            def linear(h, W, b):
                return h @ W.T + b

            def norm(h, wb):
                m = h.mean(-1, keepdims=True)
                return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]

            def mha(h, src, w, b, H, keep):
                B, L, d = h.shape
                q = linear(h, w[0], b[0]).reshape(B, L, H, d // H)
                k = linear(src, w[1], b[1]).reshape(B, -1, H, d // H)
                v = linear(src, w[2], b[2]).reshape(B, -1, H, d // H)
                s = np.einsum("blhe,bshe->bhls", q, k) / np.sqrt(d // H)
                a = softmax(np.where(keep[:, None], s, -np.inf))
                return linear(np.einsum("bhls,bshe->blhe", a, v).reshape(B, L, d), w[3], b[3])
            """,
            """
            def decoder_block(x, memory, src_padding, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
                L = x.shape[1]
                x = x + mha(norm(x, norms[0]), norm(x, norms[0]), attn_w[0], attn_b[0], n_heads, np.tri(L, dtype=bool)[None])
                x = x + mha(norm(x, norms[1]), memory, attn_w[1], attn_b[1], n_heads, src_padding[:, None, :])
                return x + linear(np.maximum(linear(norm(x, norms[2]), W1, b1), 0), W2, b2)
            """,
        ],
        "weights used untransposed": """
            def decoder_block(x, memory, src_padding, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
                def ln(h, wb):
                    m = h.mean(-1, keepdims=True)
                    return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]
                def attend(h, src, i, keep):
                    B, L, d = h.shape
                    H = n_heads
                    q = (h @ attn_w[i, 0] + attn_b[i, 0]).reshape(B, L, H, d // H)
                    k = (src @ attn_w[i, 1] + attn_b[i, 1]).reshape(B, -1, H, d // H)
                    v = (src @ attn_w[i, 2] + attn_b[i, 2]).reshape(B, -1, H, d // H)
                    s = np.einsum("blhe,bshe->bhls", q, k) / np.sqrt(d // H)
                    a = softmax(np.where(keep[:, None], s, -np.inf))
                    return np.einsum("bhls,bshe->blhe", a, v).reshape(B, L, d) @ attn_w[i, 3] + attn_b[i, 3]
                L = x.shape[1]
                x = ln(x + attend(x, x, 0, np.tri(L, dtype=bool)[None]), norms[0])
                x = ln(x + attend(x, memory, 1, src_padding[:, None, :]), norms[1])
                return ln(x + np.maximum(x @ W1.T + b1, 0) @ W2.T + b2, norms[2])
        """,
        "the padding on the queries": [
            """
            def linear(h, W, b):
                return h @ W.T + b

            def norm(h, wb):
                m = h.mean(-1, keepdims=True)
                return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]

            def mha(h, src, w, b, H, keep):
                B, L, d = h.shape
                q = linear(h, w[0], b[0]).reshape(B, L, H, d // H)
                k = linear(src, w[1], b[1]).reshape(B, -1, H, d // H)
                v = linear(src, w[2], b[2]).reshape(B, -1, H, d // H)
                s = np.einsum("blhe,bshe->bhls", q, k) / np.sqrt(d // H)
                a = softmax(np.where(keep[:, None], s, -np.inf))
                return linear(np.einsum("bhls,bshe->blhe", a, v).reshape(B, L, d), w[3], b[3])
            """,
            """
            def decoder_block(x, memory, src_padding, n_heads, attn_w, attn_b, W1, b1, W2, b2, norms):
                L, S = x.shape[1], memory.shape[1]
                x = norm(x + mha(x, x, attn_w[0], attn_b[0], n_heads, np.tri(L, dtype=bool)[None]), norms[0])
                keep = np.ones((x.shape[0], L, S), dtype=bool)
                x = norm(x + mha(x, memory, attn_w[1], attn_b[1], n_heads, keep), norms[1])
                return norm(x + linear(np.maximum(linear(x, W1, b1), 0), W2, b2), norms[2])
            """,
        ],
    },
    "ch12.decoder_step": {
        "the memory's keys projected again": [
            """
            def linear(h, W, b):
                return h @ W.T + b

            def norm(h, wb):
                m = h.mean(-1, keepdims=True)
                return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]

            def mha(h, src, w, b, H, keep):
                B, L, d = h.shape
                q = linear(h, w[0], b[0]).reshape(B, L, H, d // H)
                k = linear(src, w[1], b[1]).reshape(B, -1, H, d // H)
                v = linear(src, w[2], b[2]).reshape(B, -1, H, d // H)
                s = np.einsum("blhe,bshe->bhls", q, k) / np.sqrt(d // H)
                a = softmax(np.where(keep[:, None], s, -np.inf))
                return linear(np.einsum("bhls,bshe->blhe", a, v).reshape(B, L, d), w[3], b[3])
            """,
            """
            def decoder_step(x_new, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms):
                B, _, d = x_new.shape
                K = np.concatenate([self_k, linear(x_new, attn_w[0, 1], attn_b[0, 1])], 1)
                V = np.concatenate([self_v, linear(x_new, attn_w[0, 2], attn_b[0, 2])], 1)
                src = cross_k  # treated as the memory
                x = norm(x_new + mha(x_new, np.concatenate([self_k, x_new], 1), attn_w[0], attn_b[0], n_heads, np.ones((1, 1, K.shape[1]), bool)), norms[0])
                x = norm(x + mha(x, src, attn_w[1], attn_b[1], n_heads, src_padding[:, None, :]), norms[1])
                return norm(x + linear(np.maximum(linear(x, W1, b1), 0), W2, b2), norms[2]), K, V
            """,
        ],
        "the cache returned without the new token": [
            """            def linear(h, W, b):
                return h @ W.T + b

            def norm(h, wb):
                m = h.mean(-1, keepdims=True)
                return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]
            """,
            """
            def decoder_step(x_new, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms):
                B, _, d = x_new.shape
                H, dh = n_heads, d // n_heads
                def read(h, K, V, w, b, keep):
                    q = linear(h, w[0], b[0]).reshape(B, 1, H, dh)
                    s = np.einsum("blhe,bshe->bhls", q, K.reshape(B, -1, H, dh)) / np.sqrt(dh)
                    a = softmax(np.where(keep[:, None, None, :], s, -np.inf))
                    return linear(np.einsum("bhls,bshe->blhe", a, V.reshape(B, -1, H, dh)).reshape(B, 1, d), w[3], b[3])
                K = np.concatenate([self_k, linear(x_new, attn_w[0, 1], attn_b[0, 1])], 1)
                V = np.concatenate([self_v, linear(x_new, attn_w[0, 2], attn_b[0, 2])], 1)
                x = norm(x_new + read(x_new, K, V, attn_w[0], attn_b[0], np.ones(K.shape[:2], bool)), norms[0])
                x = norm(x + read(x, cross_k, cross_v, attn_w[1], attn_b[1], src_padding), norms[1])
                return norm(x + linear(np.maximum(linear(x, W1, b1), 0), W2, b2), norms[2]), self_k, self_v
            """,
        ],
        "the new token reads only the old cache": """
            def decoder_step(x_new, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms):
                B, _, d = x_new.shape
                dh = d // n_heads
                lin = lambda h, W, b: h @ W.T + b
                ln = lambda h, wb: (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]
                def read(h, K, V, i, keep):
                    q = lin(h, attn_w[i, 0], attn_b[i, 0]).reshape(B, 1, n_heads, dh).transpose(0, 2, 1, 3)
                    Kh = K.reshape(B, -1, n_heads, dh).transpose(0, 2, 1, 3)
                    Vh = V.reshape(B, -1, n_heads, dh).transpose(0, 2, 1, 3)
                    a = softmax(np.where(keep[:, None, None, :], q @ Kh.transpose(0, 1, 3, 2) / np.sqrt(dh), -np.inf))
                    return lin((a @ Vh).transpose(0, 2, 1, 3).reshape(B, 1, d), attn_w[i, 3], attn_b[i, 3])
                x = ln(x_new + read(x_new, self_k, self_v, 0, np.ones(self_k.shape[:2], bool)), norms[0])
                x = ln(x + read(x, cross_k, cross_v, 1, src_padding), norms[1])
                x = ln(x + lin(np.maximum(lin(x, W1, b1), 0), W2, b2), norms[2])
                K = np.concatenate([self_k, lin(x_new, attn_w[0, 1], attn_b[0, 1])], 1)
                V = np.concatenate([self_v, lin(x_new, attn_w[0, 2], attn_b[0, 2])], 1)
                return x, K, V
        """,
    },
    "ch12.predict_cross_kv_cost": {
        "d_model once, not squared": """
            def predict_cross_kv_cost():
                return 6 * 2 * 1000 * 512
        """,
        "the cost of one source token": """
            def predict_cross_kv_cost():
                return 6 * 2 * 512 * 512
        """,
    },
    "ch12.interleaved_image_attention": {
        "every earlier image read": """
            def image_cross_attention(q, k, v, is_image, latent_image, gate):
                cur = np.cumsum(is_image, axis=-1) - 1
                ok = (latent_image[:, None, :] >= 0) & (latent_image[:, None, :] <= cur[:, :, None])
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(ok, s, -np.inf))
                return np.tanh(gate) * (w @ v), w
        """,
        "the gate used as it is": """
            def image_cross_attention(q, k, v, is_image, latent_image, gate):
                cur = np.cumsum(is_image, axis=-1) - 1
                ok = (latent_image[:, None, :] == cur[:, :, None]) & (cur[:, :, None] >= 0)
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(ok, s, -np.inf))
                return gate * (w @ v), w
        """,
        "images numbered from the marker count": """
            def image_cross_attention(q, k, v, is_image, latent_image, gate):
                cur = np.cumsum(is_image, axis=-1)
                ok = (latent_image[:, None, :] == cur[:, :, None])
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(np.where(ok, s, -np.inf))
                return np.tanh(gate) * (w @ v), w
        """,
        "NaN before the first image": """
            def image_cross_attention(q, k, v, is_image, latent_image, gate):
                cur = np.cumsum(is_image, axis=-1) - 1
                ok = latent_image[:, None, :] == cur[:, :, None]
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                s = np.where(ok, s, -np.inf)
                e = np.exp(s - s.max(-1, keepdims=True))
                w = e / e.sum(-1, keepdims=True)
                return np.tanh(gate) * (w @ v), w
        """,
    },
    "ch12.prefix_decoder_mask": {
        "the bug kept": """
            def prefix_mask(S, L):
                i = np.arange(S + L)[:, None]
                j = np.arange(S + L)[None, :]
                return (j <= i) | (i < S)
        """,
        "the target cannot read the source": """
            def prefix_mask(S, L):
                i = np.arange(S + L)[:, None]
                j = np.arange(S + L)[None, :]
                return ((i < S) & (j < S)) | ((i >= S) & (j >= S) & (j <= i))
        """,
    },
    "ch12.remove_source_tokens": {
        "renormalised over every token": """
            def remove_source_tokens(weights, v, keep):
                w = weights * keep[:, None, :]
                w = w / weights.sum(-1, keepdims=True)
                return w @ v, w
        """,
        "nan for an empty row": """
            def remove_source_tokens(weights, v, keep):
                w = weights * keep[:, None, :]
                with np.errstate(invalid="ignore"):
                    w = w / w.sum(-1, keepdims=True)
                return w @ v, w
        """,
    },
    "ch12.latent_resampler": {
        "keys from the features only, zero-padded to N + R": """
            def resample(latents, features, W_q, W_k, W_v, feature_padding):
                B, N, _ = features.shape
                R = latents.shape[0]
                s = (latents @ W_q) @ np.swapaxes(features @ W_k, 1, 2) / np.sqrt(W_q.shape[1])
                w = softmax(np.where(feature_padding[:, None, :], s, -np.inf))
                w = np.concatenate([w, np.zeros((B, R, R))], axis=2)
                return w[..., :N] @ (features @ W_v), w
        """,
        "the latents before the features": """
            def resample(latents, features, W_q, W_k, W_v, feature_padding):
                B, R = features.shape[0], latents.shape[0]
                kv = np.concatenate([np.broadcast_to(latents, (B,) + latents.shape), features], axis=1)
                ok = np.concatenate([np.ones((B, R), bool), feature_padding], axis=1)
                s = (latents @ W_q) @ np.swapaxes(kv @ W_k, 1, 2) / np.sqrt(W_q.shape[1])
                w = softmax(np.where(ok[:, None, :], s, -np.inf))
                return w @ (kv @ W_v), w
        """,
        "the padding over every key": """
            def resample(latents, features, W_q, W_k, W_v, feature_padding):
                B, N = feature_padding.shape
                R = latents.shape[0]
                kv = np.concatenate([features, np.broadcast_to(latents, (B,) + latents.shape)], axis=1)
                ok = np.concatenate([feature_padding, np.tile(feature_padding[:, -1:], (1, R))], axis=1)
                s = (latents @ W_q) @ np.swapaxes(kv @ W_k, 1, 2) / np.sqrt(W_q.shape[1])
                w = softmax(np.where(ok[:, None, :], s, -np.inf))
                return w @ (kv @ W_v), w
        """,
    },
    "ch12.packed_cross_mask": {
        "a block diagonal of the source lengths only": """
            def packed_cross_mask(src_lengths, tgt_lengths):
                s = np.repeat(np.arange(len(src_lengths)), src_lengths)
                return s[:, None] == s[None, :]
        """,
        "example labels off by one": """
            def packed_cross_mask(src_lengths, tgt_lengths):
                s = np.repeat(np.arange(len(src_lengths)), src_lengths)
                t = np.repeat(np.arange(len(tgt_lengths)), tgt_lengths)
                return t[:, None] <= s[None, :]
        """,
    },
}
