"""Sphinx extension: a cell's printed output appears as the kernel wrote it.

A kernel sends what a cell prints in chunks, cut wherever its flush timer fires; on a busy
machine that can fall inside one ``print("scores", x.shape)``.  myst-nb's ``nb_merge_streams``
strips each chunk and ends it with a newline before joining them, so the page would show
``scores`` and `` (3, 4)`` on two lines.  This extension joins each stream's chunks exactly as
written, then hands the single chunk to myst-nb's own merge for the rest of what it does (``\\r``
and ``\\b`` handling, one trailing newline, stdout before stderr).  The outputs are copied, so
the executed notebooks in ``_build/jupyter_execute`` keep the chunks as they came.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List

import myst_nb.core.render as render
from myst_nb.core.utils import coalesce_streams as myst_nb_coalesce

__all__ = ["join_streams", "setup"]


def join_streams(outputs: List[Any]) -> List[Any]:
    """``outputs`` with each stream's chunks joined, unchanged, into its first chunk's place."""
    joined: List[Any] = []
    streams: Dict[str, Any] = {}
    for output in outputs or []:
        if output["output_type"] != "stream":
            joined.append(output)
        elif output["name"] in streams:
            streams[output["name"]]["text"] += output["text"]
        else:
            streams[output["name"]] = first = copy.deepcopy(output)
            joined.append(first)
    return myst_nb_coalesce(joined)


def setup(app: Any) -> Dict[str, Any]:
    # myst-nb's renderer calls the name it imported from myst_nb.core.utils: replace that one.
    render.coalesce_streams = join_streams
    return {"parallel_read_safe": True, "parallel_write_safe": True}
