"""Each explorer opens on its chapter's own data: its default view reproduces the numbers the
chapter prints (read from the committed notebooks' saved outputs, or, for chapter 8, from the built
book)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from built_book import built_file

from attncourse import explore, toy_data

# -- each explorer shows its chapter's numbers -------------------------------------------------
#
# The chapters print numbers computed from attncourse.toy_data; the explorers read the same data.
# These tests read the numbers from the committed notebooks' saved outputs, so they fail when a
# chapter and its explorer drift apart (or when a chapter is re-executed with other data).

BOOK = Path(__file__).resolve().parents[1] / "book"


pytestmark = pytest.mark.slow  # reads the built book and renders explorers


def _printed(notebook: str, marker: str, book: Path = BOOK) -> str:
    """What the code cell of ``book/<notebook>`` whose source contains ``marker`` printed."""
    nb = json.loads((book / notebook).read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"])]
    assert len(cells) == 1, f"{notebook}: {len(cells)} code cells contain {marker!r}"
    text = "".join(
        "".join(o.get("text", "")) for o in cells[0].get("outputs", []) if o["output_type"] == "stream"
    )
    assert text, f"{notebook}: the cell with {marker!r} has no saved output; execute the notebook"
    return text


def test_chapter_4_explorer_shows_the_chapters_weights():
    printed = _printed("04_self_attention.ipynb", 'print("key   q.k  q.k/2')
    # "mat     2    1.0      2.7183  0.4241   [...]": token, q.k, q.k/2, exp, weight
    rows = [
        line.split()
        for line in printed.splitlines()
        if line.split()[:1] and line.split()[0] in toy_data.SENTENCE
    ]
    weights = [float(row[4]) for row in rows]
    view = explore.self_attention_view()  # the default view: the query "cat"
    assert view.tokens[view.token] == "cat" and len(weights) == 6
    np.testing.assert_allclose(view.row, weights, atol=5e-5)
    cat_mat = re.search(
        r"cat -> mat: ([0-9.]+) at \(1, 5\)", _printed("04_self_attention.ipynb", "perm = [0, 5")
    )
    assert cat_mat and float(cat_mat.group(1)) == round(float(view.row[5]), 4) == 0.4241


def test_chapter_1_explorer_shows_the_chapters_temperatures():
    printed = _printed("01_softmax.ipynb", "temps = np.logspace(")
    found = re.findall(r"T = +([0-9.]+): largest weight ([0-9.]+), entropy ([0-9.]+)", printed)
    assert len(found) >= 3
    checked = 0
    for t, top, h in found:
        if float(t) in explore.FRAME_TEMPERATURES:  # the temperatures the book's explorer offers
            view = explore.softmax_view(float(t))  # the explorer's scores: the chapter's
            assert round(view.max_weight, 4) == float(top) and round(view.entropy, 4) == float(h)
            checked += 1
    assert checked >= 3  # 0.25, 1.0 (the default) and 5.0


def test_chapter_6_explorer_left_padding_and_fills_match_the_chapter():
    printed = _printed("06_masked_attention.ipynb", 'left = ["<pad>", "<pad>", "dogs"')
    matrix = np.array(re.findall(r"\[([01 ]+)\]", printed)[:5], dtype=object)
    mask = np.array([[int(x) for x in row.split()] for row in matrix], dtype=bool)
    view = explore.mask_view(2, True, tokens=("dogs", "bark", "loudly", "-", "-"), pad_side="left")
    assert view.tokens == ("<pad>", "<pad>", "dogs", "bark", "loudly")
    np.testing.assert_array_equal(view.mask, mask)
    assert "rows with nothing to attend to: [0 1]" in printed and view.empty_rows == (0, 1)
    # The chapter's table: the weight on blocked keys of a row with every key blocked, per fill.
    table = _printed("06_masked_attention.ipynb", 'fills = {"0": 0.0')
    lines = [line for line in table.splitlines() if line.count("|") >= 2]
    column = [c.strip() for c in lines[0].split("|")].index("all keys blocked")
    blocked_row = {line.split("|")[0].strip(): line.split("|")[column].strip() for line in lines[1:]}
    left = {fill: explore.mask_view(2, True, pad_side="left", fill=fill) for fill in explore.FILLS}
    for fill in ("0", "-1e9"):
        assert float(blocked_row[fill]) == 1.0
        np.testing.assert_allclose(left[fill].weights[0].sum(), 1.0)  # all of it on blocked keys
        assert not left[fill].mask[0].any()
    # -inf with a plain softmax: NaN; -1e9 in float16 is -inf, so the explorer's fp16 row is NaN too
    assert blocked_row["-inf"] == "nan" and left["-1e9 fp16"].nan_rows == (0, 1)


def test_chapter_6_explorer_says_its_data_is_its_own_and_not_the_chapters_batch():
    """The mask explorer draws its own q and k over its own sentence; the caption and the prose
    beside it say so, and what they name is what the view computed."""
    pytest.importorskip("matplotlib")
    from attncourse import widgets as aw

    view = explore.mask_view()  # the explorer's opening view
    caption = aw.render_mask(explore.DEFAULT_PAD_LENGTH).caption
    assert "The explorer's own data, not the chapter's batch" in caption
    assert f"the sentence '{' '.join(toy_data.SENTENCE)}' (padding replaces its last tokens)" in caption
    assert f"random q, k of width E = {view.width} (seed {view.seed})" in caption
    # the named seed and width are the numbers shown: a fresh draw with them gives the view's scores
    q, k, _ = np.random.default_rng(view.seed).standard_normal((3, len(view.sentence), view.width))
    np.testing.assert_allclose(view.scores, q @ k.T / np.sqrt(view.width))
    assert "(seed 3)" in aw.render_mask(2, seed=3).caption
    # and the chapter's batch is other data: other tokens, other numbers
    printed = _printed("06_masked_attention.ipynb", 'batch = [["the", "cat", "sat", "down", "."],')
    chapter_sentences = [tuple(re.findall(r"'([^']*)'", line)) for line in printed.splitlines()[:2]]
    assert chapter_sentences[0] == ("the", "cat", "sat", "down", ".")
    assert view.sentence not in chapter_sentences
    nb = json.loads((BOOK / "06_masked_attention.ipynb").read_text(encoding="utf-8"))
    slot = next(c for c in nb["cells"] if "explorer-slot" in c["metadata"].get("tags", []))
    prose = " ".join("".join(slot["source"]).split())
    assert "data of its own, not the batch above" in prose
    assert f"width $E = {view.width}$ (seed {view.seed})" in prose


def test_chapter_7_explorer_counts_the_chapters_dimensions_outside_training():
    printed = _printed("07_positional_encoding.ipynb", "pe_long = ac.sinusoidal_positional_encoding")
    found = re.findall(r"position +(\d+): +(\d+) of (\d+) dimensions outside", printed)
    assert len(found) >= 5
    default = explore.extrapolation_view()  # d_model and N from toy_data, as the chapter
    for position, outside, d_model in found:
        position, outside = int(position), int(outside)
        assert int(d_model) == default.d_model == toy_data.PE_D_MODEL
        view = default if position < len(default.outside) else explore.extrapolation_view(n_positions=1024)
        assert int(view.outside[position]) == outside, position


def test_chapter_0_explorer_fits_the_chapters_points():
    # "width  0.3: training MSE 0.244, held-out MSE ..." for each width the chapter tries
    text = _printed("00_why_attention.ipynb", "kernel_regression_data(rng)")
    rows = re.findall(r"width\s+([0-9.]+): training MSE ([0-9.]+)", text)
    assert len(rows) == 3, text
    assert explore.kernel.DEFAULT_WIDTH in {float(w) for w, _ in rows}  # the default is one of them
    for width, train_mse in rows:
        view = explore.kernel_view(float(width))
        assert view.train_mse == pytest.approx(float(train_mse), abs=5e-4), width


def test_chapter_2_explorer_shows_the_chapters_plane_example():
    printed = _printed("02_dot_product_attention.ipynb", "q_plane = np.array(")
    numbers = {
        name: np.array(re.search(rf"{name}: *\[([^\]]*)\]", printed).group(1).split(), dtype=float)
        for name in ("scores q.k", "weights", "output")
    }
    view = explore.dot_product_view()  # the default view: length 1 at 45 degrees
    np.testing.assert_array_equal(view.k, toy_data.KEYS_2D)
    np.testing.assert_allclose(view.scores, numbers["scores q.k"], atol=5e-3)  # unscaled, as chapter 2
    np.testing.assert_allclose(view.weights, numbers["weights"], atol=5e-4)
    np.testing.assert_allclose(view.out, numbers["output"], atol=5e-3)


# -- one numbering: a chapter's printout names keys, layers and heads as its explorer does ---------
# The explorers count from 0 (tests/test_explorer_numbering.py), and so do the chapters.


def test_chapter_2_names_the_plane_keys_as_its_explorer_does():
    pytest.importorskip("matplotlib")
    from attncourse.widgets.dot_product import _DotProductPainter

    names = _DotProductPainter().names  # the explorer's tick labels: k0, ..., k4
    printed = _printed("02_dot_product_attention.ipynb", "q_plane = np.array(")
    assert f"keys {names[0]}..{names[-1]}:" in printed, printed


def test_chapter_11_explorer_shows_the_chapters_cache_sizes():
    from attncourse.explore.modern import cache_view  # not re-exported by attncourse.explore

    printed = _printed("11_modern_attention.ipynb", "cache = weights at")
    # "Llama-3-8B           128.0      4.00        15.0  122,529 tokens": KiB/token, GiB at 32k
    rows = {
        m.group(1): (float(m.group(2)), float(m.group(3)))
        for m in re.finditer(r"^(\S+) +([0-9.]+) +([0-9.]+) +[0-9.]+ ", printed, re.MULTILINE)
    }
    at_32k = list(cache_view().contexts).index(32768)
    # The explorer's model is Llama-3-8B (32 layers of 32 query heads of 128): its default, GQA with
    # 8 KV heads, is the chapter's row; with MHA it keeps Llama-2-7B's cache; a 4096 window is
    # Mistral-7B's.
    for model, view in [
        ("Llama-3-8B", cache_view()),
        ("Llama-2-7B", cache_view("MHA")),
        ("Mistral-7B-v0.1", cache_view("GQA-8", 4096)),
    ]:
        kib_per_token, gib_at_32k = rows[model]
        assert view.per_token_kib == pytest.approx(kib_per_token, abs=0.05), model
        assert view.cache_gib[at_32k] == pytest.approx(gib_at_32k, abs=0.005), model
    first = _printed("11_modern_attention.ipynb", "Llama-2-7B: {per_token")
    context = re.search(r"Llama-2-7B: (\d+) KiB per token, ([0-9.]+) GiB for its (\d+)-token context", first)
    assert context, first
    mha = cache_view("MHA")
    assert mha.per_token_kib == float(context.group(1))
    assert mha.cache_gib[list(mha.contexts).index(int(context.group(3)))] == pytest.approx(
        float(context.group(2)), abs=0.05
    )


def test_chapter_11_cache_explorer_default_is_the_tables_llama_3_8b():
    from attncourse.explore.modern import BASE_MODEL, cache_view

    printed = _printed("11_modern_attention.ipynb", "cache = weights at")
    # "Llama-3-8B           128.0      4.00        15.0  122,529 tokens": ..., weights GiB, crossover
    rows = {
        m.group(1): (float(m.group(2)), m.group(3))
        for m in re.finditer(
            r"^(\S+) +[0-9.]+ +[0-9.]+ +([0-9.]+) +(never \(window\)|[0-9,]+ tokens)$", printed, re.MULTILINE
        )
    }
    assert len(rows) == 5, printed
    default = cache_view()
    weights_gib, crossover = rows[BASE_MODEL]
    assert BASE_MODEL == "Llama-3-8B"
    assert default.weights_gib == pytest.approx(weights_gib, abs=0.05)
    assert f"{default.crossover:,} tokens" == crossover  # 122,529 tokens
    assert cache_view("GQA-8", 4096).crossover is None and rows["Mistral-7B-v0.1"][1] == "never (window)"


def test_chapter_11_rope_explorer_shows_the_chapters_frequency_ratios():
    from attncourse.explore import modern

    printed = _printed("11_modern_attention.ipynb", "SCALINGS = toy_data.rope_scalings")
    # "{'rope_type': 'llama3', 'factor': 4.0, ..., 'original_max_position_embeddings': 32}", then
    # "yarn     (factor 1.139)  1.000   0.625   0.250 ...": attention factor, ratio per pair
    factor = float(re.search(r"'factor': ([0-9.]+)", printed).group(1))
    trained = int(re.search(r"'original_max_position_embeddings': (\d+)", printed).group(1))
    rows = {
        m.group(1): (float(m.group(2)), [float(x) for x in m.group(3).split()])
        for m in re.finditer(r"^(\w+) +\(factor ([0-9.]+)\) +([0-9. ]+)$", printed, re.MULTILINE)
    }
    unscaled = rows.pop("none")  # the chapter's reference row: every pair at its own frequency
    assert unscaled == (1.0, [1.0] * (modern.ROPE_E // 2))
    assert set(rows) == set(modern.SCALINGS) and trained == modern.ROPE_TRAIN
    default = modern.rope_scaling_view()
    assert (default.scaling, default.factor) == ("yarn", factor)  # a view the chapter prints
    for scaling, (attention_factor, ratios) in rows.items():
        view = modern.rope_scaling_view(scaling, int(factor))
        assert len(view.ratio) == len(ratios) == modern.ROPE_E // 2, scaling
        np.testing.assert_allclose(view.ratio, ratios, atol=5e-4, err_msg=scaling)
        assert view.attention_factor == pytest.approx(attention_factor, abs=5e-4), scaling


def test_chapter_3_explorer_shows_the_chapters_saturation_tables():
    weights_table = _printed("03_scaling.ipynb", 'print(" d_k   largest weight')
    # "  64   0.850    0.252     0.389   2.346   0.253": largest weight and entropy, unscaled then
    # scaled (the last column, every |q| = sqrt(d_k), is not the explorer's)
    saturation = {
        int(m[0]): [float(x) for x in m[1:]]
        for m in re.findall(
            r"^ *(\d+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +[0-9.]+$", weights_table, re.MULTILINE
        )
    }
    jacobian_table = _printed("03_scaling.ipynb", 'print(" d_k     median ||J||')
    # "  64   9.33e-02   0.305     0.170    0.306": median ||J|| unscaled, scaled; mean unscaled, scaled
    jacobian = {
        int(m[0]): [float(x) for x in m[1:]]
        for m in re.findall(
            r"^ *(\d+) +([0-9.e+-]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)$", jacobian_table, re.MULTILINE
        )
    }
    assert sorted(saturation) == sorted(jacobian) == list(explore.D_K_VALUES)
    assert explore.scaling_view().d_k == 64 and 128 in saturation  # the default, a printed width
    for d_k in explore.D_K_VALUES:  # every position of the slider is a row of the tables
        view = explore.scaling_view(d_k)
        unscaled, scaled = view.stats["unscaled"], view.stats["scaled"]
        shown = [unscaled.max_weight, scaled.max_weight, unscaled.entropy, scaled.entropy]
        np.testing.assert_allclose(shown, saturation[d_k], atol=6e-4, err_msg=f"d_k = {d_k}")
        np.testing.assert_allclose(
            [unscaled.median_grad_norm, scaled.median_grad_norm], jacobian[d_k][:2], rtol=6e-3
        )
        np.testing.assert_allclose([unscaled.grad_norm, scaled.grad_norm], jacobian[d_k][2:], atol=6e-4)


def test_chapter_9_explorer_steps_through_the_chapters_worked_row():
    notebook = "09_efficient_attention.ipynb"
    by_element = _printed(notebook, "x = np.array(toy_data.ONLINE_SCORES)")
    # "j = 2: x_j = 4   m = 4   l = 1.4177": one line per element
    elements = re.findall(r"x_j = (\S+) +m = (\S+) +l = ([0-9.]+)", by_element)
    one_by_one = explore.efficient_view(1, len(elements))
    assert one_by_one.step == one_by_one.n_blocks == len(elements) == 5
    np.testing.assert_allclose(one_by_one.scores, [float(x) for x, _, _ in elements])
    np.testing.assert_allclose(one_by_one.running_max, [float(m) for _, m, _ in elements])
    np.testing.assert_allclose(one_by_one.running_sum, [float(ell) for _, _, ell in elements], atol=5e-5)

    by_block = _printed(notebook, "v = np.array(toy_data.ONLINE_VALUES)")
    # "block [4. 1.]: m = 4   l = 1.4675   out so far = acc / l = 0.9100": one line per block
    blocks = re.findall(
        r"block \[([^\]]*)\]: m = (\S+) +l = ([0-9.]+) +out so far = acc / l = (-?[0-9.]+)", by_block
    )
    default = explore.efficient_view()  # block size 2, after the first block
    assert default.step == 1 and default.n_blocks == len(blocks) == 3
    b = default.block_size
    for step, (block, m, ell, out) in enumerate(blocks, start=1):
        view = explore.efficient_view(b, step)
        np.testing.assert_allclose(view.scores[(step - 1) * b : step * b], [float(x) for x in block.split()])
        assert view.running_max[-1] == float(m), step
        assert view.running_sum[-1] == pytest.approx(float(ell), abs=5e-5), step
        assert view.out_so_far == pytest.approx(float(out), abs=5e-5), step
    np.testing.assert_allclose(view.running_out, [float(out) for *_, out in blocks], atol=5e-5)
    exact = re.search(r"softmax\(x\) @ v = (-?[0-9.]+)", by_block).group(1)
    assert view.out == pytest.approx(float(exact), abs=5e-5)
    online = re.search(r"online softmax: \[([^\]]*)\]", _printed(notebook, "p_online = np.exp(x - m) / l"))
    np.testing.assert_allclose(view.weights_so_far, [float(x) for x in online.group(1).split()], atol=5e-5)


def test_chapter_5_explorer_counts_the_chapters_parameters():
    printed = _printed("05_multi_head_attention.ipynb", '"n_heads  d_head  ac params')
    # "      4       6       2400          2400         49,152": n_heads, d_head, ac params, ...
    rows = re.findall(r"^ +(\d+) +(\d+) +(\d+) +(\d+) +[0-9,]+$", printed, re.MULTILINE)
    d_model = int(re.search(r"4 d_model\^2 \+ 4 d_model = (\d+)", printed).group(1))
    assert len(rows) == 8 and d_model == int(rows[0][2])
    for n_heads, d_head, n_params, _ in rows:
        view = explore.heads_view(int(n_heads), int(n_heads) * int(d_head))  # the table's d_model, 24
        assert view.d_head == int(d_head), n_heads
        # the table counts ac.MultiHeadAttention with biases; the explorer's layer has none
        width = int(n_heads) * int(d_head)
        assert view.n_params == int(n_params) - 4 * width == d_model - 4 * width, n_heads


def test_chapter_5_explorer_opens_on_the_chapters_per_head_maps():
    printed = _printed("05_multi_head_attention.ipynb", "query = tokens.index(toy_data.HEADS_QUERY)")
    # "head 2: 'sat' attends most to 'on' (weight 0.47)": one line per head
    rows = re.findall(r"head (\d+): '(\w+)' attends most to '(\w+)' \(weight ([0-9.]+)\)", printed)
    entropies = re.search(
        r"mean row entropy of the four maps: ([0-9.]+) with 1/sqrt\(d_head\), ([0-9.]+) with 1/sqrt\(d_model\)",
        printed,
    )
    right, bug = explore.heads_view(), explore.heads_view(scale_by="d_model")  # the explorer's default
    assert right.n_heads == len(rows) == 4 and right.d_head == 2
    for h, query, top, weight in rows:
        row = right.weights[int(h), right.tokens.index(query)]
        assert right.tokens[int(row.argmax())] == top, h
        assert row.max() == pytest.approx(float(weight), abs=5e-3), h
    assert right.mean_entropy == pytest.approx(float(entropies.group(1)), abs=5e-4)
    assert bug.mean_entropy == pytest.approx(float(entropies.group(2)), abs=5e-4)


def test_chapter_10_explorer_grids_have_the_chapters_token_counts():
    from attncourse.results import saved_results

    printed = _printed("10_vision_transformer.ipynb", "{'attention KiB':>13}")
    # " 2     17  18218          4.52       14.6  0.954 (0.960, 0.949)": P, tokens, params, ...
    tokens = {int(p): int(t) for p, t in re.findall(r"^ *(\d+) +(\d+) +\d+ +[0-9.]+ ", printed, re.MULTILINE)}
    maps = saved_results("vit_digits_maps.json")  # what the chapter hands to vision_explorer
    shared = [p for p in maps["patch_sizes"] if p in tokens]
    assert shared == [1, 2, 4], (sorted(tokens), maps["patch_sizes"])
    for patch_size in shared:
        for view in explore.VISION_VIEWS:
            shown = explore.vision_view(maps, 0, patch_size, view)  # the default image, 0
            patches = shown.grid[0] * shown.grid[1]
            assert patches + 1 == tokens[patch_size], (patch_size, view)  # the patches and [CLS]
            assert shown.maps.shape[1:] == shown.grid


def test_chapter_10_explorer_default_is_the_chapters_model():
    """The saved P = 2 maps are those of the model chapter 10 trains (same seed, data, epochs)."""
    from attncourse.results import saved_results

    maps = saved_results("vit_digits_maps.json")  # what the chapter hands to vision_explorer
    heads = _printed("10_vision_transformer.ipynb", "on_self = torch.stack(")
    # "the 0, layer 1: head 0 0.553 at (1, 2)   head 1 ...": each head's largest weight on a patch,
    # the layers in order (their numbering is tied by the test below)
    layers = re.findall(r"^the 0, layer (\d+): (.*)$", heads, re.MULTILINE)
    assert len(layers) == 2, heads
    for (layer, line), name in zip(layers, explore.VISION_VIEWS):
        shown = re.findall(r"head (\d+) ([0-9.]+) at \((\d+), (\d+)\)", line)
        view = explore.vision_view(maps, 0, 2, name)  # the default image and patch size
        assert view.label == 0 and len(shown) == len(view.maps) == 4
        for (h, weight, row, col), grid, top in zip(shown, view.maps, view.top_patches):
            assert top == (int(row), int(col)), (layer, h)
            assert grid.max() == pytest.approx(float(weight), abs=6e-4), (layer, h)
    assert explore.vision_view(maps).view == explore.VISION_VIEWS[1]  # it opens on the last layer

    printed = _printed("10_vision_transformer.ipynb", "top4 = cls_rollout[shown[0]]")
    # "the 0's top 4 patches by rollout, (row, column) and share: (1, 2) 0.098, (2, 0) 0.089, ..."
    top4 = re.findall(r"\((\d+), (\d+)\) ([0-9.]+)", printed.split("share:")[1])
    rollout = explore.vision_view(maps, 0, 2, "rollout").maps[0]  # (4, 4)
    order = np.argsort(-rollout, axis=None)[: len(top4)]
    assert len(top4) == 4
    for k, (row, col, share) in zip(order, top4):
        assert divmod(int(k), 4) == (int(row), int(col))
        assert rollout.flat[k] == pytest.approx(float(share), abs=6e-4)


def test_chapter_10_numbers_layers_and_heads_as_its_explorer_does():
    from attncourse.results import saved_results

    maps = saved_results("vit_digits_maps.json")
    heads = _printed("10_vision_transformer.ipynb", "on_self = torch.stack(")
    layers = re.findall(r"^the 0, layer (\d+): (.*)$", heads, re.MULTILINE)
    names = [name for name in explore.VISION_VIEWS if name.startswith("layer ")]  # "layer 0", ...
    assert [f"layer {layer}" for layer, _ in layers] == names, heads
    for (_, line), name in zip(layers, names):
        titles = explore.vision_view(maps, 0, 2, name).titles  # "layer 0, head 0", ...
        assert [f"{name}, head {h}" for h in re.findall(r"head (\d+) ", line)] == list(titles), line


# Chapter 8's explorer shows the model the chapter trains; its weights are not saved, so its
# frames exist only in the built book (the build executes the chapter and draws every frame).
BUILT = BOOK.parent / "_build"
_TRANSFORMER_CAPTION = re.compile(
    r"Layer (\d+), head (\d+): previous-token score ([0-9.]+), induction score ([0-9.]+), averaged over "
    r"(\d+) held-out sequences.*?On the sequence shown, [0-9 ]+: mean weight on the previous token ([0-9.]+);"
    r" on the keys right after an earlier copy of the query.s token \(circled\) ([0-9.]+)\.",
    re.S,
)


def _transformer_frames(page: Path) -> dict:
    """(layer, head) -> (held-out previous, induction, demo previous, induction) from the captions
    of every frame of the page's Transformer explorer (the widget state: in ``<page>.widgets.js``
    once book/_ext/fast_pages.py has moved it out of the page, else in the page)."""
    state = page.with_suffix(".widgets.js")
    text = (state if state.is_file() else page).read_text(encoding="utf-8")
    frames: dict = {}
    for m in _TRANSFORMER_CAPTION.finditer(text):
        numbers = (m.group(3), m.group(4), m.group(6), m.group(7))
        assert frames.setdefault((int(m.group(1)), int(m.group(2))), numbers) == numbers, m.group(0)
    return frames


@pytest.mark.book
def test_chapter_8_explorer_tables_are_the_chapters_held_out_scores():
    # The page and the executed notebook of one build: the same execution, the same trained model.
    page = built_file(BUILT / "html" / "book" / "08_transformer_block.html")
    executed = built_file(BUILT / "jupyter_execute" / "book" / "08_transformer_block.ipynb")
    frames = _transformer_frames(page)
    assert sorted(frames) == [(layer, head) for layer in (0, 1) for head in (0, 1, 2, 3)], sorted(frames)

    # "layer 1 previous-token  held-out: 0.34 0.46 0.63 0.56   demo: 0.54 0.66 0.77 0.66": printed
    # by the cell that measures with the package's head_scores, as the explorer does.
    both = _printed(executed.name, "package_head_scores(", book=executed.parent)
    rows = re.findall(
        r"^layer (\d) +(previous-token|induction) +held-out: ([0-9. ]+?) +demo: ([0-9. ]+)$", both, re.M
    )
    assert len(rows) == 4, both
    order = sorted({int(r[0]) for r in rows})  # the layers in order (their numbering: tied below)
    for layer, score, held_out, demo in rows:
        column = 0 if score == "previous-token" else 1
        for head, (mean, one) in enumerate(zip(held_out.split(), demo.split())):
            shown = frames[order.index(int(layer)), head]
            assert (shown[column], shown[2 + column]) == (mean, one), (layer, head, score)

    # The chapter's own measurement (its head_scores, in torch) prints the same table.
    own = _printed(executed.name, "def head_scores(weights, tokens, starts)", book=executed.parent)
    table = re.findall(r"^layer (\d) +previous-token: ([0-9. ]+?) +induction: ([0-9. ]+)$", own, re.M)
    assert len(table) == 2, own
    for index, (layer, previous, induction) in enumerate(table):
        for head, (p, i) in enumerate(zip(previous.split(), induction.split())):
            shown = frames[index, head]
            # one unit in the last printed digit: float32 sums in the chapter, float64 in the package
            assert float(shown[0]) == pytest.approx(float(p), abs=0.0101), (layer, head)
            assert float(shown[1]) == pytest.approx(float(i), abs=0.0101), (layer, head)


def test_chapter_8_numbers_layers_and_heads_as_its_explorer_does():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("matplotlib")
    from attncourse.widgets import transformer_explorer

    maps = [np.full((1, 4, 3, 3), 1 / 3)] * 2  # the chapter's shape: two layers of four heads
    explorer = transformer_explorer(maps, [1, 2, 3], mode="live")
    layers = [label for label, _ in explorer.controls["layer"].options]
    heads = [label for label, _ in explorer.controls["head"].options]
    own = _printed("08_transformer_block.ipynb", "def head_scores(weights, tokens, starts)")
    assert re.findall(r"^layer (\d) +previous-token:", own, re.M) == layers, own
    ablation = _printed("08_transformer_block.ipynb", "ablated[name] = test_accuracy(")
    pairs = re.findall(r"^without layer (\d+), head (\d+) ", ablation, re.M)
    assert pairs == [(layer, head) for layer in layers for head in heads], ablation


def test_chapter_13_explorer_shows_the_chapters_recall_table():
    """The accuracy each frame of the fixed-state explorer gives is the chapter's printed mean."""
    from attncourse.results import saved_results

    printed = _printed("13_beyond_softmax.ipynb", 'recall = saved_results("recall_state_size.json")')
    # "delta      8     0.68 (0.60-0.77)    0.53 (0.40-0.69) ...": method, E, then mean (min-max) per n
    header = re.search(r"^method +E +(.*)$", printed, re.MULTILINE).group(1)
    pairs = [int(n) for n in re.findall(r"n = (\d+)", header)]
    rows = {
        (m, int(E)): [float(x) for x in re.findall(r"([0-9.]+) \(", rest)]
        for m, E, rest in re.findall(r"^(\w+) +(\d+) +(.*)$", printed, re.MULTILINE)
        if m != "method"
    }
    recall = saved_results("recall_state_size.json")  # what the chapter hands to state_explorer
    topk = saved_results("recall_hybrid.json")["topk"]
    seen = 0
    for method in explore.STATE_METHODS:
        for E in explore.STATE_SIZES:
            for n in explore.STATE_PAIRS:
                view = explore.state_view(recall, topk, method, E, n)
                if (method, E) not in rows:
                    assert view.accuracy is None, (method, E)
                    continue
                assert view.accuracy == pytest.approx(rows[method, E][pairs.index(n)], abs=5e-3)
                seen += 1
    assert seen == 6 * len(explore.STATE_PAIRS)  # linear and delta at 3 sizes
    assert explore.state_view(recall, topk).accuracy == pytest.approx(
        rows["delta", 8][pairs.index(4)], abs=5e-3
    )


