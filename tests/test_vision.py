"""patchify / unpatchify / attention_rollout: round trips, Conv2d equality, a loop reference, errors."""

import numpy as np
import pytest

import attncourse as ac
from support import DEVICES, assert_close, torch


def loop_patchify(image, P):
    """One (C, H, W) image -> (N, C*P*P) by plain loops over the grid, row-major."""
    C, H, W = image.shape
    rows = []
    for i in range(H // P):
        for j in range(W // P):
            rows.append(
                [image[c, i * P + a, j * P + b] for c in range(C) for a in range(P) for b in range(P)]
            )
    return np.array(rows)


def loop_rollout(weights, residual=True):
    """One (H, N, N) map per layer, no batch dims: the rollout by explicit loops."""
    N = weights[0].shape[-1]
    result = np.eye(N)
    for w in weights:
        a = np.zeros((N, N))
        for h in range(w.shape[0]):
            a += w[h] / w.shape[0]
        if residual:
            a = a + np.eye(N)
            for i in range(N):
                a[i] /= a[i].sum()
        new = np.zeros((N, N))
        for i in range(N):
            for j in range(N):
                new[i, j] = sum(a[i, k] * result[k, j] for k in range(N))
        result = new
    return result


@pytest.mark.parametrize(
    "shape, P", [((1, 4, 4), 2), ((3, 6, 9), 3), ((2, 8, 4), 4), ((1, 5, 5), 1), ((2, 4, 4), 4)]
)
def test_patchify_matches_loops_and_round_trips(shape, P):
    image = np.random.default_rng(0).normal(size=shape)
    patches = ac.patchify(image, P)
    np.testing.assert_array_equal(patches, loop_patchify(image, P))
    np.testing.assert_array_equal(ac.unpatchify(patches, P, shape[1:]), image)


def test_four_by_four_image_by_hand():
    image = np.arange(16).reshape(1, 4, 4)
    patches = ac.patchify(image, 2)
    assert patches.tolist()[1] == [2, 3, 6, 7]  # the top-right patch
    assert patches.tolist()[2] == [8, 9, 12, 13]  # the bottom-left patch


@pytest.mark.parametrize("lead", [(), (2,), (2, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_batch_dims_and_dtype(lead, dtype):
    images = np.random.default_rng(1).normal(size=(*lead, 2, 4, 6)).astype(dtype)
    patches = ac.patchify(images, 2)
    assert patches.shape == (*lead, 6, 8) and patches.dtype == dtype
    flat = images.reshape(-1, 2, 4, 6)
    for b, p in zip(flat, patches.reshape(-1, 6, 8)):
        np.testing.assert_array_equal(p, loop_patchify(b, 2))
    back = ac.unpatchify(patches, 2, (4, 6))
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, images)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("C, H, W, P, D", [(1, 8, 8, 2, 5), (3, 6, 9, 3, 7), (2, 4, 8, 4, 3)])
def test_linear_patch_embedding_is_a_strided_conv(device, dtype, C, H, W, P, D):
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(C, D, P, stride=P).to(device=device, dtype=dtype)
    images = torch.randn(4, C, H, W, device=device, dtype=dtype)
    patches = ac.patchify(images, P)
    assert patches.dtype == dtype and patches.device == images.device
    ours = patches @ conv.weight.flatten(1).T + conv.bias  # (B, N, C*P*P) @ (C*P*P, D) -> (B, N, D)
    theirs = conv(images).flatten(2).transpose(1, 2)  # (B, D, H/P, W/P) -> (B, N, D)
    assert_close(ours, theirs)
    # numpy gives the same patches
    np.testing.assert_array_equal(ac.patchify(images.cpu().numpy(), P), patches.cpu().numpy())
    torch.testing.assert_close(ac.unpatchify(patches, P, (H, W)), images, rtol=0, atol=0)


def test_torch_gradient_flows_through_patchify():
    images = torch.randn(2, 1, 4, 4, dtype=torch.float64, requires_grad=True)
    (ac.patchify(images, 2) * torch.arange(4.0, dtype=torch.float64)).sum().backward()
    # each pixel's gradient is its position inside its patch (0..3)
    expected = ac.unpatchify(torch.arange(4.0, dtype=torch.float64).expand(2, 4, 4), 2, (4, 4))
    torch.testing.assert_close(images.grad, expected)


@pytest.mark.parametrize("residual", [True, False])
def test_rollout_matches_loops(residual):
    rng = np.random.default_rng(2)
    weights = [rng.dirichlet(np.ones(5), size=(2, 3, 5)) for _ in range(3)]  # (B=2, H=3, N=5, N)
    ours = ac.attention_rollout(weights, residual=residual)
    assert ours.shape == (2, 5, 5)
    for b in range(2):
        np.testing.assert_allclose(ours[b], loop_rollout([w[b] for w in weights], residual), rtol=1e-12)
    np.testing.assert_allclose(ours.sum(-1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rollout_torch_matches_numpy(dtype):
    rng = np.random.default_rng(3)
    weights = [rng.dirichlet(np.ones(4), size=(2, 4)) for _ in range(2)]  # no batch dim: (H, N, N)
    ours = ac.attention_rollout([torch.as_tensor(w, dtype=dtype) for w in weights])
    assert ours.dtype == dtype and ours.shape == (4, 4)
    assert_close(ours, loop_rollout(weights))
    np_32 = ac.attention_rollout([w.astype(np.float32) for w in weights])
    assert np_32.dtype == np.float32


def test_rollout_of_one_layer_without_residual_is_the_head_mean():
    w = np.random.default_rng(4).dirichlet(np.ones(3), size=(2, 3))
    np.testing.assert_allclose(ac.attention_rollout([w], residual=False), w.mean(0))


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: ac.patchify(np.zeros((1, 7, 8)), 2), r"patchify: images H=7 and W=8 .*patch_size P=2"),
        (lambda: ac.patchify(np.zeros((1, 8, 6)), 4), r"H=8 and W=6 .*P=4"),
        (lambda: ac.patchify(np.zeros((4, 4)), 2), r"images must be \(\.\.\., C, H, W\); got shape \(4, 4\)"),
        (lambda: ac.patchify(np.zeros((1, 4, 4)), 0), r"patch_size must be a positive integer; got 0"),
        (
            lambda: ac.unpatchify(np.zeros((5, 4)), 2, (4, 4)),
            r"unpatchify: patches \(5, 4\) .*N = \(H/P\)\(W/P\) = 4",
        ),
        (lambda: ac.unpatchify(np.zeros((4, 4)), 2, (5, 4)), r"image_size H=5 and W=4 .*P=2"),
        (lambda: ac.unpatchify(np.zeros((4, 4)), 2, 4), r"image_size must be \(H, W\)"),
        (lambda: ac.attention_rollout([]), r"attention_rollout: weights must be a non-empty list"),
        (lambda: ac.attention_rollout(np.ones((2, 3, 3))), r"single array"),
        (
            lambda: ac.attention_rollout([np.ones((2, 3, 3)), np.ones((2, 4, 4))]),
            r"weights\[1\] must be \(\.\.\., H, N, N\) with the shape of weights\[0\] \(2, 3, 3\); got \(2, 4, 4\)",
        ),
        (lambda: ac.attention_rollout([np.ones((3, 4))]), r"weights\[0\] must be \(\.\.\., H, N, N\)"),
    ],
)
def test_clear_errors(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_mixing_numpy_and_torch_is_a_type_error():
    with pytest.raises(TypeError, match="cannot be mixed"):
        ac.attention_rollout([np.ones((1, 2, 2)) / 2, torch.ones(1, 2, 2) / 2])
