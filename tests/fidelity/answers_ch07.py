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
    "ch07.move_rotated_keys": {
        "torch with the chapter's torch import: undo the old rotation, then rotate at the new position": """
            def move_rotated_keys(k, old, new):
                kt = torch.as_tensor(k)
                E = kt.shape[-1]
                inv = 10000.0 ** (-torch.arange(0, E, 2, dtype=torch.float64) / E)

                def turn(x, pos):
                    ang = torch.as_tensor(pos, dtype=torch.float64)[:, None] * inv
                    cos = torch.cat([torch.cos(ang)] * 2, -1).to(x.dtype)
                    sin = torch.cat([torch.sin(ang)] * 2, -1).to(x.dtype)
                    x1, x2 = x.chunk(2, dim=-1)
                    return x * cos + torch.cat([-x2, x1], -1) * sin

                return turn(turn(kt, -torch.as_tensor(old)), torch.as_tensor(new)).numpy()
        """,
        "float32, complex numbers": """
            def move_rotated_keys(k, old, new):
                k = np.asarray(k, dtype=np.float32)
                h = k.shape[-1] // 2
                z = k[..., :h] + 1j * k[..., h:]
                theta = (10000.0 ** (-2 * np.arange(h) / (2 * h))).astype(np.float32)
                shift = (np.asarray(new) - np.asarray(old)).astype(np.float32)
                z = z * np.exp(1j * np.einsum("s,f->sf", shift, theta))
                return np.concatenate([z.real, z.imag], axis=-1).astype(np.float32)
        """,
        "helper in an added cell, loops over pairs": [
            """
            def _turn_pairs(x, delta):
                E = x.shape[-1]
                out = np.array(x, dtype=float)
                for i in range(E // 2):
                    a = np.asarray(delta, dtype=float) * 10000.0 ** (-2 * i / E)
                    out[..., i] = x[..., i] * np.cos(a) - x[..., i + E // 2] * np.sin(a)
                    out[..., i + E // 2] = x[..., i] * np.sin(a) + x[..., i + E // 2] * np.cos(a)
                return out
            """,
            """
            def move_rotated_keys(k, old, new):
                return _turn_pairs(k, [n - o for o, n in zip(old, new)])
            """,
        ],
    },
    "ch07.recover_alibi_slopes": {
        "torch with the chapter's torch import: a least-squares fit over every visible pair": """
            def recover_alibi_slopes(scores, weights):
                s, w = torch.as_tensor(scores, dtype=torch.float64), torch.as_tensor(weights, dtype=torch.float64)
                H, L, _ = s.shape
                i, j = torch.meshgrid(torch.arange(L), torch.arange(L), indexing="ij")
                keep = j <= i
                slopes = []
                for h in range(H):
                    r = torch.log(w[h][keep]) - s[h][keep]  # -m (i - j) - log Z_i
                    dist = (i - j)[keep].double()
                    rows = torch.nn.functional.one_hot(i[keep], L).double()
                    A = torch.cat([-dist[:, None], -rows], dim=1)
                    sol = torch.linalg.lstsq(A, r[:, None]).solution
                    slopes.append(sol[0, 0])
                return torch.stack(slopes)
        """,
        "float32, the first and the last key of the last row": """
            def recover_alibi_slopes(scores, weights):
                s, w = np.asarray(scores, dtype=np.float32), np.asarray(weights, dtype=np.float32)
                L = s.shape[-1]
                last = L - 1
                a = np.log(w[:, last, last]) - s[:, last, last]
                b = np.log(w[:, last, 0]) - s[:, last, 0]
                return (a - b) / np.float32(last)
        """,
        "helper in an added cell, loops over heads and rows": [
            """
            def _slope_of_row_74(s_row, w_row, i):
                return (np.log(w_row[i]) - s_row[i]) - (np.log(w_row[i - 1]) - s_row[i - 1])
            """,
            """
            def recover_alibi_slopes(scores, weights):
                H, L, _ = scores.shape
                out = []
                for h in range(H):
                    found = [_slope_of_row_74(scores[h, i], weights[h, i], i) for i in range(1, L)]
                    out.append(sum(found) / len(found))
                return np.array(out)
            """,
        ],
    },
    "ch07.alibi_chunk_attention": {
        "torch with the chapter's torch import": """
            def alibi_chunk_attention(q, k, v):
                q, k, v = (torch.as_tensor(a, dtype=torch.float64) for a in (q, k, v))
                H, C, S = q.shape[1], q.shape[2], k.shape[2]
                slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], dtype=torch.float64)
                pos_q = torch.arange(S - C, S)[:, None]
                pos_k = torch.arange(S)[None, :]
                scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 - slopes[:, None, None] * (pos_q - pos_k)
                weights = torch.softmax(scores.masked_fill(pos_k > pos_q, float("-inf")), dim=-1)
                return weights @ v, weights
        """,
        "float32 einsum, BLOOM's bias m * j (a constant per row away)": """
            def alibi_chunk_attention(q, k, v):
                q, k, v = (np.asarray(a, dtype=np.float32) for a in (q, k, v))
                H, C, S, d = q.shape[1], q.shape[2], k.shape[2], q.shape[3]
                slopes = (2.0 ** (-8.0 * np.arange(1, H + 1) / H)).astype(np.float32)
                bias = slopes[:, None, None] * np.arange(S, dtype=np.float32)[None, None, :]  # (H, 1, S)
                scores = np.einsum("bhcd,bhsd->bhcs", q, k) / np.float32(np.sqrt(d)) + bias
                visible = np.arange(S)[None, :] <= np.arange(S - C, S)[:, None]
                weights = softmax(np.where(visible, scores, -np.inf))
                return np.einsum("bhcs,bhse->bhce", weights, v), weights
        """,
        "helper in an added cell, one query at a time": [
            """
            def _alibi_row_75(q_c, k, v, pos, slope):
                scores = k[: pos + 1] @ q_c / np.sqrt(q_c.shape[-1]) - slope * (pos - np.arange(pos + 1))
                w = np.exp(scores - scores.max())
                w = w / w.sum()
                full = np.zeros(k.shape[0])
                full[: pos + 1] = w
                return full @ v, full
            """,
            """
            def alibi_chunk_attention(q, k, v):
                B, H, C, _ = q.shape
                S = k.shape[2]
                out = np.zeros((B, H, C, v.shape[-1]))
                weights = np.zeros((B, H, C, S))
                for b in range(B):
                    for h in range(H):
                        slope = 2.0 ** (-8.0 * (h + 1) / H)
                        for c in range(C):
                            out[b, h, c], weights[b, h, c] = _alibi_row_75(q[b, h, c], k[b, h], v[b, h], S - C + c, slope)
                return out, weights
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
    "ch07.predict_encoder_alibi_weight": {
        "closed form with math": """
            def predict_encoder_alibi_weight():
                import math
                r = math.exp(-(2.0 ** (-8 * 2 / 8)))
                return 1 / (1 + r + r**2 + r * (1 - r**4093) / (1 - r))
        """,
        "the literal, rounded": """
            def predict_encoder_alibi_weight():
                return 0.169
        """,
        "numpy scalars, the tail's r^4093 dropped, float32": """
            def predict_encoder_alibi_weight():
                r = np.float32(np.exp(np.float32(-0.25)))
                before = r + r * r  # the two tokens before it
                after = r / (1 - r)  # every token after it, as if the input never ended
                return np.float32(1) / (1 + before + after)
        """,
        "tanh of half the slope, corrected for the two missing keys": """
            def predict_encoder_alibi_weight():
                import math
                r = math.exp(-0.25)
                middle = (1 - r) / (1 + r)  # = tanh(1/8): a query with keys on both sides without end
                missing = r**3 / (1 - r)  # the keys before position 0 that this query lacks
                return 1 / (1 / middle - missing)
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
    "ch07.move_rotated_keys": {
        "rotated again at the new positions": """
            def move_rotated_keys(k, old, new):
                E = k.shape[-1]
                ang = np.asarray(new)[:, None] * 10000.0 ** (-2 * np.arange(E // 2) / E)
                c, s_ = np.cos(ang), np.sin(ang)
                a, b = k[..., : E // 2], k[..., E // 2:]
                return np.concatenate([a * c - b * s_, b * c + a * s_], -1)
        """,
        "turned by old - new": """
            def move_rotated_keys(k, old, new):
                E = k.shape[-1]
                ang = (np.asarray(old) - np.asarray(new))[:, None] * 10000.0 ** (-2 * np.arange(E // 2) / E)
                c, s_ = np.cos(ang), np.sin(ang)
                a, b = k[..., : E // 2], k[..., E // 2:]
                return np.concatenate([a * c - b * s_, b * c + a * s_], -1)
        """,
        "the old rotation undone only": """
            def move_rotated_keys(k, old, new):
                E = k.shape[-1]
                ang = -np.asarray(old)[:, None] * 10000.0 ** (-2 * np.arange(E // 2) / E)
                c, s_ = np.cos(ang), np.sin(ang)
                a, b = k[..., : E // 2], k[..., E // 2:]
                return np.concatenate([a * c - b * s_, b * c + a * s_], -1)
        """,
        "neighbouring features paired": """
            def move_rotated_keys(k, old, new):
                E = k.shape[-1]
                ang = (np.asarray(new) - np.asarray(old))[:, None] * 10000.0 ** (-2 * np.arange(E // 2) / E)
                c, s_ = np.cos(ang), np.sin(ang)
                a, b = k[..., 0::2], k[..., 1::2]
                out = np.empty_like(k)
                out[..., 0::2], out[..., 1::2] = a * c - b * s_, b * c + a * s_
                return out
        """,
    },
    "ch07.recover_alibi_slopes": {
        "the weights alone": """
            def recover_alibi_slopes(scores, weights):
                L = weights.shape[-1]
                return np.log(weights[:, L - 1, L - 1] / weights[:, L - 1, L - 2])
        """,
        "the sign turned": """
            def recover_alibi_slopes(scores, weights):
                L = weights.shape[-1]
                a = np.log(weights[:, L - 1, L - 1]) - scores[:, L - 1, L - 1]
                b = np.log(weights[:, L - 1, L - 2]) - scores[:, L - 1, L - 2]
                return b - a
        """,
        "the chapter's fixed slopes": """
            def recover_alibi_slopes(scores, weights):
                H = scores.shape[0]
                return 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
        """,
        "row 1 read with the first key's distance taken as 2": """
            def recover_alibi_slopes(scores, weights):
                a = np.log(weights[:, 1, 1]) - scores[:, 1, 1]
                b = np.log(weights[:, 1, 0]) - scores[:, 1, 0]
                return (a - b) / 2
        """,
    },
    "ch07.alibi_chunk_attention": {
        "the chunk's queries at positions 0 .. C-1": """
            def alibi_chunk_attention(q, k, v):
                H, C, S = q.shape[1], q.shape[2], k.shape[2]
                slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
                i, j = np.arange(C)[:, None], np.arange(S)[None, :]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) - slopes[:, None, None] * (i - j)
                weights = softmax(np.where(j <= i, scores, -np.inf))
                return weights @ v, weights
        """,
        "the distance from the chunk's own index, both ways": """
            def alibi_chunk_attention(q, k, v):
                H, C, S = q.shape[1], q.shape[2], k.shape[2]
                slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
                c, j = np.arange(C)[:, None], np.arange(S)[None, :]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) - slopes[:, None, None] * np.abs(c - j)
                weights = softmax(np.where(j <= c + S - C, scores, -np.inf))
                return weights @ v, weights
        """,
        "no causal mask inside the chunk": """
            def alibi_chunk_attention(q, k, v):
                H, C, S = q.shape[1], q.shape[2], k.shape[2]
                slopes = 2.0 ** (-8.0 * np.arange(1, H + 1) / H)
                dist = np.maximum(np.arange(S - C, S)[:, None] - np.arange(S)[None, :], 0)
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) - slopes[:, None, None] * dist)
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
    "ch07.predict_encoder_alibi_weight": {
        "causal, three keys": """
            def predict_encoder_alibi_weight():
                return 0.4192
        """,
        "a query far from both ends": """
            def predict_encoder_alibi_weight():
                return 0.1244
        """,
        "keys after the query only": """
            def predict_encoder_alibi_weight():
                return 0.2212
        """,
        "slope 1/2": """
            def predict_encoder_alibi_weight():
                return 0.2844
        """,
    },
}
