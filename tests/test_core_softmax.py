import numpy as np
import pytest

import attncourse as ac
from reference import loop_softmax
from support import DEVICES, assert_close, torch


def test_matches_loop_reference(rng):
    x = rng.normal(size=(4, 7)) * 5
    expected = np.array([loop_softmax(row) for row in x])
    np.testing.assert_allclose(ac.softmax(x), expected, rtol=1e-12)


def test_other_axis(rng):
    x = rng.normal(size=(3, 4, 5))
    np.testing.assert_allclose(ac.softmax(x, axis=1), np.swapaxes(ac.softmax(np.swapaxes(x, 1, -1)), 1, -1))
    np.testing.assert_allclose(ac.softmax(x, axis=1).sum(axis=1), 1.0)


def test_matches_torch_softmax(rng):
    x = rng.normal(size=(3, 6)) * 10
    assert_close(ac.softmax(torch.tensor(x)), torch.softmax(torch.tensor(x), -1))


def test_huge_scores_do_not_overflow():
    x = np.array([1000.0, 1001.0, 999.0])
    out = ac.softmax(x)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, loop_softmax(list(x)))


def test_neg_inf_gets_zero_weight_and_all_masked_row_is_zero():
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]])
    out = ac.softmax(x)
    assert out[0, 1] == 0.0
    np.testing.assert_allclose(out[0].sum(), 1.0)
    assert (out[1] == 0).all()


def test_all_masked_row_has_finite_zero_gradient():
    x = torch.tensor([[-np.inf, -np.inf], [0.5, -np.inf]], requires_grad=True)
    out = ac.softmax(x)
    (out * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert torch.isfinite(x.grad).all()
    assert (x.grad == 0).all()  # single-visible-key row: weight is constant 1


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_numpy_dtype_is_kept(dtype):
    x = np.array([1.0, 60000.0, 3.0], dtype=dtype)
    out = ac.softmax(x)
    assert out.dtype == dtype
    assert np.isfinite(out).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_torch_dtype_and_device_are_kept(device, dtype):
    x = torch.tensor([[1.0, 60000.0, 3.0]], dtype=dtype, device=device)
    out = ac.softmax(x)
    assert out.dtype == dtype and out.device == x.device
    assert_close(out, torch.softmax(x.double(), -1), dtype=dtype)


def test_integer_input_is_promoted():
    assert ac.softmax(np.array([0, 0])).tolist() == [0.5, 0.5]
    assert ac.softmax([1, 1, 1, 1]).dtype == np.float64


def test_bad_axis_and_dtype():
    with pytest.raises(ValueError, match=r"axis=2 is out of range for x of shape \(3,\)"):
        ac.softmax(np.zeros(3), axis=2)
    with pytest.raises(TypeError, match="x must hold real numbers; got dtype bool"):
        ac.softmax(np.array([True, False]))
