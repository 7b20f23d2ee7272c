"""Pick the best available torch device for a notebook."""

from __future__ import annotations

__all__ = ["best_device"]


def best_device():
    """``torch.device("cuda")`` if a GPU is available, else ``"mps"`` (Apple), else ``"cpu"``."""
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
