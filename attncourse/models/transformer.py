"""A Transformer block and a tiny causal language model built from it (this module imports torch).

``TransformerBlock`` is attention + MLP, each wrapped in a residual connection and a layer norm:

* pre-norm (``norm_first=True``, GPT-2 and most models since)::

      h = x + attn(LN1(x))
      y = h + mlp(LN2(h))

* post-norm (``norm_first=False``, the 2017 paper)::

      h = LN1(x + attn(x))
      y = LN2(h + mlp(h))

Both equal ``torch.nn.TransformerEncoderLayer(..., activation="gelu", batch_first=True)`` with the
same ``norm_first`` and the same weights (``TransformerBlock.from_torch`` copies them), and with
``activation="relu"`` the layer of the same activation (the 2017 paper's, torch's default).

``TinyTransformer`` stacks the blocks into a decoder-only (causal) language model: token embeddings
plus learned position embeddings, ``n_layers`` blocks under a causal mask, a final layer norm and a
linear head to one logit per vocabulary entry.  ``TinyTransformer.generate`` turns it into a text
generator (greedy, or sampled with a temperature and top-k, see ``next_token_probs``), with or
without a KV cache (``attncourse.flash.KVCache``); ``TinyTransformer.decode`` is the cached step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from .._backend import AttentionInputError, fmt_shape
from .._validation import int_at_least, positive_int, public
from ..flash import KVCache
from ..functional import softmax
from ..multihead import MultiHeadAttention
from .layers import cached_self_attention, copy_weights, feed_forward, supported_activation

__all__ = ["TinyTransformer", "TransformerBlock", "next_token_probs"]


class TransformerBlock(nn.Module):
    """One Transformer block: multi-head self-attention and an MLP, with residuals and layer norms.

    Parameters
    ----------
    d_model : int
        Width of the residual stream (the features of every position).
    n_heads : int
        Number of attention heads; must divide ``d_model``.
    d_ff : int, optional
        Hidden width of the MLP; default ``4 * d_model``.
    dropout : float
        Dropout on the attention weights, after each sublayer and inside the MLP (as
        ``nn.TransformerEncoderLayer`` places it); 0 by default.
    attn_dropout : float, optional
        Dropout on the attention weights alone (GPT-2's ``attn_pdrop``); ``None`` (default) uses
        ``dropout`` there too.  ``dropout=0, attn_dropout=p`` drops attention weights only.
    norm_first : bool
        True (default): pre-norm, ``x + attn(LN(x))``. False: post-norm, ``LN(x + attn(x))``.
    activation : str
        The MLP's nonlinearity: ``"gelu"`` (default, the exact GELU) or ``"relu"``.
    bias : bool
        Biases in the linear layers and the layer norms.
    n_kv_heads : int, optional
        Key/value heads (grouped-query attention, see ``MultiHeadAttention``); default ``n_heads``.
        The KV cache of ``step`` then holds ``n_kv_heads`` heads.

    ``forward(x, mask=None, *, is_causal=False, key_padding_mask=None)`` takes ``x (B, L, d_model)``
    and returns ``out (B, L, d_model)`` and the attention weights ``(B, H, L, L)``. ``mask`` is
    boolean, True = may attend, as in ``attncourse.scaled_dot_product_attention``.
    ``step(x, cache)`` is the causal forward pass of the newest positions only, the earlier
    ones' keys and values coming from a ``KVCache`` (decoding).

    Examples
    --------
    >>> import torch
    >>> block = TransformerBlock(d_model=8, n_heads=2)
    >>> out, weights = block(torch.randn(3, 5, 8), is_causal=True)
    >>> tuple(out.shape), tuple(weights.shape)
    ((3, 5, 8), (3, 2, 5, 5))
    >>> bool(weights[0, 0].triu(1).eq(0).all())  # causal: nothing above the diagonal
    True
    """

    @public("TransformerBlock")
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int | None = None,
        *,
        dropout: float = 0.0,
        attn_dropout: float | None = None,
        norm_first: bool = True,
        activation: str = "gelu",
        bias: bool = True,
        layer_norm_eps: float = 1e-5,
        n_kv_heads: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        positive_int("d_model", d_model)
        d_ff = 4 * d_model if d_ff is None else positive_int("d_ff", d_ff)
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        for name, p in (("dropout", dropout), ("attn_dropout", attn_dropout)):
            if not 0.0 <= p < 1.0:
                raise AttentionInputError(f"{name} must be in [0, 1); got {p}.")
        factory = {"device": device, "dtype": dtype}
        self.d_model, self.n_heads, self.d_ff, self.norm_first = d_model, n_heads, d_ff, norm_first
        self.attn = MultiHeadAttention(
            d_model, n_heads, bias=bias, dropout=attn_dropout, n_kv_heads=n_kv_heads, **factory
        )
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)  # around attention
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)  # around the MLP
        # The MLP works on each position on its own: (B, L, d_model) -> (B, L, d_ff) -> (B, L, d_model).
        self.mlp = feed_forward(d_model, d_ff, activation, dropout, bias, **factory)
        self.drop1 = nn.Dropout(dropout)  # on the attention sublayer's output
        self.drop2 = nn.Dropout(dropout)  # on the MLP sublayer's output

    def _sublayers(self, x, attend):
        """Attention (``attend``, on the stream or its layer norm) and the MLP, with residuals."""
        if self.norm_first:
            a, weights = attend(self.norm1(x))
            x = x + self.drop1(a)  # the residual stream itself is never normalised
            x = x + self.drop2(self.mlp(self.norm2(x)))
        else:
            a, weights = attend(x)
            x = self.norm1(x + self.drop1(a))  # normalise the sum: after every sublayer
            x = self.norm2(x + self.drop2(self.mlp(x)))
        return x, weights

    def _check_x(self, x) -> None:
        if not isinstance(x, torch.Tensor):
            raise AttentionInputError(f"x must be a torch tensor; got {type(x).__name__}.")
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise AttentionInputError(f"x must be (B, L, d_model={self.d_model}); got shape {fmt_shape(x)}.")

    @public("TransformerBlock")
    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        is_causal: bool = False,
        key_padding_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self._check_x(x)

        def attend(h):
            return self.attn(h, mask=mask, is_causal=is_causal, key_padding_mask=key_padding_mask)

        return self._sublayers(x, attend)

    @public("TransformerBlock.step")
    def step(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """The block on the ``n`` newest positions ``x (B, n, d_model)``, causally, with a KV cache.

        ``cache`` holds this block's keys and values of the earlier positions, ``(B, H, S0, d_head)``
        (empty at the start); the new positions' keys and values are appended to it, and their
        queries attend to all ``S0 + n`` keys under the bottom-right causal mask
        (``attncourse.cached_attention``).  The result equals the last ``n`` rows of
        ``forward(all positions, is_causal=True)[0]``.  Used for decoding: no attention weights are
        returned (the tiled attention never forms them), and dropout on the weights is not applied,
        so a block in training mode with attention dropout refuses.

        Examples
        --------
        >>> import torch
        >>> from attncourse import KVCache
        >>> _ = torch.manual_seed(0)
        >>> block, x = TransformerBlock(8, 2).eval(), torch.randn(1, 5, 8)
        >>> cache = KVCache()
        >>> steps = [block.step(x[:, t : t + 1], cache) for t in range(5)]  # one position at a time
        >>> full, _ = block(x, is_causal=True)
        >>> torch.allclose(torch.cat(steps, dim=1), full, atol=1e-6), len(cache)
        (True, 5)
        """
        self._check_x(x)
        if not isinstance(cache, KVCache):
            raise AttentionInputError(f"cache must be a KVCache; got {type(cache).__name__}.")
        attn = self.attn
        if self.training and attn.dropout.p > 0:
            raise AttentionInputError(
                "the block is in training mode with dropout on the attention "
                f"weights (p={attn.dropout.p}), which the cached path does not apply; call .eval() first."
            )

        return self._sublayers(x, lambda h: (cached_self_attention(attn, h, cache), None))[0]

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> TransformerBlock:
        """A copy of ``torch.nn.TransformerEncoderLayer`` ``layer`` (same weights, same outputs).

        ``layer`` must use ``activation="gelu"`` (the exact, erf-based GELU) or ``"relu"``; call it
        with ``batch_first=True`` to compare outputs.
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise AttentionInputError(
                "TransformerBlock.from_torch: expected torch.nn.TransformerEncoderLayer; "
                f"got {type(layer).__name__}."
            )
        activation = supported_activation(layer, "TransformerBlock.from_torch")
        attn = MultiHeadAttention.from_torch(layer.self_attn)
        w = layer.linear1.weight
        bias = layer.linear1.bias is not None
        new = cls(
            attn.d_model,
            attn.n_heads,
            layer.linear1.out_features,
            dropout=layer.dropout.p,
            norm_first=layer.norm_first,
            activation=activation,
            bias=bias,
            layer_norm_eps=layer.norm1.eps,
            device=w.device,
            dtype=w.dtype,
        )
        new.attn = attn
        pairs = [
            (new.norm1, layer.norm1),
            (new.norm2, layer.norm2),
            (new.mlp.up, layer.linear1),
            (new.mlp.down, layer.linear2),
        ]
        copy_weights(pairs, bias)
        new.train(layer.training)
        return new


class TinyTransformer(nn.Module):
    """A small decoder-only (causal) language model made of ``TransformerBlock`` s.

    ``tokens (B, L)`` (integers in ``[0, vocab_size)``, ``L <= max_len``) go through a token
    embedding plus a learned position embedding, ``n_layers`` blocks under a causal mask, a final
    ``LayerNorm`` and a linear head. ``forward`` returns ``logits (B, L, vocab_size)``, where
    ``logits[:, t]`` predicts the token at ``t + 1`` from tokens ``0..t`` only, and a list of the
    ``n_layers`` attention weights, each ``(B, n_heads, L, L)``.

    ``causal=False`` drops the causal mask (every position sees the whole sequence), which lets
    ``logits[:, t]`` read the very token it is trained to predict: a model to show why decoders
    need the mask, not one to use.  ``generate`` makes text; ``decode`` is its cached step.

    Positions are learned vectors added to the token embeddings (as in GPT-2), so the blocks stay
    exactly ``nn.TransformerEncoderLayer``'s computation; RoPE would rotate q and k inside every
    attention layer instead.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> model = TinyTransformer(vocab_size=10, d_model=16, n_heads=2, n_layers=2, max_len=8)
    >>> logits, weights = model(torch.tensor([[1, 2, 3, 4]]))
    >>> tuple(logits.shape), len(weights), tuple(weights[0].shape)
    ((1, 4, 10), 2, (1, 2, 4, 4))
    """

    @public("TinyTransformer")
    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_heads: int,
        n_layers: int,
        max_len: int,
        d_ff: int | None = None,
        *,
        dropout: float = 0.0,
        attn_dropout: float | None = None,
        norm_first: bool = True,
        bias: bool = True,
        causal: bool = True,
        n_kv_heads: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        for name, n in (("vocab_size", vocab_size), ("n_layers", n_layers), ("max_len", max_len)):
            positive_int(name, n)
        factory = {"device": device, "dtype": dtype}
        self.vocab_size, self.max_len, self.causal = vocab_size, max_len, bool(causal)
        self.tok_emb = nn.Embedding(vocab_size, d_model, **factory)
        self.pos_emb = nn.Embedding(max_len, d_model, **factory)  # one learned vector per position
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(
                d_model,
                n_heads,
                d_ff,
                dropout=dropout,
                attn_dropout=attn_dropout,
                norm_first=norm_first,
                bias=bias,
                n_kv_heads=n_kv_heads,
                **factory,
            )
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model, bias=bias, **factory)
        self.head = nn.Linear(d_model, vocab_size, bias=bias, **factory)

    def _check(self, tokens) -> None:
        if not isinstance(tokens, torch.Tensor):
            raise AttentionInputError(
                f"tokens must be a torch tensor of token ids; got {type(tokens).__name__}."
            )
        if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
            raise AttentionInputError(f"tokens must hold integer token ids; got dtype {tokens.dtype}.")
        if tokens.ndim != 2 or tokens.shape[1] == 0:
            raise AttentionInputError(
                f"tokens must be (B, L) with L >= 1; got shape {fmt_shape(tokens)}. "
                "Add a batch dimension with tokens[None] for a single sequence."
            )
        if tokens.shape[1] > self.max_len:
            raise AttentionInputError(
                f"the sequence has L={tokens.shape[1]} tokens but max_len={self.max_len} "
                "(there is no learned position embedding beyond it); shorten it or build the model "
                "with a larger max_len."
            )
        lo, hi = int(tokens.min()), int(tokens.max())
        if lo < 0 or hi >= self.vocab_size:
            raise AttentionInputError(
                f"token ids must be in [0, vocab_size={self.vocab_size}); got values from {lo} to {hi}."
            )

    def _embed(self, tokens: torch.Tensor, start: int) -> torch.Tensor:
        positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)
        return self.drop(self.tok_emb(tokens) + self.pos_emb(positions))  # (B, L, d) + (L, d) -> (B, L, d)

    @public("TinyTransformer")
    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        self._check(tokens)
        x = self._embed(tokens, 0)
        weights = []
        for block in self.blocks:
            x, w = block(x, is_causal=self.causal)  # w: (B, H, L, L), zero above the diagonal if causal
            weights.append(w)
        logits = self.head(self.norm(x))  # (B, L, d_model) -> (B, L, vocab_size)
        return logits, weights

    @public("TinyTransformer.decode")
    def decode(self, tokens: torch.Tensor, caches: Sequence[KVCache]) -> torch.Tensor:
        """Logits ``(B, n, vocab_size)`` for ``tokens (B, n)``, the tokens that follow those cached.

        ``caches`` holds one ``KVCache`` per block (``n_layers`` of them), all of the same length
        ``S0``: the keys and values of the ``S0`` tokens already processed (all empty for the first
        call).  ``tokens`` take positions ``S0 .. S0 + n - 1``; their keys and values are appended
        to the caches.  The result equals ``forward(all S0 + n tokens)[0][:, -n:]`` while each
        block projects only the ``n`` new tokens (``TransformerBlock.step``).  Needs a causal model
        in eval mode (or without attention dropout).

        Examples
        --------
        >>> import torch
        >>> from attncourse import KVCache
        >>> _ = torch.manual_seed(0)
        >>> model = TinyTransformer(vocab_size=10, d_model=16, n_heads=2, n_layers=2, max_len=8).eval()
        >>> tokens = torch.tensor([[1, 2, 3, 4, 5]])
        >>> caches = [KVCache() for _ in model.blocks]
        >>> prompt = model.decode(tokens[:, :3], caches)  # 3 tokens at once, then one more
        >>> last = model.decode(tokens[:, 3:4], caches)
        >>> full, _ = model(tokens[:, :4])
        >>> torch.allclose(last, full[:, 3:], atol=1e-6), len(caches[0])
        (True, 4)
        """
        if not self.causal:
            raise AttentionInputError(
                "a KV cache needs a causal model (causal=True): without the "
                "mask every earlier position's keys and values change when a token arrives."
            )
        caches = list(caches)
        if len(caches) != len(self.blocks) or not all(isinstance(c, KVCache) for c in caches):
            raise AttentionInputError(
                f"caches must be {len(self.blocks)} KVCache objects, one per "
                f"block; got {len(caches)} object(s) of type(s) {sorted({type(c).__name__ for c in caches})}."
            )
        start = len(caches[0])
        if any(len(c) != start for c in caches):
            raise AttentionInputError(f"the caches hold different lengths {[len(c) for c in caches]}.")
        self._check(tokens)
        if start + tokens.shape[1] > self.max_len:
            raise AttentionInputError(
                f"{start} cached + {tokens.shape[1]} new tokens exceed max_len={self.max_len}."
            )
        x = self._embed(tokens, start)
        for block, cache in zip(self.blocks, caches):
            x = block.step(x, cache)  # (B, n, d_model): the new positions only
        return self.head(self.norm(x))  # (B, n, d_model) -> (B, n, vocab_size)

    @public("TinyTransformer.generate")
    @torch.no_grad()
    def generate(
        self,
        prompt: torch.Tensor,
        max_new_tokens: int,
        *,
        temperature: float = 0.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = False,
    ) -> torch.Tensor:
        """Continue ``prompt (B, P)`` by ``max_new_tokens`` tokens; return ``(B, P + max_new_tokens)``.

        Each step turns the logits of the last position into a distribution with
        ``next_token_probs(logits, temperature=..., top_k=...)`` and picks the next token:
        ``temperature=0`` (the default) is greedy decoding, the most likely token every time (the
        ``T -> 0`` limit of ``softmax(logits / T)``); ``temperature > 0`` samples, with
        ``generator`` for repeatable draws, and ``top_k`` keeps only the ``k`` likeliest tokens.

        ``use_cache=False`` runs the whole sequence through ``forward`` at every step.
        ``use_cache=True`` runs the prompt once, then only the newest token through ``decode``,
        with one ``KVCache`` per block: the same logits up to rounding, so the same tokens, with
        less work per step.  The model runs in eval mode (no dropout) under ``torch.no_grad()``,
        and is put back in its previous mode afterwards.  ``P + max_new_tokens`` may not exceed
        ``max_len``.

        Examples
        --------
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> model = TinyTransformer(vocab_size=10, d_model=16, n_heads=2, n_layers=2, max_len=12)
        >>> prompt = torch.tensor([[1, 2, 3]])
        >>> greedy = model.generate(prompt, 5)
        >>> tuple(greedy.shape), bool((greedy[:, :3] == prompt).all())
        ((1, 8), True)
        >>> torch.equal(model.generate(prompt, 5, use_cache=True), greedy)
        True
        >>> g = torch.Generator().manual_seed(0)
        >>> model.generate(prompt, 5, temperature=1.0, top_k=3, generator=g).shape
        torch.Size([1, 8])
        """
        self._check(prompt)
        max_new_tokens = int_at_least("max_new_tokens", max_new_tokens, 0)
        _check_sampling(temperature, top_k)
        if prompt.shape[1] + max_new_tokens > self.max_len:
            raise AttentionInputError(
                f"the prompt has {prompt.shape[1]} tokens and max_new_tokens={max_new_tokens}, "
                f"{prompt.shape[1] + max_new_tokens} in all, but max_len={self.max_len} (no learned position "
                "embedding beyond it)."
            )
        if use_cache and not self.causal:
            raise AttentionInputError(
                "use_cache=True needs a causal model (causal=True): without the mask every "
                "earlier position's keys and values change when a token arrives, so none can be cached."
            )
        was_training = self.training
        self.eval()
        try:
            tokens = prompt
            caches = [KVCache() for _ in self.blocks] if use_cache else None
            new = prompt  # the tokens not yet seen by the model
            for _ in range(max_new_tokens):
                if use_cache:
                    logits = self.decode(new, caches)[:, -1]  # (B, n, V) -> (B, V): the last position
                else:
                    logits = self(tokens)[0][:, -1]  # the whole sequence again, every step
                probs = next_token_probs(logits, temperature=temperature, top_k=top_k)  # (B, V)
                if temperature == 0:
                    new = probs.argmax(-1, keepdim=True)  # (B, 1): the one-hot's position
                else:
                    new = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
                tokens = torch.cat([tokens, new], dim=1)  # (B, L) -> (B, L + 1)
            return tokens
        finally:
            self.train(was_training)


