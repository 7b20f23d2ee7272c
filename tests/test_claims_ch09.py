"""Chapter 9's sentences against the numbers printed beside them (helpers: book_claims.py)."""

from __future__ import annotations

import json
import re
import tracemalloc

import numpy as np
import pytest
from book_claims import (
    BOOK,
    CH09,
    _cells,
    _printed,
    _prose,
)


def _memory_table() -> dict:
    """(L, S, b) -> (one L x S, full peak, output, tile, tiled peak, tiled - output), in MiB."""
    text = _printed(CH09, "settings = {  # one of L, S and b")
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 9 and all(re.fullmatch(r"[0-9.]+", p) for p in parts):
            rows[tuple(int(p) for p in parts[:3])] = tuple(float(p) for p in parts[3:])
    assert len(rows) == 10, text  # 12 settings, (1024, 1024, 128) three times
    return rows


def test_chapter_9_memory_table_varies_one_thing_at_a_time_as_the_prose_says():
    rows = _memory_table()
    prose = _prose(CH09, "99d95720")
    full = {key: row[1] for key, row in rows.items()}
    tiled = {key: row[4] for key, row in rows.items()}
    rest = {key: row[5] for key, row in rows.items()}

    by_L = [(n, 1024, 128) for n in (512, 1024, 2048, 4096)]
    by_S = [(1024, n, 128) for n in (512, 1024, 2048, 4096)]
    by_b = [(1024, 1024, n) for n in (64, 128, 256, 512)]
    # "the full peak doubles with each doubling of L (it is three L x S matrices)"; "doubles again" for S
    for key in by_L + by_S:
        assert full[key] / rows[key][0] == pytest.approx(3, abs=0.1), key
    # "the last column stays at about 0.25 MiB" while L grows eightfold
    assert "stays at about 0.25 MiB" in prose
    assert all(abs(rest[key] - 0.25) <= 0.02 for key in by_L), [rest[k] for k in by_L]
    # "0.25 MiB per 1024 queries": the output of 1024 rows of 64 float32
    assert rows[2048, 1024, 128][2] - rows[1024, 1024, 128][2] == pytest.approx(0.25)
    # "the tiled peak hardly moves (under 0.1 MiB while S grows eightfold)"
    assert "under 0.1 MiB while $S$ grows eightfold" in prose
    assert max(tiled[k] for k in by_S) - min(tiled[k] for k in by_S) < 0.1
    # "the full peak does not depend on b"; the rest grows "more than twofold per doubling of b,
    # and nearly threefold from 256 to 512"
    assert len({full[key] for key in by_b}) == 1
    growth = [rest[b2] / rest[b1] for b1, b2 in zip(by_b, by_b[1:])]
    assert all(g > 2 for g in growth) and 2.5 < growth[-1] < 3.2, growth


def _peaks(L: int, S: int, b: int) -> tuple:
    import attncourse as ac

    rng = np.random.default_rng(0)
    q = rng.normal(size=(L, 64)).astype(np.float32)
    k, v = (rng.normal(size=(S, 64)).astype(np.float32) for _ in range(2))
    out = []
    for fn in (
        lambda: ac.scaled_dot_product_attention(q, k, v),
        lambda: ac.flash_attention(q, k, v, block_size=b),
    ):
        tracemalloc.start()
        fn()
        out.append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
    return tuple(out)


@pytest.mark.parametrize("setting", [(2048, 1024, 128), (1024, 4096, 128), (1024, 1024, 512)])
def test_chapter_9_memory_table_is_what_tracemalloc_measures_now(setting):
    full, tiled = _peaks(*setting)
    saved = _memory_table()[setting]
    assert full == pytest.approx(saved[1], rel=0.05, abs=0.02)
    assert tiled == pytest.approx(saved[4], rel=0.05, abs=0.02)


def test_chapter_9_tiles_the_queries_as_the_package_does():
    import attncourse as ac

    text = _prose(CH09, "ch09-tiled-figure")
    assert "its tile is $b \\times b$" in text and "keeps all $L$ queries in one block" in text
    # ac.flash_attention's tiles are b x b: a call with L >> b holds less than one L x b block of scores
    L, S, b = 4096, 1024, 64
    q, k, v = (np.zeros((n, 8), np.float32) for n in (L, S, S))
    tracemalloc.start()
    ac.flash_attention(q, k, v, block_size=b)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    output = 4 * L * 8
    assert peak - output < 4 * L * b  # less than one (L, b) float32 block beyond the output


