"""VisionTransformer: shapes, the patch-removal mask, the permutation argument, and the sweep script."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import attncourse as ac
from support import torch

pytest.importorskip("torch")
from attncourse.vit import VisionTransformer, sinusoidal_positions_2d  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def model(**kwargs):
    torch.manual_seed(0)
    return VisionTransformer(8, 2, 1, 10, d_model=16, n_heads=2, n_layers=2, **kwargs).eval()


@pytest.mark.parametrize("pool, T", [("cls", 17), ("mean", 16)])
@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "none"])
def test_shapes_and_weights(pool, T, positions):
    vit = model(pool=pool, positions=positions)
    logits, weights = vit(torch.rand(3, 1, 8, 8), return_weights=True)
    assert logits.shape == (3, 10) and len(weights) == 2
    assert all(w.shape == (3, 2, T, T) for w in weights)
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(3, 2, T))
    assert vit(torch.rand(3, 8, 8)).shape == (3, 10)  # (B, H, W) works when C = 1


def test_patch_embedding_equals_conv2d():
    vit = model()
    conv = torch.nn.Conv2d(1, 16, 2, stride=2)
    with torch.no_grad():
        conv.weight.copy_(vit.patch_embed.weight.reshape(16, 1, 2, 2))
        conv.bias.copy_(vit.patch_embed.bias)
    x = torch.rand(2, 1, 8, 8)
    ours = vit.patch_embed(ac.patchify(x, 2))
    torch.testing.assert_close(ours, conv(x).flatten(2).transpose(1, 2))


@pytest.mark.parametrize("pool", ["cls", "mean"])
def test_without_positions_shuffling_patches_changes_nothing(pool):
    x = torch.rand(2, 1, 8, 8)
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(0))
    shuffled = ac.unpatchify(ac.patchify(x, 2)[:, perm], 2, (8, 8))
    assert not torch.equal(shuffled, x)
    bare, placed = model(pool=pool, positions="none"), model(pool=pool, positions="learned")
    torch.testing.assert_close(bare(shuffled), bare(x), rtol=1e-5, atol=1e-5)
    assert (placed(shuffled) - placed(x)).abs().max() > 1e-4


def test_keep_removes_patches():
    vit = model(pool="mean")
    x = torch.rand(2, 1, 8, 8)
    keep = torch.ones(2, 16, dtype=torch.bool)
    keep[:, :8] = False
    logits, weights = vit(x, keep=keep, return_weights=True)
    assert float(weights[0][..., :8].detach().abs().max()) == 0.0  # nobody attends to a removed patch
    x2 = x.clone()
    x2[:, :, :4] = 5.0  # the removed patches are the top half of the image (rows 0..3)
    torch.testing.assert_close(vit(x2, keep=keep), logits)
    torch.testing.assert_close(vit(x, keep=torch.ones(2, 16, dtype=torch.bool)), vit(x))


def test_sinusoidal_2d_rows_and_columns():
    pe = sinusoidal_positions_2d(3, 4, 8)
    table = ac.sinusoidal_positional_encoding(4, 4)
    np.testing.assert_allclose(pe[5, :4].numpy(), table[1], rtol=1e-6)  # patch 5: row 1, column 1
    np.testing.assert_allclose(pe[6, 4:].numpy(), table[2], rtol=1e-6)  # patch 6: column 2


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(image_size=7), r"H=7 and W=7 .*patch_size P=2"),
        (dict(pool="max"), r"pool must be one of"),
        (dict(positions="rope"), r"positions must be one of"),
    ],
)
def test_bad_configuration(kwargs, pattern):
    args = dict(image_size=8, patch_size=2, in_channels=1, n_classes=10, d_model=16, n_heads=2, n_layers=1)
    with pytest.raises(ValueError, match=pattern):
        VisionTransformer(**{**args, **kwargs})


def test_bad_images_and_keep():
    vit = model()
    with pytest.raises(ValueError, match=r"images must be \(B, 1, 8, 8\); got \(2, 1, 6, 8\)"):
        vit(torch.rand(2, 1, 6, 8))
    with pytest.raises(ValueError, match=r"keep must be a boolean \(B, N\) = \(2, 16\)"):
        vit(torch.rand(2, 1, 8, 8), keep=torch.ones(2, 15, dtype=torch.bool))


@pytest.mark.slow
def test_sweep_script_reduced():
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location("sweep", ROOT / "scripts/experiments/vit_digits_sweep.py")
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    results = sweep.main(["--quick"])
    rows = results["patch_sizes"]
    assert [r["tokens"] for r in rows] == [5, 2]  # P = 4, 8 on 8 x 8: 4 and 1 patches, plus [CLS]
    assert all(0.1 < r["accuracy"] <= 1.0 for r in rows)  # trained two epochs: above a 1-in-10 guess
    assert rows[0]["attention_bytes_per_image_per_layer"] == 4 * 5 * 5 * 4
    saved = __import__("json").loads((ROOT / "attncourse/data/vit_digits_sweep.json").read_text())
    assert {r["patch_size"] for r in saved["patch_sizes"]} == {1, 2, 4, 8}
