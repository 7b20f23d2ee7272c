"""Chapter 11's experiment scripts: reduced reruns, and the saved results the chapter loads."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import numpy as np
import pytest
import torch

import attncourse as ac

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "attncourse" / "data"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # a reduced training run / every frame: the full tier runs it
def test_gqa_quick_run_matches_parameters_and_cache():
    gqa = _load("gqa_seeds")
    out = gqa.run(quick=True)
    rows = out["variants"]
    params = [r["parameters"] for r in rows.values()]
    assert (max(params) - min(params)) / max(params) < 2e-3
    assert [r["cache_bytes_per_token"] for r in rows.values()] == [1024, 512, 256]
    for r in rows.values():
        assert all(0 <= a <= 1 for a in r["accuracy"]) and len(r["accuracy"]) == 1


def test_gqa_saved_results_are_the_full_run():
    saved = json.loads((DATA / "gqa_seeds.json").read_text())
    assert saved["steps"] == 400 and saved["seeds"] == [0, 1, 2, 3, 4, 5]
    assert {k: (v["n_kv_heads"], v["d_ff"]) for k, v in saved["variants"].items()} == {
        "MHA": (4, 128),
        "GQA": (2, 160),
        "MQA": (1, 176),
    }
    assert all(len(v["accuracy"]) == 6 for v in saved["variants"].values())


@pytest.mark.parametrize("name", ["linear", "dynamic", "yarn", "llama3"])
@pytest.mark.parametrize("E,seq_len", [(16, 128), (16, 20), (64, 300)])
def test_script_frequencies_equal_the_package(name, E, seq_len):
    ce = _load("context_extension")
    scaling = ce.SCALINGS[name]
    ours, att = ce.scaled_inv_freq(E, scaling, seq_len, ce.TRAIN_LEN)
    pkg, pkg_att = ac.rope_frequencies(E, scaling=scaling, seq_len=seq_len)
    np.testing.assert_allclose(ours.numpy(), pkg, rtol=1e-12)
    assert att == pytest.approx(pkg_att)
    x = torch.randn(2, seq_len, E, dtype=torch.float64)
    positions = torch.arange(seq_len, dtype=torch.float64)  # float64 angles, as the script computes them
    torch.testing.assert_close(
        ce.rope_scaled(x, scaling, ce.TRAIN_LEN), ac.apply_rope(x, positions, scaling=scaling)
    )


def test_script_alibi_slopes_equal_the_package():
    ce = _load("context_extension")
    np.testing.assert_allclose(ce.alibi_slopes(4).numpy(), ac.alibi_slopes(4))


@pytest.mark.slow  # a reduced training run / every frame: the full tier runs it
def test_context_extension_quick_run():
    ce = _load("context_extension")
    out = ce.run(quick=True)
    names = {"none", "linear", "dynamic", "yarn", "llama3", "alibi"}
    assert set(out["zero_shot"]) == set(out["finetuned"]) == names
    assert out["seeds"] == [0] and len(out["train_loss"]["alibi"]) == 1
    for table in (out["zero_shot"], out["finetuned"]):
        for runs in table.values():
            assert len(runs) == 1 and len(runs[0]) == len(out["eval_lengths"])
            assert all(0 <= a <= 1 for a in runs[0])
    text = out["sinks"]["accuracy"]["positions in the text"]
    cache = out["sinks"]["accuracy"]["positions in the cache"]
    assert list(text) == ["full causal", "0 sinks", "1 sinks", "4 sinks"] and list(cache) == list(text)[1:]
    # without sinks the window keeps its distances either way (RoPE is relative)
    assert cache["0 sinks"][0] == pytest.approx(text["0 sinks"][0], abs=0.01)
    assert len(out["sinks"]["first_token_weight"]) == 1


def test_context_extension_saved_results_are_the_full_run():
    ce = _load("context_extension")
    saved = json.loads((DATA / "context_extension.json").read_text())
    assert saved["seeds"] == ce.SEEDS == [0, 1, 2]
    assert (saved["steps"], saved["alibi_steps"], saved["finetune_steps"], saved["n_eval"]) == (
        ce.STEPS,
        ce.ALIBI_STEPS,
        ce.FINETUNE_STEPS,
        ce.N_EVAL,
    )
    assert saved["eval_lengths"] == [32, 64, 128, 256]
    assert (saved["sinks"]["length"], saved["sinks"]["window"]) == (256, 32)
    for table in (saved["zero_shot"], saved["finetuned"]):
        assert all(len(runs) == 3 and all(len(r) == 4 for r in runs) for runs in table.values())
    assert all(loss < 0.1 for loss in saved["train_loss"]["rope"])  # learned at the training length
