"""attncourse.seq2seq: chapter 0's encoder-decoder with learned cross-attention."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attncourse.seq2seq import (  # noqa: E402
    Seq2Seq,
    evaluate_reversal,
    matched_hidden,
    n_parameters,
    reversal_batch,
    train_reversal,
)


def _batch(n=5, b=3, seed=0):
    return reversal_batch(b, n, 10, torch.Generator().manual_seed(seed))


def test_reversal_batch_reverses():
    source, target = _batch()
    assert source.shape == target.shape == (3, 5)
    for s, t in zip(source.tolist(), target.tolist()):
        assert t == s[::-1]


@pytest.mark.parametrize("attention", ["additive", "dot"])
def test_attention_weights_are_distributions_over_the_source(attention):
    torch.manual_seed(0)
    model = Seq2Seq(10, 8, attention)
    source, target = _batch(n=6)
    logits, weights = model(source, target[:, :4])
    assert logits.shape == (3, 4, 10)
    assert weights.shape == (3, 4, 6)  # one distribution over the 6 source positions per step
    assert torch.all(weights >= 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4))


def test_the_fixed_state_model_has_no_weights_and_ignores_all_but_the_final_state():
    torch.manual_seed(0)
    model = Seq2Seq(10, 8, None)
    source, target = _batch(n=6)
    logits, weights = model(source, target)
    assert weights is None
    # Whatever the encoder's earlier states are, only its final state reaches the decoder.
    states, final = model.encode(source)
    model.encode = lambda src: (torch.zeros_like(states), final)
    torch.testing.assert_close(model(source, target)[0], logits)


def test_the_attention_model_reads_every_encoder_state():
    torch.manual_seed(0)
    model = Seq2Seq(10, 8, "additive")
    source, target = _batch(n=6)
    logits, _ = model(source, target)
    states, final = model.encode(source)
    model.encode = lambda src: (torch.zeros_like(states), final)
    assert not torch.allclose(model(source, target)[0], logits)


def test_greedy_equals_teacher_forcing_on_its_own_output():
    torch.manual_seed(1)
    model = Seq2Seq(10, 8, "dot").eval()
    source, _ = _batch(n=5)
    predicted, weights = model.greedy(source)
    logits, weights_forced = model(source, predicted)
    assert torch.equal(logits.argmax(-1), predicted)
    torch.testing.assert_close(weights_forced, weights)


def test_matched_hidden_matches_the_parameter_count():
    attention = n_parameters(Seq2Seq(10, 32, "additive"))
    width = matched_hidden(10, 32, "additive")
    fixed = n_parameters(Seq2Seq(10, width, None))
    assert width > 32  # the fixed-state model gets a larger state for the same budget
    assert abs(fixed - attention) / attention < 0.02
    assert abs(n_parameters(Seq2Seq(10, width + 1, None)) - attention) > abs(fixed - attention)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"n_symbols": 10, "d_hidden": 8, "attention": "bilinear"}, "attention must be one of"),
        ({"n_symbols": 0, "d_hidden": 8}, "n_symbols must be a positive integer"),
        ({"n_symbols": 10, "d_hidden": 2.5}, "d_hidden must be a positive integer"),
    ],
)
def test_bad_construction_names_the_argument(kwargs, words):
    with pytest.raises(ValueError, match=words):
        Seq2Seq(**kwargs)


def test_bad_input_names_the_argument_and_shapes():
    model = Seq2Seq(10, 8)
    source, target = _batch()
    with pytest.raises(ValueError, match=r"source must hold symbols in \[0, 10\)"):
        model(source + 10, target)
    with pytest.raises(ValueError, match="source must be an integer tensor"):
        model(source.float(), target)
    with pytest.raises(ValueError, match=r"must share B; got \(3, 5\) and \(2, 5\)"):
        model(source, target[:2])
    with pytest.raises(ValueError, match="n must be a positive integer"):
        reversal_batch(2, 0, 10, torch.Generator())


@pytest.mark.slow
def test_attention_learns_reversal_and_its_alignment_is_an_anti_diagonal_band():
    n = 5
    model, losses = train_reversal(n, "additive", d_hidden=16, steps=200, seed=0)
    assert losses[-20:].mean() < 0.5 * losses[:20].mean()
    symbol_accuracy, _ = evaluate_reversal(model, n, n_test=300)
    assert symbol_accuracy > 0.8
    source, _ = _batch(n=n, b=200, seed=3)
    _, weights = model.greedy(source)
    mean_map = weights.mean(0)  # (n, n)
    # Output step t needs source position n - 1 - t.  The encoder reads left to right, so its
    # state at n - t also holds x_{n-1-t}: the weight lands on one of those two positions.
    t = torch.arange(n)
    on_band = mean_map[t, n - 1 - t] + torch.where(t > 0, mean_map[t, (n - t).clamp(max=n - 1)], 0.0)
    assert torch.all(on_band > 0.5), mean_map
    assert mean_map[0].argmax() == n - 1  # the first output, the last input
