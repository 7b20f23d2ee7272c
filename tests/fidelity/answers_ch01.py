"""Chapter 1 (softmax): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch01.temperature_softmax": {
        "torch with the chapter's torch import": """
            def temperature_softmax(logits, temperature):
                x = torch.as_tensor(logits)
                t = torch.as_tensor(np.asarray(temperature, dtype=np.float64)).unsqueeze(-1).to(x.dtype)
                greedy = t == 0
                p = torch.softmax(x / torch.where(greedy, torch.ones_like(t), t), dim=-1)
                top = (x == x.amax(dim=-1, keepdim=True)).to(x.dtype)
                return torch.where(greedy, top / top.sum(dim=-1, keepdim=True), p)
        """,
        "float32, np.expand_dims, a loop over the rows": """
            def temperature_softmax(logits, temperature):
                x = np.asarray(logits, dtype=np.float32)
                t = np.broadcast_to(np.asarray(temperature, dtype=np.float32), x.shape[:-1])
                out = np.empty_like(x)
                for idx in np.ndindex(*x.shape[:-1]):
                    row = x[idx]
                    if t[idx] == 0:
                        hit = (row == row.max()).astype(np.float32)
                        out[idx] = hit / hit.sum()
                    else:
                        out[idx] = softmax(np.expand_dims(row / t[idx], 0))[0]
                return out
        """,
        "helper in an added cell, reshape": [
            """
            def _column_11(temperature, logits):
                t = np.asarray(temperature, dtype=float)
                return t.reshape(np.shape(logits)[:-1] + (1,)) if t.ndim else t
            """,
            """
            def temperature_softmax(logits, temperature):
                x = np.asarray(logits, dtype=float)
                t = _column_11(temperature, logits)
                with np.errstate(divide="ignore", invalid="ignore"):
                    p = ac.softmax(x / np.where(t > 0, t, 1.0), axis=-1)
                top = np.isclose(x, x.max(axis=-1, keepdims=True), rtol=0, atol=0)
                return np.where(t > 0, p, top / top.sum(axis=-1, keepdims=True))
            """,
        ],
    },
    "ch01.stable_softmax": {
        "torch with the chapter's torch import": """
            def stable_softmax(x):
                t = torch.as_tensor(x)
                e = torch.exp(t - t.amax(dim=-1, keepdim=True))
                return e / e.sum(dim=-1, keepdim=True)
        """,
        "log-sum-exp in float32": """
            def stable_softmax(x):
                x = np.asarray(x, dtype=np.float32)
                m = x.max(axis=-1, keepdims=True)
                return np.exp(x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))
        """,
        "helper in an added cell, one row at a time": [
            """
            def _row_softmax_12(row):
                e = np.exp(row - np.max(row))
                return e / np.sum(e)
            """,
            """
            def stable_softmax(x):
                return np.apply_along_axis(_row_softmax_12, -1, x)
            """,
        ],
    },
    "ch01.temperature_derivative": {
        "torch autograd with the chapter's torch import": """
            def temperature_derivative(logits, temperature):
                x = torch.as_tensor(logits, dtype=torch.float64)
                f = lambda T: torch.softmax(x / T, dim=-1)
                T = torch.tensor(float(temperature), dtype=torch.float64)
                return torch.autograd.functional.jacobian(f, T)
        """,
        "float32, the chain rule written out on shifted logits": """
            def temperature_derivative(logits, temperature):
                x = np.asarray(logits, dtype=np.float32)
                x = x - x.max(axis=-1, keepdims=True)  # the derivative ignores a shift; float32 keeps its digits
                p = ac.softmax(x / np.float32(temperature))
                dz = -x / np.float32(temperature) ** 2
                return p * (dz - (p * dz).sum(axis=-1, keepdims=True))
        """,
        "helper in an added cell, einsum": [
            """
            def _mean_13(p, x):
                return np.einsum("...n,...n->...", p, x)[..., None]
            """,
            """
            def temperature_derivative(logits, temperature):
                p = softmax(logits / temperature)
                return p * (_mean_13(p, logits) - logits) / (temperature * temperature)
            """,
        ],
    },
    "ch01.entropy_gradient": {
        "torch autograd with the chapter's torch import": """
            def entropy_gradient(x):
                t = torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
                logp = torch.log_softmax(t, dim=-1)
                p = logp.exp()
                H = -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum()
                H.backward()
                return t.grad
        """,
        "float32, log-softmax by hand": """
            def entropy_gradient(x):
                x = np.asarray(x, dtype=np.float32)
                m = x.max(axis=-1, keepdims=True)
                p = ac.softmax(x)
                logp = np.where(p > 0, x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True)), 0)
                return p * ((p * logp).sum(axis=-1, keepdims=True) - logp)
        """,
        "helper in an added cell, the Jacobian row by row": [
            """
            def _jacobian_14(p):
                return np.diag(p) - np.outer(p, p)
            """,
            """
            def entropy_gradient(x):
                x = np.asarray(x, dtype=float)
                out = np.zeros_like(x)
                for idx in np.ndindex(x.shape[:-1]):
                    p = softmax(x[idx])
                    g = -(np.log(np.where(p > 0, p, 1.0)) + 1)
                    out[idx] = _jacobian_14(p).T @ g
                return out
            """,
        ],
    },
    "ch01.logit_gap": {
        "log-odds plus log(n - 1)": """
            def logit_gap(p, n):
                return np.log(p) - np.log1p(-p) + np.log(n - 1)
        """,
        "torch with the chapter's torch import": """
            def logit_gap(p, n):
                p = torch.as_tensor(p, dtype=torch.float64)
                return torch.log(p * (n - 1) / (1 - p))
        """,
        "helper in an added cell": [
            """
            def _odds_15(p):
                return p / (1 - p)
            """,
            """
            def logit_gap(p, n):
                return np.log(_odds_15(np.asarray(p, dtype=float)) * (n - 1))
            """,
        ],
    },
    "ch01.predict_overflow_logit": {
        "the literal": """
            def predict_overflow_logit():
                return 81.8
        """,
        "an expression with np.log": """
            def predict_overflow_logit():
                return np.log(3.4e38) - np.log(1000)
        """,
        "float32 numpy scalar": """
            def predict_overflow_logit():
                return np.float32(88.72 - 6.908)
        """,
    },
}

WRONG = {
    "ch01.temperature_softmax": {
        "temperatures along the last axis": """
            def temperature_softmax(logits, temperature):
                return softmax(logits / temperature)
        """,
        "multiplied by the temperature": """
            def temperature_softmax(logits, temperature):
                return softmax(logits * np.asarray(temperature)[..., None])
        """,
        "softmax over axis 0": """
            def temperature_softmax(logits, temperature):
                return softmax(logits / np.asarray(temperature)[..., None], axis=0)
        """,
        "temperature after the softmax": """
            def temperature_softmax(logits, temperature):
                return softmax(logits) ** (1 / np.asarray(temperature)[..., None])
        """,
        "per row, but greedy rows not handled": """
            def temperature_softmax(logits, temperature):
                return softmax(logits / np.asarray(temperature)[..., None])
        """,
        "greedy rows one-hot at the argmax": """
            def temperature_softmax(logits, temperature):
                t = np.asarray(temperature)[..., None]
                p = softmax(logits / np.where(t == 0, 1, t))
                hot = np.eye(logits.shape[-1])[logits.argmax(axis=-1)]
                return np.where(t == 0, hot, p)
        """,
        "greedy rows by a tiny temperature": """
            def temperature_softmax(logits, temperature):
                t = np.asarray(temperature)[..., None]
                return softmax(logits / np.where(t == 0, 1e-3, t))
        """,
    },
    "ch01.stable_softmax": {
        "no max subtracted": """
            def stable_softmax(x):
                e = np.exp(x)
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "global max and global sum": """
            def stable_softmax(x):
                e = np.exp(x - x.max())
                return e / e.sum()
        """,
        "sum without keepdims": """
            def stable_softmax(x):
                e = np.exp(x - x.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1)
        """,
    },
    "ch01.temperature_derivative": {
        "the derivative of x / T alone": """
            def temperature_derivative(logits, temperature):
                return -logits / temperature**2
        """,
        "the Jacobian applied to x / T": """
            def temperature_derivative(logits, temperature):
                p = softmax(logits / temperature)
                return -p * (logits - (p * logits).sum(axis=-1, keepdims=True)) / temperature
        """,
        "a finite difference too coarse": """
            def temperature_derivative(logits, temperature):
                return softmax(logits / (temperature + 0.1)) - softmax(logits / temperature)
        """,
    },
    "ch01.entropy_gradient": {
        "the gradient with respect to p": """
            def entropy_gradient(x):
                p = softmax(x)
                return -(np.log(np.where(p > 0, p, 1.0)) + 1)
        """,
        "only the diagonal of the Jacobian": """
            def entropy_gradient(x):
                p = softmax(x)
                return -p * (1 - p) * (np.log(np.where(p > 0, p, 1.0)) + 1)
        """,
        "x - p.x without care for -inf": """
            def entropy_gradient(x):
                p = softmax(x)
                return -p * (x - (p * x).sum(axis=-1, keepdims=True))
        """,
    },
    "ch01.logit_gap": {
        "the log-odds": """
            def logit_gap(p, n):
                return np.log(p / (1 - p))
        """,
        "n instead of n - 1": """
            def logit_gap(p, n):
                return np.log(p * n / (1 - p))
        """,
    },
    "ch01.predict_overflow_logit": {
        "one exp": """
            def predict_overflow_logit():
                return 88.72
        """,
        "float64's limit": """
            def predict_overflow_logit():
                return 709.78 - 6.91
        """,
        "found by building the row (right number, the rule broken)": """
            def predict_overflow_logit():
                lo, hi = 0.0, 100.0
                for _ in range(40):
                    mid = (lo + hi) / 2
                    with np.errstate(over="ignore"):
                        total = np.exp(np.full(1000, mid, dtype=np.float32)).sum()
                    lo, hi = (lo, mid) if np.isinf(total) else (mid, hi)
                return lo
        """,
    },
}
