"""Appendix A (common bugs): answers in students' styles, correct and wrong."""

CORRECT = {
    "bugs.transpose_typo": {
        "the chapter's torch: .mT": """
            def attention_scores(q, k):
                return q @ k.mT / q.shape[-1] ** 0.5
        """,
        "float32": """
            def attention_scores(q, k):
                return q.float() @ k.float().transpose(-2, -1) / float(q.shape[-1]) ** 0.5
        """,
        "helper in an added cell, torch.einsum": [
            """
            def _scores_einsum(q, k):
                return torch.einsum("...le,...se->...ls", q, k)
            """,
            """
            def attention_scores(q, k):
                return _scores_einsum(q, k) / torch.sqrt(torch.tensor(q.shape[-1], dtype=q.dtype))
            """,
        ],
    },
    "bugs.head_scale": {
        "torch with the chapter's torch import": """
            def head_weights(x, W_q, W_k, n_heads):
                x, W_q, W_k = torch.as_tensor(x), torch.as_tensor(W_q), torch.as_tensor(W_k)
                B, L, d_model = x.shape
                d_head = d_model // n_heads
                q = (x @ W_q).view(B, L, n_heads, d_head).transpose(1, 2)
                k = (x @ W_k).view(B, L, n_heads, d_head).transpose(1, 2)
                return torch.softmax(q @ k.transpose(-1, -2) / d_head**0.5, dim=-1)
        """,
        "float32 numpy": """
            def head_weights(x, W_q, W_k, n_heads):
                B, L, d_model = x.shape
                d_head = d_model // n_heads
                q = (x.astype(np.float32) @ W_q.astype(np.float32)).reshape(B, L, n_heads, d_head).swapaxes(1, 2)
                k = (x.astype(np.float32) @ W_k.astype(np.float32)).reshape(B, L, n_heads, d_head).swapaxes(1, 2)
                return softmax(q @ k.swapaxes(-1, -2) / np.float32(np.sqrt(d_head)))
        """,
        "helper in an added cell with the chapter's ac.softmax": [
            """
            def _to_heads(t, n_heads):
                B, L, D = t.shape
                return np.transpose(t.reshape(B, L, n_heads, D // n_heads), (0, 2, 1, 3))
            """,
            """
            def head_weights(x, W_q, W_k, n_heads):
                q, k = _to_heads(x @ W_q, n_heads), _to_heads(x @ W_k, n_heads)
                return ac.softmax(np.einsum("bhld,bhsd->bhls", q, k) / np.sqrt(q.shape[-1]))
            """,
        ],
    },
    "bugs.mask_polarity": {
        "torch with the chapter's torch import": """
            def causal_attention(q, k, v):
                q, k, v = torch.as_tensor(q), torch.as_tensor(k), torch.as_tensor(v)
                L, S = q.shape[-2], k.shape[-2]
                future = torch.triu(torch.ones(L, S, dtype=torch.bool), diagonal=1)
                scores = (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(future, float("-inf"))
                weights = torch.softmax(scores, dim=-1)
                return weights @ v, weights
        """,
        "float32 numpy": """
            def causal_attention(q, k, v):
                L, S = q.shape[-2], k.shape[-2]
                allowed = np.tril(np.ones((L, S), dtype=bool))
                scores = q.astype(np.float32) @ np.swapaxes(k, -1, -2).astype(np.float32) / np.float32(np.sqrt(q.shape[-1]))
                weights = softmax(np.where(allowed, scores, -np.inf))
                return weights @ v.astype(np.float32), weights
        """,
        "helper in an added cell with the chapter's ac.softmax": [
            """
            def _future_keys(L, S):
                return np.arange(S)[None, :] > np.arange(L)[:, None]
            """,
            """
            def causal_attention(q, k, v):
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                scores[..., _future_keys(q.shape[-2], k.shape[-2])] = -np.inf
                weights = ac.softmax(scores)
                return weights @ v, weights
            """,
        ],
    },
    "bugs.plain_list": {
        "nn.ModuleDict from the chapter's nn": """
            class PerHeadProjections(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    d_head = d_model // n_heads
                    self.heads = nn.ModuleDict({f"head{h}": nn.Linear(d_model, d_head) for h in range(n_heads)})

                def forward(self, x):
                    return torch.cat([head(x) for head in self.heads.values()], dim=-1)

            def count_parameters(d_model, n_heads):
                return sum(p.numel() for p in PerHeadProjections(d_model, n_heads).parameters())
        """,
        "add_module in a loop, counted with torch": """
            class PerHeadProjections(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    d_head = d_model // n_heads
                    self.heads = []
                    for h in range(n_heads):
                        layer = nn.Linear(d_model, d_head)
                        self.add_module(f"head_{h}", layer)
                        self.heads.append(layer)

                def forward(self, x):
                    return torch.cat([head(x) for head in self.heads], dim=-1)

            def count_parameters(d_model, n_heads):
                model = PerHeadProjections(d_model, n_heads)
                return torch.nn.utils.parameters_to_vector(model.parameters()).numel()
        """,
        "helper in an added cell": [
            """
            def _per_head_layers(d_model, n_heads):
                return nn.ModuleList(nn.Linear(d_model, d_model // n_heads) for _ in range(n_heads))
            """,
            """
            class PerHeadProjections(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    self.heads = _per_head_layers(d_model, n_heads)

                def forward(self, x):
                    return torch.cat([head(x) for head in self.heads], dim=-1)

            def count_parameters(d_model, n_heads):
                model = PerHeadProjections(d_model, n_heads)
                return sum(p.numel() for p in model.parameters() if p.requires_grad)
            """,
        ],
    },
    "bugs.swapped_qk": {
        "torch with the chapter's torch import": """
            def cross_attention_weights(q, k):
                q, k = torch.as_tensor(q), torch.as_tensor(k)
                return torch.softmax(q @ k.T / q.shape[-1] ** 0.5, dim=-1)
        """,
        "float32 numpy": """
            def cross_attention_weights(q, k):
                return softmax(q.astype(np.float32) @ k.T.astype(np.float32) / np.float32(np.sqrt(q.shape[-1])))
        """,
        "helper in an added cell with the chapter's ac.softmax": [
            """
            def _qk_scores(q, k):
                return np.einsum("le,se->ls", q, k) / np.sqrt(q.shape[-1])
            """,
            """
            def cross_attention_weights(q, k):
                return ac.softmax(_qk_scores(q, k), axis=-1)
            """,
        ],
        "(k q^T)^T": """
            def cross_attention_weights(q, k):
                return softmax((k @ q.T).T / np.sqrt(q.shape[-1]))
        """,
    },
}

