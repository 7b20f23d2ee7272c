"""Chapter 11 (today's attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch11.predict_cache_gib": {
        "an expression with the chapter's math import": """
            def predict_cache_gib():
                return 2 * 8 * 256 * 2 * (8 * 131072 + 40 * 4096) / math.pow(2, 30)
        """,
        "the literal": """
            def predict_cache_gib():
                return 9.25
        """,
        "a numpy float32": """
            def predict_cache_gib():
                return np.float32(8 * 1024) * np.float32(8 * 131072 + 40 * 4096) / np.float32(2**30)
        """,
        "helper in an added cell": [
            """
            def _layer_bytes(tokens, kv_heads=8, width=256, nbytes=2):
                return 2 * kv_heads * width * nbytes * tokens
            """,
            """
            def predict_cache_gib():
                return (8 * _layer_bytes(131072) + 40 * _layer_bytes(min(4096, 131072))) / 2**30
            """,
        ],
    },
    "ch11.mha_to_gqa": {
        "loops over groups": """
            def mha_to_gqa(W, H, H_kv):
                d = W.shape[0] // H
                G = H // H_kv
                rows = []
                for g in range(H_kv):
                    block = sum(W[h * d : (h + 1) * d] for h in range(g * G, (g + 1) * G)) / G
                    rows.append(block)
                return np.concatenate(rows, axis=0)
        """,
        "einsum over the group axis": """
            def mha_to_gqa(W, H, H_kv):
                d_model = W.shape[1]
                heads = W.reshape(H_kv, H // H_kv, -1, d_model)
                return np.einsum("kgdm->kdm", heads).reshape(-1, d_model) / (H // H_kv)
        """,
        "torch with the chapter's torch": """
            def mha_to_gqa(W, H, H_kv):
                t = torch.as_tensor(W)
                return t.unflatten(0, (H_kv, H // H_kv, -1)).mean(dim=1).flatten(0, 1)
        """,
    },
    "ch11.window_sink_chunk": {
        "torch with the chapter's torch import": """
            def window_sink_chunk(L, S, window, n_sinks):
                i = torch.arange(S - L, S)[:, None]
                j = torch.arange(S)[None, :]
                return (j <= i) & ((i - j < window) | (j < n_sinks))
        """,
        "loops": """
            def window_sink_chunk(L, S, window, n_sinks):
                mask = np.zeros((L, S), dtype=bool)
                for row in range(L):
                    pos = S - L + row
                    for j in range(pos + 1):
                        mask[row, j] = j > pos - window or j < n_sinks
                return mask
        """,
        "helper in an added cell: the last L rows of a full mask": [
            """
            def _full_window_sink_mask(S, window, n_sinks):
                full = np.tril(np.ones((S, S), dtype=bool))
                band = np.triu(full, k=-(window - 1))
                band[:, :n_sinks] |= full[:, :n_sinks]
                return band
            """,
            """
            def window_sink_chunk(L, S, window, n_sinks):
                return _full_window_sink_mask(S, window, n_sinks)[S - L :]
            """,
        ],
    },
    "ch11.pairs_in_range": {
        "torch with the chapter's torch and math imports": """
            def pairs_in_range(theta, scaled, N, L):
                theta, scaled = torch.as_tensor(theta), torch.as_tensor(scaled)
                trained = (N - 1) * theta
                return ((trained >= 2 * math.pi) | ((L - 1) * scaled <= trained)).numpy()
        """,
        "a loop over pairs, in turns": """
            def pairs_in_range(theta, scaled, N, L):
                out = []
                for t, s in zip(theta, scaled):
                    turns_trained = (N - 1) * t / (2 * np.pi)
                    out.append(bool(turns_trained >= 1 or (L - 1) * s <= (N - 1) * t))
                return np.array(out)
        """,
        "helper in an added cell, as wavelengths": [
            """
            def _wavelength(freq):
                return 2 * np.pi / np.asarray(freq, dtype=np.float64)
            """,
            """
            def pairs_in_range(theta, scaled, N, L):
                lam, lam_new = _wavelength(theta), _wavelength(scaled)
                return (lam <= N - 1) | ((L - 1) / lam_new <= (N - 1) / lam)
            """,
        ],
    },
    "ch11.ring_buffer_decode": {
        "the stub fixed by slicing the written slots": """
            def ring_decode(q, k, v, window):
                K = np.zeros(k.shape[:-2] + (window, k.shape[-1]))
                V = np.zeros(v.shape[:-2] + (window, v.shape[-1]))
                outputs = []
                for t in range(q.shape[-2]):
                    K[..., t % window, :] = k[..., t, :]
                    V[..., t % window, :] = v[..., t, :]
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K[..., : t + 1, :], -1, -2) / np.sqrt(q.shape[-1])
                    outputs.append(softmax(scores) @ V[..., : t + 1, :])
                return np.concatenate(outputs, axis=-2)
        """,
        "empty slots masked to -inf": """
            def ring_decode(q, k, v, window):
                K = np.zeros(k.shape[:-2] + (window, k.shape[-1]))
                V = np.zeros(v.shape[:-2] + (window, v.shape[-1]))
                written = np.zeros(window, dtype=bool)
                outputs = []
                for t in range(q.shape[-2]):
                    K[..., t % window, :] = k[..., t, :]
                    V[..., t % window, :] = v[..., t, :]
                    written[t % window] = True
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                    scores = np.where(written, scores, -np.inf)
                    outputs.append(softmax(scores) @ V)
                return np.concatenate(outputs, axis=-2)
        """,
        "float32 buffers and einsum": """
            def ring_decode(q, k, v, window):
                K = np.zeros(k.shape[:-2] + (window, k.shape[-1]), dtype=np.float32)
                V = np.zeros(v.shape[:-2] + (window, v.shape[-1]), dtype=np.float32)
                outputs = []
                for t in range(q.shape[-2]):
                    K[..., t % window, :] = k[..., t, :]
                    V[..., t % window, :] = v[..., t, :]
                    n = min(t + 1, window)
                    s = np.einsum("...e,...se->...s", q[..., t, :].astype(np.float32), K[..., :n, :])
                    w = softmax(s / np.float32(np.sqrt(q.shape[-1])))
                    outputs.append(np.einsum("...s,...sv->...v", w, V[..., :n, :])[..., None, :])
                return np.concatenate(outputs, axis=-2)
        """,
    },
    "ch11.paged_decode": {
        "token by token through the slot rule": """
            def paged_decode(q, k_pool, v_pool, block_table, length):
                b = k_pool.shape[1]
                K = np.stack([k_pool[block_table[t // b], t % b] for t in range(length)], axis=1)  # (H, T, E)
                V = np.stack([v_pool[block_table[t // b], t % b] for t in range(length)], axis=1)
                w = softmax((K @ q[:, :, None])[..., 0] / math.sqrt(q.shape[-1]))
                return (w[:, None, :] @ V)[:, 0], w
        """,
        "torch with F": """
            def paged_decode(q, k_pool, v_pool, block_table, length):
                kp, vp = torch.as_tensor(k_pool), torch.as_tensor(v_pool)
                idx = torch.as_tensor(block_table)
                K = kp[idx].flatten(0, 1)[:length].transpose(0, 1)  # (H, T, E)
                V = vp[idx].flatten(0, 1)[:length].transpose(0, 1)
                qt = torch.as_tensor(q)[:, None, :]
                w = F.softmax(qt @ K.transpose(-1, -2) / math.sqrt(qt.shape[-1]), dim=-1)
                return (w @ V)[:, 0], w[:, 0]
        """,
        "float32 with concatenated blocks": """
            def paged_decode(q, k_pool, v_pool, block_table, length):
                K = np.concatenate([k_pool[i] for i in block_table], axis=0)[:length].astype(np.float32)
                V = np.concatenate([v_pool[i] for i in block_table], axis=0)[:length].astype(np.float32)
                s = np.einsum("he,the->ht", q.astype(np.float32), K) / np.float32(np.sqrt(q.shape[-1]))
                w = softmax(s)
                return np.einsum("ht,thv->hv", w, V), w
        """,
    },
}

WRONG = {
    "ch11.predict_cache_gib": {
        "GB (10^9 bytes), not GiB, windowed layers forgotten": """
            def predict_cache_gib():
                return 8 * 2 * 8 * 256 * 2 * 131072 / 1e9
        """,
        "every layer windowed": """
            def predict_cache_gib():
                return 48 * 2 * 8 * 256 * 2 * 4096 / 2**30
        """,
    },
    "ch11.mha_to_gqa": {
        "heads h and h + H_kv pooled": """
            def mha_to_gqa(W, H, H_kv):
                d_model = W.shape[1]
                heads = W.reshape(H // H_kv, H_kv, -1, d_model)
                return heads.mean(axis=0).reshape(-1, d_model)
        """,
        "summed": """
            def mha_to_gqa(W, H, H_kv):
                d_model = W.shape[1]
                return W.reshape(H_kv, H // H_kv, -1, d_model).sum(axis=1).reshape(-1, d_model)
        """,
        "the first head of each group": """
            def mha_to_gqa(W, H, H_kv):
                d_model = W.shape[1]
                return W.reshape(H_kv, H // H_kv, -1, d_model)[:, 0].reshape(-1, d_model)
        """,
        "every H // H_kv-th row kept": """
            def mha_to_gqa(W, H, H_kv):
                return W[:: H // H_kv]
        """,
    },
    "ch11.window_sink_chunk": {
        "a window one too wide": """
            def window_sink_chunk(L, S, window, n_sinks):
                i = np.arange(L)[:, None] + (S - L)
                j = np.arange(S)[None, :]
                return (j <= i) & ((j >= i - window) | (j < n_sinks))
        """,
        "one sink too many": """
            def window_sink_chunk(L, S, window, n_sinks):
                i = np.arange(L)[:, None] + (S - L)
                j = np.arange(S)[None, :]
                return (j <= i) & ((j > i - window) | (j <= n_sinks))
        """,
        "the window looks both ways": """
            def window_sink_chunk(L, S, window, n_sinks):
                i = np.arange(L)[:, None] + (S - L)
                j = np.arange(S)[None, :]
                return (np.abs(i - j) < window) | ((j < n_sinks) & (j <= i))
        """,
    },
    "ch11.pairs_in_range": {
        "offsets up to N and L, not N - 1 and L - 1": """
            def pairs_in_range(theta, scaled, N, L):
                return (N * theta >= 2 * np.pi) | (L * scaled <= N * theta)
        """,
        "the ratio of frequencies only": """
            def pairs_in_range(theta, scaled, N, L):
                return scaled <= theta * N / L
        """,
    },
    "ch11.ring_buffer_decode": {
        "the stub as it is": """
            def ring_decode(q, k, v, window):
                K = np.zeros(k.shape[:-2] + (window, k.shape[-1]))
                V = np.zeros(v.shape[:-2] + (window, v.shape[-1]))
                outputs = []
                for t in range(q.shape[-2]):
                    K[..., t % window, :] = k[..., t, :]
                    V[..., t % window, :] = v[..., t, :]
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                    outputs.append(softmax(scores) @ V)
                return np.concatenate(outputs, axis=-2)
        """,
        "slots 0 .. t - 1 only (the newest left out)": """
            def ring_decode(q, k, v, window):
                K = np.zeros(k.shape[:-2] + (window, k.shape[-1]))
                V = np.zeros(v.shape[:-2] + (window, v.shape[-1]))
                outputs = []
                for t in range(q.shape[-2]):
                    n = max(min(t, window), 1)
                    K[..., t % window, :] = k[..., t, :]
                    V[..., t % window, :] = v[..., t, :]
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K[..., :n, :], -1, -2) / np.sqrt(q.shape[-1])
                    outputs.append(softmax(scores) @ V[..., :n, :])
                return np.concatenate(outputs, axis=-2)
        """,
        "a buffer of window - 1 slots": """
            def ring_decode(q, k, v, window):
                w = max(window - 1, 1)
                K = np.zeros(k.shape[:-2] + (w, k.shape[-1]))
                V = np.zeros(v.shape[:-2] + (w, v.shape[-1]))
                outputs = []
                for t in range(q.shape[-2]):
                    K[..., t % w, :] = k[..., t, :]
                    V[..., t % w, :] = v[..., t, :]
                    n = min(t + 1, w)
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K[..., :n, :], -1, -2) / np.sqrt(q.shape[-1])
                    outputs.append(softmax(scores) @ V[..., :n, :])
                return np.concatenate(outputs, axis=-2)
        """,
    },
    "ch11.paged_decode": {
        "blocks read in pool order": """
            def paged_decode(q, k_pool, v_pool, block_table, length):
                table = np.sort(block_table)
                K = k_pool[table].reshape(-1, *k_pool.shape[2:])[:length]
                V = v_pool[table].reshape(-1, *v_pool.shape[2:])[:length]
                w = softmax(np.einsum("he,the->ht", q, K) / np.sqrt(q.shape[-1]))
                return np.einsum("ht,thv->hv", w, V), w
        """,
        "the whole last block attended": """
            def paged_decode(q, k_pool, v_pool, block_table, length):
                K = k_pool[block_table].reshape(-1, *k_pool.shape[2:])
                V = v_pool[block_table].reshape(-1, *v_pool.shape[2:])
                w = softmax(np.einsum("he,the->ht", q, K) / np.sqrt(q.shape[-1]))
                return np.einsum("ht,thv->hv", w, V), w
        """,
        "the first length slots of the pool": """
            def paged_decode(q, k_pool, v_pool, block_table, length):
                K = k_pool.reshape(-1, *k_pool.shape[2:])[:length]
                V = v_pool.reshape(-1, *v_pool.shape[2:])[:length]
                w = softmax(np.einsum("he,the->ht", q, K) / np.sqrt(q.shape[-1]))
                return np.einsum("ht,thv->hv", w, V), w
        """,
        "slot and block swapped": """
            def paged_decode(q, k_pool, v_pool, block_table, length):
                b = k_pool.shape[1]
                n = len(block_table)
                K = np.stack([k_pool[block_table[t % n], (t // n) % b] for t in range(length)])
                V = np.stack([v_pool[block_table[t % n], (t // n) % b] for t in range(length)])
                w = softmax(np.einsum("he,the->ht", q, K) / np.sqrt(q.shape[-1]))
                return np.einsum("ht,thv->hv", w, V), w
        """,
    },
}
