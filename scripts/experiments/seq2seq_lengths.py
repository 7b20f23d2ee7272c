"""Chapter 0's sweep: reversal by a GRU encoder-decoder with additive attention, with dot-product
attention, and with the encoder's final state only (same parameter count), as the length grows.

    OMP_NUM_THREADS=1 python scripts/experiments/seq2seq_lengths.py            # the saved run
    python scripts/experiments/seq2seq_lengths.py --lengths 4 --seeds 0 --steps 20 --out /tmp/x.json

Writes ``attncourse/data/seq2seq_lengths.json``: the settings, one row per (length, kind, seed) with
held-out accuracies, parameter count and seconds, and the mean attention map of each attention
kind at ``--map-length`` for seed 0.  Chapter 0 loads and plots it.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from attncourse.seq2seq import evaluate_reversal, n_parameters, reversal_batch, train_reversal

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"final state": None, "additive attention": "additive", "dot-product attention": "dot"}


def run(lengths, seeds, steps, d_hidden=32, batch_size=64, lr=1e-2, map_length=8):
    rows, maps = [], {}
    for n in lengths:
        for name, attention in KINDS.items():
            for seed in seeds:
                start = time.perf_counter()
                model, losses = train_reversal(
                    n, attention, d_hidden=d_hidden, steps=steps, batch_size=batch_size, lr=lr, seed=seed
                )
                symbol_acc, sequence_acc = evaluate_reversal(model, n)
                seconds = time.perf_counter() - start
                rows.append(
                    {
                        "n": n,
                        "kind": name,
                        "seed": seed,
                        "parameters": n_parameters(model),
                        "d_hidden": model.d_hidden,
                        "symbol_accuracy": round(symbol_acc, 4),
                        "sequence_accuracy": round(sequence_acc, 4),
                        "final_loss": round(float(losses[-20:].mean()), 4),
                        "seconds": round(seconds, 1),
                    }
                )
                print(rows[-1], flush=True)
                if attention is not None and n == map_length and seed == seeds[0]:
                    source, _ = reversal_batch(500, n, model.n_symbols, torch.Generator().manual_seed(1))
                    _, weights = model.greedy(source)  # (500, n, n)
                    maps[name] = weights.mean(0).round(decimals=4).tolist()
    return rows, maps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[4, 8, 12, 16])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--out", type=Path, default=ROOT / "attncourse" / "data" / "seq2seq_lengths.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    rows, maps = run(args.lengths, args.seeds, args.steps)
    result = {
        "settings": {
            "task": "reversal of n random symbols from 10",
            "lengths": args.lengths,
            "seeds": args.seeds,
            "steps": args.steps,
            "batch_size": 64,
            "lr": 1e-2,
            "d_hidden_attention": 32,
            "held_out_sequences": 1000,
            "script": "scripts/experiments/seq2seq_lengths.py",
            "machine": f"{platform.machine()}, torch {torch.__version__}, 1 thread",
            "total_seconds": round(time.perf_counter() - start, 1),
        },
        "runs": rows,
        "mean_attention_maps": maps,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
