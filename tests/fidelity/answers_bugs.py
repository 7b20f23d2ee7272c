"""Appendix A (common bugs): answers in students' styles, correct and wrong."""

CORRECT = {
    "bugs.discarded_mask": {
        "in place, masked_fill_": """
            def causal_weights(q, k):
                L = q.shape[-2]
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
                future = torch.ones(L, L, dtype=torch.bool).triu(1)
                scores.masked_fill_(future, float("-inf"))
                return torch.softmax(scores, dim=-1)
        """,
        "numpy with the chapter's np, in float32": """
            def causal_weights(q, k):
                qn, kn = q.numpy().astype(np.float32), k.numpy().astype(np.float32)
                L = qn.shape[-2]
                s = qn @ np.swapaxes(kn, -1, -2) / np.float32(np.sqrt(qn.shape[-1]))
                s = np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)
                e = np.exp(s - s.max(-1, keepdims=True))
                return e / e.sum(-1, keepdims=True)
        """,
        "helper in an added cell": [
            """
            def _causal_fill(scores):
                L = scores.shape[-1]
                return torch.where(torch.tril(torch.ones(L, L, dtype=torch.bool)), scores, float("-inf"))
            """,
            """
            def causal_weights(q, k):
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
                return torch.softmax(_causal_fill(scores), dim=-1)
            """,
        ],
    },
    "bugs.head_major_mask": {
        "torch repeat_interleave": """
            def padded_head_weights(q, k, keep, n_heads):
                qt, kt = torch.as_tensor(q), torch.as_tensor(k)
                rows = torch.as_tensor(keep).repeat_interleave(n_heads, dim=0)
                s = qt @ kt.transpose(-1, -2) / qt.shape[-1] ** 0.5
                return torch.softmax(s.masked_fill(~rows[:, None, :], float("-inf")), dim=-1).numpy()
        """,
        "reshaped to (B, H, L, S) in float32": """
            def padded_head_weights(q, k, keep, n_heads):
                B, S = keep.shape
                s = q.astype(np.float32) @ np.swapaxes(k, -1, -2).astype(np.float32) / np.float32(np.sqrt(q.shape[-1]))
                s = s.reshape(B, n_heads, *s.shape[1:])
                s = np.where(keep[:, None, None, :], s, -np.inf)
                return softmax(s).reshape(B * n_heads, *s.shape[2:])
        """,
        "helper in an added cell": [
            """
            def _row_masks(keep, n_heads):
                return np.stack([keep[r // n_heads] for r in range(keep.shape[0] * n_heads)])
            """,
            """
            def padded_head_weights(q, k, keep, n_heads):
                s = np.einsum("rle,rse->rls", q, k) / np.sqrt(q.shape[-1])
                return softmax(np.where(_row_masks(keep, n_heads)[:, None, :], s, -np.inf))
            """,
        ],
    },
    "bugs.mean_over_padding": {
        "torch with the chapter's import": """
            def sentence_embeddings(hidden, keep):
                h, m = torch.as_tensor(hidden), torch.as_tensor(keep).to(torch.as_tensor(hidden).dtype)
                return ((h * m[..., None]).sum(1) / m.sum(1, keepdim=True)).numpy()
        """,
        "a loop over sentences in float32": """
            def sentence_embeddings(hidden, keep):
                return np.stack([hidden[b][keep[b]].astype(np.float32).mean(axis=0) for b in range(len(keep))])
        """,
        "helper in an added cell": [
            """
            def _masked_sum(x, keep):
                return np.einsum("bld,bl->bd", x, keep.astype(x.dtype))
            """,
            """
            def sentence_embeddings(hidden, keep):
                return _masked_sum(hidden, keep) / keep.sum(axis=1, keepdims=True)
            """,
        ],
    },
    "bugs.left_pad_positions": {
        "torch cumsum": """
            def add_positions(x, keep, table):
                m = torch.as_tensor(keep).long()
                positions = (m.cumsum(-1) - 1).clamp(min=0)
                return x + table[positions.numpy()]
        """,
        "the pads counted and subtracted, float32": """
            def add_positions(x, keep, table):
                B, L = keep.shape
                pads = (~keep).sum(axis=1, keepdims=True)  # left padding: the pads come first
                positions = np.clip(np.arange(L)[None, :] - pads, 0, None)
                return x.astype(np.float32) + table.astype(np.float32)[positions]
        """,
        "helper in an added cell": [
            """
            def _prompt_positions(keep):
                out = np.zeros(keep.shape, dtype=int)
                for b, row in enumerate(keep):
                    count = 0
                    for i, real in enumerate(row):
                        out[b, i] = count if real else 0
                        count += int(real)
                return out
            """,
            """
            def add_positions(x, keep, table):
                return x + table[_prompt_positions(keep)]
            """,
        ],
    },
    "bugs.mask_after_softmax": {
        "renormalised after masking": """
            def padded_attention(q, k, v, keep):
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(scores) * keep[..., None, :]
                weights = weights / weights.sum(-1, keepdims=True)
                return weights @ v, weights
        """,
        "torch in float32": """
            def padded_attention(q, k, v, keep):
                qt, kt, vt = (torch.as_tensor(a).float() for a in (q, k, v))
                s = qt @ kt.transpose(-1, -2) / qt.shape[-1] ** 0.5
                w = torch.softmax(s.masked_fill(~torch.as_tensor(keep)[..., None, :], float("-inf")), -1)
                return (w @ vt).numpy(), w.numpy()
        """,
        "helper in an added cell": [
            """
            def _block(scores, keep):
                return np.where(keep[..., None, :], scores, -np.inf)
            """,
            """
            def padded_attention(q, k, v, keep):
                w = softmax(_block(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), keep))
                return w @ v, w
            """,
        ],
    },
}

