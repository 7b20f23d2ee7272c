"""The saved experiment results that chapters 0, 3, 5 and 8 load (attncourse/data/*.json) come from the
scripts in scripts/experiments/ as they are now: each script reruns here in a reduced form, and
what the reduced run shares with the saved one (parameter counts, the loss of the first steps,
which depends only on the seed) must agree."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from attncourse.toy_data import repeat_task

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "attncourse" / "data"


def _script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _saved(name):
    return json.loads((DATA / name).read_text())


def test_seq2seq_sweep_is_complete_and_parameter_matched():
    from attncourse.seq2seq import Seq2Seq, matched_hidden, n_parameters

    saved = _saved("seq2seq_lengths.json")
    settings = saved["settings"]
    assert len(settings["seeds"]) >= 3
    kinds = {"final state": None, "additive attention": "additive", "dot-product attention": "dot"}
    runs = saved["runs"]
    assert len(runs) == len(settings["lengths"]) * len(kinds) * len(settings["seeds"])
    width = matched_hidden(10, settings["d_hidden_attention"], "additive")
    for run in runs:
        d = width if kinds[run["kind"]] is None else settings["d_hidden_attention"]
        assert run["parameters"] == n_parameters(Seq2Seq(10, d, kinds[run["kind"]]))
    assert set(saved["mean_attention_maps"]) == {"additive attention", "dot-product attention"}
    for rows in saved["mean_attention_maps"].values():
        np.testing.assert_allclose(np.array(rows).sum(-1), 1, atol=1e-2)  # distributions over s


@pytest.mark.slow
def test_seq2seq_script_reruns_reduced(tmp_path):
    out = tmp_path / "s.json"
    _script("seq2seq_lengths").main(["--lengths", "3", "--seeds", "0", "--steps", "3", "--out", str(out)])
    result = json.loads(out.read_text())
    saved = _saved("seq2seq_lengths.json")["runs"]
    for run in result["runs"]:
        assert 0 <= run["symbol_accuracy"] <= 1
        assert run["parameters"] == next(r["parameters"] for r in saved if r["kind"] == run["kind"])


@pytest.mark.slow
def test_scaling_script_reproduces_the_saved_first_steps(tmp_path):
    saved = _saved("scaling_training.json")
    assert len(saved["settings"]["seeds"]) >= 3
    assert {(r["d_k"], r["scaled"]) for r in saved["runs"]} == {
        (64, False),
        (64, True),
        (128, False),
        (128, True),
    }
    out = tmp_path / "s.json"
    _script("scaling_training").main(["--d-ks", "64", "--seeds", "0", "--steps", "3", "--out", str(out)])
    for run in json.loads(out.read_text())["runs"]:
        same = next(r for r in saved["runs"] if (r["d_k"], r["scaled"], r["seed"]) == (64, run["scaled"], 0))
        np.testing.assert_allclose(run["curve"], same["curve"][:3], rtol=1e-3)
        assert run["initial_largest_weight"] == pytest.approx(same["initial_largest_weight"], abs=1e-3)


@pytest.mark.slow
def test_heads_script_reproduces_the_saved_first_steps(tmp_path):
    saved = _saved("heads_two_lookups.json")
    assert len(saved["settings"]["seeds"]) >= 3
    assert sorted({r["n_heads"] for r in saved["runs"]}) == [1, 2, 4]
    assert len({r["parameters"] for r in saved["runs"]}) == 1  # parameter-matched
    out = tmp_path / "h.json"
    _script("heads_two_lookups").main(
        ["--heads", "1", "2", "--seeds", "0", "--steps", "10", "--out", str(out)]
    )
    for run in json.loads(out.read_text())["runs"]:
        same = next(r for r in saved["runs"] if (r["n_heads"], r["seed"]) == (run["n_heads"], 0))
        assert run["parameters"] == same["parameters"]
        np.testing.assert_allclose(run["curve_every_10"][0], same["curve_every_10"][0], rtol=1e-3)


@pytest.mark.slow
def test_transformer_script_reproduces_the_saved_first_steps(tmp_path):
    saved = _saved("transformer_norm_warmup.json")
    assert len(saved["settings"]["seeds"]) >= 3
    keys = {(r["norm"], r["warmup"]) for r in saved["norm_warmup"]}
    assert keys == {("pre-norm", 0), ("pre-norm", 30), ("post-norm", 0), ("post-norm", 30)}
    scarce = _saved("transformer_dropout_scarce.json")
    assert sorted({r["dropout"] for r in scarce["dropout_scarce"]}) == [0.0, 0.1]
    assert len(scarce["settings"]["seeds"]) >= 3
    out = tmp_path / "t.json"
    _script("transformer_training").main(["--seeds", "0", "--steps", "2", "--out", str(out)])
    for run in json.loads(out.read_text())["norm_warmup"]:
        same = next(
            r
            for r in saved["norm_warmup"]
            if (r["norm"], r["warmup"], r["seed"]) == (run["norm"], run["warmup"], 0)
        )
        # Step 0's loss depends only on the seed and the first batch, not on the schedule's length.
        assert run["curve"][0] == pytest.approx(same["curve"][0], rel=1e-3)


def test_chapter_8_builds_the_sequences_the_scripts_train_on():
    # the chapter writes its task out as teaching code; the scripts import toy_data.repeat_task
    torch = pytest.importorskip("torch")
    nb = json.loads((ROOT / "book" / "08_transformer_block.ipynb").read_text(encoding="utf-8"))
    (source,) = ["".join(c["source"]) for c in nb["cells"] if "def make_sequences" in "".join(c["source"])]
    namespace = {"np": np, "torch": torch, "V": 32, "L_MAX": 32}
    exec(source[: source.index("\nexample, example_from")], namespace)
    tokens, repeat_from = namespace["make_sequences"](40, np.random.default_rng(7))
    expected_tokens, expected_from, expected_determined = repeat_task(40, np.random.default_rng(7))
    np.testing.assert_array_equal(tokens.numpy(), expected_tokens)
    np.testing.assert_array_equal(repeat_from.numpy(), expected_from)
    np.testing.assert_array_equal(namespace["determined"](repeat_from, 32).numpy(), expected_determined)
