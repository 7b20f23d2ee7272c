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
    "ch00.far_from_the_data": {
        "a query a million widths away, through the stable softmax": """
            def far_predictions(x_key, y_value, width):
                x_key, y_value = np.asarray(x_key, dtype=np.float64), np.asarray(y_value, dtype=np.float64)
                out = []
                for far in (-1e6, 1e6):
                    q = x_key.mean() + far * width
                    out.append(softmax(-((q - x_key) ** 2) / (2 * width**2)) @ y_value)
                return np.array(out)
        """,
        "torch masks with the chapter's torch import": """
            def far_predictions(x_key, y_value, width):
                x, y = torch.as_tensor(x_key, dtype=torch.float64), torch.as_tensor(y_value, dtype=torch.float64)
                return torch.stack([y[x == x.min()].mean(), y[x == x.max()].mean()])
        """,
        "a helper in an added cell, loops": [
            """
            def _mean_at(x_key, y_value, place):
                picked = [y for x, y in zip(x_key, y_value) if x == place]
                return sum(picked) / len(picked)
            """,
            """
            def far_predictions(x_key, y_value, width):
                return [_mean_at(x_key, y_value, min(x_key)), _mean_at(x_key, y_value, max(x_key))]
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
    "ch00.values_from_predictions": {
        "normal equations, einsum": """
            def values_from_predictions(x_query, x_key, width, pred):
                A = softmax(-np.subtract.outer(x_query, x_key) ** 2 / (2 * width**2))
                return np.linalg.solve(np.einsum("ls,lt->st", A, A), np.einsum("ls,l->s", A, pred))
        """,
        "torch float32 pinv with the chapter's torch import": """
            def values_from_predictions(x_query, x_key, width, pred):
                q, k, p = (torch.as_tensor(a).float() for a in (x_query, x_key, pred))
                A = torch.softmax(-((q[:, None] - k[None, :]) ** 2) / (2 * width**2), dim=-1)
                return torch.linalg.pinv(A) @ p
        """,
        "loops for the weights in an added helper": [
            """
            def _weight_rows(x_query, x_key, width):
                rows = []
                for xq in x_query:
                    e = [np.exp(-((xq - xk) ** 2) / (2 * width**2)) for xk in x_key]
                    rows.append([v / sum(e) for v in e])
                return np.array(rows)
            """,
            """
            def values_from_predictions(x_query, x_key, width, pred):
                return np.linalg.lstsq(_weight_rows(x_query, x_key, width), pred, rcond=None)[0]
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
    "ch00.far_from_the_data": {
        "the mean of the values": """
            def far_predictions(x_key, y_value, width):
                return y_value.mean(), y_value.mean()
        """,
        "the nearest key to the origin's value, both sides": """
            def far_predictions(x_key, y_value, width):
                v = y_value[np.argmin(np.abs(x_key))]
                return v, v
        """,
        "a tie given to one key": """
            def far_predictions(x_key, y_value, width):
                return y_value[np.argmin(x_key)], y_value[np.argmax(x_key)]
        """,
        "swapped": """
            def far_predictions(x_key, y_value, width):
                return y_value[x_key == x_key.max()].mean(), y_value[x_key == x_key.min()].mean()
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
    "ch00.values_from_predictions": {
        "the nearest prediction": """
            def values_from_predictions(x_query, x_key, width, pred):
                return pred[np.abs(x_key[:, None] - x_query[None, :]).argmin(axis=1)]
        """,
        "weights not normalised": """
            def values_from_predictions(x_query, x_key, width, pred):
                A = np.exp(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))
                return np.linalg.lstsq(A, pred, rcond=None)[0]
        """,
        "the kernel without its factor 2": """
            def values_from_predictions(x_query, x_key, width, pred):
                A = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / width**2)
                return np.linalg.lstsq(A, pred, rcond=None)[0]
        """,
    },
}
