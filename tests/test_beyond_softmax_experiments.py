"""Chapter 13's experiment script: its chunked delta rule, a reduced rerun, and the saved results."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest
import torch

import attncourse as ac

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "attncourse" / "data"


def _load():
    path = ROOT / "scripts" / "experiments" / "recall_state_size.py"
    spec = importlib.util.spec_from_file_location("recall_state_size", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("L,chunk", [(37, 8), (16, 16), (5, 16), (1, 4)])
def test_chunked_delta_rule_equals_the_package(gated, L, chunk):
    script = _load()
    g = torch.Generator().manual_seed(L + chunk)
    B, E, Ev = 3, 6, 5
    q = torch.randn(B, L, E, generator=g, dtype=torch.float64)
    k = torch.nn.functional.normalize(torch.randn(B, L, E, generator=g, dtype=torch.float64), dim=-1)
    v = torch.randn(B, L, Ev, generator=g, dtype=torch.float64)
    beta = torch.rand(B, L, generator=g, dtype=torch.float64)
    decay = 0.5 + 0.5 * torch.rand(B, L, generator=g, dtype=torch.float64) if gated else None
    out, state = ac.delta_rule(q, k, v, beta, decay=decay)
    out_c, state_c = script.chunked_delta_rule(q, k, v, beta, decay, chunk=chunk)
    torch.testing.assert_close(out_c, out)
    torch.testing.assert_close(state_c, state)


def test_the_cheap_indexer_at_full_rank_is_the_unscaled_score():
    script = _load()
    torch.manual_seed(0)
    mixer = script.Mixer(d_model=12, E=4, method="softmax").double()
    h = torch.randn(2, 7, 12, dtype=torch.float64)
    q, k, _ = mixer.qkv(h).split(4, dim=-1)
    torch.testing.assert_close(mixer.index_scores(h, 12), q @ k.transpose(-1, -2))
    low = mixer.index_scores(h, 2)
    assert torch.linalg.matrix_rank(low[0]) <= 2


def test_recall_batch_asks_for_stored_keys():
    import numpy as np

    script = _load()
    tokens, targets = script.recall_batch(5, 6, np.random.default_rng(0))
    assert tokens.shape == (5, 2 * 6 + script.N_QUERIES) and targets.shape == (5, script.N_QUERIES)
    for seq, want in zip(tokens.tolist(), targets.tolist()):
        pairs = dict(zip(seq[0:12:2], seq[1:12:2]))
        assert len(pairs) == 6  # distinct keys
        assert [pairs[key] for key in seq[12:]] == want


def test_reduced_rerun():
    script = _load()
    out = script.run(quick=True)
    recall, hybrid = out["recall"], out["hybrid"]
    assert set(recall["recall"]) == {"softmax", "linear", "delta", "gated"}
    for by_size in recall["recall"].values():
        for runs in by_size.values():
            assert len(runs) == len(recall["seeds"]) and all(len(r) == len(recall["pairs"]) for r in runs)
            assert all(0 <= a <= 1 for r in runs for a in r)
    assert set(hybrid["stacks"]) == set(script.STACKS)
    tk = hybrid["topk"]
    assert len(tk["exact"][0]) == len(tk["ks"]) and set(tk["indexer"]) == {str(r) for r in tk["ranks"]}


def test_saved_results_are_the_full_run():
    script = _load()
    full = script.settings(quick=False)
    recall = json.loads((DATA / "recall_state_size.json").read_text())
    assert recall["steps"] == full["steps"] and recall["seeds"] == full["seeds"] == [0, 1, 2]
    assert recall["pairs"] == full["pairs"] and recall["state_sizes"] == full["sizes"]
    for method in ("softmax", "linear", "delta"):
        assert sorted(recall["recall"][method], key=int) == [str(E) for E in full["sizes"]]
    hybrid = json.loads((DATA / "recall_hybrid.json").read_text())
    assert hybrid["steps"] == full["hyb_steps"] and hybrid["E"] == full["hyb_E"]
    assert all(len(row["accuracy"]) == 3 for row in hybrid["stacks"].values())
    assert hybrid["topk"]["ks"] == full["ks"] and len(hybrid["topk"]["exact"]) == 3
