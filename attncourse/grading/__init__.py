"""Hand out exercises and grade submitted notebooks in a sandbox.

One module per concern, each readable alone:

* ``handout``: ``assign`` (student notebooks and the private grading bundle), ``validate``,
  ``load_hidden_cases``;
* ``sandbox``: the bubblewrap policy (what a notebook sees, its limits), in one place;
* ``protocol``: the versioned request / reply format between the grader and the runner (JSON and
  ``.npy`` files, plain data only);
* ``runner``: ``python -m attncourse.grading.runner JOB_DIR``, which executes one notebook inside
  the sandbox and writes a reply; it never judges anything;
* ``namespace``: which statements of the chapter's cells the runner runs (those the answers
  reach, found by reading the code);
* ``assets``: the handout's images inside its notebooks, its Colab badges pointed at ``--host``;
* ``assignment``: which chapters a run grades, and what each cell of a submitted notebook is;
* ``submissions``: finding the submissions (Canvas and Moodle names too) and reading them once;
* ``jobs``: one notebook's run in the sandbox (cases delivered after its cells, a fresh run when
  a call ends the process);
* ``marking``: turns a reply into marks, comparing with expected outputs only the grader holds;
* ``gradebook``: ``gradebook.csv``, ``results.json`` and one feedback file per student;
* ``conduct``: a note naming what a notebook's code reaches for that no exercise needs;
* ``late``: the late-penalty policy, the due date and extensions;
* ``roster``, ``lms``, ``gradescope``: the roster, Canvas's and Moodle's imports, Gradescope's
  results and autograder;
* ``batch``: ``grade``, which finds the submissions and grades them in parallel;
* ``update``: ``grade --update``, regrading some submissions into an existing results folder and
  writing every output again from the whole class.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GradingError", "Limits", "assign", "find_sandbox", "grade", "load_hidden_cases", "validate"]

_HOMES = {
    "grade": "batch",
    "assign": "handout",
    "validate": "handout",
    "load_hidden_cases": "handout",
    "GradingError": "limits",
    "Limits": "limits",
    "find_sandbox": "sandbox",
}


def __getattr__(name: str) -> Any:
    # imported on first use, so that the runner (a module of this package) loads only what it needs
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