def test_chapter_9_cached_step_is_flat_and_the_uncached_one_grows():
    text = _printed(CH09, "first = {name: np.median(times[:32])")
    found = dict(
        (name.strip(), (float(a), float(b)))
        for name, a, b in re.findall(
            r"(with(?:out)? cache) *: *([0-9.]+) ms per token at lengths 1\.\.32, *([0-9.]+) ms", text
        )
    )
    assert set(found) == {"with cache", "without cache"}, text
    early, late = found["with cache"]
    assert late / early < 1.5  # "changes far less", the bound the cell asserts
    early, late = found["without cache"]
    assert late / early > 2  # "more than doubles", the bound the cell asserts (the test below)
    outro = _prose(CH09, "ch09-cache-timing-outro")
    assert "changes far less" in outro and "hardly changes" not in outro and "KVCache.append" in outro
    # the O(n) growth of the cached step is argued from the code, not read from this printout
    assert "that $O(n)$ cost is small next to running the layers on one token and below the noise" in outro
    assert "so this cell does not show it" in outro and "grows far more slowly" not in outro


# -- chapter 9: the step's CPU time and how much it grows -----------------------------------------


def test_chapter_9_times_the_steps_by_cpu_time_and_quotes_the_growth():
    source = "".join(next(c for c in _cells(CH09) if c.get("id") == "ch09-cache-timing")["source"])
    assert source.count("time.thread_time()") == 4 and "perf_counter" not in source
    text = _printed(CH09, "first = {name: np.median(times[:32])")
    grow = dict(re.findall(r"(with(?:out)? cache) *:.*, ([0-9.]+) times the first", text))
    assert set(grow) == {"with cache", "without cache"}, text
    # one run's factors are not quoted: the prose quotes the bounds the cell asserts on every build
    prose = _prose(CH09, "ch09-cache-timing-outro")
    assert 'growth["without cache"] > 2' in source and "more than doubles" in prose
    assert 'growth["with cache"] < 1.5' in source and "less than 1.5 times the first 32" in prose
    assert (
        'assert saving["first"] < saving["last"]' in source
        and "much less than over the last 32 (less is asserted; the printout gives how much)" in prose
    )
    assert not re.search(r"[0-9.]+-fold|[0-9]\.[0-9]+ (ms|against)", prose), prose
    summary = _prose(CH09, "ch09-summary")
    assert (
        "changes far less with the length (under 1.5 times over 256 tokens; its $O(n)$ growth is below the noise"
        in summary
    )


def test_chapter_9_online_softmax_counts_elements_from_0_as_its_loop_prints():
    derivation = _prose(CH09, "5ef6b7f1")
    assert "$x_0, \\dots, x_{n-1}$" in derivation and "$m_{-1} = -\\infty$" in derivation
    assert "x_n" not in derivation and "m_0 = " not in derivation and "\\ell_n" not in derivation
    text = _printed(CH09, "for j, x_j in enumerate(x):")
    first = re.match(r"j = (\d+): x_j = (\d+)", text)
    assert first and first.group(1) == "0", text
    # "By hand: after x_0 = 3": the element the loop prints first
    assert f"after $x_{first.group(1)} = {first.group(2)}$" in _prose(CH09, "7f58a22b")


# -- chapter 9: the FlashAttention paper's count of main-memory traffic ---------------------------


def _io_table() -> dict:
    """(N, b) -> (M KiB, standard, /(Nd+N^2), tiled, /(N^2 d^2/M), standard/tiled) as printed."""
    text = _printed(CH09, "def hbm_tiled(N, d, b):")
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 8 and parts[0].isdigit():
            rows[int(parts[0]), int(parts[1])] = tuple(float(p) for p in parts[2:])
    assert len(rows) == 9, text
    return rows


