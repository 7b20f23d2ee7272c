"""Benchmark: attncourse's attention against PyTorch's, time and peak memory, in one table.

Run ``python -m attncourse.bench`` (``--help`` for the options).  For every sequence length
``L = S`` it builds fp32 inputs ``q, k, v`` of shape ``(B, H, L, E)`` and, for each
implementation,

1. checks the output against a float64 reference (computed query block by query block, so
   the reference itself never holds more than a slice of the scores),
2. measures the peak memory of one call: ``torch.cuda.max_memory_allocated`` on a GPU; on the
   CPU the torch profiler's record of every allocation and free of torch's CPU allocator
   (``profile_memory=True``), replayed in order to find the peak; ``tracemalloc`` for numpy,
3. times it: one warm-up call, then ``--repeats`` rounds in which every implementation runs
   once (interleaved, so a slow moment of a shared machine hits all of them alike); the table
   shows the median wall-clock time.

Implementations: ``ac.scaled_dot_product_attention`` (builds the whole ``L x S`` matrix),
``ac.flash_attention`` (tiled, online softmax), ``F.scaled_dot_product_attention`` with
PyTorch's default choice of kernel, and the same restricted to the math backend
(``sdpa_kernel(SDPBackend.MATH)``, PyTorch's unfused reference).  ``--numpy`` adds the two
attncourse functions on numpy arrays.  Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import statistics
import sys
import time
import tracemalloc
from typing import Callable, Dict, List, Optional

import numpy as np

from .flash import flash_attention
from .functional import scaled_dot_product_attention

__all__ = ["main", "run_benchmark"]

DEFAULT_LENGTHS = [128, 256, 512, 1024, 2048, 4096]
QUICK_LENGTHS = [128, 256, 512]
MiB = 2**20


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _set_numpy_blas_threads(n: int) -> bool:
    """Best effort: give numpy's OpenBLAS ``n`` threads too (its own threads would otherwise
    compete with torch's and with the machine's other work).  True if it worked."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:  # Linux: the shared libraries this process loaded
            paths = {line.split()[-1] for line in f if "openblas" in line.rsplit("/", 1)[-1].lower()}
    except OSError:
        return False
    names = [
        "scipy_openblas_set_num_threads64_",
        "openblas_set_num_threads64_",
        "scipy_openblas_set_num_threads",
        "openblas_set_num_threads",
    ]
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        for name in names:
            if hasattr(lib, name):
                getattr(lib, name)(ctypes.c_int(n))
                return True
    return False


def _reference(q, k, v, scale: float, rows: int = 256):
    """float64 attention on the CPU, ``rows`` queries at a time (exact: softmax is per row)."""
    import torch

    q, k, v = (t.detach().to("cpu", torch.float64) for t in (q, k, v))
    kT = k.transpose(-1, -2)
    out = []
    for i0 in range(0, q.shape[-2], rows):
        scores = (q[..., i0 : i0 + rows, :] @ kT) * scale  # (..., rows, E) @ (..., E, S) -> (..., rows, S)
        out.append(torch.softmax(scores, dim=-1) @ v)  # (..., rows, S) @ (..., S, Ev) -> (..., rows, Ev)
    return torch.cat(out, dim=-2)


