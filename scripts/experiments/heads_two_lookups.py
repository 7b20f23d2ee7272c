"""Chapter 5's experiment: a task that needs two lookups at once, trained with 1, 2 and 4 heads.

    OMP_NUM_THREADS=1 python scripts/experiments/heads_two_lookups.py          # the saved run
    python scripts/experiments/heads_two_lookups.py --heads 2 --seeds 0 --steps 20 --out /tmp/x.json

At every position t >= 2 the model must output **both** earlier tokens, x_{t-1} and x_{t-2}
(two read-outs, one per answer).  The model: token plus learned position embeddings
(d_model = 32), one causal ``ac.MultiHeadAttention(32, H)`` with a residual connection, and two
linear read-outs.  Every H has exactly the same parameters (4 d_model^2 + 4 d_model in the
attention layer, whatever H is), the same seed, data and steps.  One head gives each query one
distribution over the keys, so its output is one blend of x_{t-1} and x_{t-2}; two heads can
look at each on its own.  Writes ``attncourse/data/heads_two_lookups.json`` (the table's runs and,
for seed 0, every head's weights on one held-out sequence), which chapter 5 loads.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from attncourse.multihead import MultiHeadAttention

ROOT = Path(__file__).resolve().parents[2]
V, L, D_MODEL, BATCH, LR = 16, 12, 32, 64, 3e-3


class TwoLookups(nn.Module):
    def __init__(self, n_heads: int):
        super().__init__()
        self.tok_emb, self.pos_emb = nn.Embedding(V, D_MODEL), nn.Embedding(L, D_MODEL)
        self.attn = MultiHeadAttention(D_MODEL, n_heads)
        self.read_1, self.read_2 = nn.Linear(D_MODEL, V), nn.Linear(D_MODEL, V)  # x_{t-1}, x_{t-2}

    def forward(self, tokens):
        x = self.tok_emb(tokens) + self.pos_emb(torch.arange(tokens.shape[1]))  # (B, L, d_model)
        out, weights = self.attn(x, is_causal=True)  # (B, L, d_model), (B, H, L, L)
        h = x + out
        return self.read_1(h), self.read_2(h), weights


def loss_and_right(model, tokens):
    logits_1, logits_2, weights = model(tokens)
    t1, t2 = tokens[:, 1:-1], tokens[:, :-2]  # the answers at positions 2..L-1
    l1, l2 = logits_1[:, 2:], logits_2[:, 2:]
    loss = F.cross_entropy(l1.reshape(-1, V), t1.reshape(-1)) + F.cross_entropy(
        l2.reshape(-1, V), t2.reshape(-1)
    )
    right_1, right_2 = l1.argmax(-1) == t1, l2.argmax(-1) == t2
    return loss, right_1, right_2, weights


def train(n_heads, seed, steps):
    torch.manual_seed(seed)
    model = TwoLookups(n_heads)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    data = torch.Generator().manual_seed(100 + seed)
    curve = []
    for _ in range(steps):
        loss, *_ = loss_and_right(model, torch.randint(0, V, (BATCH, L), generator=data))
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(loss.item())
    model.eval()
    with torch.no_grad():
        test = torch.randint(0, V, (2000, L), generator=torch.Generator().manual_seed(999))
        _, right_1, right_2, weights = loss_and_right(model, test)
    return model, curve, right_1, right_2, test, weights


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--out", type=Path, default=ROOT / "attncourse" / "data" / "heads_two_lookups.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    runs, maps = [], {}
    for n_heads in args.heads:
        for seed in args.seeds:
            t0 = time.perf_counter()
            model, curve, right_1, right_2, test, weights = train(n_heads, seed, args.steps)
            t = torch.arange(2, L)
            runs.append(
                {
                    "n_heads": n_heads,
                    "seed": seed,
                    "parameters": sum(p.numel() for p in model.parameters()),
                    "accuracy_t_minus_1": round(right_1.float().mean().item(), 4),
                    "accuracy_t_minus_2": round(right_2.float().mean().item(), 4),
                    "accuracy_both": round((right_1 & right_2).float().mean().item(), 4),
                    "loss_last_50": round(sum(curve[-50:]) / 50, 4),
                    # per head, the mean weight that queries t >= 2 put on keys t-1 and t-2
                    "weight_on_t_minus_1": [
                        round(w, 3) for w in weights[:, :, t, t - 1].mean((0, 2)).tolist()
                    ],
                    "weight_on_t_minus_2": [
                        round(w, 3) for w in weights[:, :, t, t - 2].mean((0, 2)).tolist()
                    ],
                    "curve_every_10": [
                        round(sum(curve[i : i + 10]) / 10, 4) for i in range(0, len(curve), 10)
                    ],
                    "seconds": round(time.perf_counter() - t0, 1),
                }
            )
            print({k: v for k, v in runs[-1].items() if k != "curve_every_10"}, flush=True)
            if seed == args.seeds[0]:
                maps[str(n_heads)] = {
                    "tokens": test[0].tolist(),
                    "weights": weights[0].round(decimals=3).tolist(),  # (H, L, L)
                }
    result = {
        "settings": {
            "task": f"output x_(t-1) and x_(t-2) at every t >= 2; {V} symbols, sequences of {L}",
            "model": f"token + position embeddings (d_model {D_MODEL}), one causal "
            "ac.MultiHeadAttention with a residual, two linear read-outs",
            "optimiser": f"Adam, lr {LR}, {args.steps} steps of {BATCH} fresh sequences",
            "seeds": args.seeds,
            "held_out_sequences": 2000,
            "script": "scripts/experiments/heads_two_lookups.py",
            "machine": f"{platform.machine()}, torch {torch.__version__}, 1 thread",
            "total_seconds": round(time.perf_counter() - start, 1),
        },
        "runs": runs,
        "maps_seed0": maps,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
