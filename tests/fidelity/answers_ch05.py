"""Chapter 5 (multi-head attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch05.split_into_heads": {
        "rearrange from the chapter's imports": """
            def split_into_heads(x, n_heads):
                return rearrange(x, "... l (h d) -> ... h l d", h=n_heads)
        """,
        "torch view and transpose": """
            def split_into_heads(x, n_heads):
                t = torch.as_tensor(x)
                return t.view(*t.shape[:-1], n_heads, t.shape[-1] // n_heads).transpose(-3, -2)
        """,
        "helper in an added cell, slices": [
            """
            def _head_slice_51(x, h, d_head):
                return x[..., h * d_head : (h + 1) * d_head]
            """,
            """
            def split_into_heads(x, n_heads):
                d_head = x.shape[-1] // n_heads
                return np.stack([_head_slice_51(x, h, d_head) for h in range(n_heads)], axis=-3)
            """,
        ],
    },
    "ch05.combine_heads": {
        "rearrange from the chapter's imports": """
            def combine_heads(x):
                return rearrange(x, "... h l d -> ... l (h d)")
        """,
        "torch transpose and flatten": """
            def combine_heads(x):
                return torch.as_tensor(x).transpose(-3, -2).flatten(-2)
        """,
        "helper in an added cell, concatenate": [
            """
            def _heads_list_52(x):
                return [x[..., h, :, :] for h in range(x.shape[-3])]
            """,
            """
            def combine_heads(x):
                return np.concatenate(_heads_list_52(x), axis=-1)
            """,
        ],
    },
    "ch05.multi_head_attention": {
        "torch, rearrange and math from the chapter's imports": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                x, W_q, W_k, W_v, W_o = (torch.as_tensor(a) for a in (x, W_q, W_k, W_v, W_o))
                q, k, v = (rearrange(x @ W, "b l (h d) -> b h l d", h=n_heads) for W in (W_q, W_k, W_v))
                w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
                return rearrange(w @ v, "b h l d -> b l (h d)") @ W_o, w
        """,
        "float32 numpy with the setup's split_heads": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                x32 = x.astype(np.float32)
                q, k, v = (split_heads(x32 @ W.astype(np.float32), n_heads) for W in (W_q, W_k, W_v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(np.float32(q.shape[-1])))
                return merge_heads(w @ v) @ W_o.astype(np.float32), w
        """,
        "helper in an added cell, a loop over heads": [
            """
            def _one_head_53(q, k, v):
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                w = e / e.sum(axis=-1, keepdims=True)
                return w @ v, w
            """,
            """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                d = x.shape[-1] // n_heads
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                outs, ws = [], []
                for h in range(n_heads):
                    cols = slice(h * d, (h + 1) * d)
                    o, w = _one_head_53(q[..., cols], k[..., cols], v[..., cols])
                    outs.append(o)
                    ws.append(w)
                return np.concatenate(outs, axis=-1) @ W_o, np.stack(ws, axis=-3)
            """,
        ],
    },
    "ch05.mha_parameter_count": {
        "nn.Linear from the chapter's imports": """
            def mha_parameter_count(d_model, n_heads, bias):
                one = nn.Linear(d_model, d_model, bias=bias)
                return 4 * sum(p.numel() for p in one.parameters())
        """,
        "math.prod": """
            def mha_parameter_count(d_model, n_heads, bias):
                return 4 * math.prod((d_model, d_model)) + 4 * d_model * int(bool(bias))
        """,
        "helper in an added cell": [
            """
            def _linear_params_54(n_in, n_out, bias):
                return n_in * n_out + (n_out if bias else 0)
            """,
            """
            def mha_parameter_count(d_model, n_heads, bias):
                return 4 * _linear_params_54(d_model, d_model, bias)
            """,
        ],
    },
    "ch05.weights_from_torch": {
        "torch chunk with the chapter's torch import": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                q, k, v = torch.as_tensor(in_proj_weight).chunk(3, dim=0)
                return q.T, k.T, v.T, torch.as_tensor(out_proj_weight).T
        """,
        "one transpose, then column blocks": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                d = in_proj_weight.shape[1]
                t = in_proj_weight.T
                return t[:, :d], t[:, d : 2 * d], t[:, 2 * d :], out_proj_weight.T
        """,
        "helper in an added cell": [
            """
            def _block_55(w, i):
                d = w.shape[1]
                return w[i * d : (i + 1) * d].T
            """,
            """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                return tuple(_block_55(in_proj_weight, i) for i in range(3)) + (out_proj_weight.T,)
            """,
        ],
    },
    "ch05.predict_mha_parameters": {
        "the literal": """
            def predict_mha_parameters():
                return 655360
        """,
        "a float": """
            def predict_mha_parameters():
                return 2 * 512.0**2 + 2 * 512 * 128
        """,
        "math.prod from the chapter's imports": """
            def predict_mha_parameters():
                return 2 * math.prod((512, 512)) + 2 * math.prod((512, 2, 64))
        """,
    },
    "ch05.grouped_query_attention": {
        "torch repeat_interleave with the chapter's imports": """
            def grouped_query_attention(q, k, v):
                q, k, v = (torch.as_tensor(a) for a in (q, k, v))
                g = q.shape[1] // k.shape[1]
                k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
                w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
                return w @ v, w
        """,
        "float32 with a grouped reshape": """
            def grouped_query_attention(q, k, v):
                B, H, L, d = q.shape
                G = k.shape[1]
                qg = q.astype(np.float32).reshape(B, G, H // G, L, d)
                s = qg @ np.swapaxes(k.astype(np.float32), -1, -2)[:, :, None] / np.sqrt(np.float32(d))
                w = softmax(s)
                out = w @ v.astype(np.float32)[:, :, None]
                return out.reshape(B, H, L, -1), w.reshape(B, H, L, -1)
        """,
        "helper in an added cell, head index": [
            """
            def _kv_head_57(h, H, G):
                return h // (H // G)
            """,
            """
            def grouped_query_attention(q, k, v):
                H, G = q.shape[1], k.shape[1]
                idx = [_kv_head_57(h, H, G) for h in range(H)]
                kk, vv = k[:, idx], v[:, idx]
                w = softmax(q @ np.swapaxes(kk, -1, -2) / np.sqrt(q.shape[-1]))
                return w @ vv, w
            """,
        ],
    },
}

WRONG = {
    "ch05.split_into_heads": {
        "B, L, D = x.shape": """
            def split_into_heads(x, n_heads):
                B, L, D = x.shape
                return x.reshape(B, L, n_heads, D // n_heads).transpose(0, 2, 1, 3)
        """,
        "reshaped straight to (..., H, L, d)": """
            def split_into_heads(x, n_heads):
                *lead, L, D = x.shape
                return x.reshape(*lead, n_heads, L, D // n_heads)
        """,
        "interleaved columns": """
            def split_into_heads(x, n_heads):
                *lead, L, D = x.shape
                return np.swapaxes(x.reshape(*lead, L, D // n_heads, n_heads), -1, -2).swapaxes(-3, -2)
        """,
    },
    "ch05.combine_heads": {
        "B, H, L, d = x.shape": """
            def combine_heads(x):
                B, H, L, d = x.shape
                return x.transpose(0, 2, 1, 3).reshape(B, L, H * d)
        """,
        "no transpose": """
            def combine_heads(x):
                *lead, H, L, d = x.shape
                return x.reshape(*lead, L, H * d)
        """,
        "heads and features swapped": """
            def combine_heads(x):
                *lead, H, L, d = x.shape
                return np.moveaxis(x, -3, -1).reshape(*lead, L, H * d)
        """,
    },
    "ch05.multi_head_attention": {
        "scaled by sqrt(d_model)": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1]))
                return merge_heads(w @ v) @ W_o, w
        """,
        "interleaved head split": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                B, L, D = x.shape
                def heads(a):
                    return a.reshape(B, L, D // n_heads, n_heads).transpose(0, 3, 1, 2)
                q, k, v = heads(x @ W_q), heads(x @ W_k), heads(x @ W_v)
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(D // n_heads))
                return (w @ v).transpose(0, 2, 3, 1).reshape(B, L, D) @ W_o, w
        """,
        "no W_o": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return merge_heads(w @ v), w
        """,
        "W transposed": """
            def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
                q, k, v = (split_heads(x @ W.T, n_heads) for W in (W_q, W_k, W_v))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return merge_heads(w @ v) @ W_o.T, w
        """,
    },
    "ch05.mha_parameter_count": {
        "per head": """
            def mha_parameter_count(d_model, n_heads, bias):
                return n_heads * (4 * d_model * d_model + (4 * d_model if bias else 0))
        """,
        "no W_O": """
            def mha_parameter_count(d_model, n_heads, bias):
                return 3 * d_model * d_model + (3 * d_model if bias else 0)
        """,
        "bias ignored": """
            def mha_parameter_count(d_model, n_heads, bias):
                return 4 * d_model * d_model
        """,
    },
    "ch05.weights_from_torch": {
        "not transposed": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                W_q, W_k, W_v = np.split(in_proj_weight, 3, axis=0)
                return W_q, W_k, W_v, out_proj_weight
        """,
        "out_proj not transposed": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                W_q, W_k, W_v = np.split(in_proj_weight, 3, axis=0)
                return W_q.T, W_k.T, W_v.T, out_proj_weight
        """,
        "split along the wrong axis": """
            def weights_from_torch(in_proj_weight, out_proj_weight):
                W_q, W_k, W_v = np.split(in_proj_weight.T, 3, axis=0)
                return W_q.T, W_k.T, W_v.T, out_proj_weight.T
        """,
    },
    "ch05.predict_mha_parameters": {
        "no sharing": """
            def predict_mha_parameters():
                return 4 * 512 * 512
        """,
        "forgot W_O": """
            def predict_mha_parameters():
                return 512 * 512 + 2 * 512 * 128
        """,
    },
    "ch05.grouped_query_attention": {
        "repeated by G instead of H // G": """
            def grouped_query_attention(q, k, v):
                G = k.shape[1]
                k, v = np.repeat(k, G, axis=1), np.repeat(v, G, axis=1)
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
        "np.tile for np.repeat": """
            def grouped_query_attention(q, k, v):
                g = q.shape[1] // k.shape[1]
                k, v = np.tile(k, (1, g, 1, 1)), np.tile(v, (1, g, 1, 1))
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
                return w @ v, w
        """,
        "scaled by sqrt(H * d_head)": """
            def grouped_query_attention(q, k, v):
                g = q.shape[1] // k.shape[1]
                k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
                w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[1] * q.shape[-1]))
                return w @ v, w
        """,
    },
}
