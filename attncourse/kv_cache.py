"""What a KV cache costs and three ways to make it smaller (chapter 11).

* ``kv_cache_bytes``: the bytes of keys and values a model keeps per token and per sequence, from
  the numbers in its published configuration (layers, key/value heads, head width, dtype, a
  sliding window, or a multi-head latent attention rank).
* ``MODEL_CONFIGS``: those numbers for five published models, read by chapter 11's table and by its
  cache explorer.
* ``window_sink_mask`` and ``RollingKVCache``: a sliding window that keeps only the last ``window``
  tokens, optionally with the first ``n_sinks`` tokens kept for ever (StreamingLLM's "attention
  sinks").
* ``PagedKVCache``: vLLM's paged cache, fixed-size blocks handed out on demand through a block
  table, and its memory against one contiguous buffer per sequence.

numpy only, except ``RollingKVCache``, which stores whatever arrays it is given (numpy or torch).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._backend import AttentionInputError, fmt_shape, namespace
from ._validation import int_at_least, positive_int, public

__all__ = [
    "MODEL_CONFIGS",
    "kv_cache_bytes",
    "window_sink_mask",
    "RollingKVCache",
    "PagedKVCache",
    "contiguous_slots",
]

# name -> layers, query heads, KV heads, head width, [sliding window], [MLA latent rank, MLA RoPE
# key width], parameters: from each model's config.json on Hugging Face (num_hidden_layers,
# num_attention_heads, num_key_value_heads, hidden_size / num_attention_heads, sliding_window,
# kv_lora_rank, qk_rope_head_dim) and the parameter counts of the model cards.  Read-only.
MODEL_CONFIGS: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        name: MappingProxyType(config)
        for name, config in {
            "Llama-2-7B": dict(n_layers=32, n_heads=32, n_kv_heads=32, head_dim=128, params=6.74e9),
            "Llama-2-70B": dict(n_layers=80, n_heads=64, n_kv_heads=8, head_dim=128, params=69.0e9),
            "Llama-3-8B": dict(n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128, params=8.03e9),
            "Mistral-7B-v0.1": dict(
                n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128, window=4096, params=7.24e9
            ),
            "DeepSeek-V3": dict(
                n_layers=61,
                n_heads=128,
                n_kv_heads=128,
                head_dim=128,
                kv_lora_rank=512,
                rope_head_dim=64,
                params=671e9,
            ),
        }.items()
    }
)


@public("kv_cache_bytes")
def kv_cache_bytes(
    n_layers: int,
    n_kv_heads: int,
    head_dim: int,
    seq_len: int = 1,
    *,
    batch: int = 1,
    bytes_per_number: int = 2,
    window: Optional[int] = None,
    kv_lora_rank: Optional[int] = None,
    rope_head_dim: int = 0,
) -> int:
    """Bytes of the KV cache of ``batch`` sequences of ``seq_len`` tokens.

    Every layer keeps, per token, a key and a value of ``head_dim`` numbers for each of its
    ``n_kv_heads`` key/value heads: ``2 * n_kv_heads * head_dim`` numbers (multi-head attention has
    ``n_kv_heads`` equal to the query heads, grouped-query fewer, multi-query one).  With
    ``kv_lora_rank`` (multi-head latent attention, DeepSeek-V2/V3) a layer keeps instead one latent
    vector of ``kv_lora_rank`` numbers plus one shared RoPE key of ``rope_head_dim`` numbers per
    token, whatever the head count.  ``window`` keeps only the last ``window`` tokens.
    ``bytes_per_number`` is 2 for float16/bfloat16, 4 for float32, 1 for an 8-bit cache.

    >>> kv_cache_bytes(32, 32, 128)  # Llama-2-7B, one token, float16: 512 KiB
    524288
    >>> kv_cache_bytes(32, 8, 128, 8192) // 2**20  # Llama-3-8B, 8192 tokens: MiB
    1024
    """
    n_layers, head_dim = positive_int("n_layers", n_layers), positive_int("head_dim", head_dim)
    n_kv_heads = positive_int("n_kv_heads", n_kv_heads)
    seq_len = int_at_least("seq_len", seq_len, 0)
    batch, bytes_per_number = positive_int("batch", batch), positive_int("bytes_per_number", bytes_per_number)
    if window is not None:
        seq_len = min(seq_len, positive_int("window", window))
    if kv_lora_rank is not None:
        per_layer = positive_int("kv_lora_rank", kv_lora_rank) + int_at_least(
            "rope_head_dim", rope_head_dim, 0
        )
    else:
        per_layer = 2 * n_kv_heads * head_dim  # one key and one value per KV head
    return n_layers * per_layer * seq_len * batch * bytes_per_number


@public("window_sink_mask")
def window_sink_mask(L: int, window: int, n_sinks: int = 0, S: Optional[int] = None) -> np.ndarray:
    """Boolean ``(L, S)``: query ``i`` may attend key ``j`` if ``i - window < j <= i`` or ``j < n_sinks``
    (and ``j <= i``).

    The window counts the query itself (``window=1``: each token sees only itself), as
    ``sliding_window_mask``; the first ``n_sinks`` keys stay visible to every later query.  Top-left
    aligned like ``causal_mask`` (``S`` defaults to ``L``).

    >>> window_sink_mask(5, 2, 1).astype(int)
    array([[1, 0, 0, 0, 0],
           [1, 1, 0, 0, 0],
           [1, 1, 1, 0, 0],
           [1, 0, 1, 1, 0],
           [1, 0, 0, 1, 1]])
    """
    L, window = positive_int("L", L), positive_int("window", window)
    S = L if S is None else positive_int("S", S)
    n_sinks = int_at_least("n_sinks", n_sinks, 0)
    i, j = np.arange(L)[:, None], np.arange(S)[None, :]
    return (j <= i) & ((j > i - window) | (j < n_sinks))


class RollingKVCache:
    """A KV cache that keeps the first ``n_sinks`` tokens and the last ``window`` tokens.

    ``append(k, v)`` adds one token's key ``(..., 1, E)`` and value ``(..., 1, Ev)`` and returns the
    keys and values to attend to; once ``n_sinks + window`` tokens are held, the oldest token after
    the sinks is dropped.  ``positions`` lists the original positions of the tokens held, in the
    cache's order (sinks first).  Attending to what ``append`` returns gives the rows of
    ``window_sink_mask(L, window, n_sinks)``; memory stays at ``n_sinks + window`` tokens however long
    the stream.  Tokens arrive one at a time (decoding).

    >>> import numpy as np
    >>> cache = RollingKVCache(window=3, n_sinks=1)
    >>> for t in range(6):
    ...     k, v = cache.append(np.full((1, 2), t), np.full((1, 2), t))
    >>> cache.positions, k[:, 0].tolist()
    ([0, 3, 4, 5], [0, 3, 4, 5])
    """

    @public("RollingKVCache")
    def __init__(self, window: int, n_sinks: int = 0) -> None:
        self.window = positive_int("window", window)
        self.n_sinks = int_at_least("n_sinks", n_sinks, 0)
        self.k = self.v = None
        self.positions: List[int] = []
        self.seen = 0  # tokens appended so far

    def __len__(self) -> int:
        return len(self.positions)

    @public("RollingKVCache.append")
    def append(self, k, v):
        ops = namespace(k=k, v=v)
        k, v = ops.asarray(k), ops.asarray(v)
        if k.ndim < 2 or v.ndim < 2 or k.shape[-2] != 1 or v.shape[-2] != 1 or k.shape[:-2] != v.shape[:-2]:
            raise AttentionInputError(
                "k (..., 1, E) and v (..., 1, Ev) must be one token each, with the same leading axes; "
                f"got k: {fmt_shape(k)}, v: {fmt_shape(v)}."
            )
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k = ops.concatenate([self.k, k], axis=-2)
            self.v = ops.concatenate([self.v, v], axis=-2)
        self.positions.append(self.seen)
        self.seen += 1
        if len(self.positions) > self.n_sinks + self.window:  # drop the oldest non-sink token
            s = self.n_sinks
            self.k = ops.concatenate([self.k[..., :s, :], self.k[..., s + 1 :, :]], axis=-2)
            self.v = ops.concatenate([self.v[..., :s, :], self.v[..., s + 1 :, :]], axis=-2)
            del self.positions[s]
        return self.k, self.v


class PagedKVCache:
    """Block-table bookkeeping of a paged KV cache (vLLM's PagedAttention), without the tensors.

    The cache memory is ``n_blocks`` blocks of ``block_size`` token slots.  A sequence gets a block
    when its last block is full; ``block_table[seq]`` lists its blocks in order, so token ``t`` of
    ``seq`` lives in slot ``t % block_size`` of block ``block_table[seq][t // block_size]``.
    ``free(seq)`` returns its blocks.  Waste is at most ``block_size - 1`` slots per sequence,
    against ``max_len - length`` for a contiguous buffer reserved for ``max_len`` tokens.

    >>> cache = PagedKVCache(n_blocks=8, block_size=4)
    >>> cache.append("a", 6); cache.append("b", 3); cache.append("a", 3)
    >>> cache.block_table, cache.slot("a", 8)
    ({'a': [0, 1, 3], 'b': [2]}, (3, 0))
    """

    @public("PagedKVCache")
    def __init__(self, n_blocks: int, block_size: int) -> None:
        self.n_blocks, self.block_size = (
            positive_int("n_blocks", n_blocks),
            positive_int("block_size", block_size),
        )
        self.free_blocks: List[int] = list(range(n_blocks))
        self.block_table: Dict[object, List[int]] = {}
        self.lengths: Dict[object, int] = {}

    @public("PagedKVCache.append")
    def append(self, seq, n_tokens: int = 1) -> None:
        """Add ``n_tokens`` tokens to sequence ``seq`` (a new one starts empty), taking blocks as needed."""
        n_tokens = int_at_least("n_tokens", n_tokens, 0)
        length = self.lengths.get(seq, 0) + n_tokens
        table = self.block_table.setdefault(seq, [])
        need = -(-length // self.block_size) - len(table)  # ceil(length / block_size) blocks in all
        if need > len(self.free_blocks):
            raise AttentionInputError(
                f"out of blocks: sequence {seq!r} needs {need} more, {len(self.free_blocks)} free of {self.n_blocks}."
            )
        for _ in range(need):
            table.append(self.free_blocks.pop(0))
        self.lengths[seq] = length

    @public("PagedKVCache.slot")
    def slot(self, seq, t: int) -> Tuple[int, int]:
        """``(block, offset)`` where token ``t`` of ``seq`` is stored."""
        t = int_at_least("t", t, 0)
        if seq not in self.lengths or t >= self.lengths[seq]:
            raise AttentionInputError(
                f"sequence {seq!r} holds {self.lengths.get(seq, 0)} tokens; no token {t}."
            )
        return self.block_table[seq][t // self.block_size], t % self.block_size

    @public("PagedKVCache.free")
    def free(self, seq) -> None:
        """Return the blocks of ``seq`` to the free list."""
        if seq not in self.block_table:
            raise AttentionInputError(f"no sequence {seq!r} in the cache.")
        self.free_blocks.extend(self.block_table.pop(seq))
        del self.lengths[seq]

    @property
    def used_slots(self) -> int:
        """Token slots in blocks that are handed out (used or not)."""
        return self.block_size * sum(len(t) for t in self.block_table.values())

    @property
    def wasted_slots(self) -> int:
        """Slots handed out but holding no token: the unused tail of each sequence's last block."""
        return self.used_slots - sum(self.lengths.values())


@public("contiguous_slots")
def contiguous_slots(lengths: Sequence[int], max_len: int) -> int:
    """Token slots of one contiguous buffer of ``max_len`` tokens per sequence (``len(lengths) * max_len``)."""
    max_len = positive_int("max_len", max_len)
    lengths = [int_at_least("lengths", n, 0) for n in lengths]
    if any(n > max_len for n in lengths):
        raise AttentionInputError(f"a length in {lengths} exceeds max_len={max_len}.")
    return len(lengths) * max_len
