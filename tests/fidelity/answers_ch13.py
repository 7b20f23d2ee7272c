"""Chapter 13 (beyond softmax): answers in students' styles, correct and wrong."""

CORRECT = {
    "ch13.recover_decays": {
        "einsum loop": """
            def recover_decays(q, k, v, out):
                S = np.einsum("...e,...f->...ef", k[..., 0, :], v[..., 0, :])
                found = []
                for t in range(1, q.shape[-2]):
                    read = np.einsum("...e,...ef->...f", q[..., t, :], S)
                    rest = out[..., t, :] - np.einsum("...e,...e->...", q[..., t, :], k[..., t, :])[..., None] * v[..., t, :]
                    a = np.einsum("...f,...f->...", rest, read) / np.einsum("...f,...f->...", read, read)
                    found.append(a)
                    S = a[..., None, None] * S + np.einsum("...e,...f->...ef", k[..., t, :], v[..., t, :])
                return np.stack(found, -1)
        """,
        "torch, float32": """
            def recover_decays(q, k, v, out):
                q, k, v, out = (torch.as_tensor(x, dtype=torch.float32) for x in (q, k, v, out))
                S = k[..., 0, :, None] * v[..., 0, None, :]
                found = []
                for t in range(1, q.shape[-2]):
                    read = (q[..., t, None, :] @ S)[..., 0, :]
                    rest = out[..., t, :] - (q[..., t, :] * k[..., t, :]).sum(-1, keepdim=True) * v[..., t, :]
                    a = (rest * read).sum(-1) / (read * read).sum(-1)
                    found.append(a)
                    S = a[..., None, None] * S + k[..., t, :, None] * v[..., t, None, :]
                return torch.stack(found, -1).numpy()
        """,
        "the reading as a sum over earlier keys, decay products kept": """
            def recover_decays(q, k, v, out):
                L = q.shape[-2]
                sims = q @ np.swapaxes(k, -1, -2)  # (..., L, L)
                found = []
                for t in range(1, L):
                    read = np.zeros(v.shape[:-2] + v.shape[-1:])
                    for j in range(t):  # key j reaches token t - 1's state times decay_(j+1) ... decay_(t-1)
                        w = np.ones(q.shape[:-2])
                        for i in range(j + 1, t):
                            w = w * found[i - 1]
                        read = read + (w * sims[..., t, j])[..., None] * v[..., j, :]
                    rest = out[..., t, :] - sims[..., t, t, None] * v[..., t, :]
                    found.append((rest * read).sum(-1) / (read * read).sum(-1))
                return np.stack(found, -1)
        """,
    },
    "ch13.chunked_delta_rule": {
        "forward substitution in each chunk": """
            def chunked_delta_rule(q, k, v, beta, chunk_size):
                L, E = q.shape[-2:]
                S = np.zeros(q.shape[:-2] + (E, v.shape[-1]))
                outs = []
                for s in range(0, L, chunk_size):
                    qc, kc, vc = q[..., s:s + chunk_size, :], k[..., s:s + chunk_size, :], v[..., s:s + chunk_size, :]
                    bc = beta[..., s:s + chunk_size]
                    KK = kc @ np.swapaxes(kc, -1, -2)
                    rhs = bc[..., None] * (vc - kc @ S)
                    U = np.zeros_like(rhs)
                    for i in range(rhs.shape[-2]):  # rows of derived arrays
                        U[..., i, :] = rhs[..., i, :] - bc[..., i, None] * np.einsum("...j,...jf->...f", KK[..., i, :i], U[..., :i, :])
                    outs.append(qc @ S + np.tril(qc @ np.swapaxes(kc, -1, -2)) @ U)
                    S = S + np.swapaxes(kc, -1, -2) @ U
                return np.concatenate(outs, axis=-2) / np.sqrt(E)
        """,
        "the inverse with einsum, float32": """
            def chunked_delta_rule(q, k, v, beta, chunk_size):
                q, k, v, beta = (np.asarray(x, dtype=np.float32) for x in (q, k, v, beta))
                E = q.shape[-1]
                S = np.zeros(q.shape[:-2] + (E, v.shape[-1]), dtype=np.float32)
                outs = []
                for s in range(0, q.shape[-2], chunk_size):
                    qc, kc, vc, bc = (x[..., s:s + chunk_size, :] for x in (q, k, v, beta[..., None]))
                    C = qc.shape[-2]
                    T = np.linalg.inv(np.eye(C, dtype=np.float32) + np.tril(bc * np.einsum("...ie,...je->...ij", kc, kc), -1))
                    U = np.einsum("...ij,...jf->...if", T, bc * (vc - np.einsum("...ie,...ef->...if", kc, S)))
                    inside = np.tril(np.einsum("...ie,...je->...ij", qc, kc))
                    outs.append(np.einsum("...ie,...ef->...if", qc, S) + inside @ U)
                    S = S + np.einsum("...ie,...if->...ef", kc, U)
                return np.concatenate(outs, axis=-2) / np.float32(np.sqrt(E))  # stays float32
        """,
        "torch with a triangular solve, helper in an added cell": [
            """
            def _chunk(qc, kc, vc, bc, S):
                C = qc.shape[-2]
                A = torch.eye(C, dtype=qc.dtype) + torch.tril(bc * (kc @ kc.transpose(-1, -2)), -1)
                U = torch.linalg.solve_triangular(A, bc * (vc - kc @ S), upper=False, unitriangular=True)
                return qc @ S + torch.tril(qc @ kc.transpose(-1, -2)) @ U, S + kc.transpose(-1, -2) @ U
            """,
            """
            def chunked_delta_rule(q, k, v, beta, chunk_size):
                q, k, v, beta = (torch.as_tensor(np.asarray(x)) for x in (q, k, v, beta))
                S = torch.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]), dtype=q.dtype)
                outs = []
                for s in range(0, q.shape[-2], chunk_size):
                    sl = slice(s, s + chunk_size)
                    out, S = _chunk(q[..., sl, :], k[..., sl, :], v[..., sl, :], beta[..., sl, None], S)
                    outs.append(out)
                return (torch.cat(outs, dim=-2) / q.shape[-1] ** 0.5).numpy()
            """,
        ],
    },
    "ch13.recover_delta_values": {
        "einsum loop": """
            def recover_values(q, k, beta, out):
                E = q.shape[-1]
                S = np.zeros(q.shape[:-2] + (E, out.shape[-1]))
                vs = []
                for t in range(q.shape[-2]):
                    qk = np.einsum("...e,...e->...", q[..., t, :], k[..., t, :])[..., None]
                    u = (np.sqrt(E) * out[..., t, :] - np.einsum("...e,...ef->...f", q[..., t, :], S)) / qk
                    vs.append(np.einsum("...e,...ef->...f", k[..., t, :], S) + u / beta[..., t, None])
                    S = S + np.einsum("...e,...f->...ef", k[..., t, :], u)
                return np.stack(vs, -2)
        """,
        "torch, float32": """
            def recover_values(q, k, beta, out):
                q, k, beta, out = (torch.as_tensor(x, dtype=torch.float32) for x in (q, k, beta, out))
                E = q.shape[-1]
                S = torch.zeros(q.shape[:-2] + (E, out.shape[-1]))
                vs = []
                for t in range(q.shape[-2]):
                    qt, kt = q[..., t : t + 1, :], k[..., t : t + 1, :]  # (..., 1, E)
                    u = (out[..., t : t + 1, :] * E**0.5 - qt @ S) / (qt * kt).sum(-1, keepdim=True)
                    vs.append(kt @ S + u / beta[..., t, None, None])
                    S = S + kt.transpose(-1, -2) @ u
                return torch.cat(vs, -2).numpy()
        """,
        "the forward rule re-run on the values found so far, helper in an added cell": [
            """
            def _delta_state(k, v, beta):
                S = np.zeros(k.shape[:-2] + (k.shape[-1], v.shape[-1]))
                for t in range(k.shape[-2]):
                    u = beta[..., t, None] * (v[..., t, :] - np.einsum("...e,...ef->...f", k[..., t, :], S))
                    S = S + k[..., t, :, None] * u[..., None, :]
                return S
            """,
            """
            def recover_values(q, k, beta, out):
                E, Ev = q.shape[-1], out.shape[-1]
                v = np.zeros(q.shape[:-1] + (Ev,))
                for t in range(q.shape[-2]):
                    S = _delta_state(k[..., :t, :], v[..., :t, :], beta[..., :t])  # S_(t-1)
                    held = np.einsum("...e,...ef->...f", k[..., t, :], S)
                    read = np.einsum("...e,...ef->...f", q[..., t, :], S)
                    qk = np.sum(q[..., t, :] * k[..., t, :], -1)[..., None]
                    # sqrt(E) o_t = read + qk * beta_t * (v_t - held)
                    v[..., t, :] = held + (np.sqrt(E) * out[..., t, :] - read) / (qk * beta[..., t, None])
                return v
            """,
        ],
    },
    "ch13.predict_hybrid_mib": {
        "an expression with the chapter's numpy": """
            def predict_hybrid_mib():
                return (np.prod([8, 2, 4, 128, 2, 4096]) + np.prod([24, 16, 128, 128, 2])) / 2**20
        """,
        "the literal": """
            def predict_hybrid_mib():
                return 76
        """,
        "torch float32": """
            def predict_hybrid_mib():
                per_token = torch.tensor(8 * 2 * 4 * 128 * 2, dtype=torch.float32)
                return float(per_token * 4096 / 2**20 + 24 * 16 * 128 * 128 * 2 / 2**20)
        """,
        "helper in an added cell": [
            """
            def _mib(n_bytes):
                return n_bytes / 1024**2
            """,
            """
            def predict_hybrid_mib():
                return _mib(32 // 4 * 2 * 4 * 128 * 2 * 4096) + _mib(24 * 16 * 128 * 128 * 2)
            """,
        ],
    },
    "ch13.indexed_sparse_attention": {
        "the fix, with a large negative for the later keys": """
            def indexed_sparse_attention(q, k, v, iq, ik, iw, top_k):
                L = q.shape[-2]
                dots = np.einsum("...thd,...sd->...ths", iq, ik)
                index = np.einsum("...th,...ths->...ts", iw, np.maximum(dots, 0.0))
                causal = np.tril(np.ones((L, L), dtype=bool))
                ranked = np.where(causal, index, -1e30)
                order = np.argsort(-ranked, axis=-1, kind="stable")[..., :top_k]
                kept = np.zeros(index.shape, dtype=bool)
                np.put_along_axis(kept, order, True, axis=-1)
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                scores = np.where((kept & causal)[..., None, :, :], scores, -np.inf)
                return softmax(scores) @ v
        """,
        "torch topk, float32": """
            def indexed_sparse_attention(q, k, v, iq, ik, iw, top_k):
                q, k, v, iq, ik, iw = (torch.as_tensor(x, dtype=torch.float32) for x in (q, k, v, iq, ik, iw))
                L = q.shape[-2]
                index = (iw.unsqueeze(-1) * torch.relu(iq @ ik.unsqueeze(-3).transpose(-1, -2))).sum(-2)
                causal = torch.ones(L, L, dtype=torch.bool).tril()
                index = index.masked_fill(~causal, float("-inf"))
                idx = index.topk(min(top_k, L), dim=-1).indices
                kept = torch.zeros_like(index, dtype=torch.bool).scatter(-1, idx, True) & causal
                s = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
                w = torch.softmax(s.masked_fill(~kept.unsqueeze(-3), float("-inf")), dim=-1)
                return (w @ v).numpy()
        """,
        "loops over queries and keys, helper in an added cell": [
            """
            def _index_score(iq_t, iw_t, ik_s):
                return sum(w * max(float(a @ ik_s), 0.0) for w, a in zip(iw_t, iq_t))
            """,
            """
            def indexed_sparse_attention(q, k, v, iq, ik, iw, top_k):
                L, E = q.shape[-2], q.shape[-1]
                out = np.zeros(q.shape[:-1] + (v.shape[-1],))
                for b in np.ndindex(*q.shape[:-3]):
                    for t in range(L):
                        s_t = [_index_score(iq[b][t], iw[b][t], ik[b][s]) for s in range(t + 1)]
                        keep = sorted(range(t + 1), key=lambda s: (-s_t[s], s))[:top_k]
                        for h in range(q.shape[-3]):
                            sc = np.array([q[b][h, t] @ k[b][h, s] for s in keep]) / np.sqrt(E)
                            w = np.exp(sc - sc.max())
                            out[b][h, t] = (w / w.sum()) @ v[b][h, keep]
                return out
            """,
        ],
    },
    "ch13.chunked_linear_attention": {
        "the recurrence, token by token": """
            def chunked_linear_attention(q, k, v, chunk_size):
                phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))
                fq, fk = phi(q), phi(k)
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                z = np.zeros(q.shape[:-2] + (q.shape[-1],))
                outs = []
                for t in range(q.shape[-2]):
                    S = S + fk[..., t, :, None] * v[..., t, None, :]
                    z = z + fk[..., t, :]
                    num = np.einsum("...e,...ef->...f", fq[..., t, :], S)
                    outs.append(num / np.sum(fq[..., t, :] * z, -1)[..., None])
                return np.stack(outs, axis=-2)
        """,
        "torch cumulative sums in float32": """
            def chunked_linear_attention(q, k, v, chunk_size):
                q, k, v = (torch.as_tensor(x, dtype=torch.float32) for x in (q, k, v))
                fq, fk = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
                S = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)
                z = torch.cumsum(fk, dim=-2)
                num = (fq.unsqueeze(-2) @ S).squeeze(-2)
                return (num / (fq * z).sum(-1, keepdim=True)).numpy()
        """,
        "the masked quadratic form with einsum": """
            def chunked_linear_attention(q, k, v, chunk_size):
                phi = lambda x: np.maximum(x, 0) + np.exp(np.minimum(x, 0))
                sims = np.einsum("...ie,...je->...ij", phi(q), phi(k)) * np.tri(q.shape[-2])
                return np.einsum("...ij,...jf->...if", sims / sims.sum(-1, keepdims=True), v)
        """,
        "chunks with a helper in an added cell": [
            """
            def _lin_chunk(fqc, fkc, vc, S, z):
                w = np.tril(fqc @ np.swapaxes(fkc, -1, -2))
                num = fqc @ S + w @ vc
                den = (fqc @ z[..., None])[..., 0] + w.sum(-1)
                return num / den[..., None], S + np.swapaxes(fkc, -1, -2) @ vc, z + fkc.sum(-2)
            """,
            """
            def chunked_linear_attention(q, k, v, chunk_size):
                fq = np.where(q > 0, q + 1, np.exp(np.minimum(q, 0)))
                fk = np.where(k > 0, k + 1, np.exp(np.minimum(k, 0)))
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                z = np.zeros(q.shape[:-2] + (q.shape[-1],))
                outs = []
                for s in range(0, q.shape[-2], chunk_size):
                    sl = slice(s, s + chunk_size)
                    out, S, z = _lin_chunk(fq[..., sl, :], fk[..., sl, :], v[..., sl, :], S, z)
                    outs.append(out)
                return np.concatenate(outs, axis=-2)
            """,
        ],
    },
}

