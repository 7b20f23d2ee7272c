"""Chapter 10 (attention for images): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch10.resize_positions": {
        "torch's interpolate with corners aligned": """
            def resize_positions(pos, gh, gw, nh, nw):
                t = torch.as_tensor(pos)
                grid = t[1:].reshape(gh, gw, -1).permute(2, 0, 1)[None]  # (1, d, gh, gw)
                new = torch.nn.functional.interpolate(grid, size=(nh, nw), mode="bilinear", align_corners=True)
                return torch.cat([t[:1], new[0].permute(1, 2, 0).reshape(nh * nw, -1)])
        """,
        "loops over the new grid": """
            def resize_positions(pos, gh, gw, nh, nw):
                grid = pos[1:].reshape(gh, gw, -1)
                out = [pos[0]]
                for r in range(nh):
                    y = r * (gh - 1) / (nh - 1) if nh > 1 else 0.0
                    y0 = int(y); y1 = min(y0 + 1, gh - 1); ty = y - y0
                    for c in range(nw):
                        x = c * (gw - 1) / (nw - 1) if nw > 1 else 0.0
                        x0 = int(x); x1 = min(x0 + 1, gw - 1); tx = x - x0
                        top = (1 - tx) * grid[y0, x0] + tx * grid[y0, x1]
                        bottom = (1 - tx) * grid[y1, x0] + tx * grid[y1, x1]
                        out.append((1 - ty) * top + ty * bottom)
                return np.stack(out)
        """,
        "interpolation matrices in float32": """
            def _lerp_matrix(old, new):
                M = np.zeros((new, old), dtype=np.float32)
                for r in range(new):
                    x = r * (old - 1) / (new - 1) if new > 1 else 0.0
                    lo = int(np.floor(x)); hi = min(lo + 1, old - 1)
                    M[r, lo] += 1 - (x - lo); M[r, hi] += x - lo
                return M

            def resize_positions(pos, gh, gw, nh, nw):
                grid = pos[1:].reshape(gh, gw, -1).astype(np.float32)
                new = np.einsum("ri,ijd,cj->rcd", _lerp_matrix(gh, nh), grid, _lerp_matrix(gw, nw))
                return np.concatenate([pos[:1].astype(np.float32), new.reshape(nh * nw, -1)])
        """,
    },
    "ch10.window_attention_mask": {
        "loops over pairs of patches": """
            def window_attention_mask(gh, gw, M):
                N = gh * gw
                mask = np.ones((1 + N, 1 + N), dtype=bool)
                for i in range(N):
                    for j in range(N):
                        mask[1 + i, 1 + j] = (i // gw) // M == (j // gw) // M and (i % gw) // M == (j % gw) // M
                return mask
        """,
        "torch, window ids from a grid of ids": """
            def window_attention_mask(gh, gw, M):
                rows = torch.arange(gh)[:, None] // M
                cols = torch.arange(gw)[None, :] // M
                ids = (rows * (gw + M) + cols).reshape(-1)
                inner = ids[:, None] == ids[None, :]
                out = torch.ones(1 + gh * gw, 1 + gh * gw, dtype=torch.bool)
                out[1:, 1:] = inner
                return out
        """,
        "a window label image, padded with a row and column for [CLS]": """
            def window_attention_mask(gh, gw, M):
                nwr, nwc = -(-gh // M), -(-gw // M)
                labels = np.kron(np.arange(nwr * nwc).reshape(nwr, nwc), np.ones((M, M), dtype=int))[:gh, :gw]
                lab = np.concatenate([[-1], labels.ravel()])
                m = lab[:, None] == lab[None, :]
                m[0, :] = True
                m[:, 0] = True
                return m
        """,
    },
    "ch10.predict_window_scores": {
        "the literal": """
            def predict_window_scores():
                return 7012
        """,
        "window by window, in loops": """
            def predict_window_scores():
                total = 0
                for rows in (4, 7, 4):
                    for cols in (4, 7, 4):
                        total += (rows * cols) ** 2
                return total + 226 + 225
        """,
        "a numpy int, the grid cut in bands": """
            def predict_window_scores():
                return np.int64((16 + 49 + 16) ** 2) + 2 * 225 + 1
        """,
        "helper in an added cell": [
            """
            def _pairs(n):
                return n * n
            """,
            """
            def predict_window_scores():
                windows = [a * b for a in (4, 7, 4) for b in (4, 7, 4)]
                return sum(_pairs(n) for n in windows) + _pairs(226) - _pairs(225)
            """,
        ],
    },
    "ch10.conv_as_matmul": {
        "loops in float32, torch for the output": """
            def conv_as_matmul(images, weight, bias, stride):
                D, C, P, _ = weight.shape
                B, _, H, W = images.shape
                Ho, Wo = (H - P) // stride + 1, (W - P) // stride + 1
                out = torch.zeros(B, D, Ho, Wo, dtype=torch.float32)
                x, w = torch.as_tensor(images).float(), torch.as_tensor(weight).float()
                for i in range(Ho):
                    for j in range(Wo):
                        window = x[:, :, i * stride : i * stride + P, j * stride : j * stride + P]
                        out[:, :, i, j] = torch.einsum("bcpq,dcpq->bd", window, w)
                return (out + torch.as_tensor(bias).float()[None, :, None, None]).numpy()
        """,
        "sliding windows as a matrix product": """
            def conv_as_matmul(images, weight, bias, stride):
                D, C, P, _ = weight.shape
                v = np.lib.stride_tricks.sliding_window_view(images, (P, P), axis=(-2, -1))
                v = v[:, :, ::stride, ::stride]  # (B, C, Ho, Wo, P, P)
                B, _, Ho, Wo = v.shape[:4]
                cols = v.transpose(0, 2, 3, 1, 4, 5).reshape(B, Ho * Wo, C * P * P)
                out = cols @ weight.reshape(D, -1).T + bias  # (B, Ho*Wo, D)
                return out.transpose(0, 2, 1).reshape(B, D, Ho, Wo)
        """,
        "helper in an added cell": [
            """
            def _window(images, i, j, P, stride):
                return images[:, :, i * stride : i * stride + P, j * stride : j * stride + P]
            """,
            """
            def conv_as_matmul(images, weight, bias, stride):
                P = weight.shape[-1]
                Ho = (images.shape[-2] - P) // stride + 1
                Wo = (images.shape[-1] - P) // stride + 1
                out = np.stack(
                    [
                        np.stack([np.tensordot(_window(images, i, j, P, stride), weight, axes=([1, 2, 3], [1, 2, 3])) for j in range(Wo)], -1)
                        for i in range(Ho)
                    ],
                    -2,
                )
                return out + bias[None, :, None, None]
            """,
        ],
    },
    "ch10.padded_patch_mask": {
        "the stub fixed with a ceiling division": """
            def patch_key_mask(sizes, H, W, P):
                B = sizes.shape[0]
                nh, nw = -(-sizes[:, 0] // P), -(-sizes[:, 1] // P)  # patches each image reaches
                real = (np.arange(H // P)[None, :, None] < nh[:, None, None]) & (np.arange(W // P)[None, None, :] < nw[:, None, None])
                return np.concatenate([np.ones((B, 1), dtype=bool), real.reshape(B, -1)], axis=1)
        """,
        "loops over the patches": """
            def patch_key_mask(sizes, H, W, P):
                rows = []
                for h, w in sizes:
                    row = [True]
                    for r in range(H // P):
                        for c in range(W // P):
                            row.append(bool(r * P < h and c * P < w))
                    rows.append(row)
                return np.array(rows)
        """,
        "torch, pixels painted then pooled": """
            def patch_key_mask(sizes, H, W, P):
                s = torch.as_tensor(sizes)
                pix = (torch.arange(H)[None, :, None] < s[:, :1, None]) & (torch.arange(W)[None, None, :] < s[:, 1:, None])
                real = torch.nn.functional.max_pool2d(pix[:, None].float(), P)[:, 0] > 0  # any pixel of the patch
                return torch.cat([torch.ones(len(s), 1, dtype=torch.bool), real.flatten(1)], dim=1)
        """,
    },
    "ch10.pool_real_patches": {
        "loops over images and patches": """
            def pool_real_patches(tokens, key_mask, n_registers):
                N = tokens.shape[1] - 1 - n_registers
                out = []
                for b in range(tokens.shape[0]):
                    picked = [tokens[b, 1 + n] for n in range(N) if key_mask[b, 1 + n]]
                    out.append(np.mean(picked, axis=0))
                return np.stack(out)
        """,
        "torch with a weighted mean": """
            def pool_real_patches(tokens, key_mask, n_registers):
                t = torch.as_tensor(tokens)
                m = torch.as_tensor(key_mask).clone()
                m[:, 0] = False  # [CLS]
                if n_registers:
                    m[:, -n_registers:] = False
                w = m.to(t.dtype)
                return torch.einsum("bn,bnd->bd", w, t) / w.sum(1, keepdim=True)
        """,
        "float32, patches found by position": """
            def pool_real_patches(tokens, key_mask, n_registers):
                T = tokens.shape[1]
                is_patch = (np.arange(T) >= 1) & (np.arange(T) < T - n_registers)
                keep = (key_mask & is_patch).astype(np.float32)
                return np.einsum("bt,btd->bd", keep, tokens.astype(np.float32)) / keep.sum(1, keepdims=True)
        """,
    },
}

WRONG = {
    "ch10.resize_positions": {
        "torch's interpolate, corners not aligned": """
            def resize_positions(pos, gh, gw, nh, nw):
                t = torch.as_tensor(pos)
                grid = t[1:].reshape(gh, gw, -1).permute(2, 0, 1)[None]
                new = torch.nn.functional.interpolate(grid, size=(nh, nw), mode="bilinear", align_corners=False)
                return torch.cat([t[:1], new[0].permute(1, 2, 0).reshape(nh * nw, -1)])
        """,
        "[CLS] dropped": """
            def resize_positions(pos, gh, gw, nh, nw):
                t = torch.as_tensor(pos)
                grid = t[1:].reshape(gh, gw, -1).permute(2, 0, 1)[None]
                new = torch.nn.functional.interpolate(grid, size=(nh, nw), mode="bilinear", align_corners=True)
                return new[0].permute(1, 2, 0).reshape(nh * nw, -1)
        """,
        "the grid read as (gw, gh)": """
            def resize_positions(pos, gh, gw, nh, nw):
                t = torch.as_tensor(pos)
                grid = t[1:].reshape(gw, gh, -1).permute(2, 1, 0)[None]
                new = torch.nn.functional.interpolate(grid, size=(nh, nw), mode="bilinear", align_corners=True)
                return torch.cat([t[:1], new[0].permute(1, 2, 0).reshape(nh * nw, -1)])
        """,
        "nearest neighbour": """
            def resize_positions(pos, gh, gw, nh, nw):
                t = torch.as_tensor(pos)
                grid = t[1:].reshape(gh, gw, -1).permute(2, 0, 1)[None]
                new = torch.nn.functional.interpolate(grid, size=(nh, nw), mode="nearest")
                return torch.cat([t[:1], new[0].permute(1, 2, 0).reshape(nh * nw, -1)])
        """,
    },
    "ch10.window_attention_mask": {
        "windows of M*M tokens in reading order": """
            def window_attention_mask(gh, gw, M):
                w = np.arange(gh * gw) // (M * M)
                m = np.ones((1 + gh * gw, 1 + gh * gw), dtype=bool)
                m[1:, 1:] = w[:, None] == w[None, :]
                return m
        """,
        "window ids with the windows per row floored": """
            def window_attention_mask(gh, gw, M):
                r, c = np.divmod(np.arange(gh * gw), gw)
                w = (r // M) * (gw // M) + c // M
                m = np.ones((1 + gh * gw, 1 + gh * gw), dtype=bool)
                m[1:, 1:] = w[:, None] == w[None, :]
                return m
        """,
        "a neighbourhood of each patch": """
            def window_attention_mask(gh, gw, M):
                r, c = np.divmod(np.arange(gh * gw), gw)
                m = np.ones((1 + gh * gw, 1 + gh * gw), dtype=bool)
                m[1:, 1:] = (abs(r[:, None] - r[None, :]) < M) & (abs(c[:, None] - c[None, :]) < M)
                return m
        """,
        "the grid read column by column": """
            def window_attention_mask(gh, gw, M):
                c, r = np.divmod(np.arange(gh * gw), gh)
                m = np.ones((1 + gh * gw, 1 + gh * gw), dtype=bool)
                m[1:, 1:] = (r[:, None] // M == r[None, :] // M) & (c[:, None] // M == c[None, :] // M)
                return m
        """,
    },
    "ch10.predict_window_scores": {
        "the unshifted layer's count": """
            def predict_window_scores():
                return 4 * 49**2 + 4 * 7**2 + 1 + 2 * 225 + 1
        """,
        "every window whole": """
            def predict_window_scores():
                return 9 * 49**2 + 2 * 225 + 1
        """,
        "full attention": """
            def predict_window_scores():
                return 226**2
        """,
        "no [CLS]": """
            def predict_window_scores():
                return (16 + 49 + 16) ** 2
        """,
        "tiling moved down and right": """
            def predict_window_scores():
                return (9 + 49 + 25) ** 2 + 2 * 225 + 1
        """,
    },
    "ch10.conv_as_matmul": {
        "the stride ignored: windows that tile the image": """
            def conv_as_matmul(images, weight, bias, stride):
                D, C, P, _ = weight.shape
                B, _, H, W = images.shape
                x = images[:, :, : H // P * P, : W // P * P].reshape(B, C, H // P, P, W // P, P)
                return np.einsum("bchpwq,dcpq->bdhw", x, weight) + bias[None, :, None, None]
        """,
        "one window too many or too few: H // stride": """
            def conv_as_matmul(images, weight, bias, stride):
                D, C, P, _ = weight.shape
                B, _, H, W = images.shape
                Ho, Wo = H // stride, W // stride
                padded = np.pad(images, ((0, 0), (0, 0), (0, P), (0, P)))
                out = np.zeros((B, D, Ho, Wo))
                for i in range(Ho):
                    for j in range(Wo):
                        win = padded[:, :, i * stride : i * stride + P, j * stride : j * stride + P]
                        out[:, :, i, j] = np.einsum("bcpq,dcpq->bd", win, weight)
                return out + bias[None, :, None, None]
        """,
        "the windows' rows and columns swapped": """
            def conv_as_matmul(images, weight, bias, stride):
                P = weight.shape[-1]
                H, W = images.shape[-2:]
                rows = np.arange((H - P) // stride + 1)[:, None] * stride + np.arange(P)
                cols = np.arange((W - P) // stride + 1)[:, None] * stride + np.arange(P)
                x = images[:, :, rows[:, :, None, None], cols[None, None, :, :]]
                return np.einsum("bchpwq,dcqp->bdhw", x, weight) + bias[None, :, None, None]
        """,
    },
    "ch10.padded_patch_mask": {
        "the stub as it is": """
            def patch_key_mask(sizes, H, W, P):
                B = sizes.shape[0]
                rows = np.arange(H // P) * P
                cols = np.arange(W // P) * P
                h, w = sizes[:, 0] // P * P, sizes[:, 1] // P * P
                real = (rows[None, :, None] < h[:, None, None]) & (cols[None, None, :] < w[:, None, None])
                return np.concatenate([np.ones((B, 1), dtype=bool), real.reshape(B, -1)], axis=1)
        """,
        "the last pixel of a patch compared": """
            def patch_key_mask(sizes, H, W, P):
                B = sizes.shape[0]
                rows = np.arange(H // P) * P + P - 1
                cols = np.arange(W // P) * P + P - 1
                h, w = sizes[:, 0], sizes[:, 1]
                real = (rows[None, :, None] < h[:, None, None]) & (cols[None, None, :] < w[:, None, None])
                return np.concatenate([np.ones((B, 1), dtype=bool), real.reshape(B, -1)], axis=1)
        """,
        "one patch too many at each edge": """
            def patch_key_mask(sizes, H, W, P):
                B = sizes.shape[0]
                rows = np.arange(H // P) * P
                cols = np.arange(W // P) * P
                h, w = sizes[:, 0], sizes[:, 1]
                real = (rows[None, :, None] <= h[:, None, None]) & (cols[None, None, :] <= w[:, None, None])
                return np.concatenate([np.ones((B, 1), dtype=bool), real.reshape(B, -1)], axis=1)
        """,
        "no [CLS] column": """
            def patch_key_mask(sizes, H, W, P):
                B = sizes.shape[0]
                rows = np.arange(H // P) * P
                cols = np.arange(W // P) * P
                h, w = sizes[:, 0], sizes[:, 1]
                return ((rows[None, :, None] < h[:, None, None]) & (cols[None, None, :] < w[:, None, None])).reshape(B, -1)
        """,
    },
    "ch10.pool_real_patches": {
        "registers averaged in": """
            def pool_real_patches(tokens, key_mask, n_registers):
                keep = key_mask[:, 1:, None]
                return (tokens[:, 1:] * keep).sum(1) / keep.sum(1)
        """,
        "every patch averaged": """
            def pool_real_patches(tokens, key_mask, n_registers):
                return tokens[:, 1 : tokens.shape[1] - n_registers].mean(axis=1)
        """,
        "[CLS] averaged in": """
            def pool_real_patches(tokens, key_mask, n_registers):
                T = tokens.shape[1] - n_registers
                keep = key_mask[:, :T, None]
                return (tokens[:, :T] * keep).sum(1) / keep.sum(1)
        """,
        "the whole mask as it is": """
            def pool_real_patches(tokens, key_mask, n_registers):
                keep = key_mask[..., None]
                return (tokens * keep).sum(1) / keep.sum(1)
        """,
    },
}
