"""Method rules: where how an answer works is the point, watch it work.

An exercise's ``method`` is a factory of a probe.  ``engine.check.call`` (so ``check`` in the notebook
and the grader's runner alike) asks the probe to ``prepare`` the inputs, runs the answer, then
asks for a ``verdict``: ``None`` when the rule held, else one sentence naming the rule that was
broken.  That sentence travels as an error of type ``engine.compare.METHOD_ERROR``; the case fails with
status ``method`` and the exercise scores 0 (``engine.scoring.points_earned``).

* ``ScoreTiles``: tiled attention.  ``q`` and ``k`` arrive as ``Tracked`` arrays, an ``ndarray``
  subclass that remembers which inputs each derived array came from; every product of a
  q-derived and a k-derived array (``@``, ``np.matmul``, ``np.dot``, ``np.einsum``,
  ``np.tensordot``, ``np.inner``) is a block of scores, and its shape and number are recorded.
  The rule: no block wider than ``block_size`` keys (and, for a two-way tiling, taller than
  ``block_size`` queries); with ``count_output``, the answer's reported tile count must equal the
  number of score blocks it computed.  An answer that turns its inputs into plain arrays
  (``np.asarray``) is not seen; the probe then says nothing (a limit stated on the instructors' page).
"""

from __future__ import annotations

from typing import Any, Callable, FrozenSet, List, Optional, Sequence

import numpy as np

from ...i18n import tr

__all__ = ["Tracked", "ScoreTiles", "WrittenDown", "probe_for"]

_PRODUCTS = {"matmul", "dot", "einsum", "tensordot", "inner", "vdot"}


class _Log:
    def __init__(self) -> None:
        self.products: List[tuple] = []  # shapes of the q-k products (blocks of scores)


class Tracked(np.ndarray):
    """An array that knows which inputs (``tags``) it was computed from; products are logged."""

    tags: FrozenSet[str] = frozenset()
    log: Optional[_Log] = None

    @classmethod
    def of(cls, value: np.ndarray, tag: str, log: _Log) -> "Tracked":
        out = np.asarray(value).view(cls)
        out.tags, out.log = frozenset({tag}), log
        return out

    def __array_finalize__(self, obj: Any) -> None:  # views and slices keep the tags
        self.tags = getattr(obj, "tags", frozenset())
        self.log = getattr(obj, "log", None)

    @staticmethod
    def _collect(items: Sequence[Any], tags: set, logs: list) -> list:
        plain = []
        for x in items:
            if isinstance(x, Tracked):
                tags |= x.tags
                if x.log is not None:
                    logs.append(x.log)
                plain.append(x.view(np.ndarray))
            elif isinstance(x, (list, tuple)):
                plain.append(type(x)(Tracked._collect(x, tags, logs)))
            else:
                plain.append(x)
        return plain

    def _wrap(self, result: Any, tags: set, logs: list, product: bool) -> Any:
        if isinstance(result, tuple):
            return tuple(self._wrap(r, tags, logs, False) for r in result)
        if not isinstance(result, np.ndarray) or not logs:
            return result
        if product and {"q", "k"} <= tags and "v" not in tags:
            logs[0].products.append(tuple(result.shape))
        out = result.view(Tracked)
        out.tags, out.log = frozenset(tags), logs[0]
        return out

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        tags: set = set()
        logs: list = []
        plain = self._collect(inputs, tags, logs)
        if "out" in kwargs:
            kwargs["out"] = tuple(self._collect(kwargs["out"], set(), []))
        result = getattr(ufunc, method)(*plain, **kwargs)
        return self._wrap(result, tags, logs, ufunc.__name__ == "matmul" and method == "__call__")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        tags: set = set()
        logs: list = []
        plain = self._collect(args, tags, logs)
        plain_kwargs = dict(zip(kwargs, self._collect(list(kwargs.values()), tags, logs)))
        result = func(*plain, **plain_kwargs)
        return self._wrap(result, tags, logs, func.__name__ in _PRODUCTS)


