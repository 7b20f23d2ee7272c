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
    "ch11.kv_head_map": {
        "every pairing at once with einsum": """
            def kv_head_map(q, k, v, out):
                scores = np.einsum("hle,gse->hgls", q, k) / np.sqrt(q.shape[-1])  # (H, H_kv, L, S)
                cand = np.einsum("hgls,gsv->hglv", softmax(scores), v)
                return np.abs(cand - out[:, None]).sum(axis=(-2, -1)).argmin(axis=1)
        """,
        "torch, squared error": """
            def kv_head_map(q, k, v, out):
                qt, kt, vt, ot = (torch.as_tensor(x, dtype=torch.float64) for x in (q, k, v, out))
                w = torch.softmax(qt[:, None] @ kt[None].transpose(-1, -2) / math.sqrt(qt.shape[-1]), dim=-1)
                err = ((w @ vt[None] - ot[:, None]) ** 2).sum(dim=(-2, -1))  # (H, H_kv)
                return err.argmin(dim=1)
        """,
        "float32, first head within a tolerance": """
            def kv_head_map(q, k, v, out):
                q32, k32, v32 = q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)
                found = []
                for h in range(q.shape[0]):
                    for g in range(k.shape[0]):
                        w = softmax(q32[h] @ k32[g].T / np.float32(np.sqrt(q.shape[-1])))
                        if np.allclose(w @ v32[g], out[h], atol=1e-4):
                            found.append(g)
                            break
                return np.array(found)
        """,
    },
    "ch11.stack_reach": {
        "a closed form: w - 1 tokens a windowed layer": """
            def tokens_reached(T, windows, n_sinks):
                pos = np.arange(T)
                if any(int(w) == 0 for w in windows):
                    return np.ones(T, dtype=bool)
                back = sum(int(w) - 1 for w in windows)
                return (pos >= T - 1 - back) | (pos < n_sinks)
        """,
        "torch: boolean products of the masks": """
            def tokens_reached(T, windows, n_sinks):
                i = torch.arange(T)[:, None]
                j = torch.arange(T)[None, :]
                reach = torch.eye(T, dtype=torch.float64)
                for w in windows:  # layer 0 first: reach[a, b] = 1 when b can change a
                    w = int(w)
                    m = (j <= i) if w == 0 else (j <= i) & ((i - j < w) | (j < n_sinks))
                    reach = ((m.double() @ reach) > 0).double()
                return reach[T - 1] > 0
        """,
        "sets of positions, in a helper cell": [
            """
            def _reads(pos, w, n_sinks):
                if w == 0:
                    return set(range(pos + 1))
                return set(range(max(pos - w + 1, 0), pos + 1)) | set(range(min(n_sinks, pos + 1)))
            """,
            """
            def tokens_reached(T, windows, n_sinks):
                reached = {T - 1}
                for w in reversed(list(windows)):
                    reached = set().union(*(_reads(p, int(w), n_sinks) for p in reached))
                return np.array([p in reached for p in range(T)])
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
    "ch11.window_prefill": {
        "the stub fixed: cut after the chunk is scored": """
            def window_prefill(q, k, v, window, chunk):
                K, V = k[..., :0, :], v[..., :0, :]
                outputs = []
                for start in range(0, q.shape[-2], chunk):
                    stop = min(start + chunk, q.shape[-2])
                    K = np.concatenate([K, k[..., start:stop, :]], axis=-2)
                    V = np.concatenate([V, v[..., start:stop, :]], axis=-2)
                    n, c = K.shape[-2], stop - start
                    i = np.arange(c)[:, None] + (n - c)
                    j = np.arange(n)[None, :]
                    scores = q[..., start:stop, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                    scores = np.where((j <= i) & (j > i - window), scores, -np.inf)
                    outputs.append(softmax(scores) @ V)
                    K, V = K[..., -window:, :], V[..., -window:, :]
                return np.concatenate(outputs, axis=-2)
        """,
        "torch, keeping window - 1 tokens and absolute positions": """
            def window_prefill(q, k, v, window, chunk):
                qt, kt, vt = (torch.as_tensor(x) for x in (q, k, v))
                T = qt.shape[-2]
                outs = []
                for start in range(0, T, chunk):
                    stop = min(start + chunk, T)
                    first = max(start - (window - 1), 0)  # the oldest token the chunk's first query needs
                    K, V = kt[..., first:stop, :], vt[..., first:stop, :]
                    pos_q = torch.arange(start, stop)[:, None]
                    pos_k = torch.arange(first, stop)[None, :]
                    keep = (pos_k <= pos_q) & (pos_k > pos_q - window)
                    s = (qt[..., start:stop, :] @ K.transpose(-1, -2)) / math.sqrt(qt.shape[-1])
                    outs.append(torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1) @ V)
                return torch.cat(outs, dim=-2)
        """,
        "float32, token by token inside each chunk": """
            def window_prefill(q, k, v, window, chunk):
                q32, k32, v32 = (x.astype(np.float32) for x in (q, k, v))
                T = q.shape[-2]
                out = np.zeros(q.shape[:-1] + (v.shape[-1],), dtype=np.float32)
                for start in range(0, T, chunk):
                    for t in range(start, min(start + chunk, T)):
                        lo = max(t - window + 1, 0)
                        s = np.einsum("...e,...se->...s", q32[..., t, :], k32[..., lo : t + 1, :])
                        w = softmax(s / np.float32(np.sqrt(q.shape[-1])))
                        out[..., t, :] = np.einsum("...s,...sv->...v", w, v32[..., lo : t + 1, :])
                return out
        """,
    },
    "ch11.recover_block_table": {
        "loops over blocks and slots": """
            def recover_block_table(k_pool, k):
                n_blocks, b = k_pool.shape[:2]
                table = []
                for m in range((k.shape[0] + b - 1) // b):
                    for p in range(n_blocks):
                        if all(np.array_equal(k_pool[p, s], k[m * b + s]) for s in range(min(b, k.shape[0] - m * b))):
                            table.append(p)
                            break
                return np.array(table, dtype=np.int64)
        """,
        "torch, padded with the pool's own slots": """
            def recover_block_table(k_pool, k):
                pool, keys = torch.as_tensor(k_pool), torch.as_tensor(k)
                b, length = pool.shape[1], keys.shape[0]
                n = -(-length // b)
                filled = torch.arange(n * b) < length  # (n * b,): slots the sequence fills
                blocks = torch.zeros(n * b, *keys.shape[1:], dtype=keys.dtype)
                blocks[:length] = keys
                blocks, filled = blocks.view(n, b, *keys.shape[1:]), filled.view(n, b)
                same = (pool[None] == blocks[:, None]).flatten(3).all(-1)  # (n, n_blocks, b)
                fits = (same | ~filled[:, None]).all(-1)  # (n, n_blocks)
                return fits.int().argmax(dim=1)
        """,
        "float32 with allclose and a helper in an added cell": [
            """
            def _holder(k_pool, tokens):
                for p in range(k_pool.shape[0]):
                    if np.allclose(k_pool[p, : len(tokens)].astype(np.float32), tokens.astype(np.float32)):
                        return p
                raise ValueError("no block holds these tokens")
            """,
            """
            def recover_block_table(k_pool, k):
                b = k_pool.shape[1]
                return np.array([_holder(k_pool, k[s : s + b]) for s in range(0, len(k), b)])
            """,
        ],
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
    "ch11.kv_head_map": {
        "the chapter's pairing assumed": """
            def kv_head_map(q, k, v, out):
                return np.arange(q.shape[0]) // (q.shape[0] // k.shape[0])
        """,
        "heads dealt out in turn": """
            def kv_head_map(q, k, v, out):
                return np.arange(q.shape[0]) % k.shape[0]
        """,
        "the key head most aligned with the queries": """
            def kv_head_map(q, k, v, out):
                return np.einsum("hle,gse->hg", q, k).argmax(axis=1)
        """,
        "the value head whose mean is nearest the output": """
            def kv_head_map(q, k, v, out):
                return np.abs(out.mean(1)[:, None] - v.mean(1)[None]).sum(-1).argmin(axis=1)
        """,
        "the better of the two usual pairings, checked against out": """
            def kv_head_map(q, k, v, out):
                H, H_kv = q.shape[0], k.shape[0]
                best, best_err = None, np.inf
                for pairing in (np.arange(H) // (H // H_kv), np.arange(H) % H_kv):
                    scores = q @ np.swapaxes(k[pairing], -1, -2) / np.sqrt(q.shape[-1])
                    err = np.abs(softmax(scores) @ v[pairing] - out).max()
                    if err < best_err:
                        best, best_err = pairing, err
                return best
        """,
    },
    "ch11.stack_reach": {
        "w tokens back per layer": """
            def tokens_reached(T, windows, n_sinks):
                pos = np.arange(T)
                if 0 in list(windows):
                    return np.ones(T, dtype=bool)
                return (pos >= T - 1 - int(np.sum(windows))) | (pos < n_sinks)
        """,
        "the sinks left out": """
            def tokens_reached(T, windows, n_sinks):
                pos = np.arange(T)
                if 0 in list(windows):
                    return np.ones(T, dtype=bool)
                return pos >= T - 1 - int(np.sum(np.asarray(windows) - 1))
        """,
        "the last layer's mask row": """
            def tokens_reached(T, windows, n_sinks):
                pos = np.arange(T)
                w = int(windows[-1])
                if w == 0:
                    return np.ones(T, dtype=bool)
                return (pos > T - 1 - w) | (pos < n_sinks)
        """,
        "a full layer read as a window of 0": """
            def tokens_reached(T, windows, n_sinks):
                i, j = np.arange(T)[:, None], np.arange(T)[None, :]
                reached = np.arange(T) == T - 1
                for w in windows[::-1]:
                    reached = ((j <= i) & ((j > i - w) | (j < n_sinks)))[reached].any(axis=0)
                return reached
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
    "ch11.window_prefill": {
        "the stub as it is": """
            def window_prefill(q, k, v, window, chunk):
                K, V = k[..., :0, :], v[..., :0, :]
                outputs = []
                for start in range(0, q.shape[-2], chunk):
                    stop = min(start + chunk, q.shape[-2])
                    K = np.concatenate([K, k[..., start:stop, :]], axis=-2)[..., -window:, :]
                    V = np.concatenate([V, v[..., start:stop, :]], axis=-2)[..., -window:, :]
                    n, c = K.shape[-2], stop - start
                    i = np.arange(c)[:, None] + (n - c)
                    j = np.arange(n)[None, :]
                    scores = q[..., start:stop, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                    scores = np.where((j <= i) & (j > i - window), scores, -np.inf)
                    outputs.append(softmax(scores) @ V)
                return np.concatenate(outputs, axis=-2)
        """,
        "cut after, but the window counts one key more": """
            def window_prefill(q, k, v, window, chunk):
                K, V = k[..., :0, :], v[..., :0, :]
                outputs = []
                for start in range(0, q.shape[-2], chunk):
                    stop = min(start + chunk, q.shape[-2])
                    K = np.concatenate([K, k[..., start:stop, :]], axis=-2)
                    V = np.concatenate([V, v[..., start:stop, :]], axis=-2)
                    n, c = K.shape[-2], stop - start
                    i = np.arange(c)[:, None] + (n - c)
                    j = np.arange(n)[None, :]
                    scores = q[..., start:stop, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                    scores = np.where((j <= i) & (j >= i - window), scores, -np.inf)
                    outputs.append(softmax(scores) @ V)
                    K, V = K[..., -window:, :], V[..., -window:, :]
                return np.concatenate(outputs, axis=-2)
        """,
        "cut after, the chunk placed at the start": """
            def window_prefill(q, k, v, window, chunk):
                K, V = k[..., :0, :], v[..., :0, :]
                outputs = []
                for start in range(0, q.shape[-2], chunk):
                    stop = min(start + chunk, q.shape[-2])
                    K = np.concatenate([K, k[..., start:stop, :]], axis=-2)
                    V = np.concatenate([V, v[..., start:stop, :]], axis=-2)
                    n, c = K.shape[-2], stop - start
                    i = np.arange(c)[:, None]
                    j = np.arange(n)[None, :]
                    scores = q[..., start:stop, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                    scores = np.where((j <= i) & (j > i - window), scores, -np.inf)
                    outputs.append(softmax(scores) @ V)
                    K, V = K[..., -window:, :], V[..., -window:, :]
                return np.concatenate(outputs, axis=-2)
        """,
        "causal attention without the window": """
            def window_prefill(q, k, v, window, chunk):
                T = q.shape[-2]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
                return softmax(scores) @ v
        """,
    },
    "ch11.recover_block_table": {
        "the matching blocks in pool order": """
            def recover_block_table(k_pool, k):
                b = k_pool.shape[1]
                hits = set()
                for s in range(0, len(k), b):
                    tokens = k[s : s + b]
                    hits |= {p for p in range(len(k_pool)) if np.array_equal(k_pool[p, : len(tokens)], tokens)}
                return np.array(sorted(hits))
        """,
        "each block's first slot compared": """
            def recover_block_table(k_pool, k):
                b = k_pool.shape[1]
                return np.array(
                    [int(np.argmax(np.all(k_pool[:, 0] == k[s], axis=(1, 2)))) for s in range(0, len(k), b)]
                )
        """,
        "whole blocks compared": """
            def recover_block_table(k_pool, k):
                b = k_pool.shape[1]
                table = []
                for s in range(0, len(k), b):
                    for p in range(len(k_pool)):
                        if k_pool[p].shape == k[s : s + b].shape and np.array_equal(k_pool[p], k[s : s + b]):
                            table.append(p)
                return np.array(table)
        """,
    },
}
