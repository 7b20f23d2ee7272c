"""attncourse: attention mechanisms, step by step, for numpy arrays and torch tensors.

Every function accepts numpy arrays or torch tensors (any device, any float dtype) and returns
the same kind, on the same device, in the same dtype.  Masks are boolean, True = may attend.
torch is imported only when a tensor arrives, or when ``MultiHeadAttention`` is used.
"""

from __future__ import annotations

from ._backend import AttentionInputError, AttentionTypeError
from .flash import KVCache, cached_attention, flash_attention, online_softmax
from .functional import merge_heads, scaled_dot_product_attention, softmax, split_heads
from .i18n import set_language
from .linear import delta_rule, elu_feature_map, linear_attention
from .masks import (
    causal_mask,
    from_additive_mask,
    from_blocked_mask,
    from_hf_attention_mask,
    padding_mask,
    sliding_window_mask,
    to_additive_mask,
    to_blocked_mask,
)
from .positional import alibi_bias, alibi_slopes, apply_rope, rope_frequencies, sinusoidal_positional_encoding
from .sparse import topk_attention
from .vision import attention_rollout, patchify, unpatchify

__version__ = "0.1.0"

__all__ = [
    "AttentionInputError",
    "AttentionTypeError",
    "softmax",
    "scaled_dot_product_attention",
    "flash_attention",
    "online_softmax",
    "KVCache",
    "cached_attention",
    "split_heads",
    "merge_heads",
    "causal_mask",
    "sliding_window_mask",
    "padding_mask",
    "from_blocked_mask",
    "to_blocked_mask",
    "from_hf_attention_mask",
    "from_additive_mask",
    "to_additive_mask",
    "sinusoidal_positional_encoding",
    "apply_rope",
    "rope_frequencies",
    "alibi_slopes",
    "alibi_bias",
    "patchify",
    "unpatchify",
    "attention_rollout",
    "linear_attention",
    "elu_feature_map",
    "delta_rule",
    "topk_attention",
    "MultiHeadAttention",
    "TransformerBlock",
    "TinyTransformer",
    "VisionTransformer",
    "TransformerEncoderDecoder",
    "best_device",
    "set_language",
]

_LAZY = {
    "MultiHeadAttention": ".multihead",
    "TransformerBlock": ".models.transformer",
    "TinyTransformer": ".models.transformer",
    "VisionTransformer": ".models.vit",
    "TransformerEncoderDecoder": ".models.encoder_decoder",
    "best_device": ".device",
}


def __getattr__(name: str):
    # MultiHeadAttention subclasses torch.nn.Module, so torch is imported on first use only.
    if name in _LAZY:
        import importlib

        try:
            module = importlib.import_module(_LAZY[name], __name__)
        except ModuleNotFoundError as e:
            if e.name == "torch":
                raise ImportError(f"attncourse.{name} needs PyTorch: pip install torch") from e
            raise
        return getattr(module, name)
    raise AttributeError(f"module 'attncourse' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
