"""Chapter 13: associative recall against the state size, for softmax, linear and (gated) DeltaNet.

A sequence stores ``n`` pairs ``key value`` (distinct keys) and then asks for ``N_QUERIES`` of the
stored keys, each followed by its value (the multi-query associative recall format of Arora et al.,
2023); the model must predict the value at each asked key. With the asked keys back to back instead
(``answers=False``), a DeltaNet layer's write at an asked key can land on the pair asked just before
it; the script measures that layout too, with and without writes at the asked keys (beta held at 0
there). Every model is one mixing layer over token embeddings with a token shift (each position also
sees the previous token, so the value position can write ``key -> value``), single head of width
``E`` (the state is ``E x E``), and a linear readout. The mixing layer is softmax attention, linear
attention (``elu + 1``), DeltaNet (unit-length ``q, k``, ``beta = sigmoid``, an RMSNorm on the
output) or Gated DeltaNet (the same with a decay ``alpha = sigmoid``), all from ``attncourse``. Each
is trained the same way (same data, 3000 steps of 32 sequences, AdamW at 3e-3 with a short warm-up
and linear decay), ``n`` drawn per batch from 1..N_MAX, and evaluated at each ``n`` on 512 new
sequences; three seeds.

Then the gate: a stream of ``RECENT_STREAM`` pairs with every query asking for one of the last
``RECENT_ASKED``, where the older pairs only fill the state (linear, DeltaNet, Gated DeltaNet,
softmax).

Then hybrids: four-layer stacks (pre-norm residual blocks, an MLP each; heads of width 4) of all
softmax, all DeltaNet, and three DeltaNet + one softmax (the last), on the same task; and the
all-softmax stack's accuracy when each query keeps only its top-k keys, picked by the exact scores or
by a cheap rank-r indexer (the model's own ``W_q^T W_k`` cut to rank r); and the same three stacks on
chapter 8's repeated-segment task (``attncourse.toy_data.repeat_task``), scored where chapter 8 scores
it: the next token at every position ``t >= repeat_from`` (not the one just before the repeat, whose
next token, the first of the second copy, no model can know).

    OMP_NUM_THREADS=1 python scripts/experiments/recall_state_size.py --part recall  # attncourse/data/recall_state_size.json
    OMP_NUM_THREADS=1 python scripts/experiments/recall_state_size.py --part gate  # attncourse/data/recall_gate.json
    OMP_NUM_THREADS=1 python scripts/experiments/recall_state_size.py --part hybrid  # attncourse/data/recall_hybrid.json
    OMP_NUM_THREADS=1 python scripts/experiments/recall_state_size.py --part repeat  # its "repeat" entry only
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
from attncourse.toy_data import repeat_task  # noqa: E402

N_KEYS, N_VALUES, N_QUERIES = 64, 64, 8
VOCAB = N_KEYS + N_VALUES
METHODS = ("softmax", "linear", "delta", "gated")
RECENT_STREAM, RECENT_ASKED = 24, 4
BACK_TO_BACK = ("back to back", "back to back, no writes there")  # DeltaNet's layouts without answers
REPEAT_L, REPEAT_V = 32, 32  # chapter 8's task: sequences of 32 tokens of 32
FILES = {"recall": "recall_state_size.json", "gate": "recall_gate.json", "hybrid": "recall_hybrid.json"}


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


def recall_batch(batch: int, n_pairs: int, rng: np.random.Generator, answers: bool = True, recent: int = 0):
    """``tokens (B, L)`` and ``targets (B, N_QUERIES)``: ``n_pairs`` pairs, then stored keys asked.

    With ``answers`` each asked key is followed by its value (the model predicts it at the key);
    without, the asked keys come back to back.  ``recent > 0`` asks only for the last ``recent`` pairs.
    """
    keys = np.stack([rng.choice(N_KEYS, n_pairs, replace=False) for _ in range(batch)])  # (B, n)
    values = N_KEYS + rng.integers(0, N_VALUES, (batch, n_pairs))  # (B, n)
    pairs = np.stack([keys, values], axis=-1).reshape(batch, 2 * n_pairs)  # k1 v1 k2 v2 ...
    first = n_pairs - recent if recent else 0
    asked = rng.integers(first, n_pairs, (batch, N_QUERIES))  # which stored pair each query asks for
    queries = np.take_along_axis(keys, asked, axis=1)
    targets = np.take_along_axis(values, asked, axis=1)
    if answers:
        queries = np.stack([queries, targets], axis=-1).reshape(batch, 2 * N_QUERIES)  # q1 a1 q2 a2 ...
    tokens = np.concatenate([pairs, queries], axis=1)
    return torch.from_numpy(tokens), torch.from_numpy(targets)


def query_positions(length: int, answers: bool = True) -> torch.Tensor:
    """Where the asked keys sit in a sequence of ``length`` tokens (the last N_QUERIES or 2 N_QUERIES)."""
    if answers:
        return torch.arange(length - 2 * N_QUERIES, length, 2)
    return torch.arange(length - N_QUERIES, length)


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
        self.silent_tail = 0  # DeltaNet: how many final positions may not write (an ablation)

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
            if self.silent_tail:  # no writes at the last positions (the asked keys): beta = 0 there
                beta = beta * (torch.arange(beta.shape[-1]) < beta.shape[-1] - self.silent_tail)
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

    def __init__(self, methods, E: int, d_model: int = 64, mlp: bool = False, vocab: int = VOCAB):
        super().__init__()
        self.vocab = vocab
        self.emb, self.prev = nn.Embedding(vocab, d_model), nn.Embedding(vocab + 1, d_model)
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
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens, top_k=None, index_rank=None):
        shifted = F.pad(tokens, (1, 0), value=self.vocab)[:, :-1]  # (B, L): the token before, vocab at 0
        h = self.emb(tokens) + self.prev(shifted)  # (B, L, d_model)
        for mix, norm, mlp in zip(self.mixers, self.norms, self.mlps):
            h = h + mix(norm(h), top_k, index_rank)
            if self.mlp:
                h = h + mlp(h)
        return self.head(h)  # (B, L, vocab)


class Task:
    """What a model is trained and tested on: batches of ``(tokens, targets, positions)``.

    ``targets`` is aligned with ``tokens``; the logits at ``positions`` (see ``_at``) must predict the
    targets there: the values at the asked keys (recall, ``positions`` their indices), or the next
    token wherever it is determined (chapter 8's repeated segments, ``positions`` a mask).
    """

    def __init__(self, kind: str = "recall", answers: bool = True, recent: int = 0, n_max: int = 16):
        self.kind, self.answers, self.recent, self.n_max = kind, answers, recent, n_max
        self.vocab = REPEAT_V if kind == "repeat" else VOCAB

    def batch(self, size: int, rng: np.random.Generator, n_pairs: int | None = None):
        if self.kind == "repeat":
            tokens, repeat_from, _ = repeat_task(size, rng, REPEAT_L, REPEAT_V)
            tokens = torch.from_numpy(tokens)
            # chapter 8's positions: input t predicts token t + 1, scored where t >= repeat_from (the
            # position just before, whose next token starts the second copy, cannot be known)
            scored = np.arange(REPEAT_L - 1)[None, :] >= repeat_from[:, None]  # (B, L - 1)
            return tokens[:, :-1], tokens[:, 1:], torch.from_numpy(scored)
        if n_pairs is None:
            n_pairs = RECENT_STREAM if self.recent else int(rng.integers(1, self.n_max + 1))
        tokens, values = recall_batch(size, n_pairs, rng, self.answers, self.recent)
        positions = query_positions(tokens.shape[1], self.answers)
        targets = torch.zeros_like(tokens)
        targets[:, positions] = values  # (B, L): each asked key's value at its position
        return tokens, targets, positions


def _at(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """``x (B, L, ...)`` at ``positions``: a mask ``(B, L)``, or indices along ``L`` for every row."""
    return x[positions] if positions.dtype == torch.bool else x[:, positions]


def train(model, task: Task, steps: int, seed: int, batch: int = 32, lr: float = 3e-3):
    """AdamW, 50 warm-up steps then linear decay to 0, gradients clipped to norm 1."""
    rng = np.random.default_rng(100 + seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50) * (1 - s / steps))
    for _ in range(steps):
        tokens, targets, positions = task.batch(batch, rng)
        loss = F.cross_entropy(
            _at(model(tokens), positions).flatten(0, -2), _at(targets, positions).flatten()
        )
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
    return model


@torch.no_grad()
def accuracy(model, task: Task, n_eval: int, n_pairs: int | None = None, **kw) -> float:
    """Share of right predictions on ``n_eval`` new sequences (the same ones for every model)."""
    tokens, targets, positions = task.batch(n_eval, np.random.default_rng(7 + (n_pairs or 0)), n_pairs)
    predicted = _at(model.eval()(tokens, **kw), positions).argmax(-1)
    return (predicted == _at(targets, positions)).float().mean().item()


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
            gate_sizes=[8],
            hyb_E=4,
            hyb_steps=20,
            hyb_pairs=[8],
            ks=[2, 8],
            ranks=[2],
            rep_E=8,
        )
    return dict(
        sizes=[4, 8, 16],
        pairs=[1, 2, 4, 8, 16],
        seeds=[0, 1, 2],
        steps=3000,
        n_eval=512,
        gate_sizes=[8, 16],
        hyb_E=4,
        hyb_steps=3000,
        hyb_pairs=[2, 4, 8, 16],
        ks=[1, 2, 4, 8, 16],
        ranks=[1, 2, 4],
        rep_E=8,
    )


def _fit(layers, E, task, steps, seed, mlp=False, silent_tail=0):
    """A fresh ``RecallModel`` trained on ``task``; ``silent_tail``: final positions no DeltaNet layer writes at."""
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = RecallModel(layers, E, mlp=mlp, vocab=task.vocab)
    for mixer in model.mixers:
        mixer.silent_tail = silent_tail
    return train(model, task, steps, seed)


def recall_task(args):
    """One single-layer model: accuracy at each number of pairs.

    ``layout`` is ``"answers"`` (each asked key followed by its value), ``"back to back"`` (the asked
    keys in a row), or ``"back to back, no writes there"`` (the same, DeltaNet's beta held at 0 at
    the asked keys: what the overwriting costs).
    """
    method, E, seed, layout, cfg = args
    task = Task(answers=layout == "answers", n_max=max(cfg["pairs"]))
    silent = N_QUERIES if layout.endswith("no writes there") else 0
    model = _fit([method], E, task, cfg["steps"], seed, silent_tail=silent)
    acc = [round(accuracy(model, task, cfg["n_eval"], n), 4) for n in cfg["pairs"]]
    print(f"{method} E={E} {layout} seed {seed}: {acc}", file=sys.stderr, flush=True)
    return acc


def gate_task(args):
    """One single-layer model on the stream whose queries ask for the most recent pairs only."""
    method, E, seed, cfg = args
    task = Task(recent=RECENT_ASKED)
    model = _fit([method], E, task, cfg["steps"], seed)
    acc = round(accuracy(model, task, cfg["n_eval"]), 4)
    print(f"recent: {method} E={E} seed {seed}: {acc}", file=sys.stderr, flush=True)
    return acc


def hybrid_task(args):
    """One four-layer stack; for the all-softmax stack also its top-k accuracy (exact and cheap indexer)."""
    name, seed, cfg = args
    task = Task(n_max=max(cfg["hyb_pairs"]))
    model = _fit(STACKS[name], cfg["hyb_E"], task, cfg["hyb_steps"], seed, mlp=True)
    acc = [round(accuracy(model, task, cfg["n_eval"], n), 4) for n in cfg["hyb_pairs"]]
    print(f"{name} seed {seed}: {acc}", file=sys.stderr, flush=True)
    topk = None
    if name == "all softmax":
        top, n_eval = max(cfg["hyb_pairs"]), cfg["n_eval"]
        topk = {
            "dense": round(accuracy(model, task, n_eval, top), 4),
            "exact": [round(accuracy(model, task, n_eval, top, top_k=k), 4) for k in cfg["ks"]],
            "indexer": {
                str(r): [
                    round(accuracy(model, task, n_eval, top, top_k=k, index_rank=r), 4) for k in cfg["ks"]
                ]
                for r in cfg["ranks"]
            },
        }
    return acc, topk


def repeat_stack_task(args):
    """One four-layer stack on chapter 8's repeated segments: next-token accuracy where determined."""
    name, seed, cfg = args
    task = Task("repeat")
    model = _fit(STACKS[name], cfg["rep_E"], task, cfg["hyb_steps"], seed, mlp=True)
    acc = round(accuracy(model, task, cfg["n_eval"]), 4)
    print(f"repeat: {name} seed {seed}: {acc}", file=sys.stderr, flush=True)
    return acc


def _map(fn, tasks, jobs):
    if jobs <= 1:
        return [fn(t) for t in tasks]
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        return pool.map(fn, tasks, chunksize=1)


def _config(cfg, *keys):
    return {k: cfg[k] for k in keys}


def run_recall(quick: bool, jobs: int = 1) -> dict:
    """One-layer models: accuracy at each number of pairs, per method, state size and seed."""
    cfg = settings(quick)
    t0 = time.perf_counter()
    middle = cfg["sizes"][len(cfg["sizes"]) // 2]
    # the gate at the middle state size; DeltaNet with the asked keys back to back at the same size
    grid = [(m, E, "answers") for m in METHODS for E in (cfg["sizes"] if m != "gated" else [middle])]
    grid += [("delta", middle, layout) for layout in BACK_TO_BACK]
    n = len(cfg["seeds"])
    results = _map(recall_task, [(m, E, s, lay, cfg) for m, E, lay in grid for s in cfg["seeds"]], jobs)
    out = _config(cfg, "steps", "seeds", "pairs", "n_eval")
    out.update(state_sizes=cfg["sizes"], recall={m: {} for m in METHODS})
    out["queries_back_to_back"] = {"E": middle, "method": "delta", "accuracy": {}}
    for i, (m, E, layout) in enumerate(grid):
        runs = results[i * n : (i + 1) * n]
        if layout == "answers":
            out["recall"][m][str(E)] = runs
        else:
            out["queries_back_to_back"]["accuracy"][layout] = runs
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def run_gate(quick: bool, jobs: int = 1) -> dict:
    """One-layer models at the middle state size on the stream that asks for its newest pairs only."""
    cfg = settings(quick)
    t0 = time.perf_counter()
    # softmax (which keeps every pair) at the smallest size only
    grid = [(m, E) for E in cfg["gate_sizes"] for m in ("linear", "delta", "gated")]
    grid.append(("softmax", cfg["gate_sizes"][0]))
    results = _map(gate_task, [(m, E, s, cfg) for m, E in grid for s in cfg["seeds"]], jobs)
    n = len(cfg["seeds"])
    out = _config(cfg, "steps", "seeds", "n_eval")
    out.update(state_sizes=cfg["gate_sizes"], stream=RECENT_STREAM, asked_from_last=RECENT_ASKED, accuracy={})
    for i, (m, E) in enumerate(grid):
        out["accuracy"].setdefault(m, {})[str(E)] = results[i * n : (i + 1) * n]
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def run_hybrid(quick: bool, jobs: int = 1) -> dict:
    """Four-layer stacks at a state too small for the most pairs; the all-softmax stack's top-k;
    the same stacks on chapter 8's task."""
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
        "L": 2 * top + 2 * N_QUERIES,
        "ks": cfg["ks"],
        "ranks": cfg["ranks"],
        "dense": [tk["dense"] for tk in runs],
        "exact": [tk["exact"] for tk in runs],
        "indexer": {str(r): [tk["indexer"][str(r)] for tk in runs] for r in cfg["ranks"]},
    }
    out["repeat"] = run_repeat(quick, jobs)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def run_repeat(quick: bool, jobs: int = 1) -> dict:
    """The three stacks on chapter 8's repeated segments, scored where chapter 8 scores."""
    cfg = settings(quick)
    t0 = time.perf_counter()
    tasks = [(name, s, cfg) for name in STACKS for s in cfg["seeds"]]
    repeats = _map(repeat_stack_task, tasks, jobs)
    out = {"E": cfg["rep_E"], "L": REPEAT_L, "V": REPEAT_V, "steps": cfg["hyb_steps"], "seeds": cfg["seeds"]}
    out.update(n_eval=cfg["n_eval"], scored="t >= repeat_from (chapter 8's positions)", accuracy={})
    for (name, _, _), acc in zip(tasks, repeats):
        out["accuracy"].setdefault(name, []).append(acc)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


PARTS = {"recall": run_recall, "gate": run_gate, "hybrid": run_hybrid, "repeat": run_repeat}


def run(quick: bool, jobs: int = 1) -> dict:
    return {part: PARTS[part](quick, jobs) for part in FILES}  # the hybrid part holds the repeat part


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run; prints, writes nothing")
    parser.add_argument("--jobs", type=int, default=1, help="processes, one thread each")
    parser.add_argument("--part", choices=sorted(PARTS), help="run one part (all by default)")
    parser.add_argument("--out", default=str(ROOT / "attncourse" / "data"), help="folder for the JSON files")
    args = parser.parse_args()
    if args.part:
        result = {args.part: PARTS[args.part](args.quick, args.jobs)}
    else:
        result = run(args.quick, args.jobs)
    if args.quick:
        print(json.dumps(result, indent=1))
        return
    for part, value in result.items():
        if part == "repeat":  # stored inside the hybrid file; the rest of that file is kept
            path = pathlib.Path(args.out) / FILES["hybrid"]
            value = dict(json.loads(path.read_text()), repeat=value)
        else:
            path = pathlib.Path(args.out) / FILES[part]
        path.write_text(json.dumps(value, indent=1) + "\n")
        print(f"wrote {path} in {result[part]['seconds']} s")


if __name__ == "__main__":
    main()
