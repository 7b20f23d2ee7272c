"""Chapter 12's sweep: chapter 0's reversal task for a Transformer encoder–decoder, with chapter 0's
data, lengths, seeds, steps, optimiser and learning rate, at the parameter count of chapter 0's GRU
with additive attention.

    OMP_NUM_THREADS=1 python scripts/experiments/seq2seq_transformer.py            # the saved run
    python scripts/experiments/seq2seq_transformer.py --lengths 4 --seeds 0 --steps 20 --out /tmp/x.json

Writes ``attncourse/data/seq2seq_transformer.json``: the settings, one row per (length, seed) with
held-out accuracies (``attncourse.seq2seq.evaluate_reversal``, the sequences chapter 0 scores on),
parameter count and seconds, and per head the mean cross-attention map of greedy decoding at
``--map-length`` for the first seed.  The GRU rows stay in chapter 0's
``attncourse/data/seq2seq_lengths.json``; chapter 12 loads both.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from attncourse.models.seq2seq_transformer import REVERSAL_CONFIG, train_transformer_reversal
from attncourse.seq2seq import evaluate_reversal, n_parameters, reversal_batch

ROOT = Path(__file__).resolve().parents[2]


def run(lengths, seeds, steps, batch_size=64, lr=1e-2, map_length=8):
    rows, maps = [], {}
    for n in lengths:
        for seed in seeds:
            start = time.perf_counter()
            model, losses = train_transformer_reversal(
                n, steps=steps, batch_size=batch_size, lr=lr, seed=seed
            )
            symbol_acc, sequence_acc = evaluate_reversal(model, n)
            seconds = time.perf_counter() - start
            rows.append(
                {
                    "n": n,
                    "kind": "Transformer",
                    "seed": seed,
                    "parameters": n_parameters(model),
                    "symbol_accuracy": round(symbol_acc, 4),
                    "sequence_accuracy": round(sequence_acc, 4),
                    "final_loss": round(float(losses[-20:].mean()), 4),
                    "seconds": round(seconds, 1),
                }
            )
            print(rows[-1], flush=True)
            if n == map_length and seed == seeds[0]:
                source, _ = reversal_batch(500, n, model.n_symbols, torch.Generator().manual_seed(1))
                written, _ = model.greedy(source)
                with torch.no_grad():  # the same positions again, in one pass, for the weights
                    _, cross = model(source, written)
                # layer 0, (500, H, n, n) -> (H, n, n): where each output step read the source
                maps["per_head"] = cross[0].mean(0).round(decimals=4).tolist()
                maps["heads_averaged"] = cross[0].mean((0, 1)).round(decimals=4).tolist()
    return rows, maps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[4, 8, 12, 16])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--map-length", type=int, default=8)
    parser.add_argument("--out", type=Path, default=ROOT / "attncourse" / "data" / "seq2seq_transformer.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    rows, maps = run(args.lengths, args.seeds, args.steps, map_length=args.map_length)
    result = {
        "settings": {
            "task": "reversal of n random symbols from 10 (chapter 0's)",
            "lengths": args.lengths,
            "seeds": args.seeds,
            "steps": args.steps,
            "batch_size": 64,
            "lr": 1e-2,
            "model": {**REVERSAL_CONFIG, "norm_first": True, "positions": "sinusoidal"},
            "held_out_sequences": 1000,
            "map_length": args.map_length,
            "script": "scripts/experiments/seq2seq_transformer.py",
            "machine": f"{platform.machine()}, torch {torch.__version__}, 1 thread",
            "total_seconds": round(time.perf_counter() - start, 1),
        },
        "runs": rows,
        "cross_attention_maps": maps,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
