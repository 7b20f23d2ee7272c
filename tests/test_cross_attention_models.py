"""Chapter 12's models and saved experiments: the reversal Transformer and the digit captioner.

The saved results (attncourse/data/seq2seq_transformer.json, digit_captioner.json) come from the
scripts in scripts/experiments/ as they are now: each reruns here reduced, and what the reduced
run shares with the saved one (parameter counts, the first loss, which depends only on the seed)
must agree.  The models' own contracts (cached greedy decoding, the cross-attention weights,
removed patches) are checked directly.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from attncourse.models.captioner import (  # noqa: E402
    DIGIT_NAMES,
    END,
    DigitCaptioner,
    decode_letters,
    encode_names,
)
from attncourse.models.seq2seq_transformer import REVERSAL_CONFIG, TransformerSeq2Seq  # noqa: E402
from attncourse.seq2seq import Seq2Seq, n_parameters  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "attncourse" / "data"


def _script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _saved(name):
    return json.loads((DATA / name).read_text())


def test_reversal_transformer_matches_chapter_0s_settings_and_parameter_count():
    saved, gru = _saved("seq2seq_transformer.json"), _saved("seq2seq_lengths.json")
    for key in ("lengths", "seeds", "steps", "batch_size", "lr", "held_out_sequences"):
        assert saved["settings"][key] == gru["settings"][key], key
    runs = saved["runs"]
    assert len(runs) == len(saved["settings"]["lengths"]) * len(saved["settings"]["seeds"])
    count = n_parameters(TransformerSeq2Seq(10, **REVERSAL_CONFIG))
    assert all(r["parameters"] == count for r in runs)
    additive = n_parameters(Seq2Seq(10, 32, "additive"))
    assert abs(count - additive) / additive < 0.01  # matched to within 1%
    maps = np.array(saved["cross_attention_maps"]["per_head"])  # (H, n, n)
    assert maps.shape == (
        REVERSAL_CONFIG["n_heads"],
        saved["settings"]["map_length"],
        saved["settings"]["map_length"],
    )
    np.testing.assert_allclose(maps.sum(-1), 1, atol=1e-2)


@pytest.mark.slow
def test_reversal_script_reruns_reduced(tmp_path):
    out = tmp_path / "r.json"
    _script("seq2seq_transformer").main(
        ["--lengths", "3", "--seeds", "0", "--steps", "3", "--map-length", "3", "--out", str(out)]
    )
    result = json.loads(out.read_text())
    saved = _saved("seq2seq_transformer.json")["runs"][0]
    (run,) = result["runs"]
    assert run["parameters"] == saved["parameters"]
    assert 0 <= run["sequence_accuracy"] <= run["symbol_accuracy"] <= 1
    np.testing.assert_allclose(
        np.array(result["cross_attention_maps"]["heads_averaged"]).sum(-1), 1, atol=1e-2
    )


def test_cached_greedy_decoding_writes_what_the_full_model_writes():
    torch.manual_seed(0)
    model = TransformerSeq2Seq(10, d_model=16, n_heads=2, n_layers=2, d_ff=32).eval()
    source = torch.randint(0, 10, (4, 9), generator=torch.Generator().manual_seed(1))
    cached, _ = model.greedy(source, 6)
    written = source[:, :0]
    with torch.no_grad():
        for _ in range(6):  # without any cache: the whole model on the target so far
            logits, _ = model(source, torch.cat([written, torch.zeros_like(source[:, :1])], dim=1))
            written = torch.cat([written, logits[:, -1:].argmax(-1)], dim=1)
    assert torch.equal(cached, written)


def test_decode_returns_cross_attention_weights_that_skip_padding():
    torch.manual_seed(0)
    model = TransformerSeq2Seq(10, d_model=16, n_heads=2, n_layers=2, d_ff=32).model.eval()
    src, tgt = torch.randn(2, 6, 16), torch.randn(2, 4, 16)
    pad = torch.arange(6) < torch.tensor([[6], [3]])
    with torch.no_grad():
        memory = model.encode(src, pad)
        out, weights = model.decode(tgt, memory, src_padding=pad, return_weights=True)
        torch.testing.assert_close(out, model.decode(tgt, memory, src_padding=pad))
    assert len(weights) == 2 and tuple(weights[0].shape) == (2, 2, 4, 6)
    for w in weights:
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 4))
        assert float(w[1, :, :, 3:].abs().max()) == 0.0  # the padded source keys


def test_digit_names_round_trip_through_letter_ids():
    ids = encode_names(torch.arange(10))
    assert ids.shape == (10, 6) and bool((ids[:, -1] == END).all())
    assert decode_letters(ids) == list(DIGIT_NAMES)


def test_a_removed_patch_changes_no_letter_logit():
    torch.manual_seed(0)
    model = DigitCaptioner().eval()
    images = torch.rand(3, 1, 8, 8)
    keep = torch.ones(3, 16, dtype=torch.bool)
    keep[:, 5] = False  # patch (1, 1): pixels rows 2-3, columns 2-3
    changed = images.clone()
    changed[:, :, 2:4, 2:4] += 5.0
    letters = encode_names(torch.tensor([7, 0, 3]))
    with torch.no_grad():
        a, _, _ = model(images, letters, keep=keep)
        b, _, cross = model(changed, letters, keep=keep)
        c, _, _ = model(changed, letters)
    torch.testing.assert_close(a, b)
    assert float(cross[0][:, :, :, 5].abs().max()) == 0.0
    assert float((c - a).abs().max()) > 1e-3  # kept, the same change does show


def test_captioner_results_are_complete():
    saved = _saved("digit_captioner.json")
    assert len(saved["runs"]) == len(saved["settings"]["seeds"]) >= 3
    count = n_parameters(DigitCaptioner())
    for run in saved["runs"]:
        assert run["parameters"] == count
        assert 0 <= run["word_accuracy"] <= run["letter_accuracy"] <= 1
    for shown in saved["shown"]:
        cross = np.array(shown["cross_attention"])
        assert cross.shape == (len(shown["written"]) + 1, 16)
        np.testing.assert_allclose(cross.sum(-1), 1, atol=1e-2)
        np.testing.assert_allclose(sum(shown["rollout_mean"]), 1, atol=1e-2)


@pytest.mark.slow
def test_captioner_script_reruns_reduced_with_the_saved_first_loss(tmp_path):
    out = tmp_path / "c.json"
    _script("digit_captioner").main(["--seeds", "0", "--epochs", "1", "--out", str(out)])
    (run,) = json.loads(out.read_text())["runs"]
    saved = _saved("digit_captioner.json")["runs"][0]
    assert run["parameters"] == saved["parameters"]
    assert run["first_loss"] == pytest.approx(saved["first_loss"], abs=2e-4)
