"""Chapter 11's context-extension claims, tied to the numbers that decide them.

The YaRN, dynamic-NTK and Llama-3 rows are rebuilt here from the rules the chapter states and
compared with the package's ``rope_frequencies``; the two ways of positioning a sink (in the text,
in the cache) are checked against a token-by-token decode; and the sentences of the chapter on the
sinks, ALiBi and the scalings are checked against the saved results of the full run.
"""

from __future__ import annotations

import importlib.util
import json
import math
import pathlib

import numpy as np
import pytest
import torch

import attncourse as ac
from attncourse import kv_cache, toy_data

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAVED = json.loads((ROOT / "attncourse" / "data" / "context_extension.json").read_text())


def _script():
    path = ROOT / "scripts" / "experiments" / "context_extension.py"
    spec = importlib.util.spec_from_file_location("context_extension", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dynamic_rule(d, s, L, N):
    """Pair i slowed by k^(2i/(d-2)), k = sL/N - (s - 1): the chapter's statement of dynamic NTK."""
    k = s * L / N - (s - 1)
    return k ** (-2 * np.arange(d // 2) / (d - 2)), k


def yarn_rule(d, s, N, base, beta_fast=32, beta_slow=1):
    """The chapter's statement of YaRN: correction dims rounded outwards, clamped to [0, d - 1]."""

    def correction_dim(r):
        return d * math.log(N / (r * 2 * math.pi)) / (2 * math.log(base))

    lo = max(math.floor(correction_dim(beta_fast)), 0)
    hi = min(math.ceil(correction_dim(beta_slow)), d - 1)
    hi = hi + 0.001 if lo == hi else hi
    ramp = np.clip((np.arange(d // 2) - lo) / (hi - lo), 0, 1)
    return (1 - ramp) + ramp / s, (lo, hi)


def llama3_rule(d, s, N, base, low=1.0, high=4.0):
    wavelength = 2 * np.pi / base ** (-np.arange(0, d, 2) / d)
    blend = np.clip((N / wavelength - low) / (high - low), 0, 1)
    return (1 - blend) / s + blend


CASES = [(16, 4.0, 32, 128, 10000.0), (64, 8.0, 2048, 16384, 500000.0), (128, 4.0, 4096, 20000, 10000.0)]


@pytest.mark.parametrize("d,s,N,L,base", CASES)
def test_scaling_rows_follow_the_stated_rules(d, s, N, L, base):
    plain, _ = ac.rope_frequencies(d, base=base)
    params = toy_data.rope_scalings(s, N)
    rules = {
        "dynamic": dynamic_rule(d, s, L, N)[0],
        "yarn": yarn_rule(d, s, N, base)[0],
        "llama3": llama3_rule(d, s, N, base),
    }
    for name, rule in rules.items():
        scaled, _ = ac.rope_frequencies(d, base=base, scaling=params[name], seq_len=L)
        np.testing.assert_allclose(scaled / plain, rule, rtol=1e-12, err_msg=name)


def test_the_chapter_numbers_of_the_rules():
    d, s, N = toy_data.ROPE_HEAD_DIM, toy_data.ROPE_FACTOR, toy_data.ROPE_TRAIN_LENGTH
    L = int(s * N)
    ratio, k = dynamic_rule(d, s, L, N)
    assert k == 13 and ratio[-1] == pytest.approx(1 / 13)  # "divided by 13 (not sL/N = 16)"
    yarn, (lo, hi) = yarn_rule(d, s, N, 10000.0)
    assert (lo, hi) == (0, 2)  # beta_fast's boundary clamped to 0, beta_slow's rounded up to 2
    turns = 10000.0 ** (-np.arange(0, d, 2) / d) * N / (2 * np.pi)
    assert turns.max() < 32 and yarn[0] == 1.0  # pair 0 kept although no pair turns 32 times
    assert yarn[1] == pytest.approx(0.5 + 0.5 / s) and np.all(yarn[2:] == 1 / s)


@pytest.fixture(scope="module")
def tiny():
    ce = _script()
    torch.manual_seed(0)
    model = ce.TinyLM("rope").eval()
    tokens = torch.randint(0, ce.VOCAB, (3, 40), generator=torch.Generator().manual_seed(1))
    return ce, model, tokens


@pytest.mark.parametrize("sinks", [0, 1, 3])
def test_text_positions_are_the_masked_forward_pass(tiny, sinks):
    ce, model, tokens = tiny
    mask = torch.from_numpy(kv_cache.window_sink_mask(tokens.shape[1], 8, sinks))
    with torch.no_grad():
        masked = model(tokens, mask=mask)
    streamed = ce.stream_logits(model, tokens, 8, sinks, renumber=False)
    torch.testing.assert_close(streamed, masked, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("sinks", [0, 1, 3])
def test_renumbered_positions_all_at_once_equal_the_decode(tiny, sinks):
    ce, model, tokens = tiny
    streamed = ce.stream_logits(model, tokens, 8, sinks, renumber=True)
    torch.testing.assert_close(ce.renumbered_logits(model, tokens, 8, sinks), streamed, atol=1e-5, rtol=1e-5)
    in_text = ce.stream_logits(model, tokens, 8, sinks, renumber=False)
    gap = float((streamed - in_text).abs().max())
    if sinks == 0:
        assert gap < 1e-5  # RoPE is relative: without sinks the window keeps its distances
    else:
        assert gap > 1e-3  # a sink moves from up to 39 positions away to at most sinks + 7


def _printed(marker):
    """The text a chapter 11 cell whose source contains ``marker`` printed when it was saved."""
    nb = json.loads((ROOT / "book" / "11_modern_attention.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and marker in "".join(cell["source"]):
            return "".join("".join(o.get("text", "")) for o in cell["outputs"])
    raise AssertionError(f"no cell with {marker!r}")


def _mean_range(values):
    a = np.asarray(values)
    return f"{a.mean():.3f} ({a.min():.3f}-{a.max():.3f})"


def test_the_printed_sinks_table_is_the_saved_results():
    printed = _printed('sinks["accuracy"]["positions in the text"]')
    text = SAVED["sinks"]["accuracy"]["positions in the text"]
    cache = SAVED["sinks"]["accuracy"]["positions in the cache"]
    full = next(ln for ln in printed.splitlines() if ln.startswith("full causal"))
    assert full.split()[2:] == _mean_range(text["full causal"]).split(), full
    for row in cache:
        line = next(ln for ln in printed.splitlines() if ln.startswith(f"window 32, {row}"))
        assert line.split()[4:] == (_mean_range(text[row]) + " " + _mean_range(cache[row])).split(), line


def test_the_printed_extension_tables_are_the_saved_results():
    printed = _printed('ce["train_loss"].items()')
    blocks = printed.split("\n\n")
    for key, block in zip(["zero_shot", "finetuned"], blocks[1:]):
        for name, runs in SAVED[key].items():
            a = np.array(runs)
            line = next(ln for ln in block.splitlines() if ln.split()[:1] == [name])
            expected = [f"{m:.2f} ({lo:.2f}-{hi:.2f})" for m, lo, hi in zip(a.mean(0), a.min(0), a.max(0))]
            assert " ".join(line.split()[1:]) == " ".join(expected), (key, line)


def test_the_sink_sentences_hold_in_the_saved_results():
    text = {k: np.array(v) for k, v in SAVED["sinks"]["accuracy"]["positions in the text"].items()}
    cache = {k: np.array(v) for k, v in SAVED["sinks"]["accuracy"]["positions in the cache"].items()}
    first = np.array(SAVED["sinks"]["first_token_weight"])
    assert (text["full causal"] < 0.2).all() and (text["0 sinks"] > 0.99).all()  # window near perfect
    np.testing.assert_allclose(cache["0 sinks"], text["0 sinks"], atol=2e-3)  # same distances
    assert first.max() < np.mean(1 / np.arange(9, 33))  # no head uses token 0 as a sink
    for row in ("1 sinks", "4 sinks"):  # sinks cost accuracy either way; in the cache less on average
        assert (text[row] < text["0 sinks"]).all() and (cache[row] < cache["0 sinks"]).all()
        assert cache[row].mean() > text[row].mean()
    assert ((cache["1 sinks"] - text["1 sinks"]) < 0).any()  # "not less on every seed"


def test_the_alibi_and_scaling_sentences_hold_in_the_saved_results():
    zero = {k: np.array(v) for k, v in SAVED["zero_shot"].items()}  # (seeds, lengths 32..256)
    tuned = {k: np.array(v) for k, v in SAVED["finetuned"].items()}
    rope, alibi = np.array(SAVED["train_loss"]["rope"]), np.array(SAVED["train_loss"]["alibi"])
    ratio = alibi / rope
    assert 5 < ratio.min() and ratio.max() < 30  # "still 7 to 25 times RoPE's"
    assert abs(zero["alibi"][:, 0].mean() - zero["none"][:, 0].mean()) < 0.02  # close at 32
    # at 128: YaRN > Llama-3 > dynamic, the three ranges apart
    at128 = {k: zero[k][:, 2] for k in ("yarn", "llama3", "dynamic")}
    assert at128["yarn"].min() > at128["llama3"].max() and at128["llama3"].min() > at128["dynamic"].max()
    # after fine-tuning, at 256: ALiBi the best by far; the three scalings' ranges overlap
    others = max(tuned[k][:, 3].max() for k in tuned if k != "alibi")
    assert tuned["alibi"][:, 3].min() > others + 0.1
    dynamic, yarn, llama3 = (tuned[k][:, 3] for k in ("dynamic", "yarn", "llama3"))
    assert dynamic.max() < llama3.min()  # "dynamic's range lies below Llama-3's"
    assert yarn.min() < min(dynamic.max(), llama3.max()) and yarn.max() > max(dynamic.min(), llama3.min())
    assert (zero["linear"][:, 0] < 0.1).all() and (tuned["linear"][:, 0] < 0.4).all()
