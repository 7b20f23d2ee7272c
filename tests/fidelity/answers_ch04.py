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
    "ch04.output_without_token": {
        "the column of weights renormalised, einsum": """
            def output_without_token(out, weights, v, j):
                keep = [t for t in range(weights.shape[-1]) if t != j]
                w = weights[..., keep, :][..., :, keep]
                w = w / w.sum(axis=-1, keepdims=True)
                return np.einsum("...ij,...jd->...id", w, v[..., keep, :])
        """,
        "a loop over the queries, float32": """
            def output_without_token(out, weights, v, j):
                out, weights, v = (np.asarray(a, dtype=np.float32) for a in (out, weights, v))
                rows = []
                for i in range(out.shape[-2]):
                    if i == j:
                        continue
                    w = weights[..., i, j][..., None]
                    rows.append((out[..., i, :] - w * v[..., j, :]) / (1 - w))
                return np.stack(rows, axis=-2)
        """,
        "torch, the scores' exponentials masked": """
            def output_without_token(out, weights, v, j):
                w, vt = torch.as_tensor(weights), torch.as_tensor(v)
                keep = torch.ones(w.shape[-1], dtype=torch.bool)
                keep[j] = False
                w = w[..., keep, :] * keep.to(w.dtype)
                return (w / w.sum(-1, keepdim=True)) @ vt
        """,
    },
    "ch04.add_projection_biases": {
        "the scores' shift written out and softmaxed again": """
            def add_projection_biases(q, out, weights, b_k, b_v):
                shift = (q @ b_k / np.sqrt(q.shape[-1]))[..., None]  # the same for every key of a row
                with np.errstate(divide="ignore"):
                    new = softmax(np.log(weights) + shift)
                return out + new @ np.broadcast_to(b_v, weights.shape[:-1] + b_v.shape), new
        """,
        "torch float32": """
            def add_projection_biases(q, out, weights, b_k, b_v):
                w = torch.as_tensor(weights, dtype=torch.float32)
                return torch.as_tensor(out, dtype=torch.float32) + torch.as_tensor(b_v, dtype=torch.float32), w
        """,
        "rescaled exponentials renormalised": """
            def add_projection_biases(q, out, weights, b_k, b_v):
                e = weights * np.exp(np.einsum("...ld,d->...l", q, b_k) / math.sqrt(q.shape[-1]))[..., None]
                new = e / e.sum(axis=-1, keepdims=True)
                return out + b_v[None, :] * new.sum(axis=-1, keepdims=True), new
        """,
    },
    "ch04.predict_distinct_weights": {
        "the literal": """
            def predict_distinct_weights():
                return 25
        """,
        "the words counted": """
            def predict_distinct_weights():
                words = set("the cat saw the dog and the dog saw the cat".split())
                return len(words) ** 2
        """,
        "a float": """
            def predict_distinct_weights():
                return 25.0
        """,
    },
    "ch04.self_attention_in_blocks": {
        "the fix: the sequence's keys and values only": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                L = x.shape[-2]
                filler = np.zeros(x.shape[:-2] + (-L % block, x.shape[-1]), dtype=x.dtype)
                x = np.concatenate([x, filler], axis=-2)
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                out = np.zeros(q.shape[:-1] + v.shape[-1:])
                for start in range(0, q.shape[-2], block):
                    rows = slice(start, start + block)
                    scores = q[..., rows, :] @ np.swapaxes(k[..., :L, :], -1, -2) / np.sqrt(q.shape[-1])
                    out[..., rows, :] = softmax(scores) @ v[..., :L, :]
                return out[..., :L, :]
        """,
        "the filler's scores set to -inf": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                L = x.shape[-2]
                filler = np.zeros(x.shape[:-2] + (-L % block, x.shape[-1]), dtype=x.dtype)
                x = np.concatenate([x, filler], axis=-2)
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                real = np.arange(k.shape[-2]) < L
                out = np.zeros(q.shape[:-1] + v.shape[-1:])
                for start in range(0, q.shape[-2], block):
                    rows = slice(start, start + block)
                    scores = q[..., rows, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                    out[..., rows, :] = softmax(np.where(real, scores, -np.inf)) @ v
                return out[..., :L, :]
        """,
        "the weights renormalised over the real tokens, float32": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                x, W_q, W_k, W_v = (np.asarray(a, dtype=np.float32) for a in (x, W_q, W_k, W_v))
                L = x.shape[-2]
                pad = [(0, 0)] * (x.ndim - 2) + [(0, -L % block), (0, 0)]
                x = np.pad(x, pad)
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                out = np.zeros(q.shape[:-1] + v.shape[-1:], dtype=np.float32)
                for start in range(0, q.shape[-2], block):
                    w = softmax(q[..., start : start + block, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                    w = w[..., :L] / w[..., :L].sum(-1, keepdims=True)
                    out[..., start : start + block, :] = w @ v[..., :L, :]
                return out[..., :L, :]
        """,
        "loops over queries and keys, no filler": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                x = np.asarray(x, dtype=float)
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                L = x.shape[-2]
                out = np.zeros(q.shape[:-1] + v.shape[-1:])
                for start in range(0, L, block):
                    for i in range(start, min(start + block, L)):
                        s = np.stack([(q[..., i, :] * k[..., j, :]).sum(-1) for j in range(L)], axis=-1)
                        w = softmax(s / math.sqrt(q.shape[-1]))
                        out[..., i, :] = sum(w[..., j, None] * v[..., j, :] for j in range(L))
                return out
        """,
        "einsum, the blocks concatenated": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                q, k, v = (np.einsum("...ld,de->...le", x, W) for W in (W_q, W_k, W_v))
                parts = []
                for start in range(0, q.shape[-2], block):
                    s = np.einsum("...id,...jd->...ij", q[..., start : start + block, :], k) / math.sqrt(q.shape[-1])
                    parts.append(np.einsum("...ij,...jd->...id", softmax(s), v))
                return np.concatenate(parts, axis=-2)
        """,
        "torch float32, torch.split": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                x, W_q, W_k, W_v = (torch.as_tensor(a, dtype=torch.float32) for a in (x, W_q, W_k, W_v))
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                parts = [
                    torch.softmax(qb @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v
                    for qb in torch.split(q, block, dim=-2)
                ]
                return torch.cat(parts, dim=-2)
        """,
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
    "ch04.output_without_token": {
        "the old outputs, row j taken out": """
            def output_without_token(out, weights, v, j):
                return np.delete(out, j, axis=-2)
        """,
        "the deleted token's share taken out, not renormalised": """
            def output_without_token(out, weights, v, j):
                rest = out - weights[..., :, j, None] * v[..., j, None, :]
                return np.delete(rest, j, axis=-2)
        """,
        "row j of the weights for column j": """
            def output_without_token(out, weights, v, j):
                w = weights[..., j, :, None]
                return np.delete((out - w * v[..., j, None, :]) / (1 - w), j, axis=-2)
        """,
        "the remaining weights kept as they were": """
            def output_without_token(out, weights, v, j):
                keep = [t for t in range(weights.shape[-1]) if t != j]
                return weights[..., keep, :][..., :, keep] @ v[..., keep, :]
        """,
    },
    "ch04.add_projection_biases": {
        "exponentials rescaled, not renormalised": """
            def add_projection_biases(q, out, weights, b_k, b_v):
                c = np.exp(q @ b_k / np.sqrt(q.shape[-1]))[..., None]
                return out + b_v, weights * c
        """,
        "the value bias once per token": """
            def add_projection_biases(q, out, weights, b_k, b_v):
                return out + weights.shape[-1] * b_v, weights
        """,
        "the value bias left out": """
            def add_projection_biases(q, out, weights, b_k, b_v):
                return out, weights
        """,
        "the key bias added to the weights": """
            def add_projection_biases(q, out, weights, b_k, b_v):
                return out + b_v, softmax(weights + (q @ b_k)[..., None])
        """,
    },
    "ch04.predict_distinct_weights": {
        "every entry": """
            def predict_distinct_weights():
                return 11 * 11
        """,
        "rows merged, columns not": """
            def predict_distinct_weights():
                return 5 * 11
        """,
        "one number per word": """
            def predict_distinct_weights():
                return 5
        """,
    },
    "ch04.self_attention_in_blocks": {
        "the bug left in": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                L = x.shape[-2]
                filler = np.zeros(x.shape[:-2] + (-L % block, x.shape[-1]), dtype=x.dtype)
                x = np.concatenate([x, filler], axis=-2)
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                out = np.zeros(q.shape[:-1] + v.shape[-1:])
                for start in range(0, q.shape[-2], block):
                    rows = slice(start, start + block)
                    scores = q[..., rows, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                    out[..., rows, :] = softmax(scores) @ v
                return out[..., :L, :]
        """,
        "the filler's values cut, its keys kept": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                L = x.shape[-2]
                filler = np.zeros(x.shape[:-2] + (-L % block, x.shape[-1]), dtype=x.dtype)
                x = np.concatenate([x, filler], axis=-2)
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                out = np.zeros(q.shape[:-1] + v.shape[-1:])
                for start in range(0, q.shape[-2], block):
                    rows = slice(start, start + block)
                    w = softmax(q[..., rows, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                    out[..., rows, :] = w[..., :L] @ v[..., :L, :]
                return out[..., :L, :]
        """,
        "the output scaled up by (L + filler) / L": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                L = x.shape[-2]
                filler = np.zeros(x.shape[:-2] + (-L % block, x.shape[-1]), dtype=x.dtype)
                x = np.concatenate([x, filler], axis=-2)
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                out = np.zeros(q.shape[:-1] + v.shape[-1:])
                for start in range(0, q.shape[-2], block):
                    rows = slice(start, start + block)
                    scores = q[..., rows, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                    out[..., rows, :] = softmax(scores) @ v
                return out[..., :L, :] * q.shape[-2] / L
        """,
        "all keys, but the block's values": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                out = np.zeros(q.shape[:-1] + v.shape[-1:])
                for start in range(0, q.shape[-2], block):
                    rows = slice(start, start + block)
                    w = softmax(q[..., rows, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                    vb = v[..., rows, :]
                    out[..., rows, :] = w[..., :, : vb.shape[-2]] @ vb
                return out
        """,
        "the last partial block dropped": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                out = np.zeros(q.shape[:-1] + v.shape[-1:])
                for start in range(0, q.shape[-2] - block + 1, block):
                    rows = slice(start, start + block)
                    scores = q[..., rows, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                    out[..., rows, :] = softmax(scores) @ v
                return out
        """,
        "softmax over the block's queries": """
            def self_attention_in_blocks(x, W_q, W_k, W_v, block):
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                out = np.zeros(q.shape[:-1] + v.shape[-1:])
                for start in range(0, q.shape[-2], block):
                    rows = slice(start, start + block)
                    scores = q[..., rows, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                    out[..., rows, :] = softmax(scores, axis=-2) @ v
                return out
        """,
    },
}
