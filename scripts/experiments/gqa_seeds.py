"""Chapter 11: multi-head, grouped-query and multi-query attention trained on chapter 8's task.

Chapter 8's model (``TinyTransformer``, 2 layers, d_model 64, 4 query heads of 16) learns the
repeated-segment task with 4 (MHA), 2 (GQA) or 1 (MQA) key/value heads.  Fewer KV heads mean smaller
``k_proj``/``v_proj``; the MLP's hidden width ``d_ff`` grows to give the parameters back, so the three
models have the same parameter count within 0.2%.  Six seeds each (the seed sets the initial
weights and the order of the training sequences); chapter 8's 400 steps, batch 32, lr 6e-3.

    OMP_NUM_THREADS=1 python scripts/experiments/gqa_seeds.py           # attncourse/data/gqa_seeds.json
    OMP_NUM_THREADS=1 python scripts/experiments/gqa_seeds.py --quick   # a reduced run (the test)
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from attncourse import kv_cache  # noqa: E402
from attncourse.toy_data import repeat_task  # noqa: E402
from attncourse.transformer import TinyTransformer  # noqa: E402

V, L_MAX, D_MODEL, N_HEADS, N_LAYERS = 32, 32, 64, 4, 2
# key/value heads -> MLP width that brings the parameter count back to that of MHA (d_ff 128)
VARIANTS = {"MHA": (4, 128), "GQA": (2, 160), "MQA": (1, 176)}


def make_sequences(n_seq, rng, L=L_MAX):
    """Chapter 8's task (attncourse.toy_data.repeat_task): tokens and where the repeat starts."""
    tokens, repeat_from, _ = repeat_task(n_seq, rng, L, V)
    return torch.from_numpy(tokens), torch.from_numpy(repeat_from)


def determined(repeat_from, L):
    return torch.arange(L)[None, :] >= repeat_from[:, None]


def build(n_kv_heads, d_ff, seed):
    torch.manual_seed(seed)
    return TinyTransformer(
        V,
        d_model=D_MODEL,
        n_heads=N_HEADS,
        n_layers=N_LAYERS,
        max_len=L_MAX - 1,
        d_ff=d_ff,
        n_kv_heads=n_kv_heads,
    )


def train_one(n_kv_heads, d_ff, seed, n_steps, test):
    batch_size = 32
    tokens, starts = make_sequences(n_steps * batch_size, np.random.default_rng(1 + 10 * seed))
    model = build(n_kv_heads, d_ff, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-3, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1 - step / n_steps)
    for step in range(n_steps):
        seq, st = (
            tokens[step * batch_size : (step + 1) * batch_size],
            starts[step * batch_size : (step + 1) * batch_size],
        )
        logits, _ = model(seq[:, :-1])
        keep = determined(st, L_MAX - 1)
        loss = F.cross_entropy(logits[keep], seq[:, 1:][keep])
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
    model.eval()
    test_tokens, test_from = test
    with torch.no_grad():
        logits, _ = model(test_tokens[:, :-1])
    keep = determined(test_from, L_MAX - 1)
    acc = (logits.argmax(-1) == test_tokens[:, 1:])[keep].float().mean().item()
    test_loss = F.cross_entropy(logits[keep], test_tokens[:, 1:][keep]).item()
    return model, acc, test_loss


def run(quick: bool) -> dict:
    torch.set_num_threads(1)
    n_steps, seeds = (60, [0]) if quick else (400, [0, 1, 2, 3, 4, 5])
    test = make_sequences(1000, np.random.default_rng(2))
    t0 = time.perf_counter()
    out = {"steps": n_steps, "seeds": seeds, "variants": {}}
    for name, (n_kv, d_ff) in VARIANTS.items():
        row = {"n_kv_heads": n_kv, "d_ff": d_ff, "accuracy": [], "test_loss": []}
        for seed in seeds:
            model, acc, loss = train_one(n_kv, d_ff, seed, n_steps, test)
            row["accuracy"].append(round(acc, 4))
            row["test_loss"].append(round(loss, 4))
            print(f"{name} seed {seed}: accuracy {acc:.3f}, loss {loss:.3f}", file=sys.stderr, flush=True)
        row["parameters"] = sum(p.numel() for p in model.parameters())
        row["cache_bytes_per_token"] = kv_cache.kv_cache_bytes(
            N_LAYERS, n_kv, D_MODEL // N_HEADS, 1, bytes_per_number=4
        )
        out["variants"][name] = row
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run; prints, writes nothing")
    parser.add_argument("--out", default=str(ROOT / "attncourse" / "data" / "gqa_seeds.json"))
    args = parser.parse_args()
    result = run(args.quick)
    text = json.dumps(result, indent=1)
    if args.quick:
        print(text)
    else:
        pathlib.Path(args.out).write_text(text + "\n")
        print(f"wrote {args.out} in {result['seconds']} s")


if __name__ == "__main__":
    main()
