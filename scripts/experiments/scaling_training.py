"""Chapter 3's training run: one attention layer at a realistic head size (d_k = 64 and 128),
scores scaled by 1/sqrt(d_k) or not, several seeds; the loss curves go to attncourse/data.

    OMP_NUM_THREADS=1 python scripts/experiments/scaling_training.py          # the saved run
    python scripts/experiments/scaling_training.py --d-ks 64 --seeds 0 --steps 20 --out /tmp/x.json

The task is associative recall: a sequence holds S = 16 (key, value) pairs, each one token whose
embedding is the sum of a key embedding (64 keys) and a value embedding (16 values); the query is
one of the sequence's keys and the answer is the value paired with it.  One attention layer
(``W_q, W_k: d_model -> d_k``, ``W_v, W_o``) solves it by matching the query against the keys.
``W_q`` and ``W_k`` are initialised so that every entry of q and k has variance about 1, the
setting of chapter 3's measurements; unscaled scores then have a spread of about sqrt(d_k).
Adam, learning rate 1e-3, fresh batches of 128.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
S, N_KEYS, N_VALUES, D_MODEL, BATCH, LR = 16, 64, 16, 64, 128, 1e-3


class RecallLayer(nn.Module):
    """Embeddings and one attention layer whose scores are multiplied by ``scale``."""

    def __init__(self, d_k: int, scale: float):
        super().__init__()
        self.scale = scale
        self.key_emb, self.value_emb = nn.Embedding(N_KEYS, D_MODEL), nn.Embedding(N_VALUES, D_MODEL)
        self.W_q, self.W_k = nn.Linear(D_MODEL, d_k, bias=False), nn.Linear(D_MODEL, d_k, bias=False)
        self.W_v, self.W_o = nn.Linear(D_MODEL, D_MODEL, bias=False), nn.Linear(D_MODEL, N_VALUES)
        # q and k entries of variance about 1, as in chapter 3's measurements: a token is the sum of
        # two embeddings (entries of variance 2), the query one key embedding (variance 1)
        nn.init.normal_(self.W_k.weight, std=1 / math.sqrt(2 * D_MODEL))
        nn.init.normal_(self.W_q.weight, std=1 / math.sqrt(D_MODEL))

    def queries_and_keys(self, keys, values, pick):
        """q (B, d_k) of the asked key and k (B, S, d_k) of the tokens, and the tokens x (B, S, d_model)."""
        x = self.key_emb(keys) + self.value_emb(values)  # (B, S, d_model)
        query = self.key_emb(keys[torch.arange(len(keys)), pick])  # (B, d_model)
        return self.W_q(query), self.W_k(x), x

    def forward(self, keys, values, pick):
        q, k, x = self.queries_and_keys(keys, values, pick)
        scores = (k @ q[:, :, None]).squeeze(-1) * self.scale  # (B, S)
        weights = scores.softmax(-1)
        out = (weights[:, :, None] * self.W_v(x)).sum(1)  # (B, d_model)
        return self.W_o(out), weights


def batch(generator):
    keys = torch.rand(BATCH, N_KEYS, generator=generator).argsort(-1)[:, :S]  # S distinct keys
    values = torch.randint(0, N_VALUES, (BATCH, S), generator=generator)
    pick = torch.randint(0, S, (BATCH,), generator=generator)
    return keys, values, pick


def train(d_k, scaled, seed, steps):
    torch.manual_seed(seed)
    model = RecallLayer(d_k, 1 / math.sqrt(d_k) if scaled else 1.0)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    data = torch.Generator().manual_seed(100 + seed)
    curve, top_weight = [], None
    for step in range(steps):
        keys, values, pick = batch(data)
        logits, weights = model(keys, values, pick)
        if step == 0:
            top_weight = weights.max(-1).values.mean().item()  # at initialisation
            with torch.no_grad():  # the variance of q's and k's entries at initialisation
                q0, k0, _ = model.queries_and_keys(keys, values, pick)
                variances = (q0.var().item(), k0.var().item())
        loss = F.cross_entropy(logits, values[torch.arange(BATCH), pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(loss.item())
    test = torch.Generator().manual_seed(999)
    right = []
    with torch.no_grad():
        for _ in range(8):  # 1024 held-out queries
            keys, values, pick = batch(test)
            logits, _ = model(keys, values, pick)
            right.append(logits.argmax(-1) == values[torch.arange(BATCH), pick])
    return np.array(curve), top_weight, torch.cat(right).float().mean().item(), variances


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-ks", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", type=Path, default=ROOT / "attncourse" / "data" / "scaling_training.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    runs = []
    for d_k in args.d_ks:
        for scaled in (False, True):
            for seed in args.seeds:
                t0 = time.perf_counter()
                curve, top_weight, accuracy, (var_q, var_k) = train(d_k, scaled, seed, args.steps)
                runs.append(
                    {
                        "d_k": d_k,
                        "scaled": scaled,
                        "seed": seed,
                        "initial_largest_weight": round(top_weight, 4),
                        "initial_variance_q": round(var_q, 3),
                        "initial_variance_k": round(var_k, 3),
                        "held_out_accuracy": round(accuracy, 4),
                        "curve": [round(float(x), 4) for x in curve],
                        "seconds": round(time.perf_counter() - t0, 1),
                    }
                )
                print({k: v for k, v in runs[-1].items() if k != "curve"}, flush=True)
    result = {
        "settings": {
            "task": f"associative recall: {S} (key, value) pairs, {N_KEYS} keys, {N_VALUES} values",
            "model": f"embeddings (d_model {D_MODEL}) and one attention layer, W_q, W_k: d_model -> d_k",
            "init": "W_k entries N(0, 1 / (2 d_model)) (tokens: two embeddings), W_q entries "
            "N(0, 1 / d_model) (the query: one embedding): q and k entries of variance about 1",
            "optimiser": f"Adam, lr {LR}, {args.steps} steps of {BATCH} fresh sequences",
            "seeds": args.seeds,
            "held_out_queries": 1024,
            "script": "scripts/experiments/scaling_training.py",
            "machine": f"{platform.machine()}, torch {torch.__version__}, 1 thread",
            "total_seconds": round(time.perf_counter() - start, 1),
        },
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
