#!/usr/bin/env python
"""Put each chapter's slider explorer into its notebook, right after the ``explorer-slot`` cell.

    python scripts/insert_explorers.py            # the chapters under book/
    python scripts/insert_explorers.py --check    # exit 1 if a notebook would change
    python scripts/insert_explorers.py --book-dir /some/other/book
    python scripts/insert_explorers.py --strip-widget-state   # after executing, before committing

A chapter asks for its explorer with a markdown cell tagged ``explorer-slot`` (the "Explore
it" heading and a sentence on what to try).  This script inserts one code cell after it that
imports and shows the chapter's explorer from ``attncourse.widgets``.  The inserted cell is
recognised by its metadata (``attncourse.explorer``), so running the script again changes
nothing, and a cell that has drifted (or sits in the wrong place) is rewritten and moved back
below the slot.  Notebooks without a slot are left alone.  Outputs are not touched: execute
the notebooks afterwards (the book build does).

Executing a notebook (nbconvert, nbclient) saves the widgets' state in its metadata: every
precomputed frame, up to about 1.5 MB per chapter.  The book build executes the chapters again
and embeds a fresh state in the HTML, so the committed notebooks need none:
``--strip-widget-state`` removes it (or execute with
``--ExecutePreprocessor.store_widget_state=False``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
SLOT_TAG = "explorer-slot"
MARKER = "attncourse"  # cell metadata key holding {"explorer": <function name>}

# notebook file name -> (explorer function, alt text of the picture it shows[, the call's arguments]).
# Chapter 8's explorer reads the chapter's trained ``model`` and its ``demo`` sequence.
EXPLORERS: Dict[str, Tuple[str, ...]] = {
    "00_why_attention.ipynb": (
        "kernel_explorer",
        "Interactive: a kernel-width slider and a query slider above a kernel-regression fit of noisy points "
        "and the query's attention weights over the training points.",
    ),
    "01_softmax.ipynb": (
        "softmax_explorer",
        "Interactive: a temperature slider, word buttons and a score slider (every score can be changed) above "
        "two bar charts, the scores divided by the temperature and the softmax weights with their entropy.",
    ),
    "02_dot_product_attention.ipynb": (
        "dot_product_explorer",
        "Interactive: query angle and length sliders above a query among five keys in the plane, and bar "
        "charts of the scores and the attention weights.",
    ),
    "03_scaling.ipynb": (
        "scaling_explorer",
        "Interactive: a scaled/unscaled toggle and a d_k slider above a heatmap of the attention weights of six "
        "of the chapter's random rows, each a query against its own 16 keys, and the mean entropy against d_k.",
    ),
    "04_self_attention.ipynb": (
        "self_attention_explorer",
        "Interactive: a word-order toggle and a token slider above the self-attention weights of a six-word "
        "sentence and a bar chart of what the chosen token attends to.",
    ),
    "05_multi_head_attention.ipynb": (
        "heads_explorer",
        "Interactive: n_heads and head sliders and a scale toggle (the square root of d_head, or of d_model: "
        "the bug) above the attention heatmaps of every head, or of one, over the chapter's six-word sentence, "
        "opening on its four heads of d_head 2; the caption gives each head's largest weight for 'sat', the "
        "mean row entropy and the parameter count.",
    ),
    "06_masked_attention.ipynb": (
        "mask_explorer",
        "Interactive: mask (padding, causal, top-left or bottom-right with fewer queries), padding side and "
        "fill-value buttons (-inf, -1e9, 0, -1e9 in float16) above three heatmaps: the boolean mask, the "
        "masked scores and the attention weights.",
    ),
    "07_positional_encoding.ipynb": (
        "positional_explorer",
        "Interactive: a sinusoid/RoPE/past-training-length toggle, d_model and position sliders above the "
        "encoding table or RoPE score matrix, one position's vector, and scores against the offset; past the "
        "training length, the table with the training length marked and the dimensions outside its range.",
    ),
    "08_transformer_block.ipynb": (
        "transformer_explorer",
        "Interactive: layer and head buttons above the trained model's attention map for that head on the demo "
        "sequence, with the induction cells circled, and tables scoring every head over the held-out sequences.",
        "model, demo, held_out=(test_tokens[:, :-1], determined(test_from, L_MAX - 1))",
    ),
    "09_efficient_attention.ipynb": (
        "efficient_explorer",
        "Interactive: block-size and step sliders above the online softmax over the chapter's row of scores "
        "3, 1, 4, 1, 5, block by block, the weights so far against the exact softmax, and the block size's "
        "trade-off between memory and loop steps.",
    ),
    "11_modern_attention.ipynb": (
        "modern_explorer",
        "Interactive: attention-kind (Llama-3-8B's own GQA, or the same model with MHA, MQA or MLA), window and "
        "sink buttons above its KV cache against sequence length, next to its weights, and the attention "
        "pattern of a window with sinks.",
    ),
    "10_vision_transformer.ipynb": (
        "vision_explorer",
        "Interactive: image, patch-size and view buttons above a digit with its patch grid and where the trained "
        "Vision Transformer's [CLS] token looks: each head of the chosen layer, or the attention rollout; it "
        "opens on the chapter's model (2 x 2 patches), its first 0 and layer 2.",
        "vision_maps",
    ),
    "12_cross_attention.ipynb": (
        "cross_explorer",
        "Interactive: digit, decoder-step and heads buttons above a digit and where the captioner's letter at "
        "that step reads the image: the heads' mean beside the encoder's rollout, or each head, laid over the "
        "patches with the largest outlined; it opens on the held-out 0 and the first letter of 'zero'.",
        "cap",
    ),
    "13_beyond_softmax.ipynb": (
        "state_explorer",
        "Interactive: method (linear, delta), state-size, stored-pairs and top-k buttons above three panels: "
        "the state after writing that many random pairs as a heat map, the trained models' saved recall "
        "accuracy against the number of pairs with the chosen one circled, and the trained stack's saved "
        "accuracy against top-k for the exact ranking and the stand-in indexers; it opens on DeltaNet with a "
        "state of 8 x 8, 4 pairs and top-k 4.",
        'recall, hybrid["topk"]',
    ),
}


def explorer_cell(function: str, alt: str, args: str = "") -> nbformat.NotebookNode:
    """The code cell that shows ``attncourse.widgets.<function>(<args>)``."""
    cell = nbformat.v4.new_code_cell(f"from attncourse.widgets import {function}\n\n{function}({args})")
    cell.metadata = {
        MARKER: {"explorer": function},
        "mystnb": {"image": {"alt": alt}},
        "tags": [],
    }
    cell.id = f"explorer-{function.removesuffix('_explorer')}"
    return cell


def _slot_index(nb: nbformat.NotebookNode) -> Optional[int]:
    slots = [i for i, c in enumerate(nb.cells) if SLOT_TAG in c.get("metadata", {}).get("tags", [])]
    if len(slots) > 1:
        raise ValueError(f"more than one cell is tagged {SLOT_TAG!r} (cells {slots})")
    return slots[0] if slots else None


def insert(nb: nbformat.NotebookNode, function: str, alt: str, args: str = "") -> bool:
    """Insert (or repair) the explorer cell after the slot; True if the notebook changed."""
    slot = _slot_index(nb)
    if slot is None:
        return False
    wanted = explorer_cell(function, alt, args)
    # Only explorer cells: exercise cells keep other entries under the same metadata key.
    existing: List[int] = [
        i for i, c in enumerate(nb.cells) if "explorer" in c.get("metadata", {}).get(MARKER, {})
    ]
    if len(existing) == 1 and existing[0] == slot + 1:
        cell = nb.cells[slot + 1]
        same = (
            cell.cell_type == "code"
            and cell.source == wanted.source
            and cell.metadata.get(MARKER) == wanted.metadata[MARKER]
            and cell.metadata.get("mystnb") == wanted.metadata["mystnb"]
        )
        if same:
            return False
        cell.source = wanted.source  # repaired in place: outputs and other metadata stay
        cell.metadata[MARKER] = wanted.metadata[MARKER]
        cell.metadata["mystnb"] = wanted.metadata["mystnb"]
        return True
    for i in reversed(existing):  # stray or duplicated explorer cells
        del nb.cells[i]
    slot = _slot_index(nb)
    if (nb.nbformat, nb.nbformat_minor) < (4, 5):
        del wanted["id"]  # cell ids came with nbformat 4.5
    elif any(c.get("id") == wanted.id for c in nb.cells):
        wanted.id = nbformat.v4.new_code_cell().id
    nb.cells.insert(slot + 1, wanted)
    return True


def strip_widget_state(nb: nbformat.NotebookNode) -> bool:
    """Drop the saved widget state (``metadata.widgets``); True if there was one."""
    return nb.metadata.pop("widgets", None) is not None


def process(book_dir: Path, check: bool = False, strip: bool = False) -> List[str]:
    """Insert the explorers into the notebooks under ``book_dir``; returns what changed."""
    changed = []
    for name, (function, alt, *args) in EXPLORERS.items():
        path = book_dir / name
        if not path.is_file():
            continue
        nb = nbformat.read(path, as_version=4)
        if strip and strip_widget_state(nb):
            changed.append(str(path))
            if not check:
                nbformat.write(nb, path)
            print(f"{path}: widget state {'would be ' if check else ''}removed")
        if _slot_index(nb) is None:
            print(f"{path}: no cell tagged {SLOT_TAG!r}; skipped")
            continue
        if insert(nb, function, alt, *args):
            changed.append(str(path))
            if not check:
                nbformat.validate(nb)
                nbformat.write(nb, path)
            print(f"{path}: {function}() {'would be ' if check else ''}inserted")
        else:
            print(f"{path}: {function}() already in place")
    return changed


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book-dir", type=Path, default=REPO_ROOT / "book")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if anything would change"
    )
    parser.add_argument(
        "--strip-widget-state",
        action="store_true",
        help="also remove the widget state that executing saved in the notebooks' metadata",
    )
    args = parser.parse_args(argv)
    changed = process(args.book_dir, check=args.check, strip=args.strip_widget_state)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
