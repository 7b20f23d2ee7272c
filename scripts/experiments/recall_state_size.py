"""Chapter 13: associative recall against the state size, for softmax, linear and (gated) DeltaNet.

A sequence stores ``n`` pairs ``key value`` (distinct keys) and then asks for ``N_QUERIES`` of the
stored keys; the model must answer each with its value.  Every model is one mixing layer over
token embeddings with a token shift (each position also sees the previous token, so the value
position can write ``key -> value``), single head of width ``E`` (the state is ``E x E``), and a
linear readout.  The mixing layer is softmax attention, linear attention (``elu + 1``), DeltaNet
(unit-length ``q, k``, ``beta = sigmoid``, an RMSNorm on the output) or Gated DeltaNet (the same with a decay
``alpha = sigmoid``), all from ``attncourse``.  Each is trained the same way (same data, steps,
optimiser), ``n`` drawn per batch from 1..N_MAX, and evaluated at each ``n``; three seeds.

Then hybrids: four-layer stacks (pre-norm residual blocks, an MLP each; heads of width 4) of all
softmax, all DeltaNet, and three DeltaNet + one softmax (the last), on the same task; and the all-softmax stack's accuracy when each query keeps only its top-k keys, picked
by the exact scores or by a cheap rank-r indexer (the model's own ``W_q^T W_k`` cut to rank r).

    OMP_NUM_THREADS=1 python scripts/experiments/recall_state_size.py --part recall  # attncourse/data/recall_state_size.json
    OMP_NUM_THREADS=1 python scripts/experiments/recall_state_size.py --part hybrid  # attncourse/data/recall_hybrid.json
    OMP_NUM_THREADS=1 python scripts/experiments/recall_state_size.py --quick  # a reduced run (the test)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import pathlib
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from attncourse import elu_feature_map, linear_attention, topk_attention  # noqa: E402

N_KEYS, N_VALUES, N_QUERIES = 64, 64, 8
VOCAB = N_KEYS + N_VALUES
METHODS = ("softmax", "linear", "delta", "gated")
FILES = {"recall": "recall_state_size.json", "hybrid": "recall_hybrid.json"}


def chunked_delta_rule(q, k, v, beta, decay=None, chunk: int = 16):
    """``attncourse.delta_rule`` (outputs only), a chunk of positions at a time: a training fast path.

    Inside a chunk with starting state ``S0`` and cumulative decay ``g_t``, the corrections solve a
    unit lower-triangular system, ``(I + diag(beta) (tril(K K^T, -1) * G)) U = diag(beta) (V - g K S0)``
    with ``G[t, j] = g_t / g_j``; then ``O = scale (g Q S0 + (tril(Q K^T) * G) U)`` and
    ``S = g_C S0 + K^T ((g_C / g) U)``.  L / chunk steps of a Python loop instead of L.
    """
    B, L, E = q.shape
    scale = E**-0.5
    log_a = torch.zeros_like(beta) if decay is None else torch.log(decay)  # (B, L)
    state = q.new_zeros(B, E, v.shape[-1])
    strict = torch.ones(chunk, chunk, dtype=torch.bool).tril(-1)
    outs = []
    for c0 in range(0, L, chunk):
        qc, kc, vc, bc = (
            q[:, c0 : c0 + chunk],
            k[:, c0 : c0 + chunk],
            v[:, c0 : c0 + chunk],
            beta[:, c0 : c0 + chunk],
        )
        C = qc.shape[1]
        lg = log_a[:, c0 : c0 + chunk].cumsum(-1)  # (B, C): log g_t
        gamma = torch.exp((lg[:, :, None] - lg[:, None, :]).tril())  # (B, C, C): g_t / g_j on and below
        low, incl = strict[:C, :C], strict[:C, :C] | torch.eye(C, dtype=torch.bool)
        a = torch.eye(C) + bc[:, :, None] * torch.where(low, kc @ kc.transpose(-1, -2) * gamma, 0.0)
        rhs = bc[:, :, None] * (vc - lg.exp()[:, :, None] * (kc @ state))  # (B, C, Ev)
        u = torch.linalg.solve_triangular(a, rhs, upper=False, unitriangular=True)  # (B, C, Ev)
        qk = torch.where(incl, qc @ kc.transpose(-1, -2) * gamma, 0.0)  # (B, C, C)
        outs.append(scale * (lg.exp()[:, :, None] * (qc @ state) + qk @ u))
        g_end = lg[:, -1:]  # (B, 1)
        state = g_end.exp()[:, :, None] * state + kc.transpose(-1, -2) @ (
            torch.exp(g_end - lg)[:, :, None] * u
        )
    return torch.cat(outs, dim=1), state


def recall_batch(batch: int, n_pairs: int, rng: np.random.Generator):
    """``tokens (B, 2n + N_QUERIES)`` and ``targets (B, N_QUERIES)``: pairs, then stored keys asked."""
    keys = np.stack([rng.choice(N_KEYS, n_pairs, replace=False) for _ in range(batch)])  # (B, n)
    values = N_KEYS + rng.integers(0, N_VALUES, (batch, n_pairs))  # (B, n)
    pairs = np.stack([keys, values], axis=-1).reshape(batch, 2 * n_pairs)  # k1 v1 k2 v2 ...
    asked = rng.integers(0, n_pairs, (batch, N_QUERIES))  # which stored pair each query asks for
    queries = np.take_along_axis(keys, asked, axis=1)
    targets = np.take_along_axis(values, asked, axis=1)
    tokens = np.concatenate([pairs, queries], axis=1)
    return torch.from_numpy(tokens), torch.from_numpy(targets)


class Mixer(nn.Module):
    """One head of width E: softmax, linear, delta or gated mixing of the positions."""

    def __init__(self, d_model: int, E: int, method: str):
        super().__init__()
        self.method, self.E = method, E
        self.qkv = nn.Linear(d_model, 3 * E, bias=False)
        self.gates = nn.Linear(d_model, 2)  # beta and alpha (used by delta / gated)
        self.out = nn.Linear(E, d_model, bias=False)
        # (Gated) DeltaNet normalises each head's output (an RMSNorm), as Yang et al. do
        self.out_norm = nn.RMSNorm(E) if method in ("delta", "gated") else nn.Identity()

    def forward(self, h, top_k=None, index_rank=None):
        q, k, v = self.qkv(h).split(self.E, dim=-1)  # (B, L, d_model) -> 3 x (B, L, E)
        if self.method == "softmax":
            if top_k is None:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                scores = None if index_rank is None else self.index_scores(h, index_rank)
                out, _ = topk_attention(q, k, v, top_k, index_scores=scores, is_causal=True)
        elif self.method == "linear":
            out = linear_attention(q, k, v, feature_map=elu_feature_map)
        else:
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
            gate = self.gates(h)  # (B, L, 2)
            beta = torch.sigmoid(gate[..., 0])
            decay = torch.sigmoid(gate[..., 1] + 3.0) if self.method == "gated" else None  # starts near 0.95
            out, _ = chunked_delta_rule(q, k, v, beta, decay)
        return self.out(self.out_norm(out))

    def index_scores(self, h, rank):
        """A cheap indexer: ``h W_q^T W_k h^T`` with the bilinear form cut to its top ``rank`` directions."""
        w_q, w_k = self.qkv.weight[: self.E], self.qkv.weight[self.E : 2 * self.E]  # (E, d_model) each
        u, s, vt = torch.linalg.svd(w_q.T @ w_k)  # (d_model, d_model) = W_q^T W_k
        a = h @ (u[:, :rank] * s[:rank])  # (B, L, rank)
        b = h @ vt[:rank].T  # (B, L, rank)
        return a @ b.transpose(-1, -2)  # (B, L, L): rank * L * L multiply-adds, not E * L * L


class RecallModel(nn.Module):
    """Token + previous-token embedding, ``len(methods)`` pre-norm blocks, a linear readout."""

    def __init__(self, methods, E: int, d_model: int = 64, mlp: bool = False):
        super().__init__()
        self.emb, self.prev = nn.Embedding(VOCAB, d_model), nn.Embedding(VOCAB + 1, d_model)
        self.mixers = nn.ModuleList(Mixer(d_model, E, m) for m in methods)
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in methods)
        self.mlps = nn.ModuleList(
            nn.Sequential(
                nn.LayerNorm(d_model),
                nn.Linear(d_model, 2 * d_model),
                nn.GELU(),
                nn.Linear(2 * d_model, d_model),
            )
            if mlp
            else nn.Identity()
            for _ in methods
        )
        self.mlp = mlp
        self.head = nn.Linear(d_model, VOCAB)

    def forward(self, tokens, top_k=None, index_rank=None):
        shifted = F.pad(tokens, (1, 0), value=VOCAB)[:, :-1]  # (B, L): the token before, VOCAB at 0
        h = self.emb(tokens) + self.prev(shifted)  # (B, L, d_model)
        for mix, norm, mlp in zip(self.mixers, self.norms, self.mlps):
            h = h + mix(norm(h), top_k, index_rank)
            if self.mlp:
                h = h + mlp(h)
        return self.head(h)  # (B, L, VOCAB)


def query_logits(model, tokens, **kw):
    return model(tokens, **kw)[:, -N_QUERIES:]  # (B, N_QUERIES, VOCAB): the answers


def train(model, n_max: int, steps: int, seed: int, batch: int = 32, lr: float = 1e-2):
    rng = np.random.default_rng(100 + seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50) * (1 - s / steps))
    for _ in range(steps):
        tokens, targets = recall_batch(batch, int(rng.integers(1, n_max + 1)), rng)
        loss = F.cross_entropy(query_logits(model, tokens).flatten(0, 1), targets.flatten())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
    return model


@torch.no_grad()
def accuracy(model, n_pairs: int, n_eval: int, **kw) -> float:
    tokens, targets = recall_batch(n_eval, n_pairs, np.random.default_rng(7 + n_pairs))
    return (query_logits(model.eval(), tokens, **kw).argmax(-1) == targets).float().mean().item()


STACKS = {
    "all softmax": ["softmax"] * 4,
    "all DeltaNet": ["delta"] * 4,
    "3 DeltaNet + 1 softmax": ["delta", "delta", "delta", "softmax"],
}


def settings(quick: bool) -> dict:
    if quick:
        return dict(
            sizes=[8],
            pairs=[2, 16],
            seeds=[0],
            steps=40,
            n_eval=64,
            hyb_E=4,
            hyb_steps=20,
            hyb_pairs=[8],
            ks=[2, 8],
            ranks=[2],
        )
    return dict(
        sizes=[4, 8, 16],
        pairs=[1, 2, 4, 8, 16],
        seeds=[0, 1, 2],
        steps=500,
        n_eval=512,
        hyb_E=4,
        hyb_steps=500,
        hyb_pairs=[2, 4, 8, 16],
        ks=[1, 2, 4, 8, 16],
        ranks=[1, 2, 4],
    )


def recall_task(args):
    """One single-layer model: accuracy at each number of pairs."""
    method, E, seed, cfg = args
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = train(RecallModel([method], E), max(cfg["pairs"]), cfg["steps"], seed)
    acc = [round(accuracy(model, n, cfg["n_eval"]), 4) for n in cfg["pairs"]]
    print(f"{method} E={E} seed {seed}: {acc}", file=sys.stderr, flush=True)
    return acc


def hybrid_task(args):
    """One four-layer stack; for the all-softmax stack also its top-k accuracy (exact and cheap indexer)."""
    name, seed, cfg = args
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = train(
        RecallModel(STACKS[name], cfg["hyb_E"], mlp=True), max(cfg["hyb_pairs"]), cfg["hyb_steps"], seed
    )
    acc = [round(accuracy(model, n, cfg["n_eval"]), 4) for n in cfg["hyb_pairs"]]
    print(f"{name} seed {seed}: {acc}", file=sys.stderr, flush=True)
    topk = None
    if name == "all softmax":
        top, n_eval = max(cfg["hyb_pairs"]), cfg["n_eval"]
        topk = {
            "dense": round(accuracy(model, top, n_eval), 4),
            "exact": [round(accuracy(model, top, n_eval, top_k=k), 4) for k in cfg["ks"]],
            "indexer": {
                str(r): [round(accuracy(model, top, n_eval, top_k=k, index_rank=r), 4) for k in cfg["ks"]]
                for r in cfg["ranks"]
            },
        }
    return acc, topk


def _map(fn, tasks, jobs):
    if jobs <= 1:
        return [fn(t) for t in tasks]
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        return pool.map(fn, tasks, chunksize=1)


def run_recall(quick: bool, jobs: int = 1) -> dict:
    """One-layer models: accuracy at each number of pairs, per method, state size and seed."""
    cfg = settings(quick)
    t0 = time.perf_counter()
    # the gate at one state size (the middle one): what it adds on the same task
    grid = [
        (m, E)
        for m in METHODS
        for E in (cfg["sizes"] if m != "gated" else cfg["sizes"][len(cfg["sizes"]) // 2 :][:1])
    ]
    results = _map(recall_task, [(m, E, s, cfg) for m, E in grid for s in cfg["seeds"]], jobs)
    out = {k: cfg[k] for k in ("steps", "seeds", "pairs", "n_eval")}
    out.update(state_sizes=cfg["sizes"], recall={m: {} for m in METHODS})
    for i, (m, E) in enumerate(grid):
        n = len(cfg["seeds"])
        out["recall"][m][str(E)] = results[i * n : (i + 1) * n]
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def run_hybrid(quick: bool, jobs: int = 1) -> dict:
    """Four-layer stacks at a state too small for the most pairs; the all-softmax stack's top-k."""
    cfg = settings(quick)
    t0 = time.perf_counter()
    tasks = [(name, s, cfg) for name in STACKS for s in cfg["seeds"]]
    results = _map(hybrid_task, tasks, jobs)
    out = {"seeds": cfg["seeds"], "n_eval": cfg["n_eval"], "E": cfg["hyb_E"], "steps": cfg["hyb_steps"]}
    out.update(pairs=cfg["hyb_pairs"], stacks={})
    for (name, _, _), (acc, _) in zip(tasks, results):
        out["stacks"].setdefault(name, {"layers": STACKS[name], "accuracy": []})["accuracy"].append(acc)
    top = max(cfg["hyb_pairs"])
    runs = [tk for (name, _, _), (_, tk) in zip(tasks, results) if name == "all softmax"]
    out["topk"] = {
        "n_pairs": top,
        "L": 2 * top + N_QUERIES,
        "ks": cfg["ks"],
        "ranks": cfg["ranks"],
        "dense": [tk["dense"] for tk in runs],
        "exact": [tk["exact"] for tk in runs],
        "indexer": {str(r): [tk["indexer"][str(r)] for tk in runs] for r in cfg["ranks"]},
    }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def run(quick: bool, jobs: int = 1) -> dict:
    return {"recall": run_recall(quick, jobs), "hybrid": run_hybrid(quick, jobs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run; prints, writes nothing")
    parser.add_argument("--jobs", type=int, default=1, help="processes, one thread each")
    parser.add_argument("--part", choices=["recall", "hybrid"], help="run one part (both by default)")
    parser.add_argument("--out", default=str(ROOT / "attncourse" / "data"), help="folder for the JSON files")
    args = parser.parse_args()
    if args.part:
        result = (run_recall if args.part == "recall" else run_hybrid)(args.quick, args.jobs)
        result = {args.part: result}
    else:
        result = run(args.quick, args.jobs)
    if args.quick:
        print(json.dumps(result, indent=1))
        return
    for part, value in result.items():
        path = pathlib.Path(args.out) / FILES[part]
        path.write_text(json.dumps(value, indent=1) + "\n")
        print(f"wrote {path} in {value['seconds']} s")


if __name__ == "__main__":
    main()
