"""Chapter 12's captioner: chapter 10's ViT as the encoder and a one-layer text decoder that spells the
digit's name, trained on chapter 10's split of scikit-learn's 8 x 8 digits; its accuracy, the
cross-attention of every letter over the patches beside the encoder's rollout, and an ablation.

    OMP_NUM_THREADS=1 python scripts/experiments/digit_captioner.py             # the saved run
    python scripts/experiments/digit_captioner.py --seeds 0 --epochs 1 --out /tmp/x.json

Writes ``attncourse/data/digit_captioner.json``: per seed the held-out word and letter accuracy,
the word accuracy with the patches shuffled and with 4 patches removed (the 4 the decoder's
cross-attention ranks highest, the 4 it ranks highest once carried through the encoder's
rollout back to the input patches, the 4 the rollout alone ranks highest, 4 random ones (the mean
of 10 draws), the 4 it ranks lowest), and for the first seed the
per-letter cross-attention maps and the encoder's rollout of a few held-out images.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

import attncourse as ac
from attncourse.models.captioner import DIGIT_NAMES, DigitCaptioner, decode_letters, train_captioner
from attncourse.seq2seq import n_parameters
from attncourse.vit import digits_split

ROOT = Path(__file__).resolve().parents[2]
SHOWN_DIGITS = (0, 4, 7)  # the first held-out image of each is drawn in the chapter
RANDOM_DRAWS = 10  # random removals: each draw picks 4 patches per image afresh


def word_accuracy(model, images, labels, keep=None) -> float:
    ids, _ = model.caption(images, keep=keep)
    words = decode_letters(ids)
    return sum(w == DIGIT_NAMES[int(y)] for w, y in zip(words, labels)) / len(labels)


def letter_accuracy(model, images, labels) -> float:
    from attncourse.models.captioner import encode_names

    ids, _ = model.caption(images)
    return (ids == encode_names(labels)).float().mean().item()


def rankings(model, images):
    """Each image's patches ordered, highest first: by the decoder's cross-attention over the memory
    tokens (heads and all ``MAX_LETTERS`` decoder positions averaged, the ones after the end mark
    included), by that row carried through the encoder's rollout back to the input patches, and by
    the rollout alone (each input patch's mean share over the memory tokens): three ``(B, N)``
    orders."""
    _, cross = model.caption(images)  # (B, H, T, N) for the one decoder layer
    row = cross[-1].mean((1, 2))  # (B, N): weight on each memory token
    with torch.no_grad():
        _, self_weights = model.encode(images)
    rollout = ac.attention_rollout(self_weights)  # (B, N, N): memory token <- input patches
    through = (row[:, None, :] @ rollout)[:, 0]  # (B, 1, N) @ (B, N, N) -> (B, N): input patches
    alone = rollout.mean(1)  # (B, N): the row a uniform cross-attention would carry back
    return tuple(r.argsort(dim=1, descending=True) for r in (row, through, alone))


def run_seed(seed, epochs, data):
    x_train, y_train, x_test, y_test = data
    torch.manual_seed(seed)
    model = DigitCaptioner()
    start = time.perf_counter()
    losses = train_captioner(model, x_train, y_train, epochs=epochs, seed=seed)
    seconds = time.perf_counter() - start
    n_patches = model.vit.n_patches
    perm = torch.randperm(n_patches, generator=torch.Generator().manual_seed(0))
    shuffled = ac.unpatchify(ac.patchify(x_test, 2)[:, perm], 2, (8, 8))  # chapter 10's shuffle

    def without(ranking, k=4):
        keep = torch.ones(len(y_test), n_patches, dtype=torch.bool)
        keep.scatter_(1, ranking[:, :k], False)
        return word_accuracy(model, x_test, y_test, keep)

    order, order_through, order_rollout = rankings(model, x_test)
    g = torch.Generator().manual_seed(seed)
    random_draws = [
        without(torch.stack([torch.randperm(n_patches, generator=g) for _ in y_test]))
        for _ in range(RANDOM_DRAWS)
    ]
    shared = torch.tensor(
        [len(set(a[:4].tolist()) & set(b[:4].tolist())) for a, b in zip(order_through, order_rollout)]
    )
    row = {
        "seed": seed,
        "parameters": n_parameters(model),
        "word_accuracy": round(word_accuracy(model, x_test, y_test), 4),
        "letter_accuracy": round(letter_accuracy(model, x_test, y_test), 4),
        "shuffled_patches": round(word_accuracy(model, shuffled, y_test), 4),
        "top_4_by_cross_attention_removed": round(without(order), 4),
        "top_4_by_cross_attention_through_rollout_removed": round(without(order_through), 4),
        "top_4_by_rollout_alone_removed": round(without(order_rollout), 4),
        "top_4_through_rollout_shared_with_rollout_alone": round(shared.float().mean().item(), 2),
        "random_4_removed": round(sum(random_draws) / RANDOM_DRAWS, 4),  # the mean of the draws
        "random_4_removed_draws": [round(a, 4) for a in random_draws],
        "bottom_4_by_cross_attention_removed": round(without(order.flip(1)), 4),
        "first_loss": round(losses[0], 4),
        "final_loss": round(sum(losses[-10:]) / 10, 4),
        "seconds": round(seconds, 1),
    }
    return model, row


def maps_of(model, x_test, y_test):
    shown = []
    for digit in SHOWN_DIGITS:
        i = int((y_test == digit).nonzero()[0])
        image = x_test[i : i + 1]
        ids, cross = model.caption(image)
        word = decode_letters(ids)[0]
        with torch.no_grad():
            _, self_weights = model.encode(image)
        rollout = ac.attention_rollout([w[0] for w in self_weights])  # (N, N): memory token <- patches
        shown.append(
            {
                "test_index": i,
                "label": digit,
                "written": word,
                "image": image[0, 0].numpy().round(3).tolist(),
                # (H, T, N) -> (T, N), one row per letter written (and END)
                "cross_attention": cross[-1][0].mean(0)[: len(word) + 1].numpy().round(4).tolist(),
                "cross_attention_per_head": cross[-1][0][:, : len(word) + 1].numpy().round(4).tolist(),
                "rollout_mean": rollout.mean(0).numpy().round(4).tolist(),  # (N,): the patches' share
            }
        )
    return shown


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "attncourse" / "data" / "digit_captioner.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    data = digits_split()
    rows, shown = [], None
    for seed in args.seeds:
        model, row = run_seed(seed, args.epochs, data)
        rows.append(row)
        print(row, flush=True)
        if shown is None:
            shown = maps_of(model, data[2], data[3])
    result = {
        "settings": {
            "data": "sklearn load_digits, chapter 10's split (digits_split(): 1347 train, 450 held out)",
            "encoder": "VisionTransformer(8, 2, 1, d_model=32, n_heads=4, n_layers=2, d_ff=64), no head",
            "decoder": "1 pre-norm DecoderBlock(32, 4, 64), learned letter positions",
            "epochs": args.epochs,
            "seeds": args.seeds,
            "patches_removed": 4,
            "script": "scripts/experiments/digit_captioner.py",
            "machine": f"{platform.machine()}, torch {torch.__version__}, 1 thread",
            "total_seconds": round(time.perf_counter() - start, 1),
        },
        "runs": rows,
        "shown": shown,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
