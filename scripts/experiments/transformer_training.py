"""Chapter 8's training experiments, too long to run in the chapter itself:

* ``norm_warmup``: a four-layer TinyTransformer, pre-norm or post-norm, at learning rate 1e-2,
  with and without a 30-step linear warm-up, over several seeds;
* ``dropout_scarce``: the chapter's two-layer model trained on a small fixed set of sequences
  (so that it can memorise them), with and without dropout, over several seeds.

    OMP_NUM_THREADS=1 python scripts/experiments/transformer_training.py       # norm_warmup
    OMP_NUM_THREADS=1 python scripts/experiments/transformer_training.py --experiments dropout_scarce
    python scripts/experiments/transformer_training.py --seeds 0 --steps 20 --out /tmp/x.json

The task and the training loop are chapter 8's (the repeated-segment task, AdamW, linear decay
to 0, the loss counted at the determined positions only).  Writes
``attncourse/data/transformer_norm_warmup.json`` and ``attncourse/data/transformer_dropout_scarce.json``,
which chapter 8 loads.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from attncourse.toy_data import repeat_task
from attncourse.transformer import TinyTransformer

ROOT = Path(__file__).resolve().parents[2]
V, L_MAX, BATCH = 32, 32, 32


def make_sequences(n_seq, rng, L=L_MAX):
    """Chapter 8's task (attncourse.toy_data.repeat_task): tokens and where the repeat starts."""
    tokens, repeat_from, _ = repeat_task(n_seq, rng, L, V)
    return torch.from_numpy(tokens), torch.from_numpy(repeat_from)


def determined(repeat_from, L):
    return torch.arange(L)[None, :] >= repeat_from[:, None]


def loss_and_accuracy(model, tokens, starts):
    model.eval()
    with torch.no_grad():
        logits, _ = model(tokens[:, :-1])
    keep = determined(starts, L_MAX - 1)
    target = tokens[:, 1:]
    loss = F.cross_entropy(logits[keep], target[keep]).item()
    accuracy = (logits.argmax(-1) == target)[keep].float().mean().item()
    return loss, accuracy


def fit(model, tokens, starts, steps, lr, warmup=0):
    """AdamW, linear warm-up over ``warmup`` steps, then linear decay to 0; batches cycle."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    ramp = lambda step: (step + 1) / warmup if step < warmup else 1 - step / steps  # noqa: E731
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, ramp)
    model.train()
    n_batches = len(tokens) // BATCH
    curve = []
    for step in range(steps):
        batch = slice((step % n_batches) * BATCH, (step % n_batches + 1) * BATCH)
        seq, st = tokens[batch], starts[batch]
        logits, _ = model(seq[:, :-1])
        keep = determined(st, L_MAX - 1)
        loss = F.cross_entropy(logits[keep], seq[:, 1:][keep])
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        curve.append(loss.item())
    return np.array(curve)


def norm_warmup(seeds, steps, train, test):
    rows = []
    for norm_first in (True, False):
        for warmup in (0, 30):
            for seed in seeds:
                start = time.perf_counter()
                torch.manual_seed(seed)
                model = TinyTransformer(
                    V, d_model=64, n_heads=4, n_layers=4, max_len=L_MAX - 1, d_ff=128, norm_first=norm_first
                )
                curve = fit(model, *train, steps, lr=1e-2, warmup=warmup)
                loss, accuracy = loss_and_accuracy(model, *test)
                rows.append(
                    {
                        "norm": "pre-norm" if norm_first else "post-norm",
                        "warmup": warmup,
                        "seed": seed,
                        "loss_last_20": round(float(curve[-20:].mean()), 4),
                        "held_out_loss": round(loss, 4),
                        "held_out_accuracy": round(accuracy, 4),
                        "curve": [round(float(x), 3) for x in curve],
                        "seconds": round(time.perf_counter() - start, 1),
                    }
                )
                print({k: v for k, v in rows[-1].items() if k != "curve"}, flush=True)
    return rows


def dropout_scarce(seeds, steps, n_train, train, test):
    rows = []
    small = (train[0][:n_train], train[1][:n_train])
    for dropout in (0.0, 0.1):
        for seed in seeds:
            start = time.perf_counter()
            torch.manual_seed(seed)
            model = TinyTransformer(
                V, d_model=64, n_heads=4, n_layers=2, max_len=L_MAX - 1, d_ff=128, dropout=dropout
            )
            fit(model, *small, steps, lr=6e-3)
            train_loss, train_accuracy = loss_and_accuracy(model, *small)
            loss, accuracy = loss_and_accuracy(model, *test)
            rows.append(
                {
                    "dropout": dropout,
                    "seed": seed,
                    "train_loss": round(train_loss, 4),
                    "train_accuracy": round(train_accuracy, 4),
                    "held_out_loss": round(loss, 4),
                    "held_out_accuracy": round(accuracy, 4),
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
            print(rows[-1], flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--experiments", nargs="+", default=["norm_warmup"], choices=["norm_warmup", "dropout_scarce"]
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=200, help="steps of norm_warmup")
    parser.add_argument("--scarce", type=int, default=256, help="training sequences for dropout_scarce")
    parser.add_argument("--dropout-steps", type=int, default=400, help="steps of dropout_scarce")
    parser.add_argument(
        "--out", type=Path, default=None, help="default: attncourse/data/transformer_<experiment>.json"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    train = make_sequences(
        max(args.steps, args.scarce // BATCH) * BATCH, np.random.default_rng(1)
    )  # chapter 8's
    test = make_sequences(1000, np.random.default_rng(2))  # chapter 8's held-out set
    settings = {
        "task": "chapter 8's repeated-segment task, V = 32, sequences of 32 tokens",
        "seeds": args.seeds,
        "held_out_sequences": 1000,
        "script": "scripts/experiments/transformer_training.py",
        "machine": f"{platform.machine()}, torch {torch.__version__}, 1 thread",
    }
    result = {"settings": settings}
    if "norm_warmup" in args.experiments:
        settings["norm_warmup"] = (
            "4 layers, d_model 64, 4 heads, d_ff 128, AdamW lr 1e-2, "
            f"{args.steps} steps of {BATCH} fresh sequences, warm-up 0 or 30 steps then linear decay"
        )
        result["norm_warmup"] = norm_warmup(args.seeds, args.steps, train, test)
    if "dropout_scarce" in args.experiments:
        settings["dropout_scarce"] = (
            f"2 layers (chapter 8's model), {args.scarce} training sequences cycled for "
            f"{args.dropout_steps} steps of {BATCH}, AdamW lr 6e-3, dropout 0 or 0.1 (every slot)"
        )
        result["dropout_scarce"] = dropout_scarce(args.seeds, args.dropout_steps, args.scarce, train, test)
    settings["total_seconds"] = round(time.perf_counter() - start, 1)
    out = args.out or ROOT / "attncourse" / "data" / f"transformer_{'_'.join(args.experiments)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
