"""Chapter 11's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import re

from book_claims import (
    CH11,
    _printed,
    _prose,
)


def test_chapter_11_summary_and_alibi_loss_ratio_are_the_printed_ones():
    table = _printed(CH11, "gqa = saved_results(")
    means = {
        r.split()[0]: r.split() for r in table.splitlines() if r.split()[:1] in (["MHA"], ["GQA"], ["MQA"])
    }
    gqa_mean, mha_mean = means["GQA"][-2], means["MHA"][-2]
    seeds = [float(x) for x in means["MQA"][5:-2]]
    assert len(seeds) == 6 and sorted(seeds)[0] == 0.566 and sorted(seeds)[1] > 0.95
    summary = _prose(CH11, "ch11-summary")
    assert f"mean accuracy {gqa_mean} against {mha_mean} over six seeds" in summary
    assert "1 lost one seed of six (0.566)" in summary
    extend = _printed(CH11, "ALiBi's final loss over RoPE's")
    ratios = [float(r) for r in re.search(r"seed by seed: ([0-9., ]+)", extend).group(1).split(", ")]
    verdict = _prose(CH11, "ch11-extend-verdict")
    assert f"{min(ratios):.1f} to {max(ratios):.1f} times RoPE's" in verdict
    # zero-shot at 128 (four times the training length): the three scalings that keep the fastest pair
    zero_shot = extend.split("zero-shot")[1].split("after")[0]
    at_128 = {line.split()[0]: float(line.split()[5]) for line in zero_shot.strip().splitlines()[2:]}
    kept = [at_128[m] for m in ("dynamic", "yarn", "llama3")]
    assert f"held {min(kept):.2f} to {max(kept):.2f}" in summary
    linear_32 = float(zero_shot.strip().splitlines()[2 + 1].split()[1])
    assert f"({linear_32:.2f}, with 8 pairs per head)" in summary
    alibi = [float(x) for x in zero_shot.strip().splitlines()[-1].split()[1::2]]
    assert min(alibi) >= 0.91 and "ALiBi stayed at 0.91 or above at every length" in summary
