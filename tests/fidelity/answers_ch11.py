"""Chapter 11 (today's attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch11.predict_cache_gib": {
        "an expression with the chapter's math import": """
            def predict_cache_gib():
                return 40 * 2 * 8 * 128 * 2 * 16384 * 4 / math.pow(2, 30)
        """,
        "the literal": """
            def predict_cache_gib():
                return 10
        """,
        "a numpy float32": """
            def predict_cache_gib():
                return np.float32(160 * 1024) * np.float32(65536) / np.float32(2**30)
        """,
        "helper in an added cell": [
            """
            def _kv_bytes_per_token(layers, kv_heads, width, nbytes):
                return layers * 2 * kv_heads * width * nbytes
            """,
            """
            def predict_cache_gib():
                return _kv_bytes_per_token(40, 8, 128, 2) * 16384 * 4 / 2**30
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
    "ch11.scaled_frequencies": {
        "torch with the chapter's torch and math imports": """
            def scaled_frequencies(E, base, factor, L, N):
                exponents = torch.arange(0, E, 2, dtype=torch.float64) / E
                linear = base ** -exponents / factor
                growth = factor * L / N - (factor - 1)
                new_base = base * math.pow(growth, E / (E - 2))
                return linear, new_base ** -exponents
        """,
        "float32 numpy": """
            def scaled_frequencies(E, base, factor, L, N):
                exponents = (np.arange(0, E, 2) / E).astype(np.float32)
                inv = np.exp(-exponents * np.float32(np.log(base)))
                growth = factor * L / N - (factor - 1)
                log_new_base = np.log(base) + E / (E - 2) * np.log(growth)
                return inv / np.float32(factor), np.exp(-exponents * np.float32(log_new_base))
        """,
        "helper in an added cell": [
            """
            def _inv_freq(E, base):
                return np.array([base ** (-2 * i / E) for i in range(E // 2)])
            """,
            """
            def scaled_frequencies(E, base, factor, L, N):
                alpha = (factor * L / N) - (factor - 1)
                return _inv_freq(E, base) / factor, _inv_freq(E, base * alpha ** (E / (E - 2)))
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
                return torch.bmm(torch.as_tensor(W_UV), torch.as_tensor(W_O))
        """,
        "float32 einsum": """
            def absorb_value_side(W_UV, W_O):
                return np.einsum("hrd,hdm->hrm", W_UV.astype(np.float32), W_O.astype(np.float32))
        """,
        "helper in an added cell, a loop over heads": [
            """
            def _absorb_one_head(W_uv_h, W_o_h):
                return W_uv_h @ W_o_h
            """,
            """
            def absorb_value_side(W_UV, W_O):
                return np.stack([_absorb_one_head(a, b) for a, b in zip(W_UV, W_O)])
            """,
        ],
    },
}

WRONG = {
    "ch11.predict_cache_gib": {
        "GB (10^9 bytes), not GiB": """
            def predict_cache_gib():
                return 40 * 2 * 8 * 128 * 2 * 16384 * 4 / 1e9
        """,
        "query heads, keys only": """
            def predict_cache_gib():
                return 40 * 32 * 128 * 2 * 16384 * 4 / 2**30
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
    "ch11.scaled_frequencies": {
        "i / E instead of 2i / E": """
            def scaled_frequencies(E, base, factor, L, N):
                exponents = np.arange(E // 2) / E
                new_base = base * (factor * L / N - (factor - 1)) ** (E / (E - 2))
                return base**-exponents / factor, new_base**-exponents
        """,
        "the growth L / N without the factor": """
            def scaled_frequencies(E, base, factor, L, N):
                exponents = np.arange(0, E, 2) / E
                new_base = base * (L / N) ** (E / (E - 2))
                return base**-exponents / factor, new_base**-exponents
        """,
        "the power applied to the whole base": """
            def scaled_frequencies(E, base, factor, L, N):
                exponents = np.arange(0, E, 2) / E
                new_base = (base * (factor * L / N - (factor - 1))) ** (E / (E - 2))
                return base**-exponents / factor, new_base**-exponents
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
                return np.einsum("hrd,gdm->hrm", W_UV, W_O)
        """,
        "the heads of W_O in reverse": """
            def absorb_value_side(W_UV, W_O):
                return W_UV @ W_O[::-1]
        """,
    },
}
