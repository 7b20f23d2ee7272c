"""Chapter 2 (dot-product attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch02.query_weights": {
        "torch with the chapter's F": """
            def query_weights(q, k):
                return F.softmax(torch.as_tensor(k) @ torch.as_tensor(q), dim=-1)
        """,
        "float32 einsum": """
            def query_weights(q, k):
                return softmax(np.einsum("se,e->s", k.astype(np.float32), q.astype(np.float32)))
        """,
        "helper in an added cell": [
            """
            def _dots_21(q, k):
                return np.array([np.dot(key, q) for key in k])
            """,
            """
            def query_weights(q, k):
                s = _dots_21(q, k)
                e = np.exp(s - s.max())
                return e / e.sum()
            """,
        ],
    },
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
    "ch02.cross_attention": {
        "torch with the chapter's F": """
            def cross_attention(x_dec, x_enc):
                d, e = torch.as_tensor(x_dec), torch.as_tensor(x_enc)
                return F.softmax(d @ e.transpose(-1, -2), dim=-1) @ e
        """,
        "float32 einsum": """
            def cross_attention(x_dec, x_enc):
                d, e = x_dec.astype(np.float32), x_enc.astype(np.float32)
                w = softmax(np.einsum("...ld,...sd->...ls", d, e))
                return np.einsum("...ls,...sd->...ld", w, e)
        """,
        "helper in an added cell": [
            """
            def _attend_23(q, k, v):
                w = softmax(q @ np.swapaxes(k, -1, -2))
                return w @ v
            """,
            """
            def cross_attention(x_dec, x_enc):
                return _attend_23(x_dec, x_enc, x_enc)
            """,
        ],
    },
    "ch02.predict_shapes": {
        "lists": """
            def predict_shapes():
                return [2, 5, 3], [2, 5, 7]
        """,
        "torch.Size with the chapter's torch import": """
            def predict_shapes():
                return torch.Size([2, 5, 3]), torch.Size([2, 5, 7])
        """,
        "constants in an added cell": [
            """
            B_24, L_24, S_24, EV_24 = 2, 5, 7, 3
            """,
            """
            def predict_shapes():
                return (B_24, L_24, EV_24), (B_24, L_24, S_24)
            """,
        ],
    },
    "ch02.fix_softmax_axis": {
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
    "ch02.query_weights": {
        "raw scores": """
            def query_weights(q, k):
                return k @ q
        """,
        "scaled": """
            def query_weights(q, k):
                return softmax(k @ q / np.sqrt(len(q)))
        """,
    },
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
    "ch02.cross_attention": {
        "queries from the encoder": """
            def cross_attention(x_dec, x_enc):
                w = softmax(x_enc @ np.swapaxes(x_dec, -1, -2))
                return w @ x_dec
        """,
        "self-attention over x_dec": """
            def cross_attention(x_dec, x_enc):
                w = softmax(x_dec @ np.swapaxes(x_dec, -1, -2))
                return w @ x_dec
        """,
        "x_enc.T on a batch": """
            def cross_attention(x_dec, x_enc):
                return softmax(x_dec @ x_enc.T) @ x_enc
        """,
    },
    "ch02.predict_shapes": {
        "one output per key": """
            def predict_shapes():
                return (2, 7, 3), (2, 5, 7)
        """,
        "out as wide as the queries": """
            def predict_shapes():
                return (2, 5, 8), (2, 5, 7)
        """,
    },
    "ch02.fix_softmax_axis": {
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
