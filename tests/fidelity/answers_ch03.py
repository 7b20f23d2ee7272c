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
    "ch03.init_std_for_unscaled_scores": {
        "torch with the chapter's torch import": """
            def init_std_for_unscaled_scores(d_k, d_model, token_var):
                d_k = torch.as_tensor(d_k, dtype=torch.float64)
                return (d_model * token_var * d_k**0.5) ** -0.5
        """,
        "one fourth root": """
            def init_std_for_unscaled_scores(d_k, d_model, token_var):
                return 1 / (np.asarray(d_k, dtype=float) ** 0.25 * (d_model * token_var) ** 0.5)
        """,
        "helper in an added cell": [
            """
            def _entry_variance_32(d_model, token_var, sigma2):
                return d_model * token_var * sigma2
            """,
            """
            def init_std_for_unscaled_scores(d_k, d_model, token_var):
                target = 1 / np.sqrt(d_k)  # Var(q_j) = Var(k_j) for Var(q . k) = 1
                return np.sqrt(target / _entry_variance_32(d_model, token_var, 1.0))
            """,
        ],
        "float32": """
            def init_std_for_unscaled_scores(d_k, d_model, token_var):
                d = np.asarray(d_k, dtype=np.float32)
                return np.float32(1) / np.sqrt(np.sqrt(d) * np.float32(d_model * token_var))
        """,
    },
    "ch03.fix_scale_size": {
        "torch with the chapter's F": """
            def attention_with_scale(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                w = F.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
                return w @ v, w
        """,
        "float32 with the scale read from k": """
            def attention_with_scale(q, k, v):
                q32, k32 = q.astype(np.float32), k.astype(np.float32)
                w = softmax(q32 @ np.swapaxes(k32, -1, -2) / np.float32(np.sqrt(k.shape[-1])))
                return w @ v.astype(np.float32), w
        """,
        "helper in an added cell": [
            """
            def _width_33(a):
                return a.shape[-1]
            """,
            """
            def attention_with_scale(q, k, v):
                w = softmax(np.einsum("...le,...se->...ls", q, k) / _width_33(q) ** 0.5)
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
    "ch03.init_std_for_unscaled_scores": {
        "the saved run's init": """
            def init_std_for_unscaled_scores(d_k, d_model, token_var):
                return 1 / np.sqrt(d_model * token_var) + 0 * np.asarray(d_k)
        """,
        "each entry of variance 1/d_k": """
            def init_std_for_unscaled_scores(d_k, d_model, token_var):
                return 1 / np.sqrt(d_model * token_var * np.asarray(d_k, dtype=float))
        """,
        "the variance": """
            def init_std_for_unscaled_scores(d_k, d_model, token_var):
                return 1 / (np.sqrt(d_k) * d_model * token_var)
        """,
        "sqrt(d_k) in the numerator": """
            def init_std_for_unscaled_scores(d_k, d_model, token_var):
                return np.sqrt(np.sqrt(d_k) / (d_model * token_var))
        """,
    },
    "ch03.fix_scale_size": {
        "still the number of keys": """
            def attention_with_scale(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-2]))
                return w @ v, w
        """,
        "the number of queries": """
            def attention_with_scale(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-2]))
                return w @ v, w
        """,
        "k.T on a batch": """
            def attention_with_scale(q, k, v):
                w = softmax(q @ k.T / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
        "scale by shape[1]": """
            def attention_with_scale(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[1]))
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
