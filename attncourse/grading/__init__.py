"""Hand out exercises and grade submitted notebooks in a sandbox.

One module per concern, each readable alone:

* ``handout``: ``assign`` (student notebooks and the private grading bundle), ``validate``,
  ``load_hidden_cases``;
* ``sandbox``: the bubblewrap policy (what a notebook sees, its limits), in one place;
* ``protocol``: the versioned request / reply format between the grader and the runner (JSON and
  ``.npy`` files, plain data only);
* ``runner``: ``python -m attncourse.grading.runner JOB_DIR``, which executes one notebook inside
  the sandbox and writes a reply; it never judges anything;
* ``marking``: turns a reply into marks, comparing with expected outputs only the grader holds;
* ``gradebook``: ``gradebook.csv``, ``results.json`` and one feedback file per student;
* ``batch``: ``grade``, which finds the submissions and grades them in parallel.
"""

from __future__ import annotations

from .batch import grade
from .handout import assign, load_hidden_cases, validate
from .limits import GradingError, Limits
from .sandbox import find_sandbox

__all__ = ["assign", "grade", "validate", "load_hidden_cases", "GradingError", "Limits", "find_sandbox"]
