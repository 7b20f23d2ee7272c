"""Chapter 11's longer experiments: stretching a RoPE model's context, ALiBi, and attention sinks.

A small causal Transformer (2 layers, d_model 64, 4 heads of 16, RoPE inside attention) learns the
repeated-segment task of chapter 8 with long segments at a training length of 32 tokens, then reads
sequences of 64 to 256 tokens under each RoPE scaling of Hugging Face's ``rope_parameters``
(``linear``, ``dynamic``, ``yarn``, ``llama3``, all with factor 4), before and after a short
fine-tuning at 128 tokens.  An ALiBi model (no RoPE) learns the same task more slowly, so it trains
for more steps (``ALIBI_STEPS``), until its accuracy at the training length is close to the RoPE
model's (its training loss stays higher), and is then fine-tuned the same way.  The same base RoPE model then reads long sequences with a sliding window,
with and without "sink" tokens, twice: with every key at its position in the text (a mask on the
whole sequence) and with positions renumbered inside the cache (StreamingLLM's rule: the logits of a
token-by-token decode, ``stream_logits``, computed all at once by ``renumbered_logits``).  Everything runs for each of three seeds (initial weights, training and fine-tuning data;
the held-out sequences are the same for every seed).

    OMP_NUM_THREADS=1 python scripts/experiments/context_extension.py            # attncourse/data/context_extension.json
    OMP_NUM_THREADS=1 python scripts/experiments/context_extension.py --jobs 3   # the seeds in parallel
    OMP_NUM_THREADS=1 python scripts/experiments/context_extension.py --quick    # a reduced run (the test)

Each seed runs on one CPU thread, and the ALiBi model's 5,000 steps take most of its time.  The
saved full run (``--jobs 3``) took 1,292 s on a shared 2-core machine at a load average of about 11
(``seconds``, ``seconds_per_seed`` in the results).  Results depend on floating-point summation order, so another machine gives slightly
different numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import pathlib
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import attncourse as ac  # noqa: E402
from attncourse import kv_cache  # noqa: E402

TRAIN_LEN, FACTOR, VOCAB = 32, 4.0, 128
SEEDS = [0, 1, 2]
STEPS, ALIBI_STEPS, FINETUNE_STEPS, N_EVAL = 800, 5000, 100, 256
EVAL_LENGTHS = [32, 64, 128, 256]
SCALINGS = {
    "none": None,
    "linear": {"rope_type": "linear", "factor": FACTOR},
    "dynamic": {"rope_type": "dynamic", "factor": FACTOR, "original_max_position_embeddings": TRAIN_LEN},
    "yarn": {"rope_type": "yarn", "factor": FACTOR, "original_max_position_embeddings": TRAIN_LEN},
    "llama3": {
        "rope_type": "llama3",
        "factor": FACTOR,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": TRAIN_LEN,
    },
}


def scaled_inv_freq(E, scaling, seq_len, original_max_position, base=10000.0):
    """RoPE's per-pair frequencies (E/2,) and attention factor under Hugging Face's ``rope_parameters``.

    Written out from transformers' ``modeling_rope_utils`` (linear, dynamic, yarn, llama3) so that
    this script does not depend on the package's own version; the chapter checks the two agree.
    """
    exponents = torch.arange(0, E, 2, dtype=torch.float64) / E
    inv_freq = base**-exponents
    kind = None if scaling is None else scaling["rope_type"]
    if kind is None:
        return inv_freq, 1.0
    factor = float(scaling["factor"])
    if kind == "linear":
        return inv_freq / factor, 1.0
    if kind == "dynamic":
        seq_len = max(seq_len, original_max_position)
        new_base = base * ((factor * seq_len / original_max_position) - (factor - 1)) ** (E / (E - 2))
        return new_base**-exponents, 1.0
    if kind == "llama3":
        low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
        old = scaling.get("original_max_position_embeddings", original_max_position)
        wavelen = 2 * math.pi / inv_freq
        out = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        return torch.where(medium, smoothed, out), 1.0
    if kind == "yarn":
        old = scaling.get("original_max_position_embeddings", original_max_position)
        beta_fast, beta_slow = scaling.get("beta_fast", 32.0), scaling.get("beta_slow", 1.0)

        def correction_dim(rotations):
            return E * math.log(old / (rotations * 2 * math.pi)) / (2 * math.log(base))

        lo = max(math.floor(correction_dim(beta_fast)), 0)
        hi = min(math.ceil(correction_dim(beta_slow)), E - 1)
        hi = hi + 0.001 if lo == hi else hi
        ramp = ((torch.arange(E // 2, dtype=torch.float64) - lo) / (hi - lo)).clamp(0, 1)
        extrapolation = 1 - ramp  # 1: keep the frequency (fast pairs), 0: interpolate (slow pairs)
        out = inv_freq / factor * (1 - extrapolation) + inv_freq * extrapolation
        attention_factor = scaling.get("attention_factor") or (0.1 * math.log(factor) + 1.0)
        return out, float(attention_factor)
    raise ValueError(f"unknown rope_type {kind!r}")


def rope_scaled(x, scaling, original_max_position):
    """Rotate ``x (..., L, E)`` (half-split pairs) at positions 0..L-1 with scaled frequencies."""
    L, E = x.shape[-2], x.shape[-1]
    inv_freq, attention_factor = scaled_inv_freq(E, scaling, L, original_max_position)
    angles = torch.arange(L, dtype=torch.float64)[:, None] * inv_freq  # (L, E/2)
    cos = (angles.cos() * attention_factor).to(x.dtype)
    sin = (angles.sin() * attention_factor).to(x.dtype)
    x1, x2 = x[..., : E // 2], x[..., E // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def rope_at(x, positions):
    """Rotate ``x (..., n, E)`` (half-split pairs, unscaled) at the integer ``positions (n,)``."""
    E = x.shape[-1]
    inv_freq, _ = scaled_inv_freq(E, None, 0, TRAIN_LEN)
    angles = positions.to(torch.float64)[:, None] * inv_freq  # (n, E/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : E // 2], x[..., E // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def alibi_slopes(n_heads):
    """ALiBi's head slopes m_h = 2^(-8(h+1)/n), h = 0..n-1 (n a power of two here)."""
    return torch.tensor([2.0 ** (-8.0 * h / n_heads) for h in range(1, n_heads + 1)])


