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
    "ch11.gqa_attention": {
        "torch with the chapter's torch and F": """
            def gqa_attention(q, k, v, mask=None):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                G = q.shape[-3] // k.shape[-3]
                k = torch.repeat_interleave(k, G, dim=-3)
                v = torch.repeat_interleave(v, G, dim=-3)
                s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
                if mask is not None:
                    s = s.masked_fill(~torch.as_tensor(mask), float("-inf"))
                w = F.softmax(s, dim=-1)
                return w @ v, w
        """,
        "float32 numpy, heads grouped by a reshape": """
            def gqa_attention(q, k, v, mask=None):
                *lead, H, L, E = q.shape
                H_kv, S = k.shape[-3], k.shape[-2]
                qg = q.astype(np.float32).reshape(*lead, H_kv, H // H_kv, L, E)  # head h = kv * G + g
                s = np.einsum("...kgle,...kse->...kgls", qg, k.astype(np.float32)) / np.float32(np.sqrt(E))
                s = s.reshape(*lead, H, L, S)
                if mask is not None:
                    s = np.where(mask, s, -np.inf)
                w = softmax(s)
                out = np.einsum("...kgls,...ksv->...kglv", w.reshape(*lead, H_kv, H // H_kv, L, S), v.astype(np.float32))
                return out.reshape(*lead, H, L, v.shape[-1]), w
        """,
        "helper in an added cell with the chapter's ac.softmax": [
            """
            def _expand_kv(t, G):
                *lead, H_kv, S, E = t.shape
                return np.broadcast_to(t[..., None, :, :], (*lead, H_kv, G, S, E)).reshape(*lead, H_kv * G, S, E)
            """,
            """
            def gqa_attention(q, k, v, mask=None):
                G = q.shape[-3] // k.shape[-3]
                k, v = _expand_kv(k, G), _expand_kv(v, G)
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = ac.softmax(s if mask is None else np.where(mask, s, -np.inf))
                return w @ v, w
            """,
        ],
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
    "ch11.fix_rolling_cache": {
        "torch with the chapter's torch and F": """
            def rolling_decode(q, k, v, window):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                keys, values, outputs = [], [], []
                for t in range(q.shape[-2]):
                    keys.append(k[..., t, :])
                    values.append(v[..., t, :])
                    keys, values = keys[-window:], values[-window:]
                    K, V = torch.stack(keys, dim=-2), torch.stack(values, dim=-2)
                    s = q[..., t : t + 1, :] @ K.transpose(-1, -2) / math.sqrt(q.shape[-1])
                    outputs.append(F.softmax(s, dim=-1) @ V)
                return torch.cat(outputs, dim=-2)
        """,
        "float32 numpy": """
            def rolling_decode(q, k, v, window):
                q, k, v = q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)
                keys, values, outputs = [], [], []
                for t in range(q.shape[-2]):
                    keys.append(k[..., t, :])
                    values.append(v[..., t, :])
                    if len(keys) > window:
                        del keys[0], values[0]
                    K, V = np.stack(keys, axis=-2), np.stack(values, axis=-2)
                    s = q[..., t : t + 1, :] @ np.swapaxes(K, -1, -2) / np.float32(np.sqrt(q.shape[-1]))
                    outputs.append(softmax(s) @ V)
                return np.concatenate(outputs, axis=-2)
        """,
        "helper in an added cell: a deque with the chapter's ac.softmax": [
            """
            from collections import deque

            def _rolling_cache(window):
                return deque(maxlen=window), deque(maxlen=window)  # the oldest falls out by itself
            """,
            """
            def rolling_decode(q, k, v, window):
                keys, values = _rolling_cache(window)
                outputs = []
                for t in range(q.shape[-2]):
                    keys.append(k[..., t, :])
                    values.append(v[..., t, :])
                    K, V = np.stack(keys, axis=-2), np.stack(values, axis=-2)
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                    outputs.append(ac.softmax(scores) @ V)
                return np.concatenate(outputs, axis=-2)
            """,
        ],
    },
    "ch11.absorb_value_side": {
        "torch with the chapter's torch import": """
            def absorb_value_side(W_UV, W_O):
                W_UV, W_O = torch.as_tensor(W_UV), torch.as_tensor(W_O)
                H, r, d = W_UV.shape
                return torch.bmm(W_UV, W_O.view(H, d, -1))
        """,
        "float32 einsum": """
            def absorb_value_side(W_UV, W_O):
                H, r, d = W_UV.shape
                blocks = W_O.astype(np.float32).reshape(H, d, W_O.shape[-1])
                return np.einsum("hrd,hdm->hrm", W_UV.astype(np.float32), blocks)
        """,
        "helper in an added cell, a loop over heads": [
            """
            def _absorb_one_head(W_uv_h, W_o, h):
                d = W_uv_h.shape[-1]
                return W_uv_h @ W_o[h * d : (h + 1) * d]
            """,
            """
            def absorb_value_side(W_UV, W_O):
                return np.stack([_absorb_one_head(W_UV[h], W_O, h) for h in range(W_UV.shape[0])])
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
    "ch11.gqa_attention": {
        "np.tile for np.repeat": """
            def gqa_attention(q, k, v, mask=None):
                G = q.shape[-3] // k.shape[-3]
                reps = (1,) * (k.ndim - 3) + (G, 1, 1)
                k, v = np.tile(k, reps), np.tile(v, reps)
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                if mask is not None:
                    s = np.where(mask, s, -np.inf)
                w = softmax(s)
                return w @ v, w
        """,
        "the mask ignored": """
            def gqa_attention(q, k, v, mask=None):
                G = q.shape[-3] // k.shape[-3]
                k, v = np.repeat(k, G, axis=-3), np.repeat(v, G, axis=-3)
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
        "the mask multiplied into the scores": """
            def gqa_attention(q, k, v, mask=None):
                G = q.shape[-3] // k.shape[-3]
                k, v = np.repeat(k, G, axis=-3), np.repeat(v, G, axis=-3)
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                if mask is not None:
                    s = s * mask
                w = softmax(s)
                return w @ v, w
        """,
        "the mask inverted": """
            def gqa_attention(q, k, v, mask=None):
                G = q.shape[-3] // k.shape[-3]
                k, v = np.repeat(k, G, axis=-3), np.repeat(v, G, axis=-3)
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                if mask is not None:
                    s = np.where(mask, -np.inf, s)
                w = softmax(s)
                return w @ v, w
        """,
        "repeated H_kv times instead of H // H_kv": """
            def gqa_attention(q, k, v, mask=None):
                n_kv = k.shape[-3]
                k, v = np.repeat(k, n_kv, axis=-3), np.repeat(v, n_kv, axis=-3)
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                if mask is not None:
                    s = np.where(mask, s, -np.inf)
                w = softmax(s)
                return w @ v, w
        """,
        "heads indexed along axis 1 (ignores leading axes)": """
            def gqa_attention(q, k, v, mask=None):
                G = q.shape[1] // k.shape[1] if q.ndim > 3 else q.shape[0] // k.shape[0]
                axis = 1 if q.ndim > 3 else 0
                k, v = np.repeat(k, G, axis=axis), np.repeat(v, G, axis=axis)
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                if mask is not None:
                    s = np.where(mask, s, -np.inf)
                w = softmax(s)
                return w @ v, w
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
    "ch11.fix_rolling_cache": {
        "stacked along axis 0 (ignores leading axes)": """
            def rolling_decode(q, k, v, window):
                keys, values, outputs = [], [], []
                for t in range(q.shape[-2]):
                    keys.append(k[..., t, :])
                    values.append(v[..., t, :])
                    if len(keys) > window:
                        keys.pop(0)
                        values.pop(0)
                    K, V = np.stack(keys), np.stack(values)
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                    outputs.append(softmax(scores) @ V)
                return np.concatenate(outputs, axis=-2)
        """,
        "the oldest dropped before the newest is added": """
            def rolling_decode(q, k, v, window):
                keys, values, outputs = [], [], []
                for t in range(q.shape[-2]):
                    if len(keys) >= window - 1 and keys:
                        keys.pop(0)
                        values.pop(0)
                    keys.append(k[..., t, :])
                    values.append(v[..., t, :])
                    K, V = np.stack(keys, axis=-2), np.stack(values, axis=-2)
                    scores = q[..., t : t + 1, :] @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                    outputs.append(softmax(scores) @ V)
                return np.concatenate(outputs, axis=-2)
        """,
    },
    "ch11.absorb_value_side": {
        "summed over W_O's heads": """
            def absorb_value_side(W_UV, W_O):
                H, r, d = W_UV.shape
                return np.einsum("hrd,gdm->hrm", W_UV, W_O.reshape(H, d, -1))
        """,
        "the heads of W_O in reverse": """
            def absorb_value_side(W_UV, W_O):
                H, r, d = W_UV.shape
                return W_UV @ W_O.reshape(H, d, -1)[::-1]
        """,
    },
}
