"""Chapter 0 (why attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch00.kernel_regression": {
        "torch with the chapter's torch import": """
            def kernel_regression(x_query, x_key, y_value, width):
                xq, xk, y = (torch.as_tensor(a, dtype=torch.float64) for a in (x_query, x_key, y_value))
                w = torch.softmax(-((xq[:, None] - xk[None, :]) ** 2) / (2 * width**2), dim=-1)
                return w @ y
        """,
        "float32 numpy with the chapter's ac.softmax": """
            def kernel_regression(x_query, x_key, y_value, width):
                d = (x_query[:, None] - x_key[None, :]).astype(np.float32)
                w = ac.softmax(-(d**2) / np.float32(2 * width**2), axis=-1)
                return w @ y_value.astype(np.float32)
        """,
        "helper in an added cell, a loop": [
            """
            def _log_gaussian_01(d, width):
                return -(d**2) / (2 * width**2)
            """,
            """
            def kernel_regression(x_query, x_key, y_value, width):
                out = []
                for xq in x_query:
                    s = _log_gaussian_01(xq - x_key, width)
                    a = np.exp(s - s.max())
                    out.append((a * y_value).sum() / a.sum())
                return np.array(out)
            """,
        ],
    },
    "ch00.kernel_weight_ratio": {
        "ratio of the two kernels": """
            def kernel_weight_ratio(d1, d2, width):
                return np.exp(-(d1**2) / (2 * width**2)) / np.exp(-(d2**2) / (2 * width**2))
        """,
        "torch with the chapter's torch import": """
            def kernel_weight_ratio(d1, d2, width):
                d1, d2 = torch.as_tensor(d1, dtype=torch.float64), torch.as_tensor(d2, dtype=torch.float64)
                return torch.exp((d2**2 - d1**2) / (2 * width**2))
        """,
        "helper in an added cell": [
            """
            def _score_02(d, width):
                return -np.square(d) / (2.0 * width * width)
            """,
            """
            def kernel_weight_ratio(d1, d2, width):
                return np.exp(_score_02(d1, width) - _score_02(d2, width))
            """,
        ],
    },
    "ch00.additive_score_cost": {
        "the literals": """
            def additive_score_cost():
                return 140928, 96000
        """,
        "numpy integers": """
            def additive_score_cost():
                h = np.int64(128)
                return h * (500 + 600 + 1), h * 30 * 25
        """,
        "constants in an added cell": [
            """
            E_Q_03, E_K_03, H_03 = 500, 2 * 300, 128
            """,
            """
            def additive_score_cost():
                return [H_03 * E_Q_03 + H_03 * E_K_03 + H_03, 25 * 30 * H_03]
            """,
        ],
        "floats written down": """
            def additive_score_cost():
                return 140928.0, 9.6e4
        """,
    },
    "ch00.effective_keys": {
        "torch with the chapter's torch import": """
            def effective_keys(x_query, x_key, width):
                xq, xk = torch.as_tensor(x_query, dtype=torch.float64), torch.as_tensor(x_key, dtype=torch.float64)
                a = torch.softmax(-((xq[:, None] - xk[None, :]) ** 2) / (2 * width**2), dim=-1)
                return 1 / (a * a).sum(dim=-1)
        """,
        "float32 with ac.softmax and einsum": """
            def effective_keys(x_query, x_key, width):
                d = (x_query[:, None] - x_key[None, :]).astype(np.float32)
                a = ac.softmax(-(d**2) / np.float32(2 * width**2), axis=-1)
                return 1 / np.einsum("ls,ls->l", a, a)
        """,
        "helper in an added cell, a loop over the queries": [
            """
            def _weights_04(xq, x_key, width):
                s = -((xq - x_key) ** 2) / (2 * width**2)
                e = np.exp(s - s.max())
                return e / e.sum()
            """,
            """
            def effective_keys(x_query, x_key, width):
                return np.array([1 / np.sum(_weights_04(xq, x_key, width) ** 2) for xq in x_query])
            """,
        ],
    },
    "ch00.bilinear_attention": {
        "torch with the chapter's torch import": """
            def bilinear_attention(q, k, v, W):
                q, k, v, W = (torch.as_tensor(a, dtype=torch.float64) for a in (q, k, v, W))
                w = torch.softmax(q @ W @ k.transpose(-1, -2), dim=-1)
                return w @ v, w
        """,
        "float32 einsum": """
            def bilinear_attention(q, k, v, W):
                s = np.einsum("...le,ef,...sf->...ls", q.astype(np.float32), W.astype(np.float32), k.astype(np.float32))
                w = softmax(s)
                return w @ v.astype(np.float32), w
        """,
        "helper in an added cell": [
            """
            def _rows_softmax_05(s):
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
            """,
            """
            def bilinear_attention(q, k, v, W):
                w = _rows_softmax_05(q @ (W @ np.swapaxes(k, -1, -2)))
                return w @ v, w
            """,
        ],
    },
}

WRONG = {
    "ch00.kernel_regression": {
        "no factor 2": """
            def kernel_regression(x_query, x_key, y_value, width):
                w = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / width**2)
                return w @ y_value
        """,
        "softmax over the queries": """
            def kernel_regression(x_query, x_key, y_value, width):
                w = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2), axis=0)
                return w @ y_value
        """,
        "unnormalised kernel": """
            def kernel_regression(x_query, x_key, y_value, width):
                w = np.exp(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))
                return w @ y_value
        """,
    },
    "ch00.kernel_weight_ratio": {
        "the inverse": """
            def kernel_weight_ratio(d1, d2, width):
                return np.exp((d1**2 - d2**2) / (2 * width**2))
        """,
        "distances not squared": """
            def kernel_weight_ratio(d1, d2, width):
                return np.exp((d2 - d1) / (2 * width**2))
        """,
    },
    "ch00.additive_score_cost": {
        "swapped": """
            def additive_score_cost():
                return 96000, 140928
        """,
        "biases counted": """
            def additive_score_cost():
                return 128 * 500 + 128 * 600 + 128 + 128 + 1, 96000
        """,
        "tanh once per source token and step, keys of one direction": """
            def additive_score_cost():
                return 128 * 500 + 128 * 300 + 128, 750
        """,
        "parameters right, tanh for the source only": """
            def additive_score_cost():
                return 140928, 25 * 128
        """,
    },
    "ch00.effective_keys": {
        "the number of keys with a weight above 1/S": """
            def effective_keys(x_query, x_key, width):
                a = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))
                return (a > 1 / len(x_key)).sum(axis=-1).astype(float)
        """,
        "one over the largest weight": """
            def effective_keys(x_query, x_key, width):
                a = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))
                return 1 / a.max(axis=-1)
        """,
        "the squares summed over the queries": """
            def effective_keys(x_query, x_key, width):
                a = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))
                return 1 / (a**2).sum(axis=0)
        """,
    },
    "ch00.bilinear_attention": {
        "W transposed": """
            def bilinear_attention(q, k, v, W):
                w = softmax(q @ W.T @ np.swapaxes(k, -1, -2))
                return w @ v, w
        """,
        "k.T on a batch": """
            def bilinear_attention(q, k, v, W):
                w = softmax(q @ W @ k.T)
                return w @ v, w
        """,
        "scaled by sqrt(E)": """
            def bilinear_attention(q, k, v, W):
                w = softmax(q @ W @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
    },
}