def make_sequences(n_seq, L, rng, max_segment=None, min_segment=None):
    """Filler, then a segment of n distinct tokens repeated to the end; n from L/8 to L/2 (at most 112).

    Returns tokens (n_seq, L) and the first position whose token is determined by an earlier one.
    ``min_segment``/``max_segment`` override the range (the sink experiment keeps the training
    length's segments, 4 to 16 tokens).
    """
    tokens = np.empty((n_seq, L), dtype=np.int64)
    start = np.empty(n_seq, dtype=np.int64)
    hi = min(L // 2, VOCAB - 16)  # leave at least 16 token types for the filler
    hi = hi if max_segment is None else min(max_segment, hi)
    for i in range(n_seq):
        lo = max(2, L // 8) if min_segment is None else min_segment
        n = int(rng.integers(lo, hi + 1))
        r = int(rng.integers(0, L - 2 * n + 1))
        perm = rng.permutation(VOCAB)
        tokens[i, :r] = rng.choice(perm[n:], size=r)
        tokens[i, r:] = np.resize(perm[:n], L - r)
        start[i] = r + n
    return torch.from_numpy(tokens), torch.from_numpy(start)


class Block(nn.Module):
    def __init__(self, d, n_heads, position):
        super().__init__()
        self.n_heads, self.position = n_heads, position
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x, mask, scaling=None):
        B, L, d = x.shape
        q, k, v = (ac.split_heads(t, self.n_heads) for t in self.qkv(self.norm1(x)).split(d, -1))
        bias = None
        if self.position == "rope":
            q = rope_scaled(q, scaling, original_max_position=TRAIN_LEN)
            k = rope_scaled(k, scaling, original_max_position=TRAIN_LEN)
        else:  # ALiBi: a fixed linear penalty on the distance, per head
            bias = -alibi_slopes(self.n_heads)[:, None, None] * (
                torch.arange(L)[:, None] - torch.arange(L)[None, :]
            ).clamp(min=0)
        attn_mask = torch.zeros(L, L).masked_fill(~mask, -math.inf)
        if bias is not None:
            attn_mask = attn_mask + bias
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x + self.out(ac.merge_heads(a))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, position, d=64, n_heads=4, n_layers=2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.blocks = nn.ModuleList(Block(d, n_heads, position) for _ in range(n_layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, VOCAB)

    def forward(self, tokens, mask=None, scaling=None):
        L = tokens.shape[1]
        mask = ac.causal_mask(L, like=torch.zeros(1)) if mask is None else mask
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, mask, scaling)
        return self.head(self.norm(x))


def loss_on(model, seq, start, scaling=None):
    logits = model(seq[:, :-1], scaling=scaling)
    keep = torch.arange(seq.shape[1] - 1)[None, :] >= start[:, None]
    return F.cross_entropy(logits[keep], seq[:, 1:][keep])


def train(model, steps, L, seed, scaling=None, lr=5e-3, batch=32):
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / steps)
    model.train()
    for step in range(steps):
        seq, start = make_sequences(batch, L + 1, rng)
        loss = loss_on(model, seq, start, scaling)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 250 == 0:
            print(f"  step {step}: loss {loss.item():.3f}", file=sys.stderr, flush=True)
    return float(loss.detach())


