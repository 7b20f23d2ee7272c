"""Chapter 13 (beyond softmax): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch13.predict_topk_share": {
        "a loop over queries": """
            def predict_topk_share():
                work = sum(min(256, i + 1) + (i + 1) * 32 / 128 for i in range(4096))
                return work / (4096 * 4097 / 2)
        """,
        "the literal": """
            def predict_topk_share():
                return 0.371
        """,
        "torch float32": """
            def predict_topk_share():
                seen = torch.arange(1, 4097, dtype=torch.float32)
                work = torch.clamp(seen, max=256).sum() + 0.25 * seen.sum()
                return float(work / seen.sum())
        """,
        "helper in an added cell": [
            """
            def _causal_scores(L):
                return L * (L + 1) // 2
            """,
            """
            def predict_topk_share():
                kept = _causal_scores(4096) - _causal_scores(4096 - 256)
                return kept / _causal_scores(4096) + 32 / 128
            """,
        ],
    },
    "ch13.predict_hybrid_mib": {
        "an expression with the chapter's numpy": """
            def predict_hybrid_mib():
                return (np.prod([8, 2, 4, 128, 2, 4096]) + np.prod([24, 16, 128, 128, 2])) / 2**20
        """,
        "the literal": """
            def predict_hybrid_mib():
                return 76
        """,
        "torch float32": """
            def predict_hybrid_mib():
                per_token = torch.tensor(8 * 2 * 4 * 128 * 2, dtype=torch.float32)
                return float(per_token * 4096 / 2**20 + 24 * 16 * 128 * 128 * 2 / 2**20)
        """,
        "helper in an added cell": [
            """
            def _mib(n_bytes):
                return n_bytes / 1024**2
            """,
            """
            def predict_hybrid_mib():
                return _mib(32 // 4 * 2 * 4 * 128 * 2 * 4096) + _mib(24 * 16 * 128 * 128 * 2)
            """,
        ],
    },
    "ch13.causal_linear_attention": {
        "the recurrence": """
            def causal_linear_attention(q, k, v):
                phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))
                pq, pk = phi(q), phi(k)
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                z = np.zeros(q.shape[:-2] + (q.shape[-1],))
                outs = []
                for t in range(q.shape[-2]):
                    S = S + pk[..., t, :, None] * v[..., t, None, :]
                    z = z + pk[..., t, :]
                    num = np.einsum("...e,...ev->...v", pq[..., t, :], S)
                    outs.append(num / np.einsum("...e,...e->...", pq[..., t, :], z)[..., None])
                return np.stack(outs, axis=-2).astype(np.result_type(q, v))
        """,
        "cumulative sums in torch": """
            def causal_linear_attention(q, k, v):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                pq, pk = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
                S = torch.cumsum(pk[..., :, :, None] * v[..., :, None, :], dim=-3)
                z = torch.cumsum(pk, dim=-2)
                num = (pq[..., :, None, :] @ S)[..., 0, :]
                return (num / (pq * z).sum(-1, keepdim=True)).numpy()
        """,
        "helper in an added cell, float32 einsum": [
            """
            def _elu1(x):
                return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
            """,
            """
            def causal_linear_attention(q, k, v):
                a = np.einsum("...ie,...je->...ij", _elu1(q), _elu1(k))
                a = a * np.tri(q.shape[-2], dtype=a.dtype)
                return np.einsum("...ij,...jv->...iv", a, v) / a.sum(-1)[..., None]
            """,
        ],
    },
    "ch13.gated_delta_rule": {
        "torch loop": """
            def gated_delta_rule(q, k, v, beta, decay):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                beta, decay = torch.as_tensor(beta), torch.as_tensor(decay)
                S = torch.zeros(*q.shape[:-2], q.shape[-1], v.shape[-1], dtype=q.dtype)
                out = []
                for t in range(q.shape[-2]):
                    S = S * decay[..., t, None, None]
                    err = v[..., t, :] - (k[..., t, None, :] @ S)[..., 0, :]
                    S = S + k[..., t, :, None] * (beta[..., t, None] * err)[..., None, :]
                    out.append((q[..., t, None, :] @ S)[..., 0, :])
                return (torch.stack(out, dim=-2) / q.shape[-1] ** 0.5).numpy()
        """,
        "einsum with the chapter's numpy": """
            def gated_delta_rule(q, k, v, beta, decay):
                S = 0.0
                outs = []
                for t in range(q.shape[-2]):
                    S = decay[..., t, None, None] * S
                    pred = np.einsum("...e,...ev->...v", k[..., t, :], S) if np.ndim(S) else 0.0
                    u = beta[..., t, None] * (v[..., t, :] - pred)
                    S = S + np.einsum("...e,...v->...ev", k[..., t, :], u)
                    outs.append(np.einsum("...e,...ev->...v", q[..., t, :], S))
                return np.stack(outs, axis=-2) / np.sqrt(q.shape[-1])
        """,
        "helper in an added cell": [
            """
            def _step(S, q_t, k_t, v_t, b, a):
                S = a[..., None, None] * S
                u = b[..., None, None] * (v_t[..., None, :] - k_t[..., None, :] @ S)
                S = S + k_t[..., :, None] @ u
                return S, (q_t[..., None, :] @ S)[..., 0, :]
            """,
            """
            def gated_delta_rule(q, k, v, beta, decay):
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]), dtype=q.dtype)
                outs = []
                for t in range(q.shape[-2]):
                    S, o = _step(S, q[..., t, :], k[..., t, :], v[..., t, :], beta[..., t], decay[..., t])
                    outs.append(o)
                return np.stack(outs, axis=-2) / np.sqrt(q.shape[-1]).astype(q.dtype)
            """,
        ],
    },
    "ch13.fix_topk_causal": {
        "mask with a large negative before sorting": """
            def topk_causal(q, k, v, top_k):
                L, S = q.shape[-2], k.shape[-2]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                causal = np.tril(np.ones((L, S), dtype=bool))
                ranked = np.where(causal, scores, -np.inf)
                order = np.argsort(-ranked, axis=-1, kind="stable")[..., :top_k]
                kept = np.zeros(scores.shape, dtype=bool)
                np.put_along_axis(kept, order, True, axis=-1)
                scores = np.where(kept & causal, scores, -np.inf)
                return softmax(scores) @ v
        """,
        "torch topk with the chapter's torch": """
            def topk_causal(q, k, v, top_k):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                L, S = q.shape[-2], k.shape[-2]
                scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
                causal = torch.ones(L, S, dtype=torch.bool).tril()
                scores = scores.masked_fill(~causal, float("-inf"))
                idx = scores.topk(min(top_k, S), dim=-1).indices
                kept = torch.zeros_like(scores, dtype=torch.bool).scatter(-1, idx, True) & causal
                w = torch.softmax(scores.masked_fill(~kept, float("-inf")), dim=-1)
                return (w @ v).numpy()
        """,
        "per-row loop with a helper": [
            """
            def _row_topk(row_scores, allowed, top_k):
                idx = np.flatnonzero(allowed)
                best = idx[np.argsort(-row_scores[idx], kind="stable")[:top_k]]
                keep = np.zeros_like(allowed)
                keep[best] = True
                return keep
            """,
            """
            def topk_causal(q, k, v, top_k):
                L, S = q.shape[-2], k.shape[-2]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                causal = np.tril(np.ones((L, S), dtype=bool))
                flat = scores.reshape(-1, L, S)
                kept = np.stack([[_row_topk(m[i], causal[i], top_k) for i in range(L)] for m in flat])
                kept = kept.reshape(scores.shape)
                return softmax(np.where(kept, scores, -np.inf)) @ v
            """,
        ],
    },
    "ch13.fix_chunked_linear": {
        "the recurrence, token by token": """
            def chunked_linear(q, k, v, chunk_size):
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                outs = []
                for t in range(q.shape[-2]):
                    S = S + k[..., t, :, None] * v[..., t, None, :]
                    outs.append(np.einsum("...e,...ef->...f", q[..., t, :], S))
                return np.stack(outs, axis=-2)
        """,
        "torch cumulative sum in float32": """
            def chunked_linear(q, k, v, chunk_size):
                q, k, v = (torch.as_tensor(x, dtype=torch.float32) for x in (q, k, v))
                states = torch.cumsum(k.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)
                return (q.unsqueeze(-2) @ states).squeeze(-2).numpy()
        """,
        "the masked quadratic form with einsum": """
            def chunked_linear(q, k, v, chunk_size):
                L = q.shape[-2]
                sims = np.einsum("...ie,...je->...ij", q, k) * np.tri(L)
                return np.einsum("...ij,...jf->...if", sims, v)
        """,
        "chunks with a helper in an added cell": [
            """
            def _chunk_out(qc, kc, vc, S):
                return qc @ S + np.tril(qc @ np.swapaxes(kc, -1, -2)) @ vc, S + np.swapaxes(kc, -1, -2) @ vc
            """,
            """
            def chunked_linear(q, k, v, chunk_size):
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                outs = []
                for s in range(0, q.shape[-2], chunk_size):
                    sl = slice(s, s + chunk_size)
                    out, S = _chunk_out(q[..., sl, :], k[..., sl, :], v[..., sl, :], S)
                    outs.append(out)
                return np.concatenate(outs, axis=-2)
            """,
        ],
    },
}

WRONG = {
    "ch13.predict_topk_share": {
        "top-k scores alone": """
            def predict_topk_share():
                return 256 * 4096 / (4096 * 4097 / 2)
        """,
    },
    "ch13.predict_hybrid_mib": {
        "cache of every layer": """
            def predict_hybrid_mib():
                return 32 * 2 * 4 * 128 * 2 * 4096 / 2**20
        """,
        "states forgotten": """
            def predict_hybrid_mib():
                return 8 * 2 * 4 * 128 * 2 * 4096 / 2**20
        """,
    },
    "ch13.causal_linear_attention": {
        "softmax attention instead": """
            def causal_linear_attention(q, k, v):
                s = q @ np.swapaxes(k, -1, -2)
                s = np.where(np.tri(q.shape[-2], dtype=bool), s, -np.inf)
                return softmax(s) @ v
        """,
        "relu feature map": """
            def causal_linear_attention(q, k, v):
                pq, pk = np.maximum(q, 0) + 1, np.maximum(k, 0) + 1
                a = np.tril(pq @ np.swapaxes(pk, -1, -2))
                return (a @ v) / a.sum(-1, keepdims=True)
        """,
    },
    "ch13.gated_delta_rule": {
        "linear attention with decay (no correction)": """
            def gated_delta_rule(q, k, v, beta, decay):
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                outs = []
                for t in range(q.shape[-2]):
                    S = decay[..., t, None, None] * S + beta[..., t, None, None] * (
                        k[..., t, :, None] * v[..., t, None, :])
                    outs.append((q[..., t, None, :] @ S)[..., 0, :])
                return np.stack(outs, axis=-2) / np.sqrt(q.shape[-1])
        """,
    },
    "ch13.fix_topk_causal": {
        "keeps every allowed key": """
            def topk_causal(q, k, v, top_k):
                L, S = q.shape[-2], k.shape[-2]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                causal = np.tril(np.ones((L, S), dtype=bool))
                return softmax(np.where(causal, scores, -np.inf)) @ v
        """,
    },
    "ch13.fix_chunked_linear": {
        "normalised, as in 13.2": """
            def chunked_linear(q, k, v, chunk_size):
                a = np.tril(q @ np.swapaxes(k, -1, -2))
                return (a @ v) / a.sum(-1, keepdims=True)
        """,
        "the state of the previous token only": """
            def chunked_linear(q, k, v, chunk_size):
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                outs = []
                for t in range(q.shape[-2]):
                    outs.append(np.einsum("...e,...ef->...f", q[..., t, :], S))
                    S = S + k[..., t, :, None] * v[..., t, None, :]
                return np.stack(outs, axis=-2)
        """,
    },
}
