"""Chapter 7 (positional encoding): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch07.sinusoidal_table": {
        "torch with the chapter's torch import": """
            def sinusoidal_table(n_positions, d_model):
                pos = torch.arange(n_positions, dtype=torch.float64)[:, None]
                two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
                angles = pos / 10000 ** (two_i / d_model)
                pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
                pe[:, 0::2] = torch.sin(angles)
                pe[:, 1::2] = torch.cos(angles)
                return pe
        """,
        "float32 loops": """
            def sinusoidal_table(n_positions, d_model):
                pe = np.zeros((n_positions, d_model), dtype=np.float32)
                for pos in range(n_positions):
                    for i in range(0, d_model, 2):
                        angle = pos / 10000 ** (i / d_model)
                        pe[pos, i] = np.sin(angle)
                        pe[pos, i + 1] = np.cos(angle)
                return pe
        """,
        "helper in an added cell, stack and reshape": [
            """
            def _pe_angles(n_positions, d_model):
                i = np.arange(d_model // 2)
                return np.arange(n_positions)[:, None] * np.exp(-np.log(10000.0) * 2 * i / d_model)
            """,
            """
            def sinusoidal_table(n_positions, d_model):
                a = _pe_angles(n_positions, d_model)
                return np.stack([np.sin(a), np.cos(a)], axis=-1).reshape(n_positions, d_model)
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
    "ch07.apply_rotary": {
        "torch with the chapter's torch import": """
            def apply_rotary(x, positions):
                xt = torch.as_tensor(x)
                half = xt.shape[-1] // 2
                inv = 10000.0 ** (-2 * torch.arange(half, dtype=torch.float64) / xt.shape[-1])
                ang = torch.as_tensor(positions, dtype=torch.float64)[:, None] * inv
                cos, sin = torch.cos(ang).to(xt.dtype), torch.sin(ang).to(xt.dtype)
                x1, x2 = xt[..., :half], xt[..., half:]
                return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        """,
        "float32 numpy": """
            def apply_rotary(x, positions):
                x = np.asarray(x, dtype=np.float32)
                half = x.shape[-1] // 2
                ang = np.asarray(positions, dtype=np.float32)[:, None] * (
                    10000.0 ** (-np.arange(half) / half)
                ).astype(np.float32)
                c, s = np.cos(ang), np.sin(ang)
                x1, x2 = x[..., :half], x[..., half:]
                return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)
        """,
        "helper in an added cell": [
            """
            def _rope_rotate_half(x):
                h = x.shape[-1] // 2
                return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
            """,
            """
            def apply_rotary(x, positions):
                E = x.shape[-1]
                ang = np.multiply.outer(np.asarray(positions, dtype=float), 10000.0 ** (-np.arange(0, E, 2) / E))
                ang = np.tile(ang, 2)  # (L, E): feature i and i + E/2 share an angle
                return x * np.cos(ang) + _rope_rotate_half(x) * np.sin(ang)
            """,
        ],
    },
    "ch07.apply_rotary_interleaved": {
        "torch complex numbers with the chapter's torch import": """
            def apply_rotary_interleaved(x, positions):
                xt = torch.as_tensor(x, dtype=torch.float64)
                E = xt.shape[-1]
                inv = 10000.0 ** (-torch.arange(0, E, 2, dtype=torch.float64) / E)
                ang = torch.as_tensor(positions, dtype=torch.float64)[:, None] * inv
                z = torch.view_as_complex(xt.reshape(*xt.shape[:-1], E // 2, 2).contiguous())
                z = z * torch.polar(torch.ones_like(ang), ang)
                return torch.view_as_real(z).reshape(xt.shape)
        """,
        "float32 numpy complex64": """
            def apply_rotary_interleaved(x, positions):
                E = x.shape[-1]
                z = np.ascontiguousarray(x, dtype=np.float32).view(np.complex64)  # (..., L, E/2)
                ang = np.asarray(positions, dtype=np.float64)[:, None] * 10000.0 ** (-np.arange(0, E, 2) / E)
                return (z * np.exp(1j * ang).astype(np.complex64)).view(np.float32)
        """,
        "helper in an added cell, a loop over pairs": [
            """
            def _rope_pair(a, b, angle):
                return a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)
            """,
            """
            def apply_rotary_interleaved(x, positions):
                E = x.shape[-1]
                out = np.array(x, dtype=float)
                pos = np.asarray(positions, dtype=float)
                for i in range(E // 2):
                    angle = pos * 10000.0 ** (-2 * i / E)  # (L,)
                    out[..., 2 * i], out[..., 2 * i + 1] = _rope_pair(x[..., 2 * i], x[..., 2 * i + 1], angle)
                return out
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
    "ch07.rope_pair_score": {
        "torch complex numbers with the chapter's torch import": """
            def rope_pair_score(q, k, offset, theta):
                q, k = torch.as_tensor(q, dtype=torch.float64), torch.as_tensor(k, dtype=torch.float64)
                zq = torch.complex(q[..., 0], q[..., 1])
                zk = torch.complex(k[..., 0], k[..., 1])
                delta = torch.as_tensor(offset, dtype=torch.float64) * theta
                return (zq.conj() * zk * torch.polar(torch.ones_like(delta), delta)).real
        """,
        "float32 numpy: rotate k by the offset": """
            def rope_pair_score(q, k, offset, theta):
                q, k = np.asarray(q, dtype=np.float32), np.asarray(k, dtype=np.float32)
                a = (np.asarray(offset) * theta).astype(np.float32)
                k0 = k[..., 0] * np.cos(a) - k[..., 1] * np.sin(a)
                k1 = k[..., 0] * np.sin(a) + k[..., 1] * np.cos(a)
                return q[..., 0] * k0 + q[..., 1] * k1
        """,
        "helper in an added cell: both rotations written out": [
            """
            def _rot2(v, a):
                return np.stack([v[..., 0] * np.cos(a) - v[..., 1] * np.sin(a),
                                 v[..., 0] * np.sin(a) + v[..., 1] * np.cos(a)], axis=-1)
            """,
            """
            def rope_pair_score(q, k, offset, theta):
                m = 3.0  # any query position: only n - m matters
                n = m + np.asarray(offset, dtype=float)
                return (_rot2(q, m * theta) * _rot2(k, n * theta)).sum(axis=-1)
            """,
        ],
    },
    "ch07.predict_longest_wavelength": {
        "an expression with the chapter's torch import": """
            def predict_longest_wavelength():
                return 2 * torch.pi / 10000 ** (-2 * 63 / 128)
        """,
        "the literal, rounded": """
            def predict_longest_wavelength():
                return 54410
        """,
        "a numpy float32 scalar": """
            def predict_longest_wavelength():
                theta = np.float32(10000.0) ** np.float32(-126 / 128)
                return np.float32(2 * np.pi) / theta
        """,
        "helper in an added cell": [
            """
            def _wavelength_of_pair(i, E=128, base=10000.0):
                return 2 * np.pi * base ** (2 * i / E)
            """,
            """
            def predict_longest_wavelength():
                return _wavelength_of_pair(63)
            """,
        ],
    },
}

WRONG = {
    "ch07.sinusoidal_table": {
        "exponent i / d_model instead of 2i / d_model": """
            def sinusoidal_table(n_positions, d_model):
                pos = np.arange(n_positions)[:, None]
                angles = pos / 10000 ** (np.arange(d_model // 2) / d_model)
                pe = np.zeros((n_positions, d_model))
                pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
                return pe
        """,
        "positions counted from 1": """
            def sinusoidal_table(n_positions, d_model):
                pos = np.arange(1, n_positions + 1)[:, None]
                angles = pos / 10000 ** (np.arange(0, d_model, 2) / d_model)
                pe = np.zeros((n_positions, d_model))
                pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
                return pe
        """,
        "multiplied by the frequency's inverse": """
            def sinusoidal_table(n_positions, d_model):
                pos = np.arange(n_positions)[:, None]
                angles = pos * 10000 ** (np.arange(0, d_model, 2) / d_model)
                pe = np.zeros((n_positions, d_model))
                pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
                return pe
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
    "ch07.apply_rotary": {
        "2-d indexing ignores the batch axes": """
            def apply_rotary(x, positions):
                half = x.shape[-1] // 2
                ang = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(half) / half)
                cos, sin = np.cos(ang), np.sin(ang)
                x1, x2 = x[:, :half], x[:, half:]
                return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
        """,
        "frequency 10000^(-i/E) (exponent off)": """
            def apply_rotary(x, positions):
                half = x.shape[-1] // 2
                ang = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(half) / x.shape[-1])
                cos, sin = np.cos(ang), np.sin(ang)
                x1, x2 = x[..., :half], x[..., half:]
                return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
        """,
        "rotate_half without the minus sign": """
            def apply_rotary(x, positions):
                half = x.shape[-1] // 2
                ang = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(half) / half)
                cos = np.concatenate([np.cos(ang)] * 2, axis=-1)
                sin = np.concatenate([np.sin(ang)] * 2, axis=-1)
                return x * cos + np.concatenate([x[..., half:], x[..., :half]], axis=-1) * sin
        """,
    },
    "ch07.apply_rotary_interleaved": {
        "2-d indexing ignores the batch axes": """
            def apply_rotary_interleaved(x, positions):
                E = x.shape[-1]
                ang = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(0, E, 2) / E)
                out = np.empty_like(x)
                x1, x2 = x[:, 0::2], x[:, 1::2]
                out[:, 0::2] = x1 * np.cos(ang) - x2 * np.sin(ang)
                out[:, 1::2] = x1 * np.sin(ang) + x2 * np.cos(ang)
                return out
        """,
        "rotated pairs written back in half-split order": """
            def apply_rotary_interleaved(x, positions):
                E = x.shape[-1]
                ang = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(0, E, 2) / E)
                x1, x2 = x[..., 0::2], x[..., 1::2]
                return np.concatenate([x1 * np.cos(ang) - x2 * np.sin(ang), x1 * np.sin(ang) + x2 * np.cos(ang)], -1)
        """,
        "frequency 10000^(-i/E) (exponent off)": """
            def apply_rotary_interleaved(x, positions):
                E = x.shape[-1]
                ang = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(E // 2) / E)
                out = np.empty_like(x)
                x1, x2 = x[..., 0::2], x[..., 1::2]
                out[..., 0::2] = x1 * np.cos(ang) - x2 * np.sin(ang)
                out[..., 1::2] = x1 * np.sin(ang) + x2 * np.cos(ang)
                return out
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
    "ch07.rope_pair_score": {
        "the sine's sign flipped": """
            def rope_pair_score(q, k, offset, theta):
                delta = offset * theta
                dot = q[..., 0] * k[..., 0] + q[..., 1] * k[..., 1]
                cross = q[..., 0] * k[..., 1] - q[..., 1] * k[..., 0]
                return dot * np.cos(delta) + cross * np.sin(delta)
        """,
        "components taken along the first axis": """
            def rope_pair_score(q, k, offset, theta):
                delta = offset * theta
                dot = q[0] * k[0] + q[1] * k[1]
                cross = q[1] * k[0] - q[0] * k[1]
                return dot * np.cos(delta) + cross * np.sin(delta)
        """,
        "q and k rotated by the same angle": """
            def rope_pair_score(q, k, offset, theta):
                return (q * k).sum(axis=-1) + 0 * np.asarray(offset) * theta
        """,
    },
    "ch07.predict_longest_wavelength": {
        "the fastest pair": """
            def predict_longest_wavelength():
                return 2 * np.pi
        """,
        "the base alone": """
            def predict_longest_wavelength():
                return 10000
        """,
    },
}