class ScoreTiles:
    """Tiled attention: blocks of at most ``block_size`` keys (and queries, with ``square``)."""

    def __init__(self, *, square: bool = False, count_output: Optional[int] = None) -> None:
        if square:
            self.rule = (
                "no tile of scores may be larger than `(block_size, block_size)` (checked while your "
                "answer runs), and `n_tiles` must equal the number of score tiles your answer computed."
            )
        else:
            self.rule = (
                "no block of scores may be wider than `(..., L, block_size)` (checked while your "
                "answer runs): full attention scores 0."
            )
        self.square = square
        self.count_output = count_output
        self.log = _Log()
        self.block = 0
        self.memory = _PeakMemory()
        self.full_bytes = 0

    def prepare(self, args: List[Any]) -> List[Any]:
        q, k, v, block = args[:4]
        if not all(isinstance(a, np.ndarray) for a in (q, k, v)):
            return args
        self.block = int(block)
        L, S = q.shape[-2], k.shape[-2]
        batch = int(np.prod(q.shape[:-2], dtype=np.int64)) if q.ndim > 2 else 1
        if S >= 8 * self.block:  # large enough for memory to tell a block of scores from all of them
            self.full_bytes = batch * L * S * 8
            self.memory.start()
        return [
            Tracked.of(q, "q", self.log),
            Tracked.of(k, "k", self.log),
            Tracked.of(v, "v", self.log),
        ] + list(args[3:])

    def verdict(self, fn: Callable[..., Any], args: List[Any], arrays: List[np.ndarray]) -> Optional[str]:
        shapes = [s for s in self.log.products if len(s) >= 2]
        peak = self.memory.stop()
        if not shapes and self.full_bytes and peak > self.full_bytes // 2:
            # the inputs were turned into plain arrays, but the memory the answer held still tells
            return tr(
                "method rule broken: your answer held {held} KiB at once, as much as the whole ({full} KiB) "
                "matrix of scores; with block_size={block} it may hold only blocks of block_size keys",
                held=f"{peak / 2**10:.0f}",
                full=f"{self.full_bytes / 2**10:.0f}",
                block=self.block,
            )
        if not shapes or not self.block:
            return None  # nothing seen (plain arrays, a small case): no verdict
        b = self.block
        for shape in shapes:
            rows, cols = shape[-2], shape[-1]
            if cols > b or (self.square and rows > b):
                held = f"(..., {rows}, {cols})"
                allowed = f"(..., {b}, {b})" if self.square else f"(..., L, {b})"
                return tr(
                    "method rule broken: your answer computed a {held} block of scores at once, but with "
                    "block_size={block} no block may be larger than {allowed}",
                    held=held,
                    block=b,
                    allowed=allowed,
                )
        if self.count_output is not None and self.count_output < len(arrays):
            said = arrays[self.count_output]
            if said.size == 1 and float(said.reshape(())) != len(shapes):
                return tr(
                    "method rule broken: your answer says it computed {said} tiles, but it computed {n} "
                    "blocks of scores",
                    said=_num(said),
                    n=len(shapes),
                )
        return None

    def close(self) -> None:
        self.memory.stop()


class _PeakMemory:
    """The peak of memory traced by ``tracemalloc`` (numpy's arrays included) between start and stop."""

    def __init__(self) -> None:
        self._started = False
        self._running = False
        self._base = 0

    def start(self) -> None:
        import tracemalloc

        if not tracemalloc.is_tracing():
            tracemalloc.start()
            self._started = True
        tracemalloc.reset_peak()
        self._base = tracemalloc.get_traced_memory()[0]
        self._running = True

    def stop(self) -> int:
        import tracemalloc

        if not self._running:
            return 0
        self._running = False
        peak = tracemalloc.get_traced_memory()[1] - self._base if tracemalloc.is_tracing() else 0
        if self._started:
            tracemalloc.stop()
            self._started = False
        return peak


def _num(x: np.ndarray) -> str:
    v = float(x.reshape(()))
    return str(int(v)) if v.is_integer() else f"{v:g}"


class WrittenDown:
    """A ``predict`` answer is a number written down: it may not allocate arrays to find it."""

    LIMIT = 1 << 20  # bytes of numpy/Python memory a written-down number never needs

    rule = "write the number down; an answer that allocates the arrays in question scores 0."

    def __init__(self) -> None:
        self.memory = _PeakMemory()

    def prepare(self, args: List[Any]) -> List[Any]:
        self.memory.start()
        return args

    def verdict(self, fn: Callable[..., Any], args: List[Any], arrays: List[np.ndarray]) -> Optional[str]:
        peak = self.memory.stop()
        if peak > self.LIMIT:
            return tr(
                "method rule broken: a prediction is written down, not computed, but your answer "
                "allocated {mib} MiB of arrays to find it",
                mib=f"{peak / 2**20:.1f}",
            )
        return None

    def close(self) -> None:
        self.memory.stop()


def probe_for(exercise: Any) -> Any:
    """The probe that watches an answer to ``exercise`` (``None`` where none applies)."""
    method = getattr(exercise, "method", None)
    if method is not None:
        return method()
    if getattr(exercise, "kind", "") == "predict":
        return WrittenDown()
    return None