@torch.no_grad()
def accuracy(model, L, n_seq, seed, scaling=None, mask=None, max_segment=None, min_segment=None):
    """Share of determined positions predicted right, on held-out sequences of L + 1 tokens."""
    model.eval()
    seq, start = make_sequences(n_seq, L + 1, np.random.default_rng(seed), max_segment, min_segment)
    logits = model(seq[:, :-1], mask=mask, scaling=scaling)
    keep = torch.arange(L)[None, :] >= start[:, None]
    return float((logits.argmax(-1) == seq[:, 1:])[keep].float().mean())


def sizes(quick: bool) -> dict:
    """Steps and evaluation sizes of the full run, or of the reduced one the test reruns."""
    if quick:
        return {
            "steps": 150,
            "alibi_steps": 150,
            "finetune_steps": 20,
            "n_eval": 32,
            "sink_length": 96,
            "window": 16,
        }
    return {
        "steps": STEPS,
        "alibi_steps": ALIBI_STEPS,
        "finetune_steps": FINETUNE_STEPS,
        "n_eval": N_EVAL,
        "sink_length": 256,
        "window": 32,
    }


def run_seed(seed: int, quick: bool, models: str | None = None) -> dict:
    """One seed of the experiment; ``models``: a folder where the base models are kept between runs."""
    torch.set_num_threads(1)
    size = sizes(quick)
    n_eval, ft_steps = size["n_eval"], size["finetune_steps"]
    t0 = time.perf_counter()
    out = {"seed": seed, "train_loss": {}, "zero_shot": {}, "finetuned": {}}
    trained = {}
    for position, steps in (("rope", size["steps"]), ("alibi", size["alibi_steps"])):
        torch.manual_seed(seed)
        trained[position] = model = TinyLM(position)
        saved = None if models is None else pathlib.Path(models) / f"{position}_{steps}_seed{seed}.pt"
        if saved is not None and saved.exists():
            state = torch.load(saved)
            model.load_state_dict(state["model"])
            out["train_loss"][position] = state["loss"]
        else:
            out["train_loss"][position] = train(model, steps, TRAIN_LEN, seed=1 + 10 * seed)
            if saved is not None:
                torch.save({"model": model.state_dict(), "loss": out["train_loss"][position]}, saved)
    rope, alibi = trained["rope"], trained["alibi"]
    base_state = {k: v.clone() for k, v in rope.state_dict().items()}

    def evaluate(model, scaling):  # the held-out sequences are the same for every seed
        return [accuracy(model, L, n_eval, seed=100 + L, scaling=scaling) for L in EVAL_LENGTHS]

    for name, scaling in SCALINGS.items():
        rope.load_state_dict(base_state)
        out["zero_shot"][name] = evaluate(rope, scaling)
        train(rope, ft_steps, int(TRAIN_LEN * FACTOR), seed=2 + 10 * seed, scaling=scaling, lr=1e-3, batch=8)
        out["finetuned"][name] = evaluate(rope, scaling)
    out["zero_shot"]["alibi"] = evaluate(alibi, None)
    train(alibi, ft_steps, int(TRAIN_LEN * FACTOR), seed=2 + 10 * seed, lr=1e-3, batch=8)
    out["finetuned"]["alibi"] = evaluate(alibi, None)

    # Sliding window and sinks on the base RoPE model, long sequences, the training segment lengths.
    rope.load_state_dict(base_state)
    out["sinks"] = sink_rows(rope, size["sink_length"], size["window"], n_eval)
    # How much attention the first token draws in the base model at the training length.
    seq, _ = make_sequences(n_eval, TRAIN_LEN, np.random.default_rng(9))
    out["first_token_weight"] = first_token_weight(rope, seq)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


