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
    "ch00.kernel_classifier": {
        "einsum against np.eye rows": """
            def class_probabilities(x_query, x_key, label, n_classes, width):
                a = softmax(-np.subtract.outer(x_query, x_key) ** 2 / (2 * width**2))
                return np.einsum("ls,sc->lc", a, np.eye(n_classes)[label])
        """,
        "torch float32, index_add over the classes": """
            def class_probabilities(x_query, x_key, label, n_classes, width):
                q, k = torch.as_tensor(x_query, dtype=torch.float32), torch.as_tensor(x_key, dtype=torch.float32)
                a = torch.softmax(-((q[:, None] - k[None, :]) ** 2) / (2 * width**2), dim=-1)  # (L, S)
                out = torch.zeros(len(q), n_classes)
                return out.index_add(1, torch.as_tensor(label), a)
        """,
        "loops, one class at a time, in an added helper": [
            """
            def _weights_02(xq, x_key, width):
                s = [-((xq - xk) ** 2) / (2 * width**2) for xk in x_key]
                m = max(s)
                e = [np.exp(t - m) for t in s]
                return [v / sum(e) for v in e]
            """,
            """
            def class_probabilities(x_query, x_key, label, n_classes, width):
                rows = []
                for xq in x_query:
                    w = _weights_02(xq, x_key, width)
                    rows.append([sum(wj for wj, lj in zip(w, label) if lj == c) for c in range(n_classes)])
                return np.array(rows)
            """,
        ],
        "np.add.at on the transposed weights": """
            def class_probabilities(x_query, x_key, label, n_classes, width):
                a = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))
                out = np.zeros((n_classes, len(x_query)))
                np.add.at(out, label, a.T)
                return out.T
        """,
    },
    "ch00.additive_long_query": {
        "the limit worked out, torch": """
            def additive_long_query():
                s = 1 + 2 * torch.tanh(torch.tensor([0.0, 1.0, -0.5, 1.0], dtype=torch.float64))
                return torch.softmax(s, dim=0)
        """,
        "a very long query computed in float32": """
            def additive_long_query():
                k = np.array([[3, 0], [0, 1], [1, -0.5], [-1, 1]], dtype=np.float32)
                q = np.float32(1e4) * np.array([1, 0], dtype=np.float32)
                s = np.tanh(q + k) @ np.array([1, 2], dtype=np.float32)
                e = np.exp(s - s.max())
                return e / e.sum()
        """,
        "numbers written down, in a list": """
            def additive_long_query():
                return [0.0946, 0.4339, 0.03754, 0.4339]
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
    "ch00.regression_from_counts": {
        "log-counts in the scores, einsum": """
            def regression_from_counts(x_query, x_place, count, y_mean, width):
                s = -np.subtract.outer(x_query, x_place) ** 2 / (2 * width**2)
                a = softmax(s + np.log(count.astype(float)))
                return np.einsum("ls,s->l", a, y_mean)
        """,
        "torch float32, counts times the softmax, renormalised": """
            def regression_from_counts(x_query, x_place, count, y_mean, width):
                q, p, y = (torch.as_tensor(a, dtype=torch.float32) for a in (x_query, x_place, y_mean))
                c = torch.as_tensor(count, dtype=torch.float32)
                a = torch.softmax(-((q[:, None] - p[None, :]) ** 2) / (2 * width**2), dim=-1) * c
                return (a / a.sum(-1, keepdim=True)) @ y
        """,
        "loops, sums and counts, max subtracted by hand": """
            def regression_from_counts(x_query, x_place, count, y_mean, width):
                out = []
                for xq in x_query:
                    s = [-((xq - xp) ** 2) / (2 * width**2) for xp in x_place]
                    m = max(s)
                    num = sum(c * np.exp(si - m) * ym for si, c, ym in zip(s, count, y_mean))
                    den = sum(c * np.exp(si - m) for si, c in zip(s, count))
                    out.append(num / den)
                return np.array(out)
        """,
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
    "ch00.kernel_classifier": {
        "labels averaged, then rounded": """
            def class_probabilities(x_query, x_key, label, n_classes, width):
                a = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))
                return np.eye(n_classes)[np.rint(a @ label).astype(int)]
        """,
        "the nearest key's class": """
            def class_probabilities(x_query, x_key, label, n_classes, width):
                nearest = np.abs(x_query[:, None] - x_key[None, :]).argmin(axis=1)
                return np.eye(n_classes)[label[nearest]]
        """,
        "classes found with np.unique": """
            def class_probabilities(x_query, x_key, label, n_classes, width):
                a = softmax(-((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2))
                classes = np.unique(label)
                return np.stack([a[:, label == c].sum(axis=1) for c in classes], axis=1)
        """,
        "a softmax over the classes' summed scores": """
            def class_probabilities(x_query, x_key, label, n_classes, width):
                s = -((x_query[:, None] - x_key[None, :]) ** 2) / (2 * width**2)
                return softmax(s @ np.eye(n_classes)[label])
        """,
    },
    "ch00.additive_long_query": {
        "all the weight on k0": """
            def additive_long_query():
                return np.array([1.0, 0.0, 0.0, 0.0])
        """,
        "uniform": """
            def additive_long_query():
                return np.full(4, 0.25)
        """,
        "the weights at c = 1": """
            def additive_long_query():
                k = np.array([[3, 0], [0, 1], [1, -0.5], [-1, 1]])
                s = np.tanh(np.array([1, 0]) + k) @ np.array([1, 2])
                return np.exp(s) / np.exp(s).sum()
        """,
        "w_v taken as (1, 1)": """
            def additive_long_query():
                s = 1 + np.tanh(np.array([0.0, 1.0, -0.5, 1.0]))
                return np.exp(s) / np.exp(s).sum()
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
    "ch00.regression_from_counts": {
        "counts ignored": """
            def regression_from_counts(x_query, x_place, count, y_mean, width):
                return softmax(-((x_query[:, None] - x_place[None, :]) ** 2) / (2 * width**2)) @ y_mean
        """,
        "the place's sum as its value": """
            def regression_from_counts(x_query, x_place, count, y_mean, width):
                a = softmax(-((x_query[:, None] - x_place[None, :]) ** 2) / (2 * width**2) + np.log(count))
                return a @ (count * y_mean)
        """,
        "exp times counts, no maximum subtracted": """
            def regression_from_counts(x_query, x_place, count, y_mean, width):
                e = count * np.exp(-((x_query[:, None] - x_place[None, :]) ** 2) / (2 * width**2))
                return (e / e.sum(-1, keepdims=True)) @ y_mean
        """,
        "the raw readings rebuilt with np.repeat": """
            def regression_from_counts(x_query, x_place, count, y_mean, width):
                keys = np.repeat(x_place, count)  # one key per reading
                values = np.repeat(y_mean, count)
                a = softmax(-np.subtract.outer(x_query, keys) ** 2 / (2 * width**2))
                return np.einsum("lr,r->l", a, values)
        """,
        "counts divided by the total, not renormalised": """
            def regression_from_counts(x_query, x_place, count, y_mean, width):
                a = softmax(-((x_query[:, None] - x_place[None, :]) ** 2) / (2 * width**2))
                return (a * count / count.sum()) @ y_mean
        """,
    },
}
