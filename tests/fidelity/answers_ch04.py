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
    "ch04.unpermute": {
        "torch argsort": """
            def unpermute(out_permuted, perm):
                inverse = torch.argsort(torch.as_tensor(perm))
                return torch.as_tensor(out_permuted)[..., inverse, :]
        """,
        "scatter into an empty array": """
            def unpermute(out_permuted, perm):
                out = np.empty_like(out_permuted)
                out[..., perm, :] = out_permuted
                return out
        """,
        "helper in an added cell": [
            """
            def _inverse_permutation(perm):
                inv = np.zeros(len(perm), dtype=int)
                for i, p in enumerate(perm):
                    inv[p] = i
                return inv
            """,
            """
            def unpermute(out_permuted, perm):
                return np.take(out_permuted, _inverse_permutation(perm), axis=-2)
            """,
        ],
    },
    "ch04.attention_overtakes_projections": {
        "torch": """
            def attention_overtakes_projections(d_model, E, Ev):
                Ev = torch.as_tensor(Ev, dtype=torch.float64)
                return d_model * (2 * E + Ev) / (E + Ev)
        """,
        "one plus a ratio": """
            def attention_overtakes_projections(d_model, E, Ev):
                Ev = np.asarray(Ev, dtype=float)
                return d_model * (1 + E / (E + Ev))
        """,
        "helper in an added cell": [
            """
            def _macs_44(L, d_model, E, Ev):
                return L * d_model * (2 * E + Ev), L * L * (E + Ev)
            """,
            """
            def attention_overtakes_projections(d_model, E, Ev):
                projections, attention = _macs_44(1.0, d_model, E, np.asarray(Ev, dtype=float))
                return projections / attention  # both per L: L * attention(1) = projections(1)
            """,
        ],
    },
    "ch04.predict_projection_parameters": {
        "the literal": """
            def predict_projection_parameters():
                return 98304
        """,
        "a float": """
            def predict_projection_parameters():
                return 3 * 512 * 64.0
        """,
        "numpy scalar with a helper cell": [
            """
            D_MODEL_45, D_K_45 = 512, 64
            """,
            """
            def predict_projection_parameters():
                return np.int64(3 * D_MODEL_45 * D_K_45)
            """,
        ],
        "math.prod with the chapter's math": """
            def predict_projection_parameters():
                return 3 * math.prod((512, 64))
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
    "ch04.unpermute": {
        "indexing axis 0": """
            def unpermute(out_permuted, perm):
                return out_permuted[np.argsort(perm)]
        """,
        "the permutation again": """
            def unpermute(out_permuted, perm):
                return out_permuted[..., perm, :]
        """,
        "permuting the features": """
            def unpermute(out_permuted, perm):
                return out_permuted[..., np.argsort(perm)] if out_permuted.shape[-1] == len(perm) else out_permuted
        """,
    },
    "ch04.attention_overtakes_projections": {
        "A V left out": """
            def attention_overtakes_projections(d_model, E, Ev):
                return d_model * (2 * E + np.asarray(Ev)) / E
        """,
        "projections without their factor L": """
            def attention_overtakes_projections(d_model, E, Ev):
                return np.sqrt(d_model * (2 * E + np.asarray(Ev)) / (E + np.asarray(Ev)))
        """,
        "one projection only": """
            def attention_overtakes_projections(d_model, E, Ev):
                return d_model * E / (E + np.asarray(Ev))
        """,
    },
    "ch04.predict_projection_parameters": {
        "one matrix": """
            def predict_projection_parameters():
                return 512 * 64
        """,
        "with W_O": """
            def predict_projection_parameters():
                return 4 * 512 * 64
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
