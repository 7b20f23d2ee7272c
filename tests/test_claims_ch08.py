"""Chapter 8's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import re

import numpy as np
from book_claims import (
    _cells,
    _printed,
    _prose,
)

# -- chapter 8: the loss curve --------------------------------------------------------------------


def test_chapter_8_loss_falls_slowly_then_drops():
    text = _printed("08_transformer_block.ipynb", "n_steps, batch_size = 400, 32")
    loss = {int(s): float(x) for s, x in re.findall(r"step +(\d+) +loss ([0-9.]+)", text)}
    assert 2.0 < loss[100] < 3.0 and loss[100] > 0.6 * loss[0]  # "about 2.4, still most of the way up"
    assert loss[200] < loss[100] / 10  # "drops by more than a factor of ten within the next hundred"
    assert "about 2.4" in _prose("08_transformer_block.ipynb", "b6f98094")


def test_chapter_8_mlp_baseline_is_aligned_to_the_current_token_and_the_prose_quotes_its_printout():
    ch08 = "08_transformer_block.ipynb"
    source = "".join(next(c for c in _cells(ch08) if c.get("id") == "ch08-mlp-train")["source"])
    # slot d holds the token d places back: the window is unfolded, then flipped
    assert "e.unfold(1, self.window, 1)" in source and "x.flip(-1)" in source
    text = _printed(ch08, "class WindowMLP(nn.Module):")
    n_mlp, n_tf = (
        int(x.replace(",", "")) for x in re.search(r"MLP ([0-9,]+), Transformer ([0-9,]+)", text).groups()
    )
    loss_mlp, loss_tf = re.search(r"last 50 steps: MLP ([0-9.]+), Transformer ([0-9.]+)", text).groups()
    acc_mlp, acc_tf = re.search(r"determined positions: +MLP ([0-9.]+), Transformer ([0-9.]+)", text).groups()
    guess = re.search(r"seen so far: ([0-9.]+)", text).group(1)
    assert 0.8 < n_mlp / n_tf < 1.25
    # "far above a uniform guess ... and far below the Transformer"; "about three answers in five"
    assert float(guess) + 0.3 < float(acc_mlp) < float(acc_tf) - 0.25
    assert 0.55 <= float(acc_mlp) <= 0.65
    prose = _prose(ch08, "ch08-mlp-outro")
    assert f"right {acc_mlp} of the time, far above a uniform guess" in prose
    assert f"tokens already seen ({guess})" in prose and f"below the Transformer ({acc_tf})" in prose
    assert f"ends at {loss_tf} against the MLP's {loss_mlp}" in prose and "three answers in five" in prose
    summary = _prose(ch08, "ch08-summary")
    assert f"is right on {acc_mlp} of the determined positions, against the Transformer's {acc_tf}" in summary
    assert f"a guess's {guess}" in summary


def test_chapter_8_plain_stack_loses_its_gradient_because_each_sublayer_shrinks_it():
    text = _printed("08_transformer_block.ipynb", "def input_gradient_norm(residual)")
    with_res = float(re.search(r"with residuals: +([0-9.e+-]+)", text).group(1))
    without = float(re.search(r"without residuals: +([0-9.e+-]+)", text).group(1))
    low, high, product = (
        float(x)
        for x in re.search(
            r"without residuals: ([0-9.]+) to ([0-9.]+); the product of all 24: ([0-9.e+-]+)", text
        ).groups()
    )
    assert with_res > 1e6 * without  # "all but vanishes"
    assert low <= high < 1  # "every one is below 1 here"
    assert without <= 4 * product * 1.1  # the product bounds the gradient (|d sum / d h| = 4), up to rounding
    assert "Every one is below 1 here" in _prose("08_transformer_block.ipynb", "b37bff67")


def test_chapter_8_step0_excess_below_the_mean_is_this_batchs_luck():
    text = _printed("08_transformer_block.ipynb", "untrained = TinyTransformer(")
    below = re.search(r"\+ ([0-9.]+) \(the answer's logit below the mean\)", text).group(1)
    mean, low, high = re.search(
        r"batches 1\.\.19: mean (-?[0-9.]+), from (-?[0-9.]+) to (-?[0-9.]+)", text
    ).groups()
    assert float(below) > float(high) and abs(float(mean)) < float(below) / 4  # more than any other batch
    prose = _prose("08_transformer_block.ipynb", "ch08-step0-after")
    assert f"sit {below} below their rows' mean, more than on any of the next 19" in prose
    assert f"whose mean is {mean}" in prose


def test_chapter_8_random_positions_score_no_better_than_a_guess():
    text = _printed("08_transformer_block.ipynb", "first_pass = correct[")
    accuracy = re.search(r"determined positions: +([0-9.]+)", text).group(1)
    first_pass = re.search(r"first appearance: ([0-9.]+)", text).group(1)
    uniform, unused = re.search(
        r"over the 32 tokens: ([0-9.]+); uniform over those not seen yet: ([0-9.]+)", text
    ).groups()
    assert float(first_pass) <= min(float(uniform), float(unused)) + 0.005  # "no better than a guess"
    prose = _prose("08_transformer_block.ipynb", "1b96d428")
    assert f"nearly always right ({accuracy})" in prose and f"right {first_pass} of the time" in prose
    assert f"32 tokens scores {uniform}, one over the tokens not seen yet {unused}" in prose
    assert "position:token" in prose


def test_chapter_8_no_single_head_is_essential_and_the_strongest_costs_most():
    ch08 = "08_transformer_block.ipynb"
    text = _printed(ch08, "costs = [ablated[")
    scores, costs = {}, {}
    for layer, s, c in re.findall(
        r"^layer (\d): \S+ score per head \[([0-9. ]+)\], accuracy without that head \[([0-9. ]+)\]",
        text,
        re.M,
    ):
        scores[int(layer)] = [float(x) for x in s.split()]
        costs[int(layer)] = [float(x) for x in c.split()]
    assert sorted(scores) == [0, 1]
    full = float(
        re.search(r"determined positions: +([0-9.]+)", _printed(ch08, "first_pass = correct[")).group(1)
    )
    lowest = min(min(c) for c in costs.values())
    strongest = int(np.argmax(scores[0]))
    weakest = np.argsort(scores[0])[:2]
    assert int(np.argmin(costs[0])) == strongest  # "removing the strongest costs the most"
    assert all(costs[0][h] == round(full, 2) for h in weakest)  # "nothing visible at two decimals"
    prose = _prose(ch08, "ch08-heads-differ-after")
    assert f"stays at {lowest:.2f} or above" in prose
    assert (
        f"removing head {strongest}, the strongest previous-token head ({scores[0][strongest]:.2f})" in prose
    )
    assert f"costs the most ({full:.2f} to {costs[0][strongest]:.2f})" in prose
    setup = _prose(ch08, "aeacb6d3")
    assert f"range from {min(scores[0]):.2f} to {max(scores[0]):.2f}" in setup


def test_chapter_8_dropout_costs_a_little_on_fresh_data_in_training_and_in_eval_mode():
    text = _printed("08_transformer_block.ipynb", "def leaves_plateau(curve")
    train = [float(x) for x in re.findall(r"loss over steps 180\.\.199 ([0-9.]+)", text)]
    plain, dropout = re.search(
        r"dropout off: no dropout ([0-9.]+), attention dropout 0\.1 ([0-9.]+)", text
    ).groups()
    assert train[1] > train[0] and float(dropout) > float(plain)  # higher with dropout, both ways
    prose = _prose("08_transformer_block.ipynb", "ch08-warmup-md")
    assert f"{train[1]:.3f} against {train[0]:.3f} over steps 180..199" in prose
    assert f"reach {dropout} with dropout against {plain} without" in prose


def test_chapter_8_dropout_lowers_the_held_out_loss_of_every_seed_on_scarce_data():
    text = _printed("08_transformer_block.ipynb", 'scarce = saved_results("transformer_dropout_scarce.json")')
    rows = {
        float(p): ([float(x) for x in losses.split()], acc)
        for p, acc, losses in re.findall(
            r"^ +(0\.[01]) +1\.000 +([0-9.]+) \([0-9.]+\.\.[0-9.]+\) +([0-9. ]+)$", text, re.M
        )
    }
    (plain, acc_plain), (dropout, acc_dropout) = rows[0.0], rows[0.1]
    assert len(plain) == len(dropout) == 3 and max(dropout) < min(plain)  # "in every seed"
    assert float(acc_dropout) > float(acc_plain)
    prose = _prose("08_transformer_block.ipynb", "ch08-dropout-scarce-after")
    assert (
        f"from {min(plain):.2f} to {max(plain):.2f} without it to {min(dropout):.2f} to {max(dropout):.2f} with it"
        in prose
    )
    assert f"({acc_plain} to {acc_dropout}, the mean of the seeds)" in prose


def test_chapter_8_warmup_figure_marks_the_end_of_the_warmup_and_says_where_curves_start():
    source = "".join(
        next(c for c in _cells("08_transformer_block.ipynb") if c.get("id") == "ch08-warmup-plot")["source"]
    )
    assert "ax.axvline(30," in source and "np.ones(10) / 10" in source and "np.arange(9," in source
    prose = _prose("08_transformer_block.ipynb", "ch08-warmup-outro")
    assert "mean of 10 steps, so it starts at step 9" in prose and "step 30, where the warm-up ends" in prose
