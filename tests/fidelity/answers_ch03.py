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
    "ch03.predict_cosine_factor": {
        "the literal": """
            def predict_cosine_factor():
                return 11.3
        """,
        "the long way round": """
            def predict_cosine_factor():
                d_k = 128
                spread_normalised = (d_k / (d_k**0.5 * d_k**0.5) ** 2) ** 0.5  # std of q . k / (|q| |k|)
                return 1 / spread_normalised
        """,
        "numpy float32": """
            def predict_cosine_factor():
                return np.float32(8 * 2**0.5)
        """,
        "a one-element list": """
            def predict_cosine_factor():
                return [11.0]
        """,
    },
    "ch03.recover_scale": {
        "torch least squares, each row centred": """
            def recover_scale(q, k, weights):
                q, k, w = (torch.as_tensor(a, dtype=torch.float64) for a in (q, k, weights))
                s = (q @ k.transpose(-1, -2)).expand_as(w)
                use = w > 1e-300
                logw = torch.where(use, w, torch.ones_like(w)).log()
                n = use.sum(-1, keepdim=True)
                s_c = torch.where(use, s - (s * use).sum(-1, keepdim=True) / n, torch.zeros_like(s))
                l_c = torch.where(use, logw - (logw * use).sum(-1, keepdim=True) / n, torch.zeros_like(s))
                return float((s_c * l_c).sum() / (s_c * s_c).sum())
        """,
        "loops over rows, the two largest weights": """
            def recover_scale(q, k, weights):
                s = np.einsum("...le,...se->...ls", q, k)
                s, w = np.broadcast_arrays(s, weights)
                s, w = s.reshape(-1, s.shape[-1]), w.reshape(-1, w.shape[-1])
                found = []
                for row in range(w.shape[0]):
                    order = np.argsort(w[row])
                    a, b = order[-1], order[-2]  # both above 0
                    if s[row, a] != s[row, b]:
                        found.append(np.log(w[row, a] / w[row, b]) / (s[row, a] - s[row, b]))
                return float(np.median(found))
        """,
        "float32, polyfit on each row's weights above 0": """
            def recover_scale(q, k, weights):
                s = (q.astype(np.float32) @ np.swapaxes(k.astype(np.float32), -1, -2)).astype(np.float64)
                s, w = np.broadcast_arrays(s, weights.astype(np.float64))
                slopes = []
                for s_row, w_row in zip(s.reshape(-1, s.shape[-1]), w.reshape(-1, w.shape[-1])):
                    keep = w_row > 0
                    slopes.append(np.polyfit(s_row[keep], np.log(w_row[keep]), 1)[0])
                return float(np.mean(slopes))
        """,
        "helper in an added cell": [
            """
            def _log_ratio_35(w, i, j):
                return np.log(w[..., i]) - np.log(w[..., j])
            """,
            """
            def recover_scale(q, k, weights):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2), weights.shape).reshape(-1, weights.shape[-1])
                w = weights.reshape(-1, weights.shape[-1])
                i, j = np.argsort(w[0])[-2:]
                return float(_log_ratio_35(w[0], i, j) / (s[0, i] - s[0, j]))
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
    "ch03.predict_cosine_factor": {
        "no factor": """
            def predict_cosine_factor():
                return 1.0
        """,
        "the unscaled scores' spread": """
            def predict_cosine_factor():
                return 128
        """,
        "a factor for each vector": """
            def predict_cosine_factor():
                return 128**0.25
        """,
        "divided": """
            def predict_cosine_factor():
                return 1 / 128**0.5
        """,
    },
    "ch03.recover_scale": {
        "the default assumed": """
            def recover_scale(q, k, weights):
                return 1 / np.sqrt(q.shape[-1])
        """,
        "the temperature": """
            def recover_scale(q, k, weights):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2), weights.shape).reshape(-1, weights.shape[-1])
                w = weights.reshape(-1, weights.shape[-1])
                i, j = np.argsort(w[0])[-2:]
                return float((s[0, i] - s[0, j]) / np.log(w[0, i] / w[0, j]))
        """,
        "against the default-scaled scores": """
            def recover_scale(q, k, weights):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), weights.shape)
                s, w = s.reshape(-1, weights.shape[-1]), weights.reshape(-1, weights.shape[-1])
                i, j = np.argsort(w[0])[-2:]
                return float(np.log(w[0, i] / w[0, j]) / (s[0, i] - s[0, j]))
        """,
        "the normaliser left out": """
            def recover_scale(q, k, weights):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2), weights.shape).reshape(-1, weights.shape[-1])
                w = weights.reshape(-1, weights.shape[-1])
                j = np.argmax(w[0])
                return float(np.log(w[0, j]) / s[0, j])
        """,
        "the largest and the smallest weight, zeros and all": """
            def recover_scale(q, k, weights):
                s = np.broadcast_to(q @ np.swapaxes(k, -1, -2), weights.shape).reshape(-1, weights.shape[-1])
                w = weights.reshape(-1, weights.shape[-1])
                i, j = w.argmax(-1), w.argmin(-1)
                rows = np.arange(w.shape[0])
                with np.errstate(divide="ignore"):
                    c = np.log(w[rows, i] / w[rows, j]) / (s[rows, i] - s[rows, j])
                return float(c.mean())
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
