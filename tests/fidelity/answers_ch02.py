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
        "torch, least squares on the stacked system": """
            def query_for_weights(k, p):
                kt, pt = torch.as_tensor(k, dtype=torch.float64), torch.as_tensor(p, dtype=torch.float64)
                S = kt.shape[0]
                # unknowns (q, c): k q - c 1 = log p; the shortest q is orthogonal to k^-1 1
                b = torch.linalg.solve(kt, torch.ones(S, dtype=torch.float64))
                a = torch.linalg.solve(kt, torch.log(pt).reshape(-1, S).T).T
                q = a - (a @ b)[:, None] * b / (b @ b)
                return q.reshape(pt.shape[:-1] + (kt.shape[1],))
        """,
        "float32, the inverse, a loop over rows": """
            def query_for_weights(k, p):
                kinv = np.linalg.inv(np.asarray(k, dtype=np.float32))
                rows = np.atleast_2d(np.log(np.asarray(p, dtype=np.float32)))
                b = kinv @ np.ones(kinv.shape[0], dtype=np.float32)
                out = []
                for s in rows:
                    a = kinv @ s
                    out.append(a - np.dot(a, b) / np.dot(b, b) * b)
                out = np.array(out)
                return out if np.ndim(p) == 2 else out[0]
        """,
        "helper in an added cell, projection matrix": [
            """
            def _drop_along_23(a, b):
                P = np.eye(len(b)) - np.outer(b, b) / (b @ b)
                return a @ P.T
            """,
            """
            def query_for_weights(k, p):
                a = np.linalg.solve(k, np.log(p).T).T
                b = np.linalg.solve(k, np.ones(len(k)))
                return _drop_along_23(a, b)
            """,
        ],
    },
    "ch02.predict_key_stretch": {
        "a fraction": """
            def predict_key_stretch():
                return 60 / 23
        """,
        "a torch scalar with the chapter's torch import": """
            def predict_key_stretch():
                return torch.tensor(3 / 1.15)
        """,
        "rounded, from constants in an added cell": [
            """
            EDGE_24 = (3.0, 2.0)  # where the edge k0-k2 meets the axes
            """,
            """
            def predict_key_stretch():
                return round(1 / (1 / EDGE_24[0] + 0.1 / EDGE_24[1]), 3)
            """,
        ],
    },
    "ch02.recover_key_lengths": {
        "rows centred, then least squares in the lengths alone": """
            def key_lengths(q, directions, weights):
                c = q @ directions.T
                logw = np.log(weights)
                # centring each row removes its unknown constant: length_j c_ij - mean_m length_m c_im
                L, S = c.shape
                A = np.einsum("ij,jm->ijm", c, np.eye(S)) - c[:, None, :] / S
                b = logw - logw.mean(axis=1, keepdims=True)
                return np.linalg.lstsq(A.reshape(L * S, S), b.ravel(), rcond=None)[0]
        """,
        "torch, float32, the constants as extra columns": """
            def key_lengths(q, directions, weights):
                q, d, w = (torch.as_tensor(a, dtype=torch.float32) for a in (q, directions, weights))
                L, S = w.shape
                c = q @ d.T
                A = torch.cat([torch.diag_embed(c).reshape(L * S, S),
                               -torch.repeat_interleave(torch.eye(L), S, dim=0)], dim=1)
                x = torch.linalg.lstsq(A.double(), torch.log(w).reshape(-1, 1).double()).solution
                return x[:S, 0].float()
        """,
        "loops over pairs of keys, in an added helper": [
            """
            def _pair_rows_25(c, logw):
                rows, rhs = [], []
                L, S = c.shape
                for i in range(L):
                    for j in range(1, S):
                        r = [0.0] * S
                        r[j], r[0] = c[i, j], -c[i, 0]
                        rows.append(r)
                        rhs.append(logw[i, j] - logw[i, 0])
                return np.array(rows), np.array(rhs)
            """,
            """
            def key_lengths(q, directions, weights):
                A, b = _pair_rows_25(np.asarray(q) @ np.asarray(directions).T, np.log(weights))
                return np.linalg.lstsq(A, b, rcond=None)[0]
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
                a = np.linalg.solve(k.T, np.log(p).T).T
                b = np.linalg.solve(k.T, np.ones(len(k)))
                return a - (a @ b)[..., None] / (b @ b) * b
        """,
        "scores of mean 0": """
            def query_for_weights(k, p):
                s = np.log(p) - np.log(p).mean(axis=-1, keepdims=True)
                return np.linalg.solve(k, s.T).T
        """,
    },
    "ch02.predict_key_stretch": {
        "the query pointed at k4": """
            def predict_key_stretch():
                return 3 / 1.01
        """,
        "as long as k0": """
            def predict_key_stretch():
                return 3 / (1 + 0.01) ** 0.5
        """,
        "k1 taken for a corner": """
            def predict_key_stretch():
                return 3 / 1.18
        """,
        "the edge k2-k3 instead": """
            def predict_key_stretch():
                return 2.0
        """,
    },
    "ch02.recover_key_lengths": {
        "weights as scores": """
            def key_lengths(q, directions, weights):
                L, S = weights.shape
                c = q @ directions.T
                A = np.hstack([np.einsum("ij,jm->ijm", c, np.eye(S)).reshape(L * S, S),
                               -np.repeat(np.eye(L), S, axis=0)])
                return np.linalg.lstsq(A, weights.ravel(), rcond=None)[0][:S]
        """,
        "no constant per query": """
            def key_lengths(q, directions, weights):
                L, S = weights.shape
                c = q @ directions.T
                A = np.einsum("ij,jm->ijm", c, np.eye(S)).reshape(L * S, S)
                return np.linalg.lstsq(A, np.log(weights).ravel(), rcond=None)[0]
        """,
        "cosines instead of q . direction": """
            def key_lengths(q, directions, weights):
                qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
                c = qn @ directions.T
                logw = np.log(weights)
                L, S = c.shape
                A = np.einsum("ij,jm->ijm", c, np.eye(S)) - c[:, None, :] / S
                b = logw - logw.mean(axis=1, keepdims=True)
                return np.linalg.lstsq(A.reshape(L * S, S), b.ravel(), rcond=None)[0]
        """,
        "one query only": """
            def key_lengths(q, directions, weights):
                c = q[0] @ directions.T
                s = np.log(weights[0])
                return (s - s.min()) / c + 1.0
        """,
    },
}
