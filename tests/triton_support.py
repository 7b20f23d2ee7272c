"""The optional Triton kernel's test plumbing, shared by test_flash.py and test_gqa.py.

Triton decides at import whether it interprets, so a test file's CPU cases run in a child pytest
started with ``TRITON_INTERPRET=1`` (:func:`run_interpreter_cases`); in the parent they skip.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from attncourse.triton_flash import triton_available

__all__ = ["INTERPRETING", "TRITON_DEVICES", "needs_triton", "run_interpreter_cases"]

INTERPRETING = os.environ.get("TRITON_INTERPRET") == "1"
needs_triton = pytest.mark.skipif(not triton_available(), reason="triton is not installed")
TRITON_DEVICES = [
    pytest.param(
        "cpu",
        id="cpu-interpreter",
        marks=pytest.mark.skipif(not INTERPRETING, reason="runs in a child process with TRITON_INTERPRET=1"),
    ),
    pytest.param("cuda", marks=pytest.mark.cuda),
]


def run_interpreter_cases(test_file: str) -> subprocess.CompletedProcess:
    """Run ``test_file``'s "triton_kernel and interpreter" cases in a child with TRITON_INTERPRET=1."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            test_file,
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "triton_kernel and interpreter",
        ],
        env={**os.environ, "TRITON_INTERPRET": "1"},
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
