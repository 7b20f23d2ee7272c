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
    "ch03.attention_with_scale": {
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
    "ch03.predict_self_score": {
        "the literals": """
            def predict_self_score():
                return 8, 2
        """,
        "the long way round": """
            def predict_self_score():
                d_k = 64
                return d_k / np.sqrt(d_k), d_k * (3 - 1) / d_k
        """,
        "numpy float32 scalars": """
            def predict_self_score():
                return np.float32(8.0), np.float32(2.0)
        """,
        "a list": """
            def predict_self_score():
                return [8.1, 1.98]
        """,
    },
    "ch03.unit_variance_scale": {
        "torch with the chapter's torch import": """
            def unit_variance_scale(d_k, mu):
                mu = torch.as_tensor(mu, dtype=torch.float64)
                return (d_k * (1 + 2 * mu**2)) ** -0.5
        """,
        "from the moments, float32": """
            def unit_variance_scale(d_k, mu):
                m = np.asarray(mu, dtype=np.float32)
                second = (1 + m * m) ** 2  # E[(q_i k_i)^2]
                return np.float32(1) / np.sqrt(np.float32(d_k) * (second - m**4))
        """,
        "helper in an added cell": [
            """
            def _product_variance_35(mu):
                return 1 + 2 * np.square(mu)
            """,
            """
            def unit_variance_scale(d_k, mu):
                return 1 / np.sqrt(d_k * _product_variance_35(np.asarray(mu, dtype=float)))
            """,
        ],
    },
    "ch03.weights_not_normalised": {
        "torch with the chapter's F": """
            def scaled_dot_attention(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                w = F.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
                return w @ v, w
        """,
        "float32": """
            def scaled_dot_attention(q, k, v):
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
            def scaled_dot_attention(q, k, v):
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
    "ch03.attention_with_scale": {
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
    "ch03.predict_self_score": {
        "independent key": """
            def predict_self_score():
                return 0, 1
        """,
        "unscaled": """
            def predict_self_score():
                return 64, 128
        """,
        "mean and variance swapped": """
            def predict_self_score():
                return 2, 8
        """,
    },
    "ch03.unit_variance_scale": {
        "mean ignored": """
            def unit_variance_scale(d_k, mu):
                return 1 / np.sqrt(d_k) + 0 * np.asarray(mu, dtype=float)
        """,
        "second moments": """
            def unit_variance_scale(d_k, mu):
                return 1 / (np.sqrt(d_k) * (1 + np.asarray(mu, dtype=float) ** 2))
        """,
        "mu instead of mu squared": """
            def unit_variance_scale(d_k, mu):
                return 1 / np.sqrt(d_k * (1 + 2 * np.abs(np.asarray(mu, dtype=float))))
        """,
    },
    "ch03.weights_not_normalised": {
        "still scaled after the softmax": """
            def scaled_dot_attention(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
                return w @ v, w
        """,
        "scaled by sqrt(Ev)": """
            def scaled_dot_attention(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(v.shape[-1]))
                return w @ v, w
        """,
        "k.T on a batch": """
            def scaled_dot_attention(q, k, v):
                w = softmax(q @ k.T / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
    },
}