WRONG = {
    "bugs.discarded_mask": {
        "the diagonal masked too": """
            def causal_weights(q, k):
                L = q.shape[-2]
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
                future = torch.ones(L, L, dtype=torch.bool).triu(0)
                scores = scores.masked_fill(future, -1e9)
                return torch.softmax(scores, dim=-1)
        """,
        "the mask the wrong way round": """
            def causal_weights(q, k):
                L = q.shape[-2]
                scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
                future = torch.ones(L, L, dtype=torch.bool).triu(1)
                scores = scores.masked_fill(~future, float("-inf"))
                return torch.softmax(scores, dim=-1)
        """,
    },
    "bugs.head_major_mask": {
        "the mask broadcast over rows as (B, S) against (B*H, ...)": """
            def padded_head_weights(q, k, keep, n_heads):
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                rows = np.resize(keep, (q.shape[0], keep.shape[1]))
                return softmax(np.where(rows[:, None, :], s, -np.inf))
        """,
        "sentence index r % B": """
            def padded_head_weights(q, k, keep, n_heads):
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                rows = keep[np.arange(q.shape[0]) % keep.shape[0]]
                return softmax(np.where(rows[:, None, :], s, -np.inf))
        """,
    },
    "bugs.mean_over_padding": {
        "the sum of the real tokens, not their mean": """
            def sentence_embeddings(hidden, keep):
                return (hidden * keep[..., None]).sum(axis=1)
        """,
        "divided by the longest sentence's length": """
            def sentence_embeddings(hidden, keep):
                return (hidden * keep[..., None]).sum(axis=1) / keep.sum(axis=1).max()
        """,
    },
    "bugs.left_pad_positions": {
        "positions counted from the right": """
            def add_positions(x, keep, table):
                B, L = keep.shape
                positions = np.broadcast_to(np.arange(L)[::-1], (B, L))
                return x + table[positions]
        """,
        "the pads given their own positions first": """
            def add_positions(x, keep, table):
                B, L = keep.shape
                positions = np.where(keep, np.cumsum(keep, axis=-1) - 1, np.arange(L))
                return x + table[positions]
        """,
    },
    "bugs.mask_after_softmax": {
        "filled with 0 before the softmax": """
            def padded_attention(q, k, v, keep):
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(keep[..., None, :], scores, 0.0))
                return weights @ v, weights
        """,
        "the padded values zeroed instead": """
            def padded_attention(q, k, v, keep):
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(scores)
                return weights @ (v * keep[..., None]), weights
        """,
    },
}