def _torch_cpu_peak(fn: Callable[[], object]) -> Optional[float]:
    """Peak bytes held by torch's CPU allocator during ``fn()``, from the profiler's memory events."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    del result
    try:
        events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    except AttributeError:  # the profiler's internals moved: no measurement rather than a wrong one
        return None
    events.sort(key=lambda e: e.start_ns())
    current = peak = 0
    for e in events:
        if e.device_type() == torch._C._autograd.DeviceType.CPU:
            current += e.nbytes()  # positive for an allocation, negative for a free
            peak = max(peak, current)
    return float(peak)


def _cuda_peak(fn: Callable[[], object], device) -> float:
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    result = fn()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - base
    del result
    return float(peak)


def _numpy_peak(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return float(peak)


def _implementations(q, k, v, block_size: int, with_numpy: bool) -> Dict[str, Callable[[], object]]:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def torch_math():
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v)

    impls = {
        "ac.scaled_dot_product_attention": lambda: scaled_dot_product_attention(q, k, v)[0],
        "ac.flash_attention": lambda: flash_attention(q, k, v, block_size=block_size),
        "torch SDPA (default)": lambda: F.scaled_dot_product_attention(q, k, v),
        "torch SDPA (math)": torch_math,
    }
    if with_numpy:
        qn, kn, vn = (t.cpu().numpy() for t in (q, k, v))
        impls["ac.scaled_dot_product_attention (numpy)"] = lambda: scaled_dot_product_attention(qn, kn, vn)[0]
        impls["ac.flash_attention (numpy)"] = lambda: flash_attention(qn, kn, vn, block_size=block_size)
    return impls


def run_benchmark(
    lengths: List[int],
    *,
    device: str = "cpu",
    repeats: int = 5,
    threads: int = 1,
    batch: int = 1,
    heads: int = 4,
    dim: int = 64,
    block_size: int = 256,
    with_numpy: bool = False,
    atol: float = 1e-4,
    command: str = "",
    log: Callable[[str], None] = print,
) -> dict:
    """Run the benchmark and return ``{"meta": ..., "results": [...]}`` (one record per L and implementation)."""
    import torch

    torch.set_num_threads(threads)
    blas_threads = threads if _set_numpy_blas_threads(threads) else "library default"
    dev = torch.device(device)
    is_cuda = dev.type == "cuda"
    if with_numpy and dev.type != "cpu":
        raise ValueError("--numpy compares numpy arrays, which live on the CPU: use it with --device cpu.")

    def sync():
        if is_cuda:
            torch.cuda.synchronize(dev)

    meta = {
        "command": command,
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": torch.cuda.get_device_name(dev) if is_cuda else _cpu_name(),
        "cpu_count": os.cpu_count(),
        "torch_threads": threads,
        "numpy_blas_threads": blas_threads,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "dtype": "float32",
        "shape": f"(B, H, L, E) = ({batch}, {heads}, L, {dim}), S = L",
        "block_size": block_size,
        "repeats": repeats,
        "timing": "median wall-clock of the repeats, after one warm-up call; rounds interleaved",
        "memory": "cuda max_memory_allocated"
        if is_cuda
        else "torch profiler CPU allocations; tracemalloc for numpy",
    }
    results = []
    gen = torch.Generator().manual_seed(0)
    for L in lengths:
        q, k, v = (torch.randn(batch, heads, L, dim, generator=gen).to(dev) for _ in range(3))
        ref = _reference(q, k, v, 1.0 / math.sqrt(dim))
        impls = _implementations(q, k, v, block_size, with_numpy)
        records = {}
        with torch.no_grad():
            for name, fn in impls.items():
                out = fn()
                sync()
                err = float((torch.as_tensor(out).to("cpu", torch.float64) - ref).abs().max())
                if not err <= atol:
                    raise AssertionError(f"{name} at L={L}: max |error| {err:.3g} vs float64 > {atol}")
                del out
                if name.endswith("(numpy)"):
                    peak = _numpy_peak(fn)
                elif is_cuda:
                    peak = _cuda_peak(fn, dev)
                else:
                    peak = _torch_cpu_peak(fn)
                records[name] = {
                    "L": L,
                    "S": L,
                    "implementation": name,
                    "max_abs_err": err,
                    "peak_bytes": peak,
                    "times_s": [],
                }
            for _ in range(repeats):
                for name, fn in impls.items():
                    sync()
                    t0 = time.perf_counter()
                    fn()
                    sync()
                    records[name]["times_s"].append(time.perf_counter() - t0)
        default = statistics.median(records["torch SDPA (default)"]["times_s"])
        for rec in records.values():
            rec["median_s"] = statistics.median(rec["times_s"])
            rec["min_s"] = min(rec["times_s"])
            rec["ratio_to_default"] = rec["median_s"] / default
            results.append(rec)
        log(f"L={L}: done")
    return {"meta": meta, "results": results}


def format_table(data: dict) -> str:
    """One plain-text table of every record."""
    head = f"{'L':>5}  {'implementation':<40} {'median ms':>10} {'x default':>9} {'peak MiB':>9} {'max |err|':>9}"
    lines = [head, "-" * len(head)]
    last_L = None
    for r in data["results"]:
        if last_L is not None and r["L"] != last_L:
            lines.append("")
        last_L = r["L"]
        peak = "n/a" if r["peak_bytes"] is None else f"{r['peak_bytes'] / MiB:.1f}"
        lines.append(
            f"{r['L']:>5}  {r['implementation']:<40} {r['median_s'] * 1e3:>10.1f} "
            f"{r['ratio_to_default']:>9.2f} {peak:>9} {r['max_abs_err']:>9.1e}"
        )
    return "\n".join(lines)


def summary(data: dict) -> str:
    """The three targets, at the largest length measured."""
    L = max(r["L"] for r in data["results"])
    at = {r["implementation"]: r for r in data["results"] if r["L"] == L}
    sdpa, flash = at["ac.scaled_dot_product_attention"], at["ac.flash_attention"]
    math_, default = at["torch SDPA (math)"], at["torch SDPA (default)"]
    lines = [
        f"At L = S = {L}:",
        f"  ac.scaled_dot_product_attention / torch math backend: {sdpa['median_s'] / math_['median_s']:.2f}x time",
        f"  ac.flash_attention / torch default:                   {flash['median_s'] / default['median_s']:.2f}x time",
    ]
    if flash["peak_bytes"] is not None and sdpa["peak_bytes"]:
        lines.append(
            f"  ac.flash_attention peak memory / ac.scaled_dot_product_attention's: "
            f"{flash['peak_bytes'] / sdpa['peak_bytes']:.3f}"
        )
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attncourse.bench",
        description="Time and peak memory of attncourse's attention against PyTorch's (fp32, L = S).",
    )
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda (default: cpu)")
    parser.add_argument(
        "--lengths", type=int, nargs="+", help=f"sequence lengths L = S (default: {DEFAULT_LENGTHS})"
    )
    parser.add_argument(
        "--repeats", type=int, help="timed calls per implementation (default: 5; 3 with --quick)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch.set_num_threads (default: 1, so a shared machine's other work perturbs the numbers least)",
    )
    parser.add_argument("--batch", type=int, default=1, help="B (default: 1)")
    parser.add_argument("--heads", type=int, default=4, help="H (default: 4)")
    parser.add_argument("--dim", type=int, default=64, help="E = Ev (default: 64)")
    parser.add_argument(
        "--block-size", type=int, default=256, help="flash_attention's block_size (default: 256)"
    )
    parser.add_argument(
        "--numpy", action="store_true", help="also run the attncourse functions on numpy arrays"
    )
    parser.add_argument("--json", metavar="PATH", help="also write every measurement to PATH as JSON")
    parser.add_argument("--quick", action="store_true", help=f"lengths {QUICK_LENGTHS}, 3 repeats")
    args = parser.parse_args(argv)

    lengths = args.lengths or (QUICK_LENGTHS if args.quick else DEFAULT_LENGTHS)
    repeats = args.repeats or (3 if args.quick else 5)
    if any(n < 1 for n in lengths) or repeats < 1 or args.threads < 1 or args.block_size < 1:
        parser.error("lengths, --repeats, --threads and --block-size must be positive")
    data = run_benchmark(
        lengths,
        device=args.device,
        repeats=repeats,
        threads=args.threads,
        batch=args.batch,
        heads=args.heads,
        dim=args.dim,
        block_size=args.block_size,
        with_numpy=args.numpy,
        command=" ".join(["python -m attncourse.bench", *(argv if argv is not None else sys.argv[1:])]),
        log=lambda s: print(s, file=sys.stderr, flush=True),
    )
    meta = data["meta"]
    print(
        f"{meta['device']} ({meta['cpu_count']} CPUs), torch {meta['torch']} with {meta['torch_threads']} thread(s), "
        f"numpy {meta['numpy']}; {meta['shape']}, float32; {meta['date_utc']}"
    )
    print(f"median of {repeats} calls; ratios to torch SDPA (default); errors against a float64 reference\n")
    print(format_table(data))
    print()
    print(summary(data))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
