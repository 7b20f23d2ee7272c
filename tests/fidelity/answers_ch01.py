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
    "ch01.attention_kl": {
        "torch.log_softmax, torch.where": """
            def attention_kl(teacher, student):
                t, s = torch.as_tensor(teacher), torch.as_tensor(student)
                lp, lq = torch.log_softmax(t, dim=-1), torch.log_softmax(s, dim=-1)
                p = lp.exp()
                return torch.where(p > 0, p * (lp - lq), torch.zeros_like(p)).sum(dim=-1)
        """,
        "a loop over the rows, float32 kept, np.logaddexp.reduce over the kept keys": """
            def attention_kl(teacher, student):
                t, s = np.asarray(teacher), np.asarray(student)
                out = np.zeros(t.shape[:-1], dtype=t.dtype)
                for idx in np.ndindex(*t.shape[:-1]):
                    keep = np.isfinite(t[idx])
                    lt = t[idx][keep] - np.logaddexp.reduce(t[idx][keep])
                    ls = s[idx][keep] - np.logaddexp.reduce(s[idx][keep])
                    out[idx] = np.sum(np.exp(lt) * (lt - ls))
                return out
        """,
        "cross-entropy minus entropy, a log-sum-exp helper in an added cell": [
            """
            def _lse_15(x):
                m = np.max(x, axis=-1, keepdims=True)
                return m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))
            """,
            """
            def attention_kl(teacher, student):
                p = softmax(teacher)
                kept = np.isfinite(teacher)
                lt = np.where(kept, teacher - _lse_15(teacher), 0.0)
                ls = np.where(kept, student - _lse_15(student), 0.0)
                return np.sum(p * lt, axis=-1) - np.sum(p * ls, axis=-1)
            """,
        ],
        "einsum over float64 copies": """
            def attention_kl(teacher, student):
                t, s = np.asarray(teacher, dtype=np.float64), np.asarray(student, dtype=np.float64)
                lt = t - t.max(-1, keepdims=True)
                lt = lt - np.log(np.exp(lt).sum(-1, keepdims=True))
                ls = s - s.max(-1, keepdims=True)
                ls = ls - np.log(np.exp(ls).sum(-1, keepdims=True))
                diff = np.nan_to_num(lt - ls, nan=0.0)
                return np.einsum("...i,...i->...", np.exp(lt), diff)
        """,
    },
    "ch01.log_sigmoid": {
        "np.logaddexp": """
            def log_sigmoid(z):
                return -np.logaddexp(0, -z)
        """,
        "torch, one branch per sign": """
            def log_sigmoid(z):
                z = torch.as_tensor(z)
                return torch.where(z >= 0, -torch.log1p(torch.exp(-z)), z - torch.log1p(torch.exp(z)))
        """,
        "the log-softmax of the pair (z, 0)": """
            def log_sigmoid(z):
                pair = np.stack([z, np.zeros_like(z)], axis=-1)  # (..., 2)
                m = pair.max(axis=-1, keepdims=True)
                return (pair - m - np.log(np.exp(pair - m).sum(axis=-1, keepdims=True)))[..., 0]
        """,
        "one branch per sign, np.log of 1 + exp (no log1p)": """
            def log_sigmoid(z):
                tail = np.log(1 + np.exp(-np.abs(z)))  # exp of a number <= 0 cannot overflow
                return np.where(z >= 0, -tail, z - tail)
        """,
        "float32 loop over the entries, math module": """
            import math

            def log_sigmoid(z):
                flat = np.asarray(z, dtype=np.float32).ravel()
                out = np.empty_like(flat)
                for i, v in enumerate(flat):
                    v = float(v)
                    out[i] = -math.log1p(math.exp(-v)) if v >= 0 else v - math.log1p(math.exp(v))
                return out.reshape(np.shape(z))
        """,
    },
    "ch01.smooth_max_slope": {
        "lse(z) - p . z with torch": """
            def smooth_max_slope(x, temperature):
                z = torch.as_tensor(x, dtype=torch.float64) / temperature
                lse = torch.logsumexp(z, dim=-1)
                p = torch.softmax(z, dim=-1)
                pz = torch.where(p > 0, p * z, torch.zeros_like(z)).sum(dim=-1)
                return lse - pz
        """,
        "the entropy of the weights, a loop over rows in float32": """
            def smooth_max_slope(x, temperature):
                x = np.asarray(x, dtype=np.float32)
                out = np.zeros(x.shape[:-1], dtype=np.float32)
                for idx in np.ndindex(*x.shape[:-1]):
                    row = x[idx][np.isfinite(x[idx])]
                    z = (row - row.max()) / np.float32(temperature)  # shifted first: float32 keeps the digits
                    log_p = z - np.logaddexp.reduce(z)
                    out[idx] = -np.sum(np.exp(log_p) * log_p)
                return out
        """,
        "a helper in an added cell, the chapter's softmax": [
            """
            def _log_weights_17(z):
                shifted = z - z.max(axis=-1, keepdims=True)
                return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
            """,
            """
            def smooth_max_slope(x, temperature):
                z = np.asarray(x, dtype=np.float64) / temperature
                p = softmax(z)
                logs = np.where(p > 0, _log_weights_17(z), 0.0)
                return -(p * logs).sum(axis=-1)
            """,
        ],
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
    "ch01.attention_kl": {
        "through the weights": """
            def attention_kl(teacher, student):
                p, q = softmax(teacher), softmax(student)
                return (p * np.log(p / q)).sum(axis=-1)
        """,
        "through the weights, NaN summed away": """
            def attention_kl(teacher, student):
                p, q = softmax(teacher), softmax(student)
                return np.nansum(p * np.log(p / q), axis=-1)
        """,
        "the other way round": """
            def attention_kl(teacher, student):
                lp = teacher - np.logaddexp.reduce(teacher, axis=-1, keepdims=True)
                lq = student - np.logaddexp.reduce(student, axis=-1, keepdims=True)
                q = np.exp(lq)
                return np.where(q > 0, q * (lq - lp), 0.0).sum(axis=-1)
        """,
        "the cross-entropy": """
            def attention_kl(teacher, student):
                lq = student - np.logaddexp.reduce(student, axis=-1, keepdims=True)
                p = softmax(teacher)
                return -np.where(p > 0, p * lq, 0.0).sum(axis=-1)
        """,
    },
    "ch01.log_sigmoid": {
        "the log of the sigmoid": """
            def log_sigmoid(z):
                return np.log(1 / (1 + np.exp(-z)))
        """,
        "log1p of exp(-z)": """
            def log_sigmoid(z):
                return -np.log1p(np.exp(-z))
        """,
        "the log-probability of a no": """
            def log_sigmoid(z):
                return -np.logaddexp(0, z)
        """,
        "clipped away from 0": """
            def log_sigmoid(z):
                return np.log(np.clip(1 / (1 + np.exp(-z)), 1e-30, 1.0))
        """,
    },
    "ch01.smooth_max_slope": {
        "the first term of the product rule alone": """
            def smooth_max_slope(x, temperature):
                z = x / temperature
                m = z.max(axis=-1, keepdims=True)
                return (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))[..., 0]
        """,
        "the entropy through log(softmax)": """
            def smooth_max_slope(x, temperature):
                p = softmax(x / temperature)
                return -np.sum(p * np.log(p), axis=-1)
        """,
        "minus the entropy": """
            def smooth_max_slope(x, temperature):
                z = x / temperature
                log_p = z - np.logaddexp.reduce(z, axis=-1, keepdims=True)
                p = np.exp(log_p)
                return np.where(p > 0, p * log_p, 0.0).sum(axis=-1)
        """,
        "a finite difference in T": """
            def smooth_max_slope(x, temperature):
                def m(t):
                    z = x / t
                    top = z.max(axis=-1, keepdims=True)
                    return t * (top + np.log(np.exp(z - top).sum(axis=-1, keepdims=True)))[..., 0]
                h = 1e-3 * temperature
                return (m(temperature + h) - m(temperature)) / h
        """,
    },
}