def _check_sampling(temperature, top_k) -> None:
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise AttentionInputError(f"temperature must be a number >= 0 (0 = greedy); got {temperature!r}.")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise AttentionInputError(f"top_k must be None or a positive integer; got {top_k!r}.")


@public("next_token_probs")
def next_token_probs(
    logits: torch.Tensor, *, temperature: float = 1.0, top_k: int | None = None
) -> torch.Tensor:
    """The distribution a sampler draws the next token from: ``softmax(logits / T)``, optionally top-k.

    ``logits (..., V)`` are the model's scores for the next token.  ``top_k=k`` first sets every
    logit below the ``k``-th largest to ``-inf`` (ties with the ``k``-th are kept), so those tokens
    get probability exactly 0; ``k >= V`` keeps all.  Dividing by the temperature ``T`` sharpens the
    distribution (``T < 1``) or flattens it (``T > 1``) without changing the order, as in the
    softmax chapter; ``temperature=0`` is the limit ``T -> 0``: a one-hot vector on the largest
    logit (the first one on a tie), i.e. greedy decoding.  Returns ``(..., V)``, rows summing to 1.

    Examples
    --------
    >>> import torch
    >>> logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    >>> next_token_probs(logits).numpy().round(3)
    array([0.644, 0.237, 0.087, 0.032], dtype=float32)
    >>> next_token_probs(logits, temperature=0.5, top_k=2).numpy().round(3)
    array([0.881, 0.119, 0.   , 0.   ], dtype=float32)
    >>> next_token_probs(logits, temperature=0).tolist()
    [1.0, 0.0, 0.0, 0.0]
    """
    if not isinstance(logits, torch.Tensor) or not logits.dtype.is_floating_point or logits.ndim < 1:
        got = (
            f"dtype {logits.dtype}, shape {fmt_shape(logits)}"
            if isinstance(logits, torch.Tensor)
            else type(logits).__name__
        )
        raise AttentionInputError(f"logits must be a floating torch tensor (..., V); got {got}.")
    _check_sampling(temperature, top_k)
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest
        logits = logits.masked_fill(logits < kth, -math.inf)  # the rest get probability 0
    if temperature == 0:
        one_hot = torch.zeros_like(logits)
        return one_hot.scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    return softmax(logits / temperature)  # chapter 1's softmax with a temperature
