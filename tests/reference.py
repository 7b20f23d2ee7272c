"""Brute-force references written as plain Python loops (no vectorisation to get wrong)."""

from __future__ import annotations

import math

import numpy as np


def loop_softmax(row):
    """Softmax of one 1-d row, term by term; an all -inf row gives zeros."""
    finite = [x for x in row if x != -math.inf]
    if not finite:
        return [0.0] * len(row)
    m = max(finite)
    exps = [0.0 if x == -math.inf else math.exp(x - m) for x in row]
    total = sum(exps)
    return [e / total for e in exps]


def loop_attention(q, k, v, mask=None, scale=None):
    """Attention for 2-d q (L, E), k (S, E), v (S, Ev), with an optional bool mask (L, S)."""
    L, E = q.shape
    S, Ev = v.shape
    scale = 1 / math.sqrt(E) if scale is None else scale
    out = np.zeros((L, Ev))
    weights = np.zeros((L, S))
    for i in range(L):
        scores = []
        for j in range(S):
            if mask is not None and not mask[i][j]:
                scores.append(-math.inf)
                continue
            scores.append(sum(float(q[i, e]) * float(k[j, e]) for e in range(E)) * scale)
        w = loop_softmax(scores)
        for j in range(S):
            weights[i, j] = w[j]
            for c in range(Ev):
                out[i, c] += w[j] * float(v[j, c])
    return out, weights
