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
from attncourse.exercises.engine.compare import expected_outputs

BOOK = ROOT / "book"
# chapters 0-9 here; a new chapter joins by adding its key once its exercises pass
CHECKED = {f"ch0{n}" for n in range(10)} | {"ch10", "ch11", "ch12"}
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


# A printed number that equals an answer's spelling by chance, with what it is in the chapter.
COINCIDENCES = {
    ("ch02.output_jacobian", "0.155"): "the weight of 'sat' for the query 'on' with keys of length 1, in "
    "chapter 2's length-times-cosine table; 2.2's Jacobian entries are of another computation",
}


@pytest.mark.parametrize("ex", ASKED, ids=[ex.id for ex in ASKED])
def test_the_answer_is_not_printed_in_the_chapter(ex):
    if not (BOOK / f"{CHAPTERS[ex.chapter][1]}.ipynb").exists():
        pytest.skip(f"{ex.chapter}'s notebook is not written yet")
    text = chapter_text(ex.chapter)
    shown = [s for s in sorted(answers(ex)) if re.search(rf"(?<![\w.]){re.escape(s)}(?![\w]|\.\d)", text)]
    shown = [s for s in shown if (ex.id, s) not in COINCIDENCES]
    assert not shown, f"{ex.number} ({ex.id}): the chapter already prints {shown}"


