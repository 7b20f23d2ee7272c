"""Chapter 10 (attention for images): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch10.patchify": {
        "torch unfold with the chapter's torch import": """
            def patchify_images(images, patch_size):
                P = patch_size
                x = torch.as_tensor(images)
                B, C, H, W = x.shape
                x = x.unfold(2, P, P).unfold(3, P, P)  # (B, C, H/P, W/P, P, P)
                return x.permute(0, 2, 3, 1, 4, 5).reshape(B, (H // P) * (W // P), C * P * P)
        """,
        "nn.Unfold from the chapter's nn": """
            def patchify_images(images, patch_size):
                cols = nn.Unfold(kernel_size=patch_size, stride=patch_size)(torch.as_tensor(images))
                return cols.transpose(1, 2)  # (B, C*P*P, N) -> (B, N, C*P*P)
        """,
        "float32 numpy with moveaxis": """
            def patchify_images(images, patch_size):
                B, C, H, W = images.shape
                P = patch_size
                x = images.astype(np.float32).reshape(B, C, H // P, P, W // P, P)
                x = np.moveaxis(x, (2, 4), (1, 2))  # (B, H/P, W/P, C, P, P)
                return x.reshape(B, -1, C * P * P)
        """,
        "helper in an added cell, loops over the grid": [
            """
            def _patch_at(images, row, col, P):
                return images[:, :, row * P : (row + 1) * P, col * P : (col + 1) * P].reshape(images.shape[0], -1)
            """,
            """
            def patchify_images(images, patch_size):
                H, W = images.shape[-2:]
                P = patch_size
                patches = [_patch_at(images, r, c, P) for r in range(H // P) for c in range(W // P)]
                return np.stack(patches, axis=1)
            """,
        ],
    },
    "ch10.favoured_patch_size": {
        "torch with the chapter's import": """
            def favoured_patch_size(patch_size, accuracy, forward_ms, margin):
                P, acc, ms = (torch.as_tensor(a) for a in (patch_size, accuracy, forward_ms))
                sizes = torch.unique(P)
                time = torch.stack([ms[P == s].min() for s in sizes])
                mean = torch.stack([acc[P == s].float().mean() for s in sizes])
                order = sizes[torch.argsort(time, descending=True)]
                ok = mean >= mean.max() - margin
                return order.numpy(), int(sizes[ok][torch.argmin(time[ok])])
        """,
        "plain Python with dicts": """
            def favoured_patch_size(patch_size, accuracy, forward_ms, margin):
                runs = {}
                for P, a, t in zip(patch_size.tolist(), accuracy.tolist(), forward_ms.tolist()):
                    runs.setdefault(P, []).append((a, t))
                time = {P: min(t for _, t in r) for P, r in runs.items()}
                mean = {P: sum(a for a, _ in r) / len(r) for P, r in runs.items()}
                order = sorted(runs, key=lambda P: -time[P])
                best = max(mean.values())
                ok = [P for P in runs if mean[P] >= best - margin]
                return order, min(ok, key=lambda P: time[P])
        """,
        "helper in an added cell": [
            """
            def _per_size(patch_size, values, how):
                sizes = np.unique(patch_size)
                return sizes, np.array([how(values[patch_size == P]) for P in sizes])
            """,
            """
            def favoured_patch_size(patch_size, accuracy, forward_ms, margin):
                sizes, time = _per_size(patch_size, forward_ms, np.min)
                _, mean = _per_size(patch_size, accuracy, np.mean)
                candidates = [(t, P) for P, t, a in zip(sizes, time, mean) if a >= mean.max() - margin]
                return sizes[np.argsort(time)[::-1]], min(candidates)[1]
            """,
        ],
    },
    "ch10.predict_embedding_parameters": {
        "counted with the chapter's nn": """
            def predict_embedding_parameters():
                embedding = nn.Linear(3 * 4 * 4, 48)
                positions = nn.Parameter(torch.zeros(1, (32 // 4) ** 2 + 1, 48))
                return sum(p.numel() for p in embedding.parameters()) + positions.numel()
        """,
        "the literal": """
            def predict_embedding_parameters():
                return 5472
        """,
        "a numpy int": """
            def predict_embedding_parameters():
                return np.int64(48) * (48 + 1 + 64 + 1)
        """,
        "helper in an added cell": [
            """
            def _linear_parameters(n_in, n_out):
                return n_in * n_out + n_out
            """,
            """
            def predict_embedding_parameters():
                return _linear_parameters(3 * 4 * 4, 48) + (8 * 8 + 1) * 48
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
    "ch10.fix_unpatchify": {
        "torch with the chapter's torch import": """
            def images_from_patches(patches, patch_size, H, W):
                B, N, Fe = patches.shape
                P = patch_size
                C = Fe // (P * P)
                x = torch.as_tensor(patches).reshape(B, H // P, W // P, C, P, P)
                return x.permute(0, 3, 1, 4, 2, 5).reshape(B, C, H, W)
        """,
        "nn.functional.fold from the chapter's nn": """
            def images_from_patches(patches, patch_size, H, W):
                cols = torch.as_tensor(patches).transpose(1, 2)  # (B, C*P*P, N)
                return nn.functional.fold(cols, (H, W), kernel_size=patch_size, stride=patch_size)
        """,
        "float32 numpy": """
            def images_from_patches(patches, patch_size, H, W):
                B, N, Fe = patches.shape
                P = patch_size
                C = Fe // (P * P)
                x = patches.astype(np.float32).reshape(B, H // P, W // P, C, P, P)
                return np.einsum("bghcpq->bcgphq", x).reshape(B, C, H, W)
        """,
        "helper in an added cell, loops": [
            """
            def _put_patch(image, patch, row, col, P):
                image[:, row * P : (row + 1) * P, col * P : (col + 1) * P] = patch.reshape(image.shape[0], P, P)
            """,
            """
            def images_from_patches(patches, patch_size, H, W):
                B, N, Fe = patches.shape
                P = patch_size
                out = np.zeros((B, Fe // (P * P), H, W), dtype=patches.dtype)
                for b in range(B):
                    for n in range(N):
                        _put_patch(out[b], patches[b, n], n // (W // P), n % (W // P), P)
                return out
            """,
        ],
    },
    "ch10.rollout_alpha": {
        "torch with the chapter's torch import": """
            def rollout_alpha(weights, alpha):
                w = torch.as_tensor(weights)
                eye = torch.eye(w.shape[-1], dtype=w.dtype)
                result = eye
                for layer in w:
                    result = ((1 - alpha) * layer.mean(dim=1) + alpha * eye) @ result
                return result
        """,
        "float32 numpy with einsum": """
            def rollout_alpha(weights, alpha):
                w = weights.astype(np.float32)
                N = w.shape[-1]
                mixed = (1 - alpha) * w.mean(axis=2) + alpha * np.eye(N, dtype=np.float32)  # (n_layers, B, N, N)
                result = mixed[0]
                for a in mixed[1:]:
                    result = np.einsum("bij,bjk->bik", a, result)
                return result
        """,
        "helper in an added cell, functools.reduce": [
            """
            import functools

            def _mixed_layer(w, alpha):
                return (1 - alpha) * w.mean(axis=-3) + alpha * np.eye(w.shape[-1])
            """,
            """
            def rollout_alpha(weights, alpha):
                layers = [_mixed_layer(w, alpha) for w in weights]
                return functools.reduce(lambda acc, a: a @ acc, layers[1:], layers[0])
            """,
        ],
    },
}

WRONG = {
    "ch10.patchify": {
        "features in (P, P, C) order": """
            def patchify_images(images, patch_size):
                B, C, H, W = images.shape
                P = patch_size
                x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 2, 4, 3, 5, 1)
                return x.reshape(B, (H // P) * (W // P), C * P * P)
        """,
        "rows and columns of each patch swapped": """
            def patchify_images(images, patch_size):
                B, C, H, W = images.shape
                P = patch_size
                x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 2, 4, 1, 5, 3)
                return x.reshape(B, (H // P) * (W // P), C * P * P)
        """,
        "grid read column by column": """
            def patchify_images(images, patch_size):
                B, C, H, W = images.shape
                P = patch_size
                x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 4, 2, 1, 3, 5)
                return x.reshape(B, (H // P) * (W // P), C * P * P)
        """,
    },
    "ch10.favoured_patch_size": {
        "the most accurate size, cost ignored": """
            def favoured_patch_size(patch_size, accuracy, forward_ms, margin):
                sizes = np.unique(patch_size)
                time = np.array([forward_ms[patch_size == P].min() for P in sizes])
                acc = np.array([accuracy[patch_size == P].mean() for P in sizes])
                return sizes[np.argsort(-time)], sizes[np.argmax(acc)]
        """,
        "ranked by patch size, not by measured time": """
            def favoured_patch_size(patch_size, accuracy, forward_ms, margin):
                sizes = np.unique(patch_size)
                time = np.array([forward_ms[patch_size == P].min() for P in sizes])
                acc = np.array([accuracy[patch_size == P].mean() for P in sizes])
                good = acc >= acc.max() - margin
                return sizes, sizes[good][np.argmin(time[good])]
        """,
        "each run its own entry": """
            def favoured_patch_size(patch_size, accuracy, forward_ms, margin):
                order = patch_size[np.argsort(-forward_ms)]
                good = accuracy >= accuracy.max() - margin
                return order, patch_size[good][np.argmin(forward_ms[good])]
        """,
    },
    "ch10.predict_embedding_parameters": {
        "the bias forgotten": """
            def predict_embedding_parameters():
                return 3 * 4 * 4 * 48 + 65 * 48
        """,
        "the [CLS] token counted too": """
            def predict_embedding_parameters():
                return 3 * 4 * 4 * 48 + 48 + 65 * 48 + 48
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
    "ch10.fix_unpatchify": {
        "channels read first": """
            def images_from_patches(patches, patch_size, H, W):
                B, N, Fe = patches.shape
                P = patch_size
                C = Fe // (P * P)
                x = patches.reshape(B, C, H // P, W // P, P, P).transpose(0, 1, 2, 4, 3, 5)
                return x.reshape(B, C, H, W)
        """,
        "grid axes and pixel axes mixed up": """
            def images_from_patches(patches, patch_size, H, W):
                B, N, Fe = patches.shape
                P = patch_size
                C = Fe // (P * P)
                x = patches.reshape(B, H // P, W // P, C, P, P).transpose(0, 3, 4, 1, 5, 2)
                return x.reshape(B, C, H, W)
        """,
    },
    "ch10.rollout_alpha": {
        "layers multiplied in the wrong order": """
            def rollout_alpha(weights, alpha):
                N = weights.shape[-1]
                result = np.eye(N)
                for w in weights:
                    result = result @ ((1 - alpha) * w.mean(axis=-3) + alpha * np.eye(N))
                return result
        """,
        "averaged over the batch axis": """
            def rollout_alpha(weights, alpha):
                N = weights.shape[-1]
                result = np.eye(N)
                for w in weights:
                    result = ((1 - alpha) * w.mean(axis=0) + alpha * np.eye(N)) @ result
                return result
        """,
        "the identity added once, after the product": """
            def rollout_alpha(weights, alpha):
                N = weights.shape[-1]
                result = np.eye(N)
                for w in weights:
                    result = w.mean(axis=-3) @ result
                return (1 - alpha) * result + alpha * np.eye(N)
        """,
    },
}
