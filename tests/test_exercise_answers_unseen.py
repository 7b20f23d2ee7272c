"""No exercise's answer is printed in its chapter before it is asked (nor after it, outside the
exercise's own cells): every predict and derive answer, computed on the public cases, is searched
for in the chapter's prose, code and saved outputs.  And every chapter asks, at least twice, about
a situation it does not show (``NEW_SITUATIONS``: the exercises whose numbers, shapes, variant or
bug the chapter never computes)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from exercise_support import ROOT

from attncourse.exercises import CHAPTERS, all_exercises
from attncourse.exercises._compare import expected_outputs

BOOK = ROOT / "book"
# chapters 0-9 here; a new chapter joins by adding its key once its exercises pass
CHECKED = {f"ch0{n}" for n in range(10)} | {"ch10"}
ASKED = [ex for ex in all_exercises() if ex.kind in ("predict", "derive") and ex.chapter in CHECKED]


def chapter_text(chapter: str) -> str:
    """Prose, code and saved outputs of the chapter, without the exercise cells themselves."""
    nb = json.loads((BOOK / f"{CHAPTERS[chapter][1]}.ipynb").read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        if "attncourse" in (cell.get("metadata") or {}):
            continue  # the exercises' own cells (prompt, exercise, check, worked solution)
        parts.append("".join(cell.get("source", "")))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            data = out.get("data", {})
            parts.append("".join(data.get("text/plain", "")))
            parts.append("".join(data.get("text/html", "")))
    return "\n".join(parts)


def spellings(x: float) -> set:
    """How a number is written when printed: 88.72, 88.7, 6.711e+07, 67108864, 67,108,864 ..."""
    out = set()
    if float(x).is_integer() and abs(x) < 1e15:
        n = int(x)
        if abs(n) >= 100:  # small integers (2, 64) are everywhere in a chapter; not a give-away alone
            out |= {str(n), f"{n:,}", f"{n:_}"}
    else:
        for f in ("{:.2f}", "{:.3g}", "{:.4g}", "{:.3f}"):
            text = f.format(x)
            if len(text.replace("-", "").replace(".", "").lstrip("0")) >= 3:
                out.add(text)
    return out


def answers(ex) -> set:
    found = set()
    for case in ex.public_cases():
        for arr in expected_outputs(ex, case):
            for x in np.asarray(arr, dtype=float).ravel()[:64]:
                if np.isfinite(x):
                    found |= spellings(float(x))
    return found


@pytest.mark.parametrize("ex", ASKED, ids=[ex.id for ex in ASKED])
def test_the_answer_is_not_printed_in_the_chapter(ex):
    if not (BOOK / f"{CHAPTERS[ex.chapter][1]}.ipynb").exists():
        pytest.skip(f"{ex.chapter}'s notebook is not written yet")
    text = chapter_text(ex.chapter)
    shown = [s for s in sorted(answers(ex)) if re.search(rf"(?<![\w.]){re.escape(s)}(?![\w]|\.\d)", text)]
    assert not shown, f"{ex.number} ({ex.id}): the chapter already prints {shown}"


# Exercises on a situation their chapter does not show: other numbers, shapes, a variant, a bug
# the chapter does not demonstrate.  Each entry says what is new.
NEW_SITUATIONS = {
    "ch00": {
        "ch00.bottleneck_numbers": "the numbers a decoder reads with and without attention",
        "ch00.bilinear_attention": "a learned bilinear score q W k^T",
    },
    "ch01": {
        "ch01.logit_gap": "the logit gap that gives the leader weight p among n",
        "ch01.predict_overflow_logit": "where the sum of 1000 float32 exponentials overflows",
    },
    "ch02": {
        "ch02.fix_softmax_axis": "a whole-matrix normalisation, a bug the chapter does not show",
        "ch02.predict_shapes": "shapes with a batch and L != S != E != Ev, not the chapter's",
    },
    "ch03": {
        "ch03.expected_abs_score": "the mean |score| under a temperature",
        "ch03.predict_score_variance": "scaled scores of inputs with variances 2.5 and 3, not 1",
        "ch03.init_std_for_unscaled_scores": "an initialisation of the saved run's W_q, W_k that needs no scale",
        "ch03.fix_scale_size": "a scale read from the number of keys, a bug the chapter does not show",
        "ch03.fix_late_scaling": "a scale applied after the softmax, a bug the chapter does not show",
    },
    "ch04": {
        "ch04.unpermute": "undoing a permutation of the tokens (the chapter only applies one)",
        "ch04.predict_projection_parameters": "the projections' size for d_model 512, d_k 64",
        "ch04.attention_with_counts": "keys repeated n times, attended without writing the copies out",
        "ch04.attention_overtakes_projections": "the length at which attention outgrows the projections",
        "ch04.fix_output_mix": "outputs mixed with the transposed weights, a bug the chapter does not show",
    },
    "ch05": {
        "ch05.predict_mha_parameters": "the size of a grouped-query layer",
        "ch05.heads_for_lookups": "reading trained maps for lookups the experiment did not train",
        "ch05.predict_heads_for_three_lookups": "the head count a three-lookup task needs at d_model 32",
        "ch05.predict_kdim_vdim_parameters": "nn.MultiheadAttention with kdim and vdim",
        "ch05.fix_head_split": "heads that own combs of columns, a bug the chapter does not show",
    },
    "ch06": {
        "ch06.masked_uniform_entropy": "the entropy of padded rows, for lengths the chapter does not use",
        "ch06.padded_cross_attention": "padding in cross-attention's keys",
    },
    "ch07": {
        "ch07.alibi_attention": "ALiBi biases",
        "ch07.predict_longest_wavelength": "how far the slowest RoPE pair reaches, never computed there",
    },
    "ch08": {
        "ch08.next_token_loss": "a padded next-token loss",
        "ch08.predict_mlp_share": "the MLP's share of a block's parameters",
    },
    "ch09": {
        "ch09.merge_partials": "merging two split-K partial results",
        "ch09.causal_tiled_attention": "a causal tiling that skips tiles",
    },
    "ch10": {
        "ch10.predict_tokens": "the sequence length of a ViT on 224 x 224 images",
        "ch10.predict_embedding_parameters": "the input layers of an RGB ViT the chapter does not build",
        "ch10.rollout_alpha": "a rollout whose residual share is not one half",
    },
    "ch11": {
        "ch11.window_sink_chunk": "a window with sinks for a chunk of new queries (bottom-right)",
        "ch11.absorb_value_side": "absorbing MLA's value up-projection into the output",
        "ch11.predict_cache_gib": "the cache of a configuration the chapter does not tabulate",
    },
}


@pytest.mark.parametrize("chapter", sorted(NEW_SITUATIONS))
def test_every_chapter_has_two_exercises_on_situations_it_does_not_show(chapter):
    ids = {ex.id for ex in all_exercises(chapter)}
    listed = NEW_SITUATIONS[chapter]
    assert len(listed) >= 2 and set(listed) <= ids