# Exercises on a situation their chapter does not show: other numbers, shapes, a variant, a bug
# the chapter does not demonstrate.  Each entry says what is new.
NEW_SITUATIONS = {
    "ch00": {
        "ch00.kernel_classifier": "the regression turned into a classifier: class labels as targets, a probability per class",
        "ch00.additive_long_query": "the limit of additive weights as the query grows, where tanh saturates in one coordinate only",
        "ch00.effective_keys": "the width experiment's few-or-all keys put as a number, 1 / P(two draws agree)",
        "ch00.regression_from_counts": "the regression on raw readings of which only counts and means per place are kept",
    },
    "ch01": {
        "ch01.temperature_softmax": "one temperature per row, where a square batch broadcasts the wrong way",
        "ch01.temperature_derivative": "the derivative of the weights with respect to the temperature",
        "ch01.entropy_gradient": "the entropy's gradient with respect to the logits, with masked keys",
        "ch01.attention_kl": "the KL of two softmaxes whose weights underflow, with masked keys (the chapter computes no KL)",
        "ch01.log_sigmoid": "log sigma(z) in both tails: a yes/no choice seen as a two-score softmax",
        "ch01.smooth_max_slope": "the temperature derivative of the smooth maximum T logsumexp(x / T)",
    },
    "ch02": {
        "ch02.output_jacobian": "how an output moves with its own query (the chapter never differentiates)",
        "ch02.query_for_weights": "attention run backwards: the query that gives chosen weights",
        "ch02.predict_key_stretch": "how far a key inside the others' hull must be stretched before some query ranks it first",
        "ch02.recover_key_lengths": "the keys' lengths read back from a layer's weights and the keys' directions",
    },
    "ch03": {
        "ch03.recover_scale": "a layer's unknown scale picked out by its weights, some of them underflowed to 0",
        "ch03.predict_cosine_factor": "queries and keys normalised to unit length, then multiplied by a factor",
        "ch03.two_part_attention": "scores summed from two dot products of different widths, one part shared by the heads",
        "ch03.packed_head_attention": "heads padded with zeros for a kernel, where the scale must not follow the padding",
        "ch03.weights_not_normalised": "a softmax written in log space whose normaliser and exponent disagree",
    },
    "ch04": {
        "ch04.output_without_token": "a token deleted from a run whose tokens and projections are gone",
        "ch04.predict_distinct_weights": "how many different entries a repeated-word sentence's weights can hold",
        "ch04.attention_with_counts": "keys repeated n times, attended without writing the copies out",
        "ch04.add_projection_biases": "biases on the keys and the values added to a run kept without them",
        "ch04.self_attention_in_blocks": "self-attention computed a block of queries at a time, a form the chapter does not show",
    },
    "ch05": {
        "ch05.heads_from_averaged_weights": "a layer's head count recovered from its head-averaged maps",
        "ch05.weights_from_dealt_heads": "weights of a layer whose heads are dealt features in turn, moved into the course's layout",
        "ch05.merge_copied_heads": "a layer holding two copies of one head, merged into a layer with one head fewer",
        "ch05.predict_causal_top_keys": "the width-1 head's two-key limit under a causal mask",
        "ch05.mha_uneven_heads": "heads of different widths in one layer, which the chapter's constructor refuses",
        "ch05.mha_forward": "the heads folded into the batch axis, (B * H, L, d_head), a form the chapter does not show",
    },
    "ch06": {
        "ch06.packed_causal_mask": "documents packed into one row: causal within each document only",
        "ch06.masked_logsumexp": "the log-sum-exp of the visible keys, -inf for a row with none",
        "ch06.ring_cache_attention": "a decode step against a rolling-buffer KV cache, slots not in position order",
        "ch06.mask_from_additive": "an additive bias holding position terms and blocked keys, read back as a mask",
        "ch06.local_global_attention": "windowed and full causal heads in one layer",
        "ch06.streaming_settings": "each head's StreamingLLM window and sink count read back from its weights",
        "ch06.key_major_decoder": "a causal mask on scores stored key-major, (S, L), normalised per column",
        "ch06.first_wrong_cached_output": "the first query a one-token-at-a-time cache gets wrong, for masks of several kinds",
        "ch06.lengths_from_output": "a padded batch's lengths recovered from its attention output",
    },
    "ch07": {
        "ch07.rope_left_padded": "RoPE on a left-padded batch, each sequence at its own positions",
        "ch07.move_rotated_keys": "keys cached after RoPE, renumbered without their unrotated form",
        "ch07.recover_alibi_slopes": "learned ALiBi slopes read back from a layer's content scores and weights",
        "ch07.alibi_chunk_attention": "ALiBi for a chunk of queries at the end of a cached sequence",
        "ch07.rope_position": "positions recovered from a vector and its RoPE rotation",
        "ch07.predict_encoder_alibi_weight": "ALiBi in an encoder: keys on both sides, a query near the start",
    },
    "ch08": {
        "ch08.attention_head_count": "an attention sublayer's head count recovered without its query and key weights",
        "ch08.layer_norm_parameters": "a layer norm's gamma and beta recovered from its inputs and outputs",
        "ch08.sampling_settings": "a sampler's temperature and top-k recovered from its distributions",
        "ch08.post_norm_blocks": "telling post-norm blocks from pre-norm ones by their outputs alone",
        "ch08.value_ablation_difference": "a head switched off through its value weights instead of out_proj",
    },
    "ch09": {
        "ch09.add_sink": "a sink logit added to a finished pass's out and lse (the chapter has no sink)",
        "ch09.causal_tiled_attention": "a causal tiling that skips tiles",
        "ch09.static_cache_step": "a preallocated cache shared by sequences of different lengths",
        "ch09.remove_keys": "keys taken back out of a finished pass from its saved out and logsumexp",
        "ch09.split_decode": "a decoding step split among workers, each reporting its part (the chapter decodes on one)",
        "ch09.beam_cache_step": "KV caches carried through a beam search step (the chapter decodes one sequence)",
    },
    "ch10": {
        "ch10.window_attention_mask": "window attention tiled over a patch grid, windows cut short and a [CLS] token",
        "ch10.resize_positions": "learned positions interpolated to another grid, never done there",
        "ch10.padded_patch_mask": "the key mask of a batch of images of different sizes, padded to one canvas",
        "ch10.pool_real_patches": "mean-pooling the real patches of a padded batch with register tokens",
        "ch10.predict_window_scores": "the scores window attention computes on a grid its windows do not divide",
    },
    "ch11": {
        "ch11.stack_reach": "how far back a stack of windowed, sink and full layers reads, never traced there",
        "ch11.kv_head_map": "which key/value head each query head read, recovered from a layer's outputs",
        "ch11.window_prefill": "a windowed cache feeding a chunk of several queries (the chapter decodes one token at a time)",
        "ch11.recover_block_table": "a lost block table recovered from the pool, with blocks that begin alike",
        "ch11.predict_cache_gib": "the cache of a model mixing windowed and full layers, never computed there",
        "ch11.pairs_in_range": "which RoPE pairs stay inside the trained arc under a scaling, never asked there",
    },
    "ch12": {
        "ch12.predict_beam_cache_bytes": "the caches of a beam search, which the chapter does not run",
        "ch12.prefix_decoder_mask": "a decoder-only prefix mask, which the chapter does not show",
        "ch12.remove_source_tokens": "masking source tokens after the softmax",
        "ch12.interleaved_image_attention": "gated cross-attention of text positions to the last image before them (the chapter's captioner reads one image, ungated)",
        "ch12.latent_resampler": "cross-attention whose queries are learned latents and whose keys include them (the chapter only describes it)",
        "ch12.packed_cross_mask": "the cross-attention mask of packed examples",
        "ch12.packed_decoder_block": "a decoder block over packed examples, which the chapter does not pack",
        "ch12.beam_decoder_step": "a beam search's decoding step with reordered caches, which the chapter does not run",
    },
    "ch13": {
        "ch13.predict_hybrid_mib": "the memory of a hybrid configuration the chapter does not tabulate",
        "ch13.recover_decays": "a gated layer's per-token decays recovered from its outputs (the chapter runs the layer forward)",
        "ch13.chunked_linear_attention": "a bug in the chunked form of normalised linear attention, found from which outputs are wrong (the chapter shows the recurrence and the quadratic form)",
        "ch13.chunked_delta_rule": "the delta rule in chunks (the chapter shows it one position at a time)",
        "ch13.indexed_sparse_attention": "a bug in multi-head sparse attention whose keys a multi-head ReLU indexer picks, found from which queries are wrong (the chapter calls the package's top-k with a rank-r stand-in)",
        "ch13.recover_delta_values": "a DeltaNet layer's values recovered from its outputs (the chapter runs the layer forward)",
    },
}


@pytest.mark.parametrize("chapter", sorted(NEW_SITUATIONS))
def test_every_chapter_has_two_exercises_on_situations_it_does_not_show(chapter):
    ids = {ex.id for ex in all_exercises(chapter)}
    listed = NEW_SITUATIONS[chapter]
    assert len(listed) >= 2 and set(listed) <= ids
