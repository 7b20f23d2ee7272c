"""Chapter 1 (softmax): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch01.temperature_softmax": {
        "torch with the chapter's torch import": """
            def temperature_softmax(logits, temperature):
                return torch.softmax(torch.as_tensor(logits) / temperature, dim=-1)
        """,
        "float32": """
            def temperature_softmax(logits, temperature):
                return softmax(np.asarray(logits, dtype=np.float32) / np.float32(temperature))
        """,
        "helper in an added cell": [
            """
            def _sharpen_11(logits, temperature):
                return np.asarray(logits) * (1.0 / temperature)
            """,
            """
            def temperature_softmax(logits, temperature):
                return ac.softmax(_sharpen_11(logits, temperature), axis=-1)
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
    "ch01.attention_entropy": {
        "torch xlogy with the chapter's torch import": """
            def attention_entropy(p):
                t = torch.as_tensor(p)
                return -torch.special.xlogy(t, t).sum(dim=-1)
        """,
        "masked log in float32": """
            def attention_entropy(p):
                p = np.asarray(p, dtype=np.float32)
                logp = np.log(p, out=np.zeros_like(p), where=p > 0)
                return -(p * logp).sum(axis=-1)
        """,
        "helper in an added cell": [
            """
            def _plogp_13(p):
                return np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0)
            """,
            """
            def attention_entropy(p):
                return -np.sum(_plogp_13(p), axis=-1)
            """,
        ],
    },
    "ch01.softmax_jacobian": {
        "torch autograd with the chapter's torch import": """
            def softmax_jacobian(x):
                return torch.autograd.functional.jacobian(lambda t: torch.softmax(t, dim=-1), torch.as_tensor(x))
        """,
        "float32 einsum": """
            def softmax_jacobian(x):
                s = softmax(np.asarray(x, dtype=np.float32))
                return np.einsum("i,ij->ij", s, np.eye(len(s), dtype=np.float32) - s[None, :])
        """,
        "helper in an added cell, loops": [
            """
            def _kron_14(i, j):
                return 1.0 if i == j else 0.0
            """,
            """
            def softmax_jacobian(x):
                s = softmax(x)
                n = len(s)
                return np.array([[s[i] * (_kron_14(i, j) - s[j]) for j in range(n)] for i in range(n)])
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
        "multiplied by the temperature": """
            def temperature_softmax(logits, temperature):
                return softmax(logits * temperature)
        """,
        "softmax over axis 0": """
            def temperature_softmax(logits, temperature):
                return softmax(logits / temperature, axis=0)
        """,
        "temperature after the softmax": """
            def temperature_softmax(logits, temperature):
                p = softmax(logits) ** (1 / temperature)
                return p
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
    "ch01.attention_entropy": {
        "0 log 0 as NaN": """
            def attention_entropy(p):
                return -(p * np.log(p)).sum(axis=-1)
        """,
        "log base 2": """
            def attention_entropy(p):
                safe = np.where(p > 0, p, 1.0)
                return -(p * np.log2(safe)).sum(axis=-1)
        """,
        "summed over the first axis": """
            def attention_entropy(p):
                safe = np.where(p > 0, p, 1.0)
                return -(p * np.log(safe)).sum(axis=0)
        """,
    },
    "ch01.softmax_jacobian": {
        "no diagonal term": """
            def softmax_jacobian(x):
                s = softmax(x)
                return -np.outer(s, s)
        """,
        "only the diagonal": """
            def softmax_jacobian(x):
                s = softmax(x)
                return np.diag(s * (1 - s))
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
    },
}
