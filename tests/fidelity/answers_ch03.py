"""Chapter 3 (scaling by sqrt(d_k)): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch03.scaled_scores": {
        "torch with the chapter's torch import": """
            def scaled_scores(q, k):
                q, k = torch.as_tensor(q), torch.as_tensor(k)
                return q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        """,
        "float32 einsum": """
            def scaled_scores(q, k):
                s = np.einsum("...le,...se->...ls", q.astype(np.float32), k.astype(np.float32))
                return s / np.float32(np.sqrt(q.shape[-1]))
        """,
        "helper in an added cell": [
            """
            def _scale_31(E):
                return 1.0 / np.sqrt(E)
            """,
            """
            def scaled_scores(q, k):
                return (q * _scale_31(q.shape[-1])) @ np.swapaxes(k, -1, -2)
            """,
        ],
    },
    "ch03.score_variance": {
        "torch with the chapter's torch import": """
            def score_variance(q, k):
                s = (torch.as_tensor(q) * torch.as_tensor(k)).sum(-1)
                return s.var(unbiased=False), (s / q.shape[-1] ** 0.5).var(unbiased=False)
        """,
        "einsum and np.var": """
            def score_variance(q, k):
                s = np.einsum("ne,ne->n", q, k)
                return np.var(s), np.var(s) / q.shape[-1]
        """,
        "helper in an added cell": [
            """
            def _pop_var_32(a):
                return np.mean((a - np.mean(a)) ** 2)
            """,
            """
            def score_variance(q, k):
                s = np.array([qi @ ki for qi, ki in zip(q, k)])
                return _pop_var_32(s), _pop_var_32(s / np.sqrt(q.shape[1]))
            """,
        ],
    },
    "ch03.scaled_attention": {
        "torch with the chapter's F": """
            def scaled_attention(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                w = F.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
                return w @ v, w
        """,
        "float32 numpy": """
            def scaled_attention(q, k, v):
                q, k, v = (a.astype(np.float32) for a in (q, k, v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(np.float32(q.shape[-1])))
                return w @ v, w
        """,
        "helper in an added cell": [
            """
            def _scores_33(q, k):
                return np.einsum("...le,...se->...ls", q, k) / np.sqrt(q.shape[-1])
            """,
            """
            def scaled_attention(q, k, v):
                w = ac.softmax(_scores_33(q, k), axis=-1)
                return w @ v, w
            """,
        ],
    },
    "ch03.predict_score_variance": {
        "the literal": """
            def predict_score_variance():
                return 7.5
        """,
        "the long way round": """
            def predict_score_variance():
                return 80 * 2.5 * 3 / 80
        """,
        "numpy float32 scalar": """
            def predict_score_variance():
                return np.float32(15) / 2
        """,
    },
    "ch03.expected_abs_score": {
        "torch with the chapter's torch import": """
            def expected_abs_score(d_k, T):
                T = torch.as_tensor(T, dtype=torch.float64)
                return (2 * d_k / torch.pi) ** 0.5 / T
        """,
        "one square root": """
            def expected_abs_score(d_k, T):
                return np.sqrt(2 * d_k / np.pi) / np.asarray(T, dtype=float)
        """,
        "helper in an added cell": [
            """
            def _mean_abs_normal_35(sigma):
                return sigma * np.sqrt(2.0 / np.pi)
            """,
            """
            def expected_abs_score(d_k, T):
                return _mean_abs_normal_35(np.sqrt(d_k) / T)
            """,
        ],
    },
    "ch03.fix_late_scaling": {
        "torch with the chapter's F": """
            def attention_scaled_late(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                w = F.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
                return w @ v, w
        """,
        "float32": """
            def attention_scaled_late(q, k, v):
                q32, k32 = q.astype(np.float32), k.astype(np.float32)
                w = softmax(q32 @ np.swapaxes(k32, -1, -2) / np.float32(np.sqrt(q.shape[-1])))
                return w @ v.astype(np.float32), w
        """,
        "helper in an added cell": [
            """
            def _softmax_36(s):
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
            """,
            """
            def attention_scaled_late(q, k, v):
                w = _softmax_36(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return w @ v, w
            """,
        ],
    },
}

WRONG = {
    "ch03.scaled_scores": {
        "k.T on a batch": """
            def scaled_scores(q, k):
                return q @ k.T / np.sqrt(q.shape[-1])
        """,
        "scaled by the number of keys": """
            def scaled_scores(q, k):
                return q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-2])
        """,
        "multiplied by sqrt(E)": """
            def scaled_scores(q, k):
                return q @ np.swapaxes(k, -1, -2) * np.sqrt(q.shape[-1])
        """,
    },
    "ch03.score_variance": {
        "ddof=1": """
            def score_variance(q, k):
                s = (q * k).sum(axis=-1)
                return s.var(ddof=1), (s / np.sqrt(q.shape[-1])).var(ddof=1)
        """,
        "every pair": """
            def score_variance(q, k):
                s = q @ k.T
                return s.var(), (s / np.sqrt(q.shape[-1])).var()
        """,
        "standard deviations": """
            def score_variance(q, k):
                s = (q * k).sum(axis=-1)
                return s.std(), (s / np.sqrt(q.shape[-1])).std()
        """,
    },
    "ch03.scaled_attention": {
        "scaled by sqrt(Ev)": """
            def scaled_attention(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(v.shape[-1]))
                return w @ v, w
        """,
        "k.T on a batch": """
            def scaled_attention(q, k, v):
                w = softmax(q @ k.T / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
        "scaled by the number of keys": """
            def scaled_attention(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-2]))
                return w @ v, w
        """,
    },
    "ch03.predict_score_variance": {
        "unscaled": """
            def predict_score_variance():
                return 600
        """,
        "variances added": """
            def predict_score_variance():
                return 5.5
        """,
    },
    "ch03.expected_abs_score": {
        "the standard deviation": """
            def expected_abs_score(d_k, T):
                return np.sqrt(d_k) / T
        """,
        "divided by T squared": """
            def expected_abs_score(d_k, T):
                return np.sqrt(d_k) / np.asarray(T, dtype=float) ** 2 * np.sqrt(2 / np.pi)
        """,
    },
    "ch03.fix_late_scaling": {
        "still scaled after the softmax": """
            def attention_scaled_late(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
                return w @ v, w
        """,
        "scaled by sqrt(Ev)": """
            def attention_scaled_late(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(v.shape[-1]))
                return w @ v, w
        """,
        "k.T on a batch": """
            def attention_scaled_late(q, k, v):
                w = softmax(q @ k.T / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
    },
}
