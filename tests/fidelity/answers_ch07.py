"""Chapter 7 (positional encoding): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch07.rope_left_padded": {
        "torch with the chapter's torch import": """
            def rope_left_padded(x, lengths):
                x = torch.as_tensor(x)
                B, L, E = x.shape
                pos = torch.arange(L)[None, :] - (L - torch.as_tensor(lengths))[:, None]
                real = pos >= 0
                inv = 10000.0 ** (-torch.arange(0, E, 2, dtype=torch.float64) / E)
                ang = pos.clamp(min=0)[..., None].double() * inv
                cos, sin = torch.cos(ang).repeat(1, 1, 2), torch.sin(ang).repeat(1, 1, 2)
                rot = torch.cat([-x[..., E // 2:], x[..., :E // 2]], dim=-1)
                return torch.where(real[..., None], (x * cos + rot * sin).to(x.dtype), x)
        """,
        "float32, one row at a time, complex numbers": """
            def rope_left_padded(x, lengths):
                x = np.asarray(x, dtype=np.float32)
                B, L, E = x.shape
                out = x.copy()
                inv = 10000.0 ** (-2 * np.arange(E // 2) / E)
                for b in range(B):
                    n = int(lengths[b])
                    if n == 0:
                        continue
                    z = x[b, L - n:, :E // 2] + 1j * x[b, L - n:, E // 2:]
                    z = z * np.exp(1j * np.arange(n)[:, None] * inv)
                    out[b, L - n:] = np.concatenate([z.real, z.imag], axis=-1)
                return out
        """,
        "helper in an added cell, loops over tokens and pairs": [
            """
            def _turn_71(a, b, angle):
                return a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)
            """,
            """
            def rope_left_padded(x, lengths):
                B, L, E = x.shape
                out = np.array(x, dtype=float)
                for b in range(B):
                    pad = L - int(lengths[b])
                    for t in range(pad, L):
                        for i in range(E // 2):
                            out[b, t, i], out[b, t, i + E // 2] = _turn_71(x[b, t, i], x[b, t, i + E // 2], (t - pad) * 10000.0 ** (-2 * i / E))
                return out
            """,
        ],
    },
    "ch07.rotation_angles": {
        "torch with the chapter's torch import": """
            def rotation_angles(positions, E):
                inv_freq = 10000.0 ** (-torch.arange(0, E, 2, dtype=torch.float64) / E)
                return torch.as_tensor(positions, dtype=torch.float64)[:, None] * inv_freq
        """,
        "float32 outer product": """
            def rotation_angles(positions, E):
                inv_freq = (1.0 / 10000 ** (np.arange(0, E, 2) / E)).astype(np.float32)
                return np.outer(np.asarray(positions, dtype=np.float32), inv_freq)
        """,
        "helper in an added cell, einsum": [
            """
            def _rot_inv_freq(E):
                return np.array([10000.0 ** (-2 * i / E) for i in range(E // 2)])
            """,
            """
            def rotation_angles(positions, E):
                return np.einsum("l,f->lf", np.asarray(positions, dtype=float), _rot_inv_freq(E))
            """,
        ],
    },
    "ch07.rope_2d": {
        "torch with the chapter's torch import": """
            def rope_2d(x, rows, cols):
                xt = torch.as_tensor(x)
                E = xt.shape[-1]
                w = E // 2
                outs = []
                for part, pos in ((xt[..., :w], rows), (xt[..., w:], cols)):
                    inv = 10000.0 ** (-2 * torch.arange(w // 2, dtype=torch.float64) / w)
                    ang = torch.as_tensor(pos, dtype=torch.float64)[:, None] * inv
                    cos, sin = torch.cos(ang).to(xt.dtype), torch.sin(ang).to(xt.dtype)
                    a, b = part[..., : w // 2], part[..., w // 2:]
                    outs += [a * cos - b * sin, b * cos + a * sin]
                return torch.cat(outs, dim=-1)
        """,
        "float32, one rotation for both halves with stacked angles": """
            def rope_2d(x, rows, cols):
                x = np.asarray(x, dtype=np.float32)
                E = x.shape[-1]
                q = E // 4
                inv = (10000.0 ** (-4 * np.arange(q) / E)).astype(np.float32)
                ar = np.asarray(rows, dtype=np.float32)[:, None] * inv
                ac_ = np.asarray(cols, dtype=np.float32)[:, None] * inv
                ang = np.concatenate([ar, ar, ac_, ac_], axis=-1)  # (N, E)
                parts = [x[..., i * q:(i + 1) * q] for i in range(4)]
                turned = np.concatenate([-parts[1], parts[0], -parts[3], parts[2]], axis=-1)
                return x * np.cos(ang) + turned * np.sin(ang)
        """,
        "helper in an added cell": [
            """
            def _rope_part(part, pos):
                w = part.shape[-1]
                out = np.array(part, dtype=float)
                for i in range(w // 2):
                    a = np.asarray(pos, dtype=float) * 10000.0 ** (-2 * i / w)
                    out[..., i] = part[..., i] * np.cos(a) - part[..., i + w // 2] * np.sin(a)
                    out[..., i + w // 2] = part[..., i] * np.sin(a) + part[..., i + w // 2] * np.cos(a)
                return out
            """,
            """
            def rope_2d(x, rows, cols):
                h = x.shape[-1] // 2
                return np.concatenate([_rope_part(x[..., :h], rows), _rope_part(x[..., h:], cols)], axis=-1)
            """,
        ],
    },
    "ch07.alibi_slopes": {
        "torch with the chapter's torch import": """
            def alibi_slopes(n_heads):
                c = 2 ** int(np.floor(np.log2(n_heads)))
                base = torch.tensor([2.0 ** (-8.0 * (h + 1) / c) for h in range(c)], dtype=torch.float64)
                extra = torch.tensor([2.0 ** (-8.0 * (2 * j + 1) / (2 * c)) for j in range(n_heads - c)], dtype=torch.float64)
                return torch.cat([base, extra])
        """,
        "float32 from the ratio, as BLOOM writes it": """
            def alibi_slopes(n_heads):
                c = 1 << (n_heads.bit_length() - 1)
                start = np.float32(2.0 ** (-8.0 / c))
                slopes = [start ** (h + 1) for h in range(c)]
                start2 = np.float32(2.0 ** (-4.0 / c))
                slopes += [start2 ** (2 * j + 1) for j in range(n_heads - c)]
                return np.array(slopes, dtype=np.float32)
        """,
        "helper in an added cell, recursive": [
            """
            def _slopes_74(m):
                if float(np.log2(m)).is_integer():
                    return [2.0 ** (-8.0 * (h + 1) / m) for h in range(m)]
                c = 2 ** int(np.floor(np.log2(m)))
                return _slopes_74(c) + _slopes_74(2 * c)[0::2][: m - c]
            """,
            """
            def alibi_slopes(n_heads):
                return np.array(_slopes_74(n_heads))
            """,
        ],
    },
    "ch07.alibi_attention": {
        "torch with the chapter's torch import": """
            def alibi_attention(q, k, v):
                q, k, v = (torch.as_tensor(a, dtype=torch.float64) for a in (q, k, v))
                H, L = q.shape[-3], q.shape[-2]
                slopes = 2.0 ** (-8.0 * torch.arange(1, H + 1, dtype=torch.float64) / H)
                i = torch.arange(L)[:, None]
                j = torch.arange(L)[None, :]
                scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 - slopes[:, None, None] * (i - j)
                scores = scores.masked_fill(j > i, float("-inf"))
                weights = torch.softmax(scores, dim=-1)
                return weights @ v, weights
        """,
        "float32 numpy with the chapter's ac.softmax": """
            def alibi_attention(q, k, v):
                q, k, v = (np.asarray(a, dtype=np.float32) for a in (q, k, v))
                H, L, d = q.shape[-3], q.shape[-2], q.shape[-1]
                slopes = np.array([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], dtype=np.float32)
                dist = np.subtract.outer(np.arange(L), np.arange(L)).astype(np.float32)
                scores = np.einsum("bhld,bhsd->bhls", q, k) / np.float32(np.sqrt(d)) - slopes[:, None, None] * dist
                scores[..., dist < 0] = -np.inf
                weights = ac.softmax(scores)
                return weights @ v, weights
        """,
        "helper in an added cell": [
            """
            def _alibi_bias(H, L):
                slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
                dist = np.arange(L)[:, None] - np.arange(L)[None, :]
                bias = -slopes[:, None, None] * dist
                return np.where(dist >= 0, bias, -np.inf)  # (H, L, L), -inf above the diagonal
            """,
            """
            def alibi_attention(q, k, v):
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) + _alibi_bias(q.shape[-3], q.shape[-2])
                weights = softmax(scores, axis=-1)
                return weights @ v, weights
            """,
        ],
    },
    "ch07.rope_position": {
        "torch with the chapter's torch import: the slowest pair's angle": """
            def rope_position(x, y):
                x, y = torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64)
                E = x.shape[-1]
                h = E // 2
                theta = 10000.0 ** (-(E - 2) / E)
                a = torch.atan2(y[..., E - 1], y[..., h - 1]) - torch.atan2(x[..., E - 1], x[..., h - 1])
                a = torch.remainder(a, 2 * torch.pi)
                return torch.round(a / theta).long()
        """,
        "float32 loops: try every position with a hand-written RoPE": """
            def rope_position(x, y):
                x, y = np.asarray(x, dtype=np.float32), np.asarray(y, dtype=np.float32)
                E = x.shape[-1]
                h = E // 2
                freq = 10000.0 ** (-np.arange(h) / h)
                xs, ys = x.reshape(-1, E), y.reshape(-1, E)
                found = []
                for xv, yv in zip(xs, ys):
                    best, best_err = 0, np.inf
                    for p in range(2000):
                        c, s = np.cos(p * freq), np.sin(p * freq)
                        turned = np.concatenate([xv[:h] * c - xv[h:] * s, xv[:h] * s + xv[h:] * c])
                        err = np.abs(turned - yv).max()
                        if err < best_err:
                            best, best_err = p, err
                    found.append(best)
                return np.array(found).reshape(x.shape[:-1])
        """,
        "complex numbers: the slowest pair's phase": """
            def rope_position(x, y):
                x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
                E = x.shape[-1]
                zx = x[..., : E // 2] + 1j * x[..., E // 2 :]
                zy = y[..., : E // 2] + 1j * y[..., E // 2 :]
                phase = np.angle(zy[..., -1] * np.conj(zx[..., -1]))
                return np.round(phase / 10000.0 ** (-(E - 2) / E)).astype(int)
        """,
    },
    "ch07.predict_alibi_recent_heads": {
        "counted with the chapter's torch import": """
            def predict_alibi_recent_heads():
                m = 2.0 ** (-8 * torch.arange(1, 17, dtype=torch.float64) / 16)
                w = torch.softmax(-m[:, None] * torch.arange(2048, dtype=torch.float64), dim=-1)
                return int((w[:, :100].sum(-1) > 0.5).sum())
        """,
        "the literal as a float": """
            def predict_alibi_recent_heads():
                return 14.0
        """,
        "geometric sums, a numpy integer": """
            def predict_alibi_recent_heads():
                m = 2.0 ** (-8 * np.arange(1, 17) / 16)
                share = (1 - np.exp(-100 * m)) / (1 - np.exp(-2048 * m))
                return np.int64((share > 0.5).sum())
        """,
    },
}

WRONG = {
    "ch07.rope_left_padded": {
        "positions are the slots": """
            def rope_left_padded(x, lengths):
                B, L, E = x.shape
                ang = np.arange(L)[:, None] * 10000.0 ** (-2 * np.arange(E // 2) / E)
                cos, sin = np.tile(np.cos(ang), 2), np.tile(np.sin(ang), 2)
                real = np.arange(L)[None, :] >= (L - np.asarray(lengths))[:, None]
                rot = np.concatenate([-x[..., E // 2:], x[..., :E // 2]], -1)
                return np.where(real[..., None], x * cos + rot * sin, x)
        """,
        "padding on the right": """
            def rope_left_padded(x, lengths):
                B, L, E = x.shape
                ang = np.arange(L)[:, None] * 10000.0 ** (-2 * np.arange(E // 2) / E)
                cos, sin = np.tile(np.cos(ang), 2), np.tile(np.sin(ang), 2)
                real = np.arange(L)[None, :] < np.asarray(lengths)[:, None]
                rot = np.concatenate([-x[..., E // 2:], x[..., :E // 2]], -1)
                return np.where(real[..., None], x * cos + rot * sin, x)
        """,
        "padding rotated too": """
            def rope_left_padded(x, lengths):
                B, L, E = x.shape
                pos = np.arange(L)[None, :] - (L - np.asarray(lengths))[:, None]
                ang = pos[..., None] * 10000.0 ** (-2 * np.arange(E // 2) / E)
                cos, sin = np.tile(np.cos(ang), 2), np.tile(np.sin(ang), 2)
                rot = np.concatenate([-x[..., E // 2:], x[..., :E // 2]], -1)
                return x * cos + rot * sin
        """,
    },
    "ch07.rotation_angles": {
        "positions ignored": """
            def rotation_angles(positions, E):
                L = len(positions)
                return np.arange(L)[:, None] * 10000.0 ** (-np.arange(0, E, 2) / E)
        """,
        "natural exponential instead of base 10000": """
            def rotation_angles(positions, E):
                return np.asarray(positions)[:, None] * np.exp(-np.arange(0, E, 2) / E)
        """,
        "one angle per feature, not per pair": """
            def rotation_angles(positions, E):
                return np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(E) / E)
        """,
    },
    "ch07.rope_2d": {
        "positions row * 100 + col with 1-D RoPE": """
            def rope_2d(x, rows, cols):
                E = x.shape[-1]
                pos = np.asarray(rows) * 100 + np.asarray(cols)
                h = E // 2
                ang = pos[:, None] * 10000.0 ** (-2 * np.arange(h) / E)
                x1, x2 = x[..., :h], x[..., h:]
                return np.concatenate([x1 * np.cos(ang) - x2 * np.sin(ang), x2 * np.cos(ang) + x1 * np.sin(ang)], -1)
        """,
        "each half rotated by row + col": """
            def rope_2d(x, rows, cols):
                E = x.shape[-1]
                w = E // 2
                pos = np.asarray(rows) + np.asarray(cols)
                outs = []
                for part in (x[..., :w], x[..., w:]):
                    ang = pos[:, None] * 10000.0 ** (-2 * np.arange(w // 2) / w)
                    a, b = part[..., : w // 2], part[..., w // 2:]
                    outs += [a * np.cos(ang) - b * np.sin(ang), b * np.cos(ang) + a * np.sin(ang)]
                return np.concatenate(outs, -1)
        """,
        "only the rows": """
            def rope_2d(x, rows, cols):
                E = x.shape[-1]
                w = E // 2
                ang = np.asarray(rows)[:, None] * 10000.0 ** (-2 * np.arange(w // 2) / w)
                a, b = x[..., : w // 2], x[..., w // 2 : w]
                return np.concatenate([a * np.cos(ang) - b * np.sin(ang), b * np.cos(ang) + a * np.sin(ang), x[..., w:]], -1)
        """,
    },
    "ch07.alibi_slopes": {
        "the slopes sorted from the steepest": """
            def alibi_slopes(n_heads):
                c = 2 ** int(np.floor(np.log2(n_heads)))
                s = [2.0 ** (-8.0 * (h + 1) / c) for h in range(c)] + [2.0 ** (-8.0 * (2 * j + 1) / (2 * c)) for j in range(n_heads - c)]
                return np.sort(s)[::-1]
        """,
        "the extra slopes taken from the end": """
            def alibi_slopes(n_heads):
                c = 2 ** int(np.floor(np.log2(n_heads)))
                new = [2.0 ** (-8.0 * (2 * j + 1) / (2 * c)) for j in range(c)]
                return np.array([2.0 ** (-8.0 * (h + 1) / c) for h in range(c)] + new[len(new) - (n_heads - c):])
        """,
        "c the next power of two above, truncated": """
            def alibi_slopes(n_heads):
                c = 2 ** int(np.ceil(np.log2(n_heads)))
                return np.array([2.0 ** (-8.0 * (h + 1) / c) for h in range(c)][:n_heads])
        """,
    },
    "ch07.alibi_attention": {
        "the slopes of 8 heads whatever H is": """
            def alibi_attention(q, k, v):
                H, L = q.shape[-3], q.shape[-2]
                slopes = 2.0 ** -np.arange(1, H + 1)
                dist = np.arange(L)[:, None] - np.arange(L)[None, :]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) - slopes[:, None, None] * dist
                weights = softmax(np.where(dist >= 0, scores, -np.inf))
                return weights @ v, weights
        """,
        "the bias scaled by 1/sqrt(d) too": """
            def alibi_attention(q, k, v):
                H, L = q.shape[-3], q.shape[-2]
                slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
                dist = np.arange(L)[:, None] - np.arange(L)[None, :]
                scores = (q @ np.swapaxes(k, -1, -2) - slopes[:, None, None] * dist) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(dist >= 0, scores, -np.inf))
                return weights @ v, weights
        """,
        "no scaling by sqrt(d)": """
            def alibi_attention(q, k, v):
                H, L = q.shape[-3], q.shape[-2]
                slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
                dist = np.arange(L)[:, None] - np.arange(L)[None, :]
                scores = q @ np.swapaxes(k, -1, -2) - slopes[:, None, None] * dist
                weights = softmax(np.where(dist >= 0, scores, -np.inf))
                return weights @ v, weights
        """,
    },
    "ch07.rope_position": {
        "the fastest pair's angle": """
            def rope_position(x, y):
                E = x.shape[-1]
                a = np.arctan2(y[..., E // 2], y[..., 0]) - np.arctan2(x[..., E // 2], x[..., 0])
                return np.round(np.remainder(a, 2 * np.pi)).astype(int)
        """,
        "the angle from y to x": """
            def rope_position(x, y):
                E = x.shape[-1]
                theta = 10000.0 ** (-(E - 2) / E)
                a = np.arctan2(x[..., E - 1], x[..., E // 2 - 1]) - np.arctan2(y[..., E - 1], y[..., E // 2 - 1])
                return np.round(a / theta).astype(int)
        """,
        "interleaved pairs": """
            def rope_position(x, y):
                E = x.shape[-1]
                theta = 10000.0 ** (-(E - 2) / E)
                a = np.arctan2(y[..., E - 1], y[..., E - 2]) - np.arctan2(x[..., E - 1], x[..., E - 2])
                return np.round(np.remainder(a, 2 * np.pi) / theta).astype(int)
        """,
        "the slowest pair's frequency taken as 10000^(-1)": """
            def rope_position(x, y):
                E = x.shape[-1]
                a = np.arctan2(y[..., E - 1], y[..., E // 2 - 1]) - np.arctan2(x[..., E - 1], x[..., E // 2 - 1])
                return np.round(np.remainder(a, 2 * np.pi) * 10000.0).astype(int)
        """,
    },
    "ch07.predict_alibi_recent_heads": {
        "slopes from 1": """
            def predict_alibi_recent_heads():
                return 15
        """,
        "no penalty": """
            def predict_alibi_recent_heads():
                return 0
        """,
        "the query itself left out": """
            def predict_alibi_recent_heads():
                m = 2.0 ** (-8 * np.arange(1, 17) / 16)
                w = np.exp(-m[:, None] * np.arange(2048))
                return int((w[:, 1:101].sum(-1) / w.sum(-1) > 0.5).sum())
        """,
    },
}
