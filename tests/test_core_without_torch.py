"""The numpy path works where torch cannot be imported at all."""

import subprocess
import sys

SCRIPT = r"""
import sys
sys.modules["torch"] = None  # any `import torch` now raises ImportError
import numpy as np
import attncourse as ac
assert "torch" not in [m for m in sys.modules if sys.modules[m] is not None]
rng = np.random.default_rng(0)
q, k, v = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 7, 8)), rng.normal(size=(2, 7, 3))
out, w = ac.scaled_dot_product_attention(q, k, v, ac.padding_mask([3, 7], 7)[:, None, :], is_causal=True)
assert out.shape == (2, 5, 3) and isinstance(out, np.ndarray)
assert ac.apply_rope(q).shape == q.shape and ac.sinusoidal_positional_encoding(4, 8).shape == (4, 8)
assert ac.linear_attention(q, q, k[:, :5, :3], feature_map=ac.elu_feature_map).shape == (2, 5, 3)
assert ac.delta_rule(q, q, k[:, :5, :3], np.ones((2, 5)))[1].shape == (2, 8, 3)
assert ac.topk_attention(q, k, v, 2, is_causal=True)[1].shape == (2, 5, 7)
for name in ("MultiHeadAttention", "TransformerEncoderDecoder"):
    try:
        getattr(ac, name)
    except ImportError as e:
        assert "needs PyTorch" in str(e)
    else:
        raise AssertionError(f"{name} should need torch")
print("numpy path ok")
"""


def test_import_and_numpy_path_without_torch():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "numpy path ok" in result.stdout
