"""Chapter 4 (self-attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch04.project_qkv": {
        "einsum": """
            def project_qkv(x, W_q, W_k, W_v):
                return tuple(np.einsum("...ld,de->...le", x, W) for W in (W_q, W_k, W_v))
        """,
        "torch float32 with the chapter's torch import": """
            def project_qkv(x, W_q, W_k, W_v):
                xt = torch.as_tensor(x).float()
                return tuple(xt @ torch.as_tensor(W).float() for W in (W_q, W_k, W_v))
        """,
        "helper in an added cell": [
            """
            def _project_one(x, W):
                return np.matmul(x, W)
            """,
            """
            def project_qkv(x, W_q, W_k, W_v):
                return _project_one(x, W_q), _project_one(x, W_k), _project_one(x, W_v)
            """,
        ],
        "torch float64 matmul": """
            def project_qkv(x, W_q, W_k, W_v):
                xt = torch.from_numpy(x)
                return [torch.matmul(xt, torch.from_numpy(W)).numpy() for W in (W_q, W_k, W_v)]
        """,
    },
    "ch04.attention_with_counts": {
        "the chapter's ac.softmax": """
            def attention_with_counts(q, k, v, counts):
                with np.errstate(divide="ignore"):
                    log_counts = np.log(np.asarray(counts, dtype=float))
                weights = ac.softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + log_counts)
                return weights @ v, weights
        """,
        "exponentials multiplied by the counts, float32": """
            def attention_with_counts(q, k, v, counts):
                s = (q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])).astype(np.float32)
                e = np.exp(s - s.max(axis=-1, keepdims=True)) * np.asarray(counts, dtype=np.float32)
                weights = e / e.sum(axis=-1, keepdims=True)
                return weights @ v.astype(np.float32), weights
        """,
        "torch with the chapter's F": [
            """
            def _log_counts_42(counts, dtype):
                return torch.log(torch.as_tensor(counts, dtype=dtype))
            """,
            """
            def attention_with_counts(q, k, v, counts):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 + _log_counts_42(counts, q.dtype)
                weights = F.softmax(scores, dim=-1)
                return weights @ v, weights
            """,
        ],
    },
    "ch04.recover_permutation": {
        "a loop, nearest row by np.linalg.norm": """
            def recover_permutation(out, out_permuted):
                out = np.asarray(out, dtype=float)
                return np.array([int(np.argmin(np.linalg.norm(out - np.asarray(row, dtype=float), axis=1)))
                                 for row in out_permuted])
        """,
        "torch cdist": """
            def recover_permutation(out, out_permuted):
                a = torch.as_tensor(np.asarray(out_permuted, dtype=np.float64))
                b = torch.as_tensor(np.asarray(out, dtype=np.float64))
                return torch.cdist(a, b).argmin(dim=-1)
        """,
        "einsum of the expanded square, float32": """
            def recover_permutation(out, out_permuted):
                a = np.asarray(out_permuted, dtype=np.float64)
                b = np.asarray(out, dtype=np.float64)
                d = (a**2).sum(-1)[:, None] - 2 * np.einsum("id,jd->ij", a, b) + (b**2).sum(-1)[None, :]
                return d.argmin(axis=1).astype(np.int32)
        """,
    },
    "ch04.recover_value_projection": {
        "normal equations with einsum": """
            def recover_value_projection(x, W_q, W_k, out):
                q, k = np.einsum("ld,de->le", x, W_q), np.einsum("ld,de->le", x, W_k)
                w = softmax(np.einsum("ie,je->ij", q, k) / np.sqrt(q.shape[1]))
                m = w @ x
                return np.linalg.solve(m.T @ m, m.T @ out)
        """,
        "torch float32 pinv with the chapter's torch import": """
            def recover_value_projection(x, W_q, W_k, out):
                xt = torch.as_tensor(x).float()
                q, k = xt @ torch.as_tensor(W_q).float(), xt @ torch.as_tensor(W_k).float()
                w = torch.softmax(q @ k.T / q.shape[-1] ** 0.5, dim=-1)
                return torch.linalg.pinv(w @ xt) @ torch.as_tensor(out).float()
        """,
        "undo the mixing first, in an added helper": [
            """
            def _attention_weights(x, W_q, W_k):
                s = (x @ W_q) @ (x @ W_k).T / np.sqrt(W_q.shape[1])
                e = np.exp(s - s.max(axis=1, keepdims=True))
                return e / e.sum(axis=1, keepdims=True)
            """,
            """
            def recover_value_projection(x, W_q, W_k, out):
                values = np.linalg.solve(_attention_weights(x, W_q, W_k), out)  # (L, d_v) = x @ W_v
                return np.linalg.lstsq(x, values, rcond=None)[0]
            """,
        ],
    },
    "ch04.predict_cross_projection_parameters": {
        "the literal": """
            def predict_cross_projection_parameters():
                return 185040
        """,
        "four products and four biases": """
            def predict_cross_projection_parameters():
                return (512 + 1) * 64 + (768 + 1) * 64 + (768 + 1) * 80 + (80 + 1) * 512
        """,
        "a numpy integer": """
            def predict_cross_projection_parameters():
                return np.int64(512 * 64 + 768 * 64 + 768 * 80 + 80 * 512) + (64 + 64 + 80 + 512)
        """,
    },
    "ch04.self_attention_out": {
        "einsum": """
            def self_attention_out(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                weights = softmax(np.einsum("...id,...jd->...ij", q, k) / np.sqrt(q.shape[-1]))
                return np.einsum("...ij,...jd->...id", weights, v), weights
        """,
        "torch float32 with the chapter's torch": """
            def self_attention_out(x, W_q, W_k, W_v):
                x, W_q, W_k, W_v = (torch.as_tensor(a, dtype=torch.float32) for a in (x, W_q, W_k, W_v))
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
                return weights @ v, weights
        """,
        "helper in an added cell": [
            """
            def _mix_46(weights, v):
                return np.matmul(weights, v)
            """,
            """
            def self_attention_out(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return _mix_46(weights, v), weights
            """,
        ],
    },
}

WRONG = {
    "ch04.project_qkv": {
        "(W.T @ x.T).T ignores the leading axes": """
            def project_qkv(x, W_q, W_k, W_v):
                return (W_q.T @ x.T).T, (W_k.T @ x.T).T, (W_v.T @ x.T).T
        """,
        "W_q for all three": """
            def project_qkv(x, W_q, W_k, W_v):
                return x @ W_q, x @ W_q, x @ W_q
        """,
        "k and v swapped": """
            def project_qkv(x, W_q, W_k, W_v):
                return x @ W_q, x @ W_v, x @ W_k
        """,
    },
    "ch04.attention_with_counts": {
        "counts ignored": """
            def attention_with_counts(q, k, v, counts):
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return weights @ v, weights
        """,
        "weights multiplied by the counts after the softmax": """
            def attention_with_counts(q, k, v, counts):
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])) * counts
                return weights @ v, weights
        """,
        "count added to the score": """
            def attention_with_counts(q, k, v, counts):
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) + counts)
                return weights @ v, weights
        """,
        "the long sequence's weights per copy": """
            def attention_with_counts(q, k, v, counts):
                k_all, v_all = np.repeat(k, counts, axis=-2), np.repeat(v, counts, axis=-2)
                weights = softmax(q @ np.swapaxes(k_all, -1, -2) / np.sqrt(q.shape[-1]))
                return weights @ v_all, weights
        """,
    },
    "ch04.recover_permutation": {
        "the inverse": """
            def recover_permutation(out, out_permuted):
                d = ((np.asarray(out_permuted, float)[:, None] - np.asarray(out, float)[None]) ** 2).sum(-1)
                return np.argsort(d.argmin(axis=1))
        """,
        "matched by dot product": """
            def recover_permutation(out, out_permuted):
                return (np.asarray(out_permuted, float) @ np.asarray(out, float).T).argmax(axis=1)
        """,
        "exact equality": """
            def recover_permutation(out, out_permuted):
                eq = (np.asarray(out_permuted)[:, None, :] == np.asarray(out)[None, :, :]).all(-1)
                return eq.argmax(axis=1)
        """,
    },
    "ch04.recover_value_projection": {
        "the weights left out": """
            def recover_value_projection(x, W_q, W_k, out):
                return np.linalg.lstsq(x, out, rcond=None)[0]
        """,
        "unscaled scores": """
            def recover_value_projection(x, W_q, W_k, out):
                w = softmax((x @ W_q) @ (x @ W_k).T)
                return np.linalg.lstsq(w @ x, out, rcond=None)[0]
        """,
        "weights transposed": """
            def recover_value_projection(x, W_q, W_k, out):
                w = softmax((x @ W_q) @ (x @ W_k).T / np.sqrt(W_q.shape[1]))
                return np.linalg.lstsq(w.T @ x, out, rcond=None)[0]
        """,
        "scaled by d_model instead of d_k": """
            def recover_value_projection(x, W_q, W_k, out):
                w = softmax((x @ W_q) @ (x @ W_k).T / np.sqrt(x.shape[1]))
                return np.linalg.lstsq(w @ x, out, rcond=None)[0]
        """,
    },
    "ch04.predict_cross_projection_parameters": {
        "no biases": """
            def predict_cross_projection_parameters():
                return 512 * 64 + 768 * 64 + 768 * 80 + 80 * 512
        """,
        "keys and values from the decoder": """
            def predict_cross_projection_parameters():
                return (512 + 1) * 64 + (512 + 1) * 64 + (512 + 1) * 80 + (80 + 1) * 512
        """,
        "output projection left out": """
            def predict_cross_projection_parameters():
                return (512 + 1) * 64 + (768 + 1) * 64 + (768 + 1) * 80
        """,
    },
    "ch04.self_attention_out": {
        "still transposed": """
            def self_attention_out(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return np.swapaxes(weights, -1, -2) @ v, weights
        """,
        "k.T on a batch": """
            def self_attention_out(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                weights = softmax(q @ k.T / np.sqrt(q.shape[-1]))
                return weights @ v, weights
        """,
        "transposed twice": """
            def self_attention_out(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), axis=-2)
                return np.swapaxes(weights, -1, -2) @ v, np.swapaxes(weights, -1, -2)
        """,
    },
}
