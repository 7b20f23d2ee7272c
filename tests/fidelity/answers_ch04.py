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
    "ch04.self_attention_forward": {
        "torch with the chapter's F and math": """
            def self_attention_forward(x, W_q, W_k, W_v):
                xt = torch.as_tensor(x)
                q, k, v = (xt @ torch.as_tensor(W) for W in (W_q, W_k, W_v))
                w = F.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
                return w @ v, w
        """,
        "float32 numpy": """
            def self_attention_forward(x, W_q, W_k, W_v):
                x32 = x.astype(np.float32)
                q, k, v = (x32 @ W.astype(np.float32) for W in (W_q, W_k, W_v))
                s = q @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(q.shape[-1]))
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                w = e / e.sum(axis=-1, keepdims=True)
                return w @ v, w
        """,
        "helper in an added cell, einsum": [
            """
            def _sa_softmax(s):
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
            """,
            """
            def self_attention_forward(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                w = _sa_softmax(np.einsum("...ld,...sd->...ls", q, k) / np.sqrt(W_k.shape[1]))
                return np.einsum("...ls,...sv->...lv", w, v), w
            """,
        ],
        "the chapter's ac.softmax": """
            def self_attention_forward(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                w = ac.softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), axis=-1)
                return w @ v, w
        """,
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
    "ch04.score_matrix_bytes": {
        "math.prod with the chapter's math": """
            def score_matrix_bytes(batch, n_heads, seq_len, bytes_per_element):
                return math.prod((batch, n_heads, seq_len, seq_len)) * bytes_per_element
        """,
        "torch empty meta tensor": """
            def score_matrix_bytes(batch, n_heads, seq_len, bytes_per_element):
                n = torch.Size((batch, n_heads, seq_len, seq_len)).numel()
                return n * bytes_per_element
        """,
        "helper in an added cell": [
            """
            def _numel(shape):
                n = 1
                for s in shape:
                    n *= s
                return n
            """,
            """
            def score_matrix_bytes(batch, n_heads, seq_len, bytes_per_element):
                return _numel([batch, n_heads, seq_len, seq_len]) * bytes_per_element
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
    "ch04.fix_symmetric_scores": {
        "torch with the chapter's F": """
            def self_attention_weights(x, W_q, W_k):
                q = torch.as_tensor(x) @ torch.as_tensor(W_q)
                k = torch.as_tensor(x) @ torch.as_tensor(W_k)
                return F.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        """,
        "float32 einsum": """
            def self_attention_weights(x, W_q, W_k):
                x32 = x.astype(np.float32)
                q = x32 @ W_q.astype(np.float32)
                k = x32 @ W_k.astype(np.float32)
                s = np.einsum("...id,...jd->...ij", q, k) / np.sqrt(np.float32(q.shape[-1]))
                return softmax(s)
        """,
        "helper in an added cell": [
            """
            def _scores_46(q, k):
                return q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            """,
            """
            def self_attention_weights(x, W_q, W_k):
                return softmax(_scores_46(x @ W_q, x @ W_k))
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
    "ch04.self_attention_forward": {
        "scaled by sqrt(d_model)": """
            def self_attention_forward(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1]))
                return w @ v, w
        """,
        "scaled by sqrt(d_v)": """
            def self_attention_forward(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(v.shape[-1]))
                return w @ v, w
        """,
        "k.T on a batch": """
            def self_attention_forward(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                w = softmax(q @ k.T / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
        "softmax over the queries": """
            def self_attention_forward(x, W_q, W_k, W_v):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), axis=-2)
                return w @ v, w
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
    "ch04.score_matrix_bytes": {
        "linear in L": """
            def score_matrix_bytes(batch, n_heads, seq_len, bytes_per_element):
                return batch * n_heads * seq_len * bytes_per_element
        """,
        "heads forgotten": """
            def score_matrix_bytes(batch, n_heads, seq_len, bytes_per_element):
                return batch * seq_len * seq_len * bytes_per_element
        """,
        "bits, not bytes": """
            def score_matrix_bytes(batch, n_heads, seq_len, bytes_per_element):
                return batch * n_heads * seq_len * seq_len * bytes_per_element * 8
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
    "ch04.fix_symmetric_scores": {
        "the bug left in (k = x @ W_q)": """
            def self_attention_weights(x, W_q, W_k):
                q = x @ W_q
                return softmax(q @ np.swapaxes(x @ W_q, -1, -2) / np.sqrt(q.shape[-1]))
        """,
        "unscaled": """
            def self_attention_weights(x, W_q, W_k):
                q, k = x @ W_q, x @ W_k
                return softmax(q @ np.swapaxes(k, -1, -2))
        """,
        "k.T on a batch": """
            def self_attention_weights(x, W_q, W_k):
                q, k = x @ W_q, x @ W_k
                return softmax(q @ k.T / np.sqrt(q.shape[-1]))
        """,
    },
}