WRONG = {
    "ch13.recover_decays": {
        "own write left in": """
            def recover_decays(q, k, v, out):
                S = k[..., 0, :, None] * v[..., 0, None, :]
                found = []
                for t in range(1, q.shape[-2]):
                    read = np.einsum("...e,...ef->...f", q[..., t, :], S)
                    a = np.sum(out[..., t, :] * read, -1) / np.sum(read * read, -1)
                    found.append(a)
                    S = a[..., None, None] * S + k[..., t, :, None] * v[..., t, None, :]
                return np.stack(found, -1)
        """,
        "state rebuilt without the decays": """
            def recover_decays(q, k, v, out):
                S = k[..., 0, :, None] * v[..., 0, None, :]
                found = []
                for t in range(1, q.shape[-2]):
                    read = np.einsum("...e,...ef->...f", q[..., t, :], S)
                    rest = out[..., t, :] - np.sum(q[..., t, :] * k[..., t, :], -1)[..., None] * v[..., t, :]
                    found.append(np.sum(rest * read, -1) / np.sum(read * read, -1))
                    S = S + k[..., t, :, None] * v[..., t, None, :]
                return np.stack(found, -1)
        """,
        "ratio of successive output norms": """
            def recover_decays(q, k, v, out):
                n = np.linalg.norm(out, axis=-1)
                return n[..., 1:] / n[..., :-1]
        """,
    },
    "ch13.chunked_delta_rule": {
        "token by token over a copy of each chunk (the method rule)": """
            def chunked_delta_rule(q, k, v, beta, chunk_size):
                L, E = q.shape[-2:]
                S = np.zeros(q.shape[:-2] + (E, v.shape[-1]))
                outs = []
                for s in range(0, L, chunk_size):
                    qc, kc, vc = (x[..., s : s + chunk_size, :].copy() for x in (q, k, v))
                    for t in range(qc.shape[-2]):
                        kt, vt = kc[..., t : t + 1, :], vc[..., t : t + 1, :]
                        u = beta[..., s + t, None, None] * (vt - kt @ S)
                        S = S + np.swapaxes(kt, -1, -2) @ u
                        outs.append(qc[..., t : t + 1, :] @ S)
                return np.concatenate(outs, axis=-2) / np.sqrt(E)
        """,
        "token by token (the method rule)": """
            def chunked_delta_rule(q, k, v, beta, chunk_size):
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                outs = []
                for t in range(q.shape[-2]):
                    k_t, v_t = k[..., t:t + 1, :], v[..., t:t + 1, :]
                    S = S + np.swapaxes(k_t, -1, -2) @ (beta[..., t, None, None] * (v_t - k_t @ S))
                    outs.append(q[..., t:t + 1, :] @ S)
                return np.concatenate(outs, axis=-2) / np.sqrt(q.shape[-1])
        """,
        "corrections of a chunk independent": """
            def chunked_delta_rule(q, k, v, beta, chunk_size):
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                outs = []
                for s in range(0, q.shape[-2], chunk_size):
                    qc, kc, vc = q[..., s:s + chunk_size, :], k[..., s:s + chunk_size, :], v[..., s:s + chunk_size, :]
                    U = beta[..., s:s + chunk_size, None] * (vc - kc @ S)
                    outs.append(qc @ S + np.tril(qc @ np.swapaxes(kc, -1, -2)) @ U)
                    S = S + np.swapaxes(kc, -1, -2) @ U
                return np.concatenate(outs, axis=-2) / np.sqrt(q.shape[-1])
        """,
        "chunked linear attention with beta": """
            def chunked_delta_rule(q, k, v, beta, chunk_size):
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                outs = []
                for s in range(0, q.shape[-2], chunk_size):
                    qc, kc, vc = q[..., s:s + chunk_size, :], k[..., s:s + chunk_size, :], v[..., s:s + chunk_size, :]
                    U = beta[..., s:s + chunk_size, None] * vc
                    outs.append(qc @ S + np.tril(qc @ np.swapaxes(kc, -1, -2)) @ U)
                    S = S + np.swapaxes(kc, -1, -2) @ U
                return np.concatenate(outs, axis=-2) / np.sqrt(q.shape[-1])
        """,
    },
    "ch13.recover_delta_values": {
        "the scale forgotten": """
            def recover_values(q, k, beta, out):
                S = np.zeros(q.shape[:-2] + (q.shape[-1], out.shape[-1]))
                vs = []
                for t in range(q.shape[-2]):
                    qk = np.sum(q[..., t, :] * k[..., t, :], -1)[..., None]
                    u = (out[..., t, :] - np.einsum("...e,...ef->...f", q[..., t, :], S)) / qk
                    vs.append(np.einsum("...e,...ef->...f", k[..., t, :], S) + u / beta[..., t, None])
                    S = S + k[..., t, :, None] * u[..., None, :]
                return np.stack(vs, -2)
        """,
        "the correction divided by beta, taken for the value": """
            def recover_values(q, k, beta, out):
                E = q.shape[-1]
                S = np.zeros(q.shape[:-2] + (E, out.shape[-1]))
                vs = []
                for t in range(q.shape[-2]):
                    qk = np.sum(q[..., t, :] * k[..., t, :], -1)[..., None]
                    u = (np.sqrt(E) * out[..., t, :] - np.einsum("...e,...ef->...f", q[..., t, :], S)) / qk
                    vs.append(u / beta[..., t, None])
                    S = S + k[..., t, :, None] * u[..., None, :]
                return np.stack(vs, -2)
        """,
        "the state rebuilt as linear attention's": """
            def recover_values(q, k, beta, out):
                E = q.shape[-1]
                S = np.zeros(q.shape[:-2] + (E, out.shape[-1]))
                vs = []
                for t in range(q.shape[-2]):
                    qk = np.sum(q[..., t, :] * k[..., t, :], -1)[..., None]
                    u = (np.sqrt(E) * out[..., t, :] - np.einsum("...e,...ef->...f", q[..., t, :], S)) / qk
                    v_t = np.einsum("...e,...ef->...f", k[..., t, :], S) + u / beta[..., t, None]
                    vs.append(v_t)
                    S = S + k[..., t, :, None] * (beta[..., t, None] * v_t)[..., None, :]
                return np.stack(vs, -2)
        """,
        "outputs read as linear attention's": """
            def recover_values(q, k, beta, out):
                E = q.shape[-1]
                S = np.zeros(q.shape[:-2] + (E, out.shape[-1]))
                vs = []
                for t in range(q.shape[-2]):
                    qk = np.sum(q[..., t, :] * k[..., t, :], -1)[..., None]
                    v_t = (np.sqrt(E) * out[..., t, :] - np.einsum("...e,...ef->...f", q[..., t, :], S)) / qk
                    vs.append(v_t)
                    S = S + k[..., t, :, None] * v_t[..., None, :]
                return np.stack(vs, -2)
        """,
    },
    "ch13.predict_hybrid_mib": {
        "cache of every layer": """
            def predict_hybrid_mib():
                return 32 * 2 * 4 * 128 * 2 * 4096 / 2**20
        """,
        "states forgotten": """
            def predict_hybrid_mib():
                return 8 * 2 * 4 * 128 * 2 * 4096 / 2**20
        """,
        "MB, not MiB": """
            def predict_hybrid_mib():
                return (8 * 2 * 4 * 128 * 2 * 4096 + 24 * 16 * 128 * 128 * 2) / 1e6
        """,
    },
    "ch13.indexed_sparse_attention": {
        "the ReLU after the weighted sum": """
            def indexed_sparse_attention(q, k, v, iq, ik, iw, top_k):
                L = q.shape[-2]
                index = np.maximum(np.einsum("...th,...thd,...sd->...ts", iw, iq, ik), 0.0)
                causal = np.tril(np.ones((L, L), dtype=bool))
                order = np.argsort(-np.where(causal, index, -np.inf), axis=-1, kind="stable")[..., :top_k]
                kept = np.zeros(index.shape, dtype=bool)
                np.put_along_axis(kept, order, True, axis=-1)
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                return softmax(np.where((kept & causal)[..., None, :, :], scores, -np.inf)) @ v
        """,
        "keys ranked by each head's own scores": """
            def indexed_sparse_attention(q, k, v, iq, ik, iw, top_k):
                L = q.shape[-2]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                causal = np.tril(np.ones((L, L), dtype=bool))
                order = np.argsort(-np.where(causal, scores, -np.inf), axis=-1, kind="stable")[..., :top_k]
                kept = np.zeros(scores.shape, dtype=bool)
                np.put_along_axis(kept, order, True, axis=-1)
                return softmax(np.where(kept & causal, scores, -np.inf)) @ v
        """,
        "every earlier key (dense causal)": """
            def indexed_sparse_attention(q, k, v, iq, ik, iw, top_k):
                L = q.shape[-2]
                scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
                return softmax(np.where(np.tril(np.ones((L, L), dtype=bool)), scores, -np.inf)) @ v
        """,
    },
    "ch13.chunked_linear_attention": {
        "denominator from the state only": """
            def chunked_linear_attention(q, k, v, chunk_size):
                fq, fk = (np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0))) for x in (q, k))
                S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))
                z = np.zeros(q.shape[:-2] + (q.shape[-1],))
                outs = []
                for s in range(0, q.shape[-2], chunk_size):
                    qc, kc, vc = fq[..., s : s + chunk_size, :], fk[..., s : s + chunk_size, :], v[..., s : s + chunk_size, :]
                    sims = np.tril(qc @ np.swapaxes(kc, -1, -2))
                    num = qc @ S + sims @ vc
                    den = np.einsum("...ce,...e->...c", qc, z) + 1e-9
                    S = S + np.swapaxes(kc, -1, -2) @ vc
                    z = z + kc.sum(-2)
                    outs.append(num / den[..., None])
                return np.concatenate(outs, axis=-2)
        """,
        "the identity feature map": """
            def chunked_linear_attention(q, k, v, chunk_size):
                sims = np.tril(q @ np.swapaxes(k, -1, -2))
                return (sims / sims.sum(-1, keepdims=True)) @ v
        """,
        "not normalised": """
            def chunked_linear_attention(q, k, v, chunk_size):
                phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))
                return np.tril(phi(q) @ np.swapaxes(phi(k), -1, -2)) @ v
        """,
        "every key but its own": """
            def chunked_linear_attention(q, k, v, chunk_size):
                phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))
                sims = np.tril(phi(q) @ np.swapaxes(phi(k), -1, -2), -1) + np.eye(q.shape[-2]) * 1e-9
                return (sims / sims.sum(-1, keepdims=True)) @ v
        """,
    },
}