def test_chapter_9_io_count_is_the_papers_and_the_prose_quotes_it():
    rows, d = _io_table(), 64
    for (N, b), (kib, std, std_theta, tiled, tiled_theta, ratio) in rows.items():
        M = 4 * b * d
        # the counts, recomputed from the passes the intro describes: S and P out and back, q, k,
        # v in, out out; q in once, k and v in once per block of b queries, out out once
        assert std == pytest.approx(4 * N * d + 4 * N * N, rel=5e-3)
        assert tiled == pytest.approx(2 * N * d + 2 * N * d * -(-N // b), rel=5e-3)
        assert kib == 4 * M / 1024
        # "the two middle ratios stay near 4 and 8": this count's constants in front of the paper's two Theta
        assert 3.9 <= std_theta <= 4.1 and 8.0 <= tiled_theta <= 10.0, (N, b)
        assert ratio == pytest.approx(std / tiled, rel=1e-2)
    # "tends to 2b/d": at the longest length the factor is 2b/d within 1 %
    for b in (64, 128, 256):
        assert rows[65536, b][5] == pytest.approx(2 * b / d, rel=0.01)
    prose = _prose(CH09, "ch09-io-count-outro")
    # "about sixteenfold when N quadruples (15.3 and 14.7 times from 1024 to 4096 at b = 128)"
    grow_std = rows[4096, 128][1] / rows[1024, 128][1]
    grow_tiled = rows[4096, 128][3] / rows[1024, 128][3]
    assert 14 < grow_tiled < grow_std < 16.1
    assert f"({grow_std:.1f} and {grow_tiled:.1f} times from 1024 to 4096" in prose
    quoted = ", ".join(f"{rows[4096, b][5]:.2f}" for b in (64, 128)) + f" and {rows[4096, 256][5]:.2f}"
    assert f"$2N^2 d / b$): {quoted} at $N = 4096$" in prose
    flops = re.search(r"b any: (\S+) floating-point", _printed(CH09, "def hbm_tiled(N, d, b):")).group(1)
    assert (
        float(flops) == pytest.approx(4 * 4096 * 4096 * d, rel=5e-3) and f"the arithmetic, {flops}" in prose
    )
    assert "cannot show" in prose and "no GPU here" in prose
    summary = _prose(CH09, "ch09-summary")
    assert f"({rows[4096, 128][5]:.2f} times at $N = 4096$, $b = 128$)" in summary


# -- chapter 9: what the tiled call holds, why the unfused loop is faster, the figure's numbering ---


def test_chapter_9_tiled_peak_beyond_the_output_is_one_tile_and_four_blocks():
    text = _printed(CH09, "settings = {  # one of L, S and b")
    split = {
        int(b): tuple(float(x) for x in rest)
        for b, *rest in re.findall(
            r"b = +(\d+): tiled - output ([0-9.]+) MiB = tile ([0-9.]+) \+ four b x E blocks ([0-9.]+)"
            r" \+ other (-?[0-9.]+)",
            text,
        )
    }
    assert set(split) == {64, 128, 256, 512}, text
    for b, (rest, tile, blocks, other) in split.items():
        assert tile == pytest.approx(4 * b * b / 2**20, abs=1e-3)
        assert blocks == pytest.approx(4 * 4 * b * 64 / 2**20, abs=1e-3)
        assert 0 <= other < 0.1 and other < tile + blocks, (b, other)  # "small arrays"
        assert rest == pytest.approx(_memory_table()[1024, 1024, b][5], abs=0.011)
    others = [split[b][3] for b in sorted(split)]
    rest, tile, blocks, other = split[512]
    prose = _prose(CH09, "99d95720")
    assert f"{min(others):.3f} to {max(others):.3f} MiB of small arrays" in prose
    assert f"at $b = 512$: {tile:.3f} + {blocks:.3f} + {other:.3f} of {rest:.2f} MiB" in prose
    intro = _prose(CH09, "ddf6cddd")
    assert "four $b \\times E$ blocks" in intro and "with its exponentials" not in intro


def _bench_rows() -> dict:
    text = _printed(CH09, "print(format_table(bench))")
    rows = {}
    for L, name, ms, _, peak in re.findall(
        r"^ *(\d+)  (\S.*?\S) +([0-9.]+) +([0-9.]+) +([0-9.]+) +[0-9.e+-]+$", text, re.MULTILINE
    ):
        rows[int(L), name] = (float(ms), float(peak))
    assert len(rows) == 36, text
    return rows


def test_chapter_9_unfused_loop_beats_the_full_computation_and_the_prose_says_why():
    rows = _bench_rows()
    full, flash = rows[4096, "ac.scaled_dot_product_attention"], rows[4096, "ac.flash_attention"]
    math_, default = rows[4096, "torch SDPA (math)"], rows[4096, "torch SDPA (default)"]
    assert flash[0] < full[0] and flash[0] < math_[0]
    prose = " ".join(_prose(CH09, cid) for cid in ("08723b8f", "ch09-pass-cost-outro", "ch09-summary"))
    assert f"takes {flash[0]} ms against {full[0]} ms for the full computation and {math_[0]} ms" in prose
    torch_256 = rows[256, "ac.flash_attention"][0], rows[256, "ac.scaled_dot_product_attention"][0]
    assert (
        f"from $L = 512$ on in both the torch and the numpy rows: {flash[0]} against {full[0]} ms at "
        f"$L = S = 4096$; in torch it is still slower at $L = 256$, {torch_256[0]} against {torch_256[1]} ms)"
    ) in _prose(CH09, "ch09-summary")
    assert torch_256[0] > torch_256[1]
    for suffix in ("", " (numpy)"):
        for L in (512, 1024, 2048, 4096):
            loop, whole = (
                rows[L, "ac.flash_attention" + suffix],
                rows[L, "ac.scaled_dot_product_attention" + suffix],
            )
            assert loop[0] < whole[0], (L, suffix)
    fused = float(
        re.search(r"flash_attention / torch default: +([0-9.]+)x", _printed(CH09, "format_table")).group(1)
    )
    assert fused == pytest.approx(flash[0] / default[0], abs=0.01)
    assert f"is {fused:.2f} times faster still" in prose and f"({fused:.2f} times the loop;" in prose
    assert "this page does not separate them" in prose and "not separated here" in prose  # not fusion alone
    assert "speed comes from fusing" not in prose
    # the pass timing: fresh whole-matrix arrays cost more than one reused whole-matrix buffer; the
    # tiles' time goes either way between machines and runs (faster than one reused matrix in the
    # saved run, no faster than fresh arrays in another), so the page neither asserts nor orders it
    text = _printed(CH09, "def tile_by_tile():")
    ns = [float(x) for x in re.findall(r": ([0-9.]+) ns per score", text)]
    ratio = float(re.search(r"fresh arrays / tiles: ([0-9.]+)", text).group(1))
    reuse = float(re.search(r"reused matrix / tiles: ([0-9.]+)", text).group(1))
    assert len(ns) == 3 and ns[0] > 1.1 * ns[1], text
    assert ratio == pytest.approx(ns[0] / ns[2], abs=0.02) and reuse == pytest.approx(ns[1] / ns[2], abs=0.02)
    # the prose quotes the margin the cell asserts, not one run's times, and no order of the two reuses
    source = "".join(next(c for c in _cells(CH09) if "def tile_by_tile():" in "".join(c["source"]))["source"])
    assert "assert fresh > 1.1 * reused, pass_ns" in source and "max(reused, tiled_ns)" not in source
    outro = _prose(CH09, "ch09-pass-cost-outro")
    assert "fresh whole-matrix arrays cost more than 1.1 times one reused whole-matrix buffer" in outro
    assert "tiles beat either depends on the machine's caches and on what else it runs" in outro
    assert "which this page does not measure" in outro and "either way of reusing" not in outro
    assert "ns per score" not in outro and "less again" not in outro


def test_chapter_9_flash_peak_in_the_benchmark_is_output_plus_a_tile_and_four_blocks_per_head():
    rows, H, L, E, b = _bench_rows(), 4, 4096, 64, 256
    peak = rows[L, "ac.flash_attention"][1]
    output, tiles, blocks = (4 * H * L * E / 2**20, 4 * H * b * b / 2**20, 4 * H * 4 * b * E / 2**20)
    assert peak == pytest.approx(output + tiles + blocks, abs=0.2)
    prose = _prose(CH09, "08723b8f")
    assert f"its {peak} MiB are" in prose and f"the {output:.1f} MiB output" in prose
    assert "per head (1 MiB in all)" in prose and tiles == blocks == 1
    summary = _prose(CH09, "ch09-summary")
    assert "measured for one head in numpy, its peak beyond the output" in summary


def test_chapter_9_counts_blocks_from_0_and_keeps_t_a_position():
    figure = _prose(CH09, "ch09-tiled-figure")
    assert "K0 to K3" in figure and "V0 to V3" in figure and "Block 0 is grey" in figure
    svg = (BOOK / "figures" / "tiled.svg").read_text(encoding="utf-8")
    assert all(f"K{s}ᵀ" in svg for s in "₀₁₂₃") and "K₄" not in svg and "V₄" not in svg
    assert "Block 0 is already folded" in svg
    assert "into m, ℓ," in svg and "m, l," not in svg and "sum l " not in svg  # the text's letter
    for cid in ("ch09-cache-timing-md", "ch09-cache-timing-outro"):
        assert "$t$" not in _prose(CH09, cid) and "$n$" in _prose(CH09, cid)


def test_chapter_9_cache_cause_is_hedged_alike_and_the_loop_ops_are_counted():
    import inspect

    from attncourse import flash

    pass_outro, io_outro = _prose(CH09, "ch09-pass-cost-outro"), _prose(CH09, "ch09-io-count-outro")
    summary = _prose(CH09, "ch09-summary")
    assert (
        "depends on the machine's caches and on what else it runs, which this page does not measure"
        in pass_outro
    )
    assert "(probably from the CPU's cache at $b = 256$, which this page does not measure" in io_outro
    assert (
        "probably because a tile is reused" in summary and "this page does not measure the caches" in summary
    )
    # the loop's body for one tile without a mask: 15 array operations, 6 over the (b, b) tile
    source = inspect.getsource(flash._tiled_attention)
    body = source[source.index("for j0 in range(0, S, block):") : source.index("m = m_new")]
    calls = re.findall(r"ops\.(\w+)\(", body)
    views = {"swap_last", "detach"}  # no pass over data
    masked_only = {"logical_and", "logical_not", "masked_fill_"}  # only with a mask or a causal tile
    per_tile = [c for c in calls if c not in views | masked_only] + ["sub"]  # m - shift, an operator
    assert len(per_tile) == 15, per_tile
    over_tile = ["matmul"] * 3 + ["amax", "sub_", "fast_exp_"]  # s = q k^T, p v, p 1; max; shift; exp
    assert all(per_tile.count(c) >= over_tile.count(c) for c in set(over_tile))
    assert (
        "15 separate array operations per tile without a mask (views aside), 6 of which pass over the whole"
        in (pass_outro)
    )
    assert "dozen" not in pass_outro


def test_chapter_9_says_the_unfused_loop_does_not_keep_its_tile_on_chip_and_chunks_are_an_option():
    figure = _prose(CH09, "ch09-tiled-figure")
    assert (
        "Only a kernel that fuses the steps keeps the tile there" in figure
        and "it fits the fast" not in figure
    )
    assert "Prompts are often processed in chunks" in _prose(CH09, "b2b08d41")


def test_chapter_9_tile_of_b_256_is_larger_than_an_sm_shared_memory():
    kib = _io_table()[4096, 256][0]
    prose = _prose(CH09, "ch09-io-count-outro")
    assert kib > 228 and f"at $b = 256$ the table's $M$ is {kib:.0f} KiB, more than" in prose


def test_chapter_9_cache_timing_quotes_the_first_lengths():
    text = _printed(CH09, "first = {name: np.median(times[:32])")
    first = dict(re.findall(r"(with(?:out)? cache) *: *([0-9.]+) ms per token at lengths 1\.\.32", text))
    prose = _prose(CH09, "ch09-cache-timing-outro")
    assert (
        "Over the first 32 lengths the cache saves much less than over the last 32 (less is asserted; the printout gives how much)"
        in prose
    )
    assert float(first["with cache"]) < float(first["without cache"])
    assert "rises in steps rather than smoothly" in prose and "does not say why" in prose  # not explained


def test_chapter_9_quotes_the_benchmarks_growth_between_lengths_from_the_saved_run():
    bench = json.loads((BOOK / "data" / "bench_cpu.json").read_text(encoding="utf-8"))
    times = {(r["implementation"], r["L"]): r["median_s"] for r in bench["results"]}
    names = sorted({name for name, _ in times})

    def growth(a: int, b: int) -> tuple:
        ratios = [times[n, b] / times[n, a] for n in names]
        return min(ratios), max(ratios)

    printed = _printed(CH09, "print(format_table(bench))")  # the cell prints each step's range
    for shorter, longer in [(256, 512), (512, 1024), (512, 4096)]:
        low, high = growth(shorter, longer)
        assert f"L = {shorter:4d} -> {longer:4d}: {low:5.1f} to {high:5.1f} times" in printed
    prose = _prose(CH09, "08723b8f")
    low, high = growth(256, 512)
    assert f"from $L = 256$ to 512 every implementation's time grows {low:.1f} to {high:.1f} times" in prose
    low, high = growth(512, 1024)
    assert f"from 512 to 1024 only {low:.1f} to {high:.1f} times" in prose
    low, high = growth(512, 4096)
    assert f"the times grow {low:.0f} to {high:.0f} times" in prose
    default_512 = next(
        r["peak_bytes"]
        for r in bench["results"]
        if r["implementation"] == "torch SDPA (default)" and r["L"] == 512
    )
    assert f"whose peak at 512 is {default_512 / 2**20:.1f} MiB" in prose
