"""Chapter 12 (cross-attention): answers in students' styles, correct and wrong."""

CORRECT = {
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
}

WRONG = {
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


# 12.1, 12.7 and 12.8
NEW_CORRECT = {
    "ch12.predict_beam_cache_bytes": {
        "the literal": """
            def predict_beam_cache_bytes():
                return 1.032e8
        """,
        "per hypothesis and per clip, numpy ints": """
            def predict_beam_cache_bytes():
                per_position = np.int64(2) * 384 * 2  # K and V, float16
                return 4 * per_position * (8 * 1500 + 8 * 5 * 120)
        """,
        "helper in an added cell": [
            """
            def _cache(rows, positions, layers=4, d=384, nbytes=2):
                return layers * 2 * rows * positions * d * nbytes
            """,
            """
            def predict_beam_cache_bytes():
                return _cache(8, 1500) + _cache(40, 120)
            """,
        ],
    },
    "ch12.packed_decoder_block": {
        "numpy, one example at a time, heads in a loop": [
            """
            def ln(h, wb):
                m = h.mean(-1, keepdims=True)
                return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]

            def mha(h, src, w, b, H, mask):
                d = h.shape[-1]
                q, k, v = h @ w[0].T + b[0], src @ w[1].T + b[1], src @ w[2].T + b[2]
                dh = d // H
                outs = []
                for i in range(H):
                    sl = slice(i * dh, (i + 1) * dh)
                    s = q[:, sl] @ k[:, sl].T / np.sqrt(dh)
                    outs.append(softmax(np.where(mask, s, -np.inf)) @ v[:, sl])
                return np.concatenate(outs, -1) @ w[3].T + b[3]
            """,
            """
            def packed_decoder_block(x, memory, tgt_lengths, src_lengths, n_heads,
                                     attn_w, attn_b, W1, b1, W2, b2, norms):
                outs, t0, s0 = [], 0, 0
                for L, S in zip(tgt_lengths, src_lengths):
                    h, m = x[t0:t0 + L], memory[s0:s0 + S]
                    h = ln(h + mha(h, h, attn_w[0], attn_b[0], n_heads, np.tril(np.ones((L, L), bool))), norms[0])
                    h = ln(h + mha(h, m, attn_w[1], attn_b[1], n_heads, np.ones((L, S), bool)), norms[1])
                    h = ln(h + np.maximum(h @ W1.T + b1, 0) @ W2.T + b2, norms[2])
                    outs.append(h)
                    t0, s0 = t0 + L, s0 + S
                return np.concatenate(outs)
            """,
        ],
        "einsum, masks from searchsorted": """
            def packed_decoder_block(x, memory, tgt_lengths, src_lengths, n_heads,
                                     attn_w, attn_b, W1, b1, W2, b2, norms):
                T, d = x.shape
                H, dh = n_heads, d // n_heads
                te = np.searchsorted(np.cumsum(tgt_lengths), np.arange(T), side="right")
                se = np.searchsorted(np.cumsum(src_lengths), np.arange(memory.shape[0]), side="right")
                pos = np.arange(T)
                self_ok = (te[:, None] == te[None, :]) & (pos[None, :] <= pos[:, None])
                cross_ok = te[:, None] == se[None, :]
                def norm(h, wb):
                    return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]
                def attn(h, src, i, ok):
                    q = np.einsum("td,ed->te", h, attn_w[i, 0]) + attn_b[i, 0]
                    k = np.einsum("sd,ed->se", src, attn_w[i, 1]) + attn_b[i, 1]
                    v = np.einsum("sd,ed->se", src, attn_w[i, 2]) + attn_b[i, 2]
                    s = np.einsum("thc,shc->hts", q.reshape(T, H, dh), k.reshape(-1, H, dh), optimize=True) / np.sqrt(dh)
                    a = softmax(np.where(ok[None], s, -np.inf))
                    o = np.einsum("hts,shc->thc", a, v.reshape(-1, H, dh)).reshape(T, d)
                    return o @ attn_w[i, 3].T + attn_b[i, 3]
                x = norm(x + attn(x, x, 0, self_ok), norms[0])
                x = norm(x + attn(x, memory, 1, cross_ok), norms[1])
                return norm(x + np.maximum(x @ W1.T + b1, 0) @ W2.T + b2, norms[2])
        """,
        "torch in float32, boolean masks from example ids": """
            def packed_decoder_block(x, memory, tgt_lengths, src_lengths, n_heads,
                                     attn_w, attn_b, W1, b1, W2, b2, norms):
                f = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float32)
                X, Mem, Aw, Ab = f(x), f(memory), f(attn_w), f(attn_b)
                te = torch.repeat_interleave(torch.arange(len(tgt_lengths)), torch.as_tensor(tgt_lengths))
                se = torch.repeat_interleave(torch.arange(len(src_lengths)), torch.as_tensor(src_lengths))
                T, d = X.shape
                ok_self = (te[:, None] == te[None, :]) & torch.ones(T, T, dtype=torch.bool).tril()
                ok_cross = te[:, None] == se[None, :]
                Nw = f(norms)
                def attn(h, src, i, ok):
                    q, k, v = (z @ Aw[i, j].T + Ab[i, j] for j, z in enumerate((h, src, src)))
                    q, k, v = (z.reshape(z.shape[0], n_heads, -1).transpose(0, 1) for z in (q, k, v))
                    s = (q @ k.transpose(-1, -2)) / (d // n_heads) ** 0.5
                    a = torch.softmax(s.masked_fill(~ok, float("-inf")), -1)
                    return (a @ v).transpose(0, 1).reshape(h.shape) @ Aw[i, 3].T + Ab[i, 3]
                ln = lambda h, i: torch.nn.functional.layer_norm(h, (d,), Nw[i, 0], Nw[i, 1], 1e-5)
                X = ln(X + attn(X, X, 0, ok_self), 0)
                X = ln(X + attn(X, Mem, 1, ok_cross), 1)
                X = ln(X + torch.relu(X @ f(W1).T + f(b1)) @ f(W2).T + f(b2), 2)
                return X.double().numpy()
        """,
    },
    "ch12.beam_decoder_step": {
        "numpy, sources repeated, einsum": """
            def beam_step(x_new, parents, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                          attn_w, attn_b, W1, b1, W2, b2, norms):
                R, _, d = x_new.shape
                K = R // cross_k.shape[0]
                H, dh = n_heads, d // n_heads
                ck, cv, pad = (np.repeat(a, K, axis=0) for a in (cross_k, cross_v, src_padding))
                lin = lambda h, i, j: h @ attn_w[i, j].T + attn_b[i, j]
                Ks = np.concatenate([self_k[parents], lin(x_new, 0, 1)], 1)
                Vs = np.concatenate([self_v[parents], lin(x_new, 0, 2)], 1)
                def read(h, i, Kc, Vc, ok):
                    q = lin(h, i, 0).reshape(R, H, dh)
                    s = np.einsum("rhc,rshc->rhs", q, Kc.reshape(R, -1, H, dh)) / np.sqrt(dh)
                    a = softmax(np.where(ok[:, None, :], s, -np.inf))
                    return np.einsum("rhs,rshc->rhc", a, Vc.reshape(R, -1, H, dh)).reshape(R, 1, d) @ attn_w[i, 3].T + attn_b[i, 3]
                def norm(h, wb):
                    m = h.mean(-1, keepdims=True)
                    return (h - m) / np.sqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]
                x = norm(x_new + read(x_new, 0, Ks, Vs, np.ones(Ks.shape[:2], bool)), norms[0])
                x = norm(x + read(x, 1, ck, cv, pad), norms[1])
                return norm(x + np.maximum(x @ W1.T + b1, 0) @ W2.T + b2, norms[2]), Ks, Vs
        """,
        "one row at a time, heads in a loop": [
            """
            def one_row(x, Kc, Vc, Ck, Cv, keep, H, attn_w, attn_b, W1, b1, W2, b2, norms):
                d = x.shape[-1]
                dh = d // H
                def ln(h, wb):
                    return (h - h.mean()) / np.sqrt(h.var() + 1e-5) * wb[0] + wb[1]
                def read(h, i, Km, Vm, ok):
                    q = attn_w[i, 0] @ h + attn_b[i, 0]
                    out = np.zeros(d)
                    for j in range(H):
                        sl = slice(j * dh, (j + 1) * dh)
                        s = Km[:, sl] @ q[sl] / np.sqrt(dh)
                        out[sl] = softmax(np.where(ok, s, -np.inf)) @ Vm[:, sl]
                    return attn_w[i, 3] @ out + attn_b[i, 3]
                h = ln(x + read(x, 0, Kc, Vc, np.ones(len(Kc), bool)), norms[0])
                h = ln(h + read(h, 1, Ck, Cv, keep), norms[1])
                return ln(h + W2 @ np.maximum(W1 @ h + b1, 0) + b2, norms[2])
            """,
            """
            def beam_step(x_new, parents, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                          attn_w, attn_b, W1, b1, W2, b2, norms):
                R, B = x_new.shape[0], cross_k.shape[0]
                K = R // B
                outs, Ks, Vs = [], [], []
                for r in range(R):
                    x = x_new[r, 0]
                    Kr = np.vstack([self_k[parents[r]], attn_w[0, 1] @ x + attn_b[0, 1]])
                    Vr = np.vstack([self_v[parents[r]], attn_w[0, 2] @ x + attn_b[0, 2]])
                    b = r // K
                    outs.append(one_row(x, Kr, Vr, cross_k[b], cross_v[b], src_padding[b], n_heads,
                                        attn_w, attn_b, W1, b1, W2, b2, norms))
                    Ks.append(Kr)
                    Vs.append(Vr)
                return np.stack(outs)[:, None], np.stack(Ks), np.stack(Vs)
            """,
        ],
        "torch, index_select and repeat_interleave": """
            def beam_step(x_new, parents, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                          attn_w, attn_b, W1, b1, W2, b2, norms):
                t = lambda a: torch.as_tensor(np.asarray(a))
                X, P = t(x_new), t(parents).long()
                Aw, Ab, Nw = t(attn_w), t(attn_b), t(norms)
                R, _, d = X.shape
                K = R // cross_k.shape[0]
                Ck, Cv = (t(a).repeat_interleave(K, 0) for a in (cross_k, cross_v))
                pad = t(src_padding).repeat_interleave(K, 0)
                lin = lambda h, i, j: h @ Aw[i, j].T + Ab[i, j]
                Ks = torch.cat([t(self_k).index_select(0, P), lin(X, 0, 1)], 1)
                Vs = torch.cat([t(self_v).index_select(0, P), lin(X, 0, 2)], 1)
                heads = lambda z: z.reshape(R, z.shape[1], n_heads, -1).transpose(1, 2)
                def read(h, i, Km, Vm, ok):
                    s = heads(lin(h, i, 0)) @ heads(Km).transpose(-1, -2) / (d // n_heads) ** 0.5
                    a = torch.softmax(s.masked_fill(~ok[:, None, None, :], float("-inf")), -1)
                    return (a @ heads(Vm)).transpose(1, 2).reshape(R, 1, d) @ Aw[i, 3].T + Ab[i, 3]
                ln = lambda h, i: torch.nn.functional.layer_norm(h, (d,), Nw[i, 0], Nw[i, 1], 1e-5)
                h = ln(X + read(X, 0, Ks, Vs, torch.ones(Ks.shape[:2], dtype=torch.bool)), 0)
                h = ln(h + read(h, 1, Ck, Cv, pad), 1)
                h = ln(h + torch.relu(h @ t(W1).T + t(b1)) @ t(W2).T + t(b2), 2)
                return h.numpy(), Ks.numpy(), Vs.numpy()
        """,
    },
}

BEAM_HELPER = """
    def _beam(x_new, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
              attn_w, attn_b, W1, b1, W2, b2, norms, source_of, own=True):
        R, _, d = x_new.shape
        src = source_of(R, cross_k.shape[0])
        lin = lambda h, i, j: h @ attn_w[i, j].T + attn_b[i, j]
        Ks = np.concatenate([self_k, lin(x_new, 0, 1)], 1)
        Vs = np.concatenate([self_v, lin(x_new, 0, 2)], 1)
        sp = lambda z: z.reshape(R, z.shape[1], n_heads, -1).transpose(0, 2, 1, 3)
        def read(h, i, Km, Vm, ok):
            s = sp(lin(h, i, 0)) @ sp(Km).transpose(0, 1, 3, 2) / np.sqrt(d // n_heads)
            a = softmax(np.where(ok[:, None, None, :], s, -np.inf))
            return (a @ sp(Vm)).transpose(0, 2, 1, 3).reshape(R, 1, d) @ attn_w[i, 3].T + attn_b[i, 3]
        def norm(h, wb):
            return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]
        Kr, Vr = (Ks, Vs) if own else (self_k, self_v)
        x = norm(x_new + read(x_new, 0, Kr, Vr, np.ones(Kr.shape[:2], bool)), norms[0])
        x = norm(x + read(x, 1, cross_k[src], cross_v[src], src_padding[src]), norms[1])
        return norm(x + np.maximum(x @ W1.T + b1, 0) @ W2.T + b2, norms[2]), Ks, Vs
"""

NEW_WRONG = {
    "ch12.predict_beam_cache_bytes": {
        "a cross-attention cache for every hypothesis": """
            def predict_beam_cache_bytes():
                return 4 * 2 * 384 * 2 * (40 * 1500 + 40 * 120)
        """,
        "float32's 4 bytes": """
            def predict_beam_cache_bytes():
                return 4 * 2 * 384 * 4 * (8 * 1500 + 40 * 120)
        """,
        "the self-attention cache once per clip": """
            def predict_beam_cache_bytes():
                return 4 * 2 * 384 * 2 * (8 * 1500 + 8 * 120)
        """,
    },
    "ch12.packed_decoder_block": {
        "the whole row causal": """
            def packed_decoder_block(x, memory, tgt_lengths, src_lengths, n_heads,
                                     attn_w, attn_b, W1, b1, W2, b2, norms):
                T, d = x.shape
                te = np.repeat(np.arange(len(tgt_lengths)), tgt_lengths)
                se = np.repeat(np.arange(len(src_lengths)), src_lengths)
                def norm(h, wb):
                    return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]
                def attn(h, src, i, ok):
                    sp = lambda a: a.reshape(len(a), n_heads, -1).transpose(1, 0, 2)
                    q, k, v = (sp(z @ attn_w[i, j].T + attn_b[i, j]) for j, z in enumerate((h, src, src)))
                    a = softmax(np.where(ok, q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), -np.inf))
                    return (a @ v).transpose(1, 0, 2).reshape(h.shape) @ attn_w[i, 3].T + attn_b[i, 3]
                x = norm(x + attn(x, x, 0, np.tril(np.ones((T, T), bool))), norms[0])
                x = norm(x + attn(x, memory, 1, te[:, None] == se[None, :]), norms[1])
                return norm(x + np.maximum(x @ W1.T + b1, 0) @ W2.T + b2, norms[2])
        """,
        "every source read": """
            def packed_decoder_block(x, memory, tgt_lengths, src_lengths, n_heads,
                                     attn_w, attn_b, W1, b1, W2, b2, norms):
                T, d = x.shape
                te = np.repeat(np.arange(len(tgt_lengths)), tgt_lengths)
                def norm(h, wb):
                    return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]
                def attn(h, src, i, ok):
                    sp = lambda a: a.reshape(len(a), n_heads, -1).transpose(1, 0, 2)
                    q, k, v = (sp(z @ attn_w[i, j].T + attn_b[i, j]) for j, z in enumerate((h, src, src)))
                    a = softmax(np.where(ok, q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), -np.inf))
                    return (a @ v).transpose(1, 0, 2).reshape(h.shape) @ attn_w[i, 3].T + attn_b[i, 3]
                own = (te[:, None] == te[None, :]) & np.tril(np.ones((T, T), bool))
                x = norm(x + attn(x, x, 0, own), norms[0])
                x = norm(x + attn(x, memory, 1, np.ones((T, len(memory)), bool)), norms[1])
                return norm(x + np.maximum(x @ W1.T + b1, 0) @ W2.T + b2, norms[2])
        """,
        "pre-norm, one example at a time": """
            def packed_decoder_block(x, memory, tgt_lengths, src_lengths, n_heads,
                                     attn_w, attn_b, W1, b1, W2, b2, norms):
                def norm(h, wb):
                    return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * wb[0] + wb[1]
                def attn(h, src, i, ok):
                    sp = lambda a: a.reshape(len(a), n_heads, -1).transpose(1, 0, 2)
                    q, k, v = (sp(z @ attn_w[i, j].T + attn_b[i, j]) for j, z in enumerate((h, src, src)))
                    a = softmax(np.where(ok, q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), -np.inf))
                    return (a @ v).transpose(1, 0, 2).reshape(h.shape) @ attn_w[i, 3].T + attn_b[i, 3]
                outs, t0, s0 = [], 0, 0
                for L, S in zip(tgt_lengths, src_lengths):
                    h, m = x[t0:t0 + L], memory[s0:s0 + S]
                    h = h + attn(norm(h, norms[0]), norm(h, norms[0]), 0, np.tril(np.ones((L, L), bool)))
                    h = h + attn(norm(h, norms[1]), m, 1, np.ones((L, S), bool))
                    z = norm(h, norms[2])
                    outs.append(h + np.maximum(z @ W1.T + b1, 0) @ W2.T + b2)
                    t0, s0 = t0 + L, s0 + S
                return np.concatenate(outs)
        """,
    },
    "ch12.beam_decoder_step": {
        "the cache kept in its rows": [
            BEAM_HELPER,
            """
            def beam_step(x_new, parents, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                          attn_w, attn_b, W1, b1, W2, b2, norms):
                return _beam(x_new, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms, lambda R, B: np.arange(R) // (R // B))
        """,
        ],
        "sources tiled": [
            BEAM_HELPER,
            """
            def beam_step(x_new, parents, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                          attn_w, attn_b, W1, b1, W2, b2, norms):
                return _beam(x_new, self_k[parents], self_v[parents], cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms, lambda R, B: np.arange(R) % B)
        """,
        ],
        "the new token's own key left out": [
            BEAM_HELPER,
            """
            def beam_step(x_new, parents, self_k, self_v, cross_k, cross_v, src_padding, n_heads,
                          attn_w, attn_b, W1, b1, W2, b2, norms):
                return _beam(x_new, self_k[parents], self_v[parents], cross_k, cross_v, src_padding, n_heads,
                             attn_w, attn_b, W1, b1, W2, b2, norms, lambda R, B: np.arange(R) // (R // B), own=False)
        """,
        ],
    },
}

CORRECT.update(NEW_CORRECT)
WRONG.update(NEW_WRONG)
