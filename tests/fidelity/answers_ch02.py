"""Chapter 2 (dot-product attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch02.batched_attention": {
        "torch with the chapter's F": """
            def batched_attention(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                w = F.softmax(q @ k.transpose(-1, -2), dim=-1)
                return w @ v, w
        """,
        "float32 einsum": """
            def batched_attention(q, k, v):
                s = np.einsum("...le,...se->...ls", q.astype(np.float32), k.astype(np.float32))
                w = softmax(s)
                return np.einsum("...ls,...sv->...lv", w, v.astype(np.float32)), w
        """,
        "helper in an added cell": [
            """
            def _t_22(a):
                return np.swapaxes(a, -1, -2)
            """,
            """
            def batched_attention(q, k, v):
                w = ac.softmax(np.matmul(q, _t_22(k)), axis=-1)
                return np.matmul(w, v), w
            """,
        ],
    },
    "ch02.output_jacobian": {
        "torch autograd with the chapter's F": """
            def output_jacobian(q, k, v):
                kt, vt = torch.as_tensor(k, dtype=torch.float64), torch.as_tensor(v, dtype=torch.float64)
                f = lambda qi: F.softmax(qi @ kt.T, dim=-1) @ vt
                return torch.stack([torch.autograd.functional.jacobian(f, torch.as_tensor(qi, dtype=torch.float64)) for qi in q])
        """,
        "float32, V^T (diag(w) - w w^T) K per query": """
            def output_jacobian(q, k, v):
                q, k, v = (np.asarray(a, dtype=np.float32) for a in (q, k, v))
                w = softmax(q @ k.T)
                return np.stack([v.T @ (np.diag(wi) - np.outer(wi, wi)) @ k for wi in w])
        """,
        "helper in an added cell, weighted covariance": [
            """
            def _weighted_cov_22(w, a, b):
                a_c = a - w @ a
                return (w[:, None] * a_c).T @ (b - w @ b)
            """,
            """
            def output_jacobian(q, k, v):
                w = ac.softmax(q @ k.T, axis=-1)
                return np.array([_weighted_cov_22(wi, v, k) for wi in w])
            """,
        ],
    },
    "ch02.query_for_weights": {
        "torch with the chapter's torch import": """
            def query_for_weights(k, p):
                kt, pt = torch.as_tensor(k, dtype=torch.float64), torch.as_tensor(p, dtype=torch.float64)
                s = torch.log(pt)
                s = s - s.mean(dim=-1, keepdim=True)
                return (torch.linalg.inv(kt) @ s.unsqueeze(-1)).squeeze(-1)
        """,
        "float32, the inverse on the right": """
            def query_for_weights(k, p):
                s = np.log(np.asarray(p, dtype=np.float32))
                s = s - s.mean(axis=-1, keepdims=True)
                return s @ np.linalg.inv(np.asarray(k, dtype=np.float32)).T
        """,
        "helper in an added cell, least squares": [
            """
            def _centred_log_23(p):
                s = np.log(p)
                return s - np.mean(s, axis=-1, keepdims=True)
            """,
            """
            def query_for_weights(k, p):
                s = _centred_log_23(np.asarray(p, dtype=float))
                q = np.linalg.lstsq(k, np.atleast_2d(s).T, rcond=None)[0].T
                return q if s.ndim == 2 else q[0]
            """,
        ],
    },
    "ch02.predict_shapes": {
        "lists": """
            def predict_shapes():
                return [4, 3, 6, 5], [4, 3, 6, 10]
        """,
        "torch.Size with the chapter's torch import": """
            def predict_shapes():
                return torch.Size([4, 3, 6, 5]), torch.Size([4, 3, 6, 10])
        """,
        "constants in an added cell": [
            """
            BATCH_24, L_24, S_24, EV_24 = (4, 3), 6, 10, 5
            """,
            """
            def predict_shapes():
                return (*BATCH_24, L_24, EV_24), (*BATCH_24, L_24, S_24)
            """,
        ],
    },
    "ch02.attend_each_query": {
        "torch with the chapter's F": """
            def attend_each_query(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                w = F.softmax(q @ k.T, dim=-1)
                return w @ v, w
        """,
        "float32": """
            def attend_each_query(q, k, v):
                s = q.astype(np.float32) @ k.astype(np.float32).T
                e = np.exp(s - s.max(axis=1, keepdims=True))
                w = e / e.sum(axis=1, keepdims=True)
                return w @ v.astype(np.float32), w
        """,
        "helper in an added cell, one query at a time": [
            """
            def _one_query_25(qi, k, v):
                s = k @ qi
                e = np.exp(s - s.max())
                w = e / e.sum()
                return w @ v, w
            """,
            """
            def attend_each_query(q, k, v):
                rows = [_one_query_25(qi, k, v) for qi in q]
                return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
            """,
        ],
    },
}

WRONG = {
    "ch02.batched_attention": {
        "k.T on a batch": """
            def batched_attention(q, k, v):
                w = softmax(q @ k.T)
                return w @ v, w
        """,
        "q and k swapped": """
            def batched_attention(q, k, v):
                w = softmax(k @ np.swapaxes(q, -1, -2))
                return (w @ v if w.shape[-1] == v.shape[-2] else w), w
        """,
        "softmax over the queries": """
            def batched_attention(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2), axis=-2)
                return w @ v, w
        """,
        "scaled too early": """
            def batched_attention(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
    },
    "ch02.output_jacobian": {
        "only the diagonal term": """
            def output_jacobian(q, k, v):
                w = softmax(q @ k.T)
                return np.einsum("ls,sv,se->lve", w, v, k)
        """,
        "the Jacobian of the weights alone, times V": """
            def output_jacobian(q, k, v):
                w = softmax(q @ k.T)
                return np.stack([(np.diag(wi) - np.outer(wi, wi)) @ k for wi in w]) * v.sum()
        """,
        "K and V swapped": """
            def output_jacobian(q, k, v):
                w = softmax(q @ k.T)
                J = np.stack([k.T @ (np.diag(wi) - np.outer(wi, wi)) @ v for wi in w])
                return np.swapaxes(J, -1, -2) if J.shape[-1] != q.shape[-1] else J
        """,
    },
    "ch02.query_for_weights": {
        "solve for p itself": """
            def query_for_weights(k, p):
                return np.linalg.solve(k, p.T).T
        """,
        "log p, not centred": """
            def query_for_weights(k, p):
                return np.linalg.solve(k, np.log(p).T).T
        """,
        "k transposed": """
            def query_for_weights(k, p):
                s = np.log(p) - np.log(p).mean(axis=-1, keepdims=True)
                return np.linalg.solve(k.T, s.T).T
        """,
    },
    "ch02.predict_shapes": {
        "the 1 kept": """
            def predict_shapes():
                return (4, 1, 6, 5), (4, 1, 6, 10)
        """,
        "one output per key": """
            def predict_shapes():
                return (4, 3, 10, 5), (4, 3, 6, 10)
        """,
        "out as wide as the queries": """
            def predict_shapes():
                return (4, 3, 6, 8), (4, 3, 6, 10)
        """,
    },
    "ch02.attend_each_query": {
        "normalised over the whole matrix": """
            def attend_each_query(q, k, v):
                e = np.exp(q @ k.T - (q @ k.T).max())
                w = e / e.sum()
                return w @ v, w
        """,
        "normalised over the queries": """
            def attend_each_query(q, k, v):
                s = q @ k.T
                e = np.exp(s - s.max(axis=0, keepdims=True))
                w = e / e.sum(axis=0, keepdims=True)
                return w @ v, w
        """,
    },
}