def test_chapter_13_explorer_shows_the_chapters_topk_table():
    """The top-k panel's accuracies are the trained stack's, as the chapter's top-k table prints them."""
    from attncourse.results import saved_results

    printed = _printed("13_beyond_softmax.ipynb", 'tk = hybrid["topk"]')
    # "top_k   exact indexer   rank-1 indexer ...", then "    8            1.00             0.54 ..."
    header = re.search(r"^top_k +(.*)$", printed, re.MULTILINE).group(1)
    rankings = ["exact"] + [f"rank-{r}" for r in re.findall(r"rank-(\d+) indexer", header)]
    table = {
        int(k): dict(zip(rankings, map(float, rest.split())))
        for k, rest in re.findall(r"^ *(\d+) +([0-9. ]+)$", printed, re.MULTILINE)
    }
    recall = saved_results("recall_state_size.json")
    topk = saved_results("recall_hybrid.json")["topk"]  # what the chapter hands to state_explorer
    for k in explore.STATE_TOP_K:
        view = explore.state_view(recall, topk, top_k=k)
        assert list(view.topk_accuracy) == rankings
        for name in rankings:
            assert view.topk_accuracy[name] == pytest.approx(table[k][name], abs=5e-3), (k, name)
    nb = json.loads((BOOK / "13_beyond_softmax.ipynb").read_text(encoding="utf-8"))
    calls = ["".join(c["source"]) for c in nb["cells"] if "state_explorer(" in "".join(c["source"])]
    assert len(calls) == 1 and 'state_explorer(recall, hybrid["topk"])' in calls[0], calls
