#!/usr/bin/env python
"""The Vision Transformer chapter's sweeps, too long for the chapter itself: saved to attncourse/data/.

    OMP_NUM_THREADS=1 python scripts/experiments/vit_digits_sweep.py            # the full sweep
    OMP_NUM_THREADS=1 python scripts/experiments/vit_digits_sweep.py --quick    # a reduced one (tests)

Trains the chapter's tiny ViT on scikit-learn's 8 x 8 digits (seeded, one thread) for

* each patch size P in (1, 2, 4, 8): held-out accuracy per seed, parameters, tokens N, the time of
  one forward pass over the test set (the fastest of 7), and the bytes of one layer's attention weights per image;
* at P = 2: learned vs 2-D sinusoidal vs no positions, each with a [CLS] token and with mean pooling.

and writes ``attncourse/data/vit_digits_sweep.json`` (or prints the reduced run with ``--quick``).

The seed-0 models with P in (1, 2, 4) also give the chapter's explorer its pictures: the [CLS]
row of every head's attention and the rollout's [CLS] row for four test images (digits 0, 3, 4, 7), written
to ``attncourse/data/vit_digits_maps.json`` (``--maps-only`` retrains just those three models).  Both files
are copied into ``attncourse/data/`` too, where the student edition finds them in Colab.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import attncourse as ac
from attncourse.results import RESULTS_DIR as DATA
from attncourse.vit import VisionTransformer, accuracy, digits_split, train_classifier

OUT, MAPS_OUT = DATA / "vit_digits_sweep.json", DATA / "vit_digits_maps.json"


def save(path, text):
    """Write ``text`` to ``path``."""
    path.write_text(text)


MAP_PATCH_SIZES, MAP_DIGITS = (1, 2, 4), (0, 3, 4, 7)  # the first test image of each digit
CONFIG = dict(d_model=32, n_heads=4, n_layers=2, d_ff=64)
EPOCHS = 20  # as in the chapter


def map_images(labels):
    """Indices of the first test image of each digit in MAP_DIGITS."""
    return torch.tensor([int((labels == d).nonzero()[0, 0]) for d in MAP_DIGITS])


def run(patch_size, seed, epochs, pool="cls", positions="learned", data=None, maps=None):
    x_train, y_train, x_test, y_test = data
    torch.manual_seed(seed)
    model = VisionTransformer(8, patch_size, 1, 10, pool=pool, positions=positions, **CONFIG)
    start = time.perf_counter()
    train_classifier(model, x_train, y_train, epochs=epochs, seed=seed)
    train_s = time.perf_counter() - start
    with torch.no_grad():
        model(x_test)  # warm up
        times = []
        for _ in range(7):  # the fastest of 7: the least disturbed by other work on the machine
            start = time.perf_counter()
            _, weights = model(x_test, return_weights=True)
            times.append(time.perf_counter() - start)
        forward_ms = min(times) * 1000
    T = weights[0].shape[-1]
    if maps is not None:  # the explorer's pictures: what [CLS] reads, per layer and head, and the rollout
        first = map_images(data[3])
        maps[str(patch_size)] = {
            "cls_attention": torch.stack([w[first, :, 0, 1:] for w in weights], 1).numpy().round(4).tolist(),
            "rollout": ac.attention_rollout([w[first] for w in weights])[:, 0, 1:].numpy().round(4).tolist(),
        }
    return {
        "patch_size": patch_size,
        "seed": seed,
        "pool": pool,
        "positions": positions,
        "tokens": T,
        "parameters": sum(p.numel() for p in model.parameters()),
        "accuracy": accuracy(model, x_test, y_test),
        "train_s": round(train_s, 2),
        "forward_ms_450_images": round(forward_ms, 2),
        "attention_bytes_per_image_per_layer": CONFIG["n_heads"] * T * T * 4,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, 2 epochs, nothing written")
    parser.add_argument("--maps-only", action="store_true", help="only the explorer's maps (seed 0)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    data = digits_split()
    maps = {
        "patch_sizes": list(MAP_PATCH_SIZES),
        "images": data[2][map_images(data[3]), 0].numpy().round(4).tolist(),
        "labels": data[3][map_images(data[3])].tolist(),
    }
    if args.maps_only:
        for P in MAP_PATCH_SIZES:
            print(run(P, 0, EPOCHS, data=data, maps=maps), flush=True)
        save(MAPS_OUT, json.dumps(maps) + "\n")
        print("wrote", MAPS_OUT)
        return maps
    seeds, epochs = ((0,), 2) if args.quick else ((0, 1), EPOCHS)
    patch_sizes = (4, 8) if args.quick else (1, 2, 4, 8)
    results = {"config": CONFIG, "epochs": epochs, "seeds": list(seeds), "patch_sizes": [], "variants": []}
    for P in patch_sizes:
        for seed in seeds:
            keep_maps = not args.quick and seed == 0 and P in MAP_PATCH_SIZES
            results["patch_sizes"].append(run(P, seed, epochs, data=data, maps=maps if keep_maps else None))
            print(results["patch_sizes"][-1], flush=True)
    variants = (
        [("cls", "learned")]
        if args.quick
        else [(pool, pos) for pool in ("cls", "mean") for pos in ("learned", "sinusoidal", "none")]
    )
    for pool, positions in variants:
        for seed in seeds:
            results["variants"].append(run(2 if not args.quick else 4, seed, epochs, pool, positions, data))
            print(results["variants"][-1], flush=True)
    if not args.quick:
        save(OUT, json.dumps(results, indent=1) + "\n")
        save(MAPS_OUT, json.dumps(maps) + "\n")
        print("wrote", OUT, "and", MAPS_OUT)
    return results


if __name__ == "__main__":
    main()
