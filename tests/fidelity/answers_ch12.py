"""Chapter 12 (cross-attention): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch12.predict_cross_kv_cost": {
        "the literal": """
            def predict_cross_kv_cost():
                return 3.15e9
        """,
        "a numpy int64 with the chapter's np": """
            def predict_cross_kv_cost():
                return np.int64(6) * 2 * 1000 * 512**2
        """,
        "helper in an added cell": [
            """
            def _projection_macs(rows, d_in, d_out):
                return rows * d_in * d_out
            """,
            """
            def predict_cross_kv_cost():
                return 6 * (_projection_macs(1000, 512, 512) + _projection_macs(1000, 512, 512))
            """,
        ],
    },
    "ch12.masked_cross_attention": {
        "einsum": """
            def masked_cross_attention(x, memory, W_q, W_k, W_v, src_padding=None):
                q = np.einsum("bld,de->ble", x, W_q)
                k = np.einsum("bsd,de->bse", memory, W_k)
                v = np.einsum("bsd,de->bse", memory, W_v)
                s = np.einsum("ble,bse->bls", q, k) / np.sqrt(q.shape[-1])
                if src_padding is not None:
                    s = np.where(src_padding[:, None, :], s, -np.inf)
                w = softmax(s, axis=-1)
                return np.einsum("bls,bse->ble", w, v), w
        """,
        "torch with the chapter's torch": """
            def masked_cross_attention(x, memory, W_q, W_k, W_v, src_padding=None):
                x, memory = torch.as_tensor(x), torch.as_tensor(memory)
                q = x @ torch.as_tensor(W_q)
                k, v = memory @ torch.as_tensor(W_k), memory @ torch.as_tensor(W_v)
                s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
                if src_padding is not None:
                    s = s.masked_fill(~torch.as_tensor(src_padding)[:, None, :], float("-inf"))
                w = torch.softmax(s, dim=-1)
                return (w @ v).numpy(), w.numpy()
        """,
        "helper in an added cell, float32": [
            """
            def _project(a, W):
                return a.astype(np.float32) @ W.astype(np.float32)
            """,
            """
            def masked_cross_attention(x, memory, W_q, W_k, W_v, src_padding=None):
                q, k, v = _project(x, W_q), _project(memory, W_k), _project(memory, W_v)
                s = q @ k.transpose(0, 2, 1) / np.float32(np.sqrt(q.shape[-1]))
                if src_padding is not None:
                    s = np.where(src_padding[:, None, :], s, -np.inf)
                w = softmax(s)
                return w @ v, w
            """,
        ],
    },
    "ch12.fix_prefix_mask": {
        "blocks written out": """
            def prefix_mask(S, L):
                mask = np.zeros((S + L, S + L), dtype=bool)
                mask[:S, :S] = True
                mask[S:, :S] = True
                mask[S:, S:] = np.tril(np.ones((L, L), dtype=bool))
                return mask
        """,
        "torch with the chapter's torch": """
            def prefix_mask(S, L):
                i = torch.arange(S + L)[:, None]
                j = torch.arange(S + L)[None, :]
                return ((j <= i) | ((i < S) & (j < S))).numpy()
        """,
        "helper in an added cell, the package's causal mask": [
            """
            def _source_block(S, n):
                block = np.zeros((n, n), dtype=bool)
                block[:S, :S] = True
                return block
            """,
            """
            def prefix_mask(S, L):
                return np.asarray(ac.causal_mask(S + L)) | _source_block(S, S + L)
            """,
        ],
    },
    "ch12.remove_source_tokens": {
        "a loop over the rows": """
            def remove_source_tokens(weights, v, keep):
                w = np.zeros_like(weights)
                for b in range(weights.shape[0]):
                    for t in range(weights.shape[1]):
                        kept = weights[b, t] * keep[b]
                        if kept.sum() > 0:
                            w[b, t] = kept / kept.sum()
                return w @ v, w
        """,
        "the logs' softmax with the package's softmax": """
            def remove_source_tokens(weights, v, keep):
                with np.errstate(divide="ignore"):
                    scores = np.where(keep[:, None, :], np.log(weights), -np.inf)
                w = softmax(scores)
                return w @ v, w
        """,
        "torch, float32": """
            def remove_source_tokens(weights, v, keep):
                w = torch.as_tensor(weights, dtype=torch.float32) * torch.as_tensor(keep)[:, None, :]
                total = w.sum(-1, keepdim=True)
                w = torch.where(total > 0, w / total.clamp_min(1e-30), torch.zeros_like(w))
                return (w @ torch.as_tensor(v, dtype=torch.float32)).numpy(), w.numpy()
        """,
    },
    "ch12.encoder_decoder_parameters": {
        "per matrix": """
            def encoder_decoder_parameters(d_model, d_ff, n_encoder, n_decoder):
                d = d_model
                linear = lambda i, o: i * o + o
                attn = 4 * linear(d, d)
                mlp = linear(d, d_ff) + linear(d_ff, d)
                ln = 2 * d
                return n_encoder * (attn + mlp + 2 * ln) + n_decoder * (2 * attn + mlp + 3 * ln) + 2 * ln
        """,
        "expanded polynomial": """
            def encoder_decoder_parameters(d_model, d_ff, n_encoder, n_decoder):
                d, f = d_model, d_ff
                enc = 4 * d * d + 2 * d * f + f + 9 * d
                dec = 8 * d * d + 2 * d * f + f + 15 * d
                return n_encoder * enc + n_decoder * dec + 4 * d
        """,
        "helper in an added cell, float": [
            """
            def _block_params(d, f, attentions, norms):
                return attentions * (4.0 * d * d + 4 * d) + 2.0 * d * f + f + d + norms * 2 * d
            """,
            """
            def encoder_decoder_parameters(d_model, d_ff, n_encoder, n_decoder):
                return (n_encoder * _block_params(d_model, d_ff, 1, 2)
                        + n_decoder * _block_params(d_model, d_ff, 2, 3) + 4 * d_model)
            """,
        ],
    },
    "ch12.packed_cross_mask": {
        "cumulative sums": """
            def packed_cross_mask(src_lengths, tgt_lengths):
                s_end, t_end = np.cumsum(src_lengths), np.cumsum(tgt_lengths)
                mask = np.zeros((t_end[-1], s_end[-1]), dtype=bool)
                for a, b, c, d in zip(t_end - tgt_lengths, t_end, s_end - src_lengths, s_end):
                    mask[a:b, c:d] = True
                return mask
        """,
        "torch with the chapter's torch": """
            def packed_cross_mask(src_lengths, tgt_lengths):
                s = torch.repeat_interleave(torch.arange(len(src_lengths)), torch.tensor(src_lengths))
                t = torch.repeat_interleave(torch.arange(len(tgt_lengths)), torch.tensor(tgt_lengths))
                return (t[:, None] == s[None, :]).numpy()
        """,
        "helper in an added cell, lists": [
            """
            def _labels(lengths):
                return [i for i, n in enumerate(lengths) for _ in range(n)]
            """,
            """
            def packed_cross_mask(src_lengths, tgt_lengths):
                return np.array([[a == b for b in _labels(src_lengths)] for a in _labels(tgt_lengths)])
            """,
        ],
    },
}

WRONG = {
    "ch12.predict_cross_kv_cost": {
        "d_model once, not squared": """
            def predict_cross_kv_cost():
                return 6 * 2 * 1000 * 512
        """,
        "the cost of one source token": """
            def predict_cross_kv_cost():
                return 6 * 2 * 512 * 512
        """,
    },
    "ch12.masked_cross_attention": {
        "padding on the query side": """
            def masked_cross_attention(x, memory, W_q, W_k, W_v, src_padding=None):
                q, k, v = x @ W_q, memory @ W_k, memory @ W_v
                s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                w = softmax(s)
                if src_padding is not None:
                    L = min(w.shape[1], src_padding.shape[1])
                    w[:, :L] = w[:, :L] * src_padding[:, :L, None]
                return w @ v, w
        """,
        "padding as a -1e9 after scaling by d": """
            def masked_cross_attention(x, memory, W_q, W_k, W_v, src_padding=None):
                q, k, v = x @ W_q, memory @ W_k, memory @ W_v
                s = q @ np.swapaxes(k, -1, -2) / q.shape[-1]
                if src_padding is not None:
                    s = np.where(src_padding[:, None, :], s, -1e9)
                w = softmax(s)
                return w @ v, w
        """,
    },
    "ch12.fix_prefix_mask": {
        "the bug kept": """
            def prefix_mask(S, L):
                i = np.arange(S + L)[:, None]
                j = np.arange(S + L)[None, :]
                return (j <= i) | (i < S)
        """,
        "the target cannot read the source": """
            def prefix_mask(S, L):
                i = np.arange(S + L)[:, None]
                j = np.arange(S + L)[None, :]
                return ((i < S) & (j < S)) | ((i >= S) & (j >= S) & (j <= i))
        """,
    },
    "ch12.remove_source_tokens": {
        "renormalised over every token": """
            def remove_source_tokens(weights, v, keep):
                w = weights * keep[:, None, :]
                w = w / weights.sum(-1, keepdims=True)
                return w @ v, w
        """,
        "nan for an empty row": """
            def remove_source_tokens(weights, v, keep):
                w = weights * keep[:, None, :]
                with np.errstate(invalid="ignore"):
                    w = w / w.sum(-1, keepdims=True)
                return w @ v, w
        """,
    },
    "ch12.encoder_decoder_parameters": {
        "the heads counted in": """
            def encoder_decoder_parameters(d_model, d_ff, n_encoder, n_decoder):
                attn = 4 * d_model**2 * 2 + 4 * d_model
                mlp = 2 * d_model * d_ff + d_ff + d_model
                return n_encoder * (attn + mlp + 4 * d_model) + n_decoder * (2 * attn + mlp + 6 * d_model) + 4 * d_model
        """,
        "three matrices per attention": """
            def encoder_decoder_parameters(d_model, d_ff, n_encoder, n_decoder):
                attn = 3 * d_model**2 + 3 * d_model
                mlp = 2 * d_model * d_ff + d_ff + d_model
                return n_encoder * (attn + mlp + 4 * d_model) + n_decoder * (2 * attn + mlp + 6 * d_model) + 4 * d_model
        """,
    },
    "ch12.packed_cross_mask": {
        "a block diagonal of the source lengths only": """
            def packed_cross_mask(src_lengths, tgt_lengths):
                s = np.repeat(np.arange(len(src_lengths)), src_lengths)
                return s[:, None] == s[None, :]
        """,
        "example labels off by one": """
            def packed_cross_mask(src_lengths, tgt_lengths):
                s = np.repeat(np.arange(len(src_lengths)), src_lengths)
                t = np.repeat(np.arange(len(tgt_lengths)), tgt_lengths)
                return t[:, None] <= s[None, :]
        """,
    },
}