WRONG = {
    "bugs.transpose_typo": {
        "k.T (reverses every axis)": """
            def attention_scores(q, k):
                return q @ k.permute(*reversed(range(k.ndim))) / q.shape[-1] ** 0.5
        """,
        "transpose(0, 1)": """
            def attention_scores(q, k):
                return q @ k.transpose(0, 1) / q.shape[-1] ** 0.5
        """,
        "scaled by sqrt(L)": """
            def attention_scores(q, k):
                return q @ k.transpose(-2, -1) / q.shape[-2] ** 0.5
        """,
    },
    "bugs.head_scale": {
        "heads split without the transpose": """
            def head_weights(x, W_q, W_k, n_heads):
                B, L, d_model = x.shape
                d_head = d_model // n_heads
                q = (x @ W_q).reshape(B, n_heads, L, d_head)
                k = (x @ W_k).reshape(B, n_heads, L, d_head)
                return softmax(q @ k.swapaxes(-1, -2) / np.sqrt(d_head))
        """,
        "scaled by sqrt(n_heads)": """
            def head_weights(x, W_q, W_k, n_heads):
                B, L, d_model = x.shape
                d_head = d_model // n_heads
                q = (x @ W_q).reshape(B, L, n_heads, d_head).swapaxes(1, 2)
                k = (x @ W_k).reshape(B, L, n_heads, d_head).swapaxes(1, 2)
                return softmax(q @ k.swapaxes(-1, -2) / np.sqrt(n_heads))
        """,
    },
    "bugs.mask_polarity": {
        "the diagonal masked too": """
            def causal_attention(q, k, v):
                L, S = q.shape[-2], k.shape[-2]
                allowed = np.tril(np.ones((L, S), dtype=bool), k=-1)
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(allowed, scores, -np.inf))
                return weights @ v, weights
        """,
        "the mask multiplied into the scores": """
            def causal_attention(q, k, v):
                L, S = q.shape[-2], k.shape[-2]
                allowed = np.tril(np.ones((L, S), dtype=bool))
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) * allowed
                weights = softmax(scores)
                return weights @ v, weights
        """,
        "the mask built for a 2-d input only": """
            def causal_attention(q, k, v):
                L, S = q.shape[0], k.shape[0]
                allowed = np.tril(np.ones((L, S), dtype=bool))
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                weights = softmax(np.where(allowed, scores, -np.inf))
                return weights @ v, weights
        """,
    },
    "bugs.plain_list": {
        "the count written down, the class left as it was": """
            class PerHeadProjections(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    self.heads = [nn.Linear(d_model, d_model // n_heads) for _ in range(n_heads)]

                def forward(self, x):
                    return torch.cat([head(x) for head in self.heads], dim=-1)

            def count_parameters(d_model, n_heads):
                return d_model * d_model + d_model
        """,
        "heads without biases": """
            class PerHeadProjections(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    d_head = d_model // n_heads
                    self.heads = nn.ModuleList([nn.Linear(d_model, d_head, bias=False) for _ in range(n_heads)])

                def forward(self, x):
                    return torch.cat([head(x) for head in self.heads], dim=-1)

            def count_parameters(d_model, n_heads):
                return sum(p.numel() for p in PerHeadProjections(d_model, n_heads).parameters())
        """,
    },
    "bugs.swapped_qk": {
        "the transposed result of swapped scores": """
            def cross_attention_weights(q, k):
                return softmax(k @ q.T / np.sqrt(q.shape[-1])).T
        """,
        "unscaled": """
            def cross_attention_weights(q, k):
                return softmax(q @ k.T)
        """,
    },
}