SINK_COUNTS = (0, 1, 4)


@torch.no_grad()
def sink_rows(model, L, window, n_eval):
    """Accuracy on ``n_eval`` sequences of ``L`` tokens: full causal attention, and a window of
    ``window`` tokens with 0, 1 or 4 sinks, keys at their positions in the text and in the cache."""
    model.eval()
    seq, start = make_sequences(n_eval, L + 1, np.random.default_rng(7), TRAIN_LEN // 2, 4)
    keep = torch.arange(L)[None, :] >= start[:, None]

    def score(logits):
        return float((logits.argmax(-1) == seq[:, 1:])[keep].float().mean())

    text = {"full causal": score(model(seq[:, :-1], mask=ac.causal_mask(L, like=torch.zeros(1))))}
    cache = {}
    for sinks in SINK_COUNTS:
        mask = torch.from_numpy(kv_cache.window_sink_mask(L, window, sinks))
        text[f"{sinks} sinks"] = score(model(seq[:, :-1], mask=mask))
        cache[f"{sinks} sinks"] = score(renumbered_logits(model, seq[:, :-1], window, sinks))
    return {"positions in the text": text, "positions in the cache": cache}


@torch.no_grad()
def stream_logits(model, tokens, window, n_sinks, renumber):
    """Logits (B, T, VOCAB) of decoding ``tokens (B, T)`` one at a time with a cache, per layer, of
    the first ``n_sinks`` tokens and the last ``window`` (the newest included).

    Keys are cached before RoPE and rotated at each step: ``renumber=True`` by their slot in the
    cache, the query taking the last slot (StreamingLLM's rule); ``renumber=False`` by their
    position in the text, which gives the logits of the masked forward pass.
    """
    model.eval()
    T = tokens.shape[1]
    caches = [{"k": [], "v": [], "pos": []} for _ in model.blocks]
    logits = []
    for t in range(T):
        x = model.embed(tokens[:, t : t + 1])  # (B, 1, d)
        for block, cache in zip(model.blocks, caches):
            d = x.shape[-1]
            q, k, v = (ac.split_heads(u, block.n_heads) for u in block.qkv(block.norm1(x)).split(d, -1))
            for key, value in (("k", k), ("v", v), ("pos", t)):
                cache[key].append(value)
            if len(cache["pos"]) > n_sinks + window:  # evict the oldest token after the sinks
                for key in cache:
                    del cache[key][n_sinks]
            pos = torch.arange(len(cache["pos"])) if renumber else torch.tensor(cache["pos"])
            keys = rope_at(torch.cat(cache["k"], -2), pos)  # (B, H, n, d_head)
            a = F.scaled_dot_product_attention(rope_at(q, pos[-1:]), keys, torch.cat(cache["v"], -2))
            x = x + block.out(ac.merge_heads(a))
            x = x + block.mlp(block.norm2(x))
        logits.append(model.head(model.norm(x)))
    return torch.cat(logits, 1)


@torch.no_grad()
def renumbered_logits(model, tokens, window, n_sinks):
    """The logits of ``stream_logits(..., renumber=True)``, all positions at once.

    In a cache of ``n_sinks`` sinks and ``window`` recent tokens with positions renumbered by slot,
    a recent key is as far from the query as in the text, and sink ``s`` sits at distance
    ``min(t, n_sinks + window - 1) - s`` from query ``t``; RoPE's score depends only on that distance.
    """
    model.eval()
    T = tokens.shape[1]
    t = torch.arange(T)
    mask = torch.from_numpy(kv_cache.window_sink_mask(T, window, n_sinks))
    x = model.embed(tokens)
    for block in model.blocks:
        d = x.shape[-1]
        q, k, v = (ac.split_heads(u, block.n_heads) for u in block.qkv(block.norm1(x)).split(d, -1))
        scores = rope_at(q, t) @ rope_at(k, t).transpose(-2, -1)  # (B, H, T, T): distances t - j
        if n_sinks:
            q_slot = rope_at(q, t.clamp(max=n_sinks + window - 1))  # the query's slot in the cache
            scores[..., :n_sinks] = q_slot @ rope_at(k[..., :n_sinks, :], t[:n_sinks]).transpose(-2, -1)
        scores = (scores / math.sqrt(q.shape[-1])).masked_fill(~mask, -math.inf)
        x = x + block.out(ac.merge_heads(torch.softmax(scores, -1) @ v))
        x = x + block.mlp(block.norm2(x))
    return model.head(model.norm(x))


def run(quick: bool, models: str | None = None, seeds=None, jobs: int = 1) -> dict:
    """All seeds (``SEEDS``, or the first one with ``quick``), in ``jobs`` processes."""
    seeds = (SEEDS[:1] if quick else SEEDS) if seeds is None else list(seeds)
    t0 = time.perf_counter()
    args = [(seed, quick, models) for seed in seeds]
    if jobs > 1:
        with multiprocessing.get_context("spawn").Pool(min(jobs, len(seeds))) as pool:
            per_seed = pool.starmap(run_seed, args)
    else:
        per_seed = [run_seed(*a) for a in args]
    size = sizes(quick)
    out = {
        "train_len": TRAIN_LEN,
        "factor": FACTOR,
        "eval_lengths": EVAL_LENGTHS,
        "seeds": seeds,
        "steps": size["steps"],
        "alibi_steps": size["alibi_steps"],
        "finetune_steps": size["finetune_steps"],
        "finetune_len": int(TRAIN_LEN * FACTOR),
        "n_eval": size["n_eval"],
        "scalings": SCALINGS,
        # every table below is indexed [seed][...]: one entry per seed, in the order of "seeds"
        "train_loss": {p: [r["train_loss"][p] for r in per_seed] for p in ("rope", "alibi")},
        "zero_shot": {n: [r["zero_shot"][n] for r in per_seed] for n in per_seed[0]["zero_shot"]},
        "finetuned": {n: [r["finetuned"][n] for r in per_seed] for n in per_seed[0]["finetuned"]},
        "sinks": {
            "length": size["sink_length"],
            "window": size["window"],
            "segments": [4, TRAIN_LEN // 2],
            "accuracy": {
                kind: {row: [r["sinks"][kind][row] for r in per_seed] for row in per_seed[0]["sinks"][kind]}
                for kind in per_seed[0]["sinks"]
            },
            "first_token_weight": [r["first_token_weight"] for r in per_seed],
        },
        "seconds_per_seed": [r["seconds"] for r in per_seed],
        "seconds": round(time.perf_counter() - t0, 1),
        "jobs": jobs,
    }
    return out


@torch.no_grad()
def first_token_weight(model, tokens):
    """Mean attention weight on key 0 of queries at positions >= 8, per layer and head."""
    model.eval()
    L = tokens.shape[1]
    mask = ac.causal_mask(L, like=torch.zeros(1))
    x = model.embed(tokens)
    result = []
    for block in model.blocks:
        d = x.shape[-1]
        q, k, _ = (ac.split_heads(t, block.n_heads) for t in block.qkv(block.norm1(x)).split(d, -1))
        q = rope_scaled(q, None, original_max_position=TRAIN_LEN)
        k = rope_scaled(k, None, original_max_position=TRAIN_LEN)
        w = torch.softmax((q @ k.transpose(-2, -1) / 4.0).masked_fill(~mask, -math.inf), -1)
        result.append([round(float(w[:, h, 8:, 0].mean()), 4) for h in range(block.n_heads)])
        x = block(x, mask)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run; prints, writes nothing")
    parser.add_argument("--out", default=str(ROOT / "attncourse" / "data" / "context_extension.json"))
    parser.add_argument("--models", default=None, help="keep/reuse the trained base models in this folder")
    parser.add_argument("--jobs", type=int, default=1, help="run the seeds in this many processes")
    args = parser.parse_args()
    result = run(args.quick, args.models, jobs=args.jobs)
    text = json.dumps(result, indent=1)
    if args.quick:
        print(text)
    else:
        pathlib.Path(args.out).write_text(text + "\n")
        print(f"wrote {args.out} in {result['seconds']} s (per seed {result['seconds_per_seed']} s)")


if __name__ == "__main__":
    main()
