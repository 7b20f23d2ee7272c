"""The exercise registry: what each exercise asks, what it is worth, and how it is checked.

An exercise is a function the student writes.  The registry keeps, for each one:

* ``id`` (``"ch05.multi_head_attention"``), a display ``number`` (``"5.3"``), a ``title`` and
  ``points``;
* ``solution``: the exercise cell's code as the book shows it, with the solution between
  ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (the markers nbgrader uses);
* ``reference``: a trusted implementation, computed in float64, that defines "correct";
* ``public_cases``: small seeded inputs that ``check`` runs (the hidden ones live in
  ``grading/``, outside the package);
* ``diagnoses``: classic wrong answers (a wrong variant of the computation, or an error
  pattern) with the message a student sees when their answer matches one;
* ``needs``: the imports the cell relies on, which are also what it hands out: an ``attncourse``
  callable imported there may be used in the answer, every other one may not (``forbids`` adds
  more names, ``engine.guard`` enforces both);
* ``tolerance``: how close a written-down number must be (``predict`` exercises).

The ``solution`` is the one source of each answer: the chapter's exercise cell and its worked
solution (``notebook.exercise_cells``, written into the notebooks by
``scripts/sync_exercise_cells.py``), the student stub (``notebook.to_student``) and the check
that the solution agrees with ``reference`` on every case (``tests/test_exercise_sources.py``)
all come from it.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

__all__ = [
    "Case",
    "Diagnosis",
    "Exercise",
    "CHAPTERS",
    "register",
    "get",
    "current_id",
    "all_exercises",
    "chapter_key",
    "BEGIN_SOLUTION",
    "END_SOLUTION",
    "STUB_LINE",
    "KINDS",
    "grouped",
]

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
STUB_LINE = 'raise NotImplementedError("write your answer here")'

# What an exercise asks the learner to do.  ``implement``: write a function the chapter built;
# ``predict``: a number or shape, written down before running anything (a zero-argument function
# returning it, graded with a stated tolerance); ``derive``: a closed form, checked on cases;
# ``diagnose``: fix buggy code from its symptom; ``extend``: something the chapter did not show.
KINDS = ("implement", "predict", "derive", "diagnose", "extend")

# chapter key -> (title, notebook stem that hosts its exercises)
CHAPTERS: Dict[str, Tuple[str, str]] = {
    "ch00": ("Chapter 0: Why attention", "00_why_attention"),
    "ch01": ("Chapter 1: Softmax", "01_softmax"),
    "ch02": ("Chapter 2: Dot-product attention", "02_dot_product_attention"),
    "ch03": ("Chapter 3: Scaling by sqrt(d_k)", "03_scaling"),
    "ch04": ("Chapter 4: Self-attention", "04_self_attention"),
    "ch05": ("Chapter 5: Multi-head attention", "05_multi_head_attention"),
    "ch06": ("Chapter 6: Masked attention", "06_masked_attention"),
    "ch07": ("Chapter 7: Positional encoding", "07_positional_encoding"),
    "ch08": ("Chapter 8: A Transformer block", "08_transformer_block"),
    "ch09": ("Chapter 9: Efficient attention", "09_efficient_attention"),
    "ch10": ("Chapter 10: Attention for images", "10_vision_transformer"),
    "ch11": ("Chapter 11: Attention in today's language models", "11_modern_attention"),
    "ch12": ("Chapter 12: Cross-attention", "12_cross_attention"),
    "ch13": ("Chapter 13: Beyond softmax attention", "13_beyond_softmax"),
    "bugs": ("Appendix: Common bugs", "appendix_common_bugs"),
}


class Case:
    """One set of inputs, given in the order of the exercise function's parameters.

    ``group`` names what the case tests ("shape", "masking", "edge rows" ...): an answer earns a
    group's share of the points only when it passes every case of the group, public and hidden.
    The public cases define an exercise's groups; a hidden case joins one of them (``group=`` is
    a keyword of ``Case``, never an input).  A case that names no group is a group of its own.

    >>> import numpy as np
    >>> case = Case("three logits", group="shape", x=np.array([1.0, 2.0, 3.0]))
    >>> case.name, case.group, list(case.inputs)
    ('three logits', 'shape', ['x'])
    """

    def __init__(self, name: str, group: Optional[str] = None, **inputs: Any) -> None:
        if group is not None and (not isinstance(group, str) or not group.strip()):
            raise ValueError(f"case {name!r}: group must be a non-empty string, got {group!r}")
        self.name = name
        self.inputs = inputs
        self.group = group if group is not None else name

    def args(self) -> List[Any]:
        """Fresh copies of the inputs, so a function that writes into them changes nothing here."""
        return [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in self.inputs.values()]

    def __repr__(self) -> str:
        return f"Case({self.name!r}, group={self.group!r}, {', '.join(self.inputs)})"


def grouped(group: str, *cases: Case) -> List[Case]:
    """The ``cases`` as one group: they are scored together, all or nothing.

    >>> [c.group for c in grouped("masking", Case("a"), Case("b"))]
    ['masking', 'masking']
    """
    for case in cases:
        case.group = group
    return list(cases)


@dataclass(frozen=True)
class Diagnosis:
    """A classic mistake and the message that explains it.

    ``variant`` computes the wrong answer from the same inputs (or returns ``None`` where the
    mistake cannot be told apart); a student whose output matches it gets ``message``.
    ``symptom`` is for a mistake with many forms that no one variant computes: a test
    ``symptom(outputs, *inputs) -> bool`` on the answer's outputs (a list of arrays) that is true
    only when they show the mistake (e.g. "the scores are still symmetric").
    ``error`` is a regular expression searched in ``"ErrorType: message"`` of an exception;
    ``at``, a regular expression searched in the line of the answer's code where it was raised:
    an error diagnosis with ``at`` is shown only when the exception happened on such a line (the
    same error raised elsewhere, say in a division by a temperature rather than by the row sums,
    is shown as the learner's own exception, at its line).
    A diagnosis is shown only when the answer's outputs match it on every case where it can be
    told apart from the correct result (``engine.compare.settle_diagnoses``), never because an answer
    merely fails.

    ``message`` states the symptom and asks the question that leads to the bug; it is what
    ``check`` and the grader's feedback show, except for a ``diagnose`` exercise, where finding the
    cause is the exercise: there the feedback shows what any wrong answer gets (which outputs
    differ, where, by how much) and the message comes with the hint.  ``hint`` names the fix:
    ``check(..., hint=True)`` shows it, the grader never does.  ``name`` is the mistake's short name ("wrong softmax
    axis"): ``CaseResult.diagnosis`` carries it, and the tests' table of wrong answers asserts it.

    A message written as "what is wrong: how to fix it" (or with "; ") and no ``hint`` is split:
    the feedback shows what is wrong, the hint is the whole sentence.  An unnamed diagnosis is
    named by its (shown) message.
    """

    message: str
    variant: Optional[Callable[..., Any]] = None
    error: Optional[str] = None
    name: str = ""
    hint: str = ""
    symptom: Optional[Callable[..., bool]] = None
    at: Optional[str] = None

    def __post_init__(self) -> None:
        known = SHARED_MISTAKES.get(self.message)
        if known is not None:  # a shared message (``chapters._shared``) brings its name and hint
            if not self.name:
                object.__setattr__(self, "name", known[0])
            if not self.hint:
                object.__setattr__(self, "hint", known[1])
            if self.at is None and len(known) > 2:
                object.__setattr__(self, "at", known[2])
        if not self.hint and "?" not in self.message:
            # "what is wrong: how to fix it" -> the feedback keeps what is wrong, the hint all of it
            head = re.split(r"(?<=[a-z0-9)`'])(?::|;) ", self.message, maxsplit=1)[0]
            if head != self.message:
                object.__setattr__(self, "hint", self.message)
                object.__setattr__(self, "message", head)
        if not self.name:
            object.__setattr__(
                self, "name", self.message if len(self.message) <= 60 else self.message[:57] + "..."
            )


# message -> (name, hint) or (name, hint, at) of mistakes shared by several exercises (filled in by
# ``chapters._shared``)
SHARED_MISTAKES: Dict[str, Tuple[str, ...]] = {}


def _functions_defined(source: str) -> List[str]:
    tree = ast.parse(source)
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


@dataclass(frozen=True)
class Exercise:
    """One graded exercise; see the module docstring."""

    id: str
    number: str
    title: str
    points: int
    function: str
    solution: str
    reference: Callable[..., Any]
    public_cases: Callable[[], List[Case]]
    description: str = ""
    outputs: Tuple[str, ...] = ("result",)
    distributions: Tuple[str, ...] = ()  # outputs whose last axis should sum to 1 (or 0 when masked)
    diagnoses: Tuple[Diagnosis, ...] = ()
    needs: Tuple[str, ...] = ("import numpy as np",)  # imports the cell relies on
    array_kind: str = "numpy"  # "torch": the student's function receives torch tensors
    stub: Optional[str] = None  # replaces the solution region in the student version
    # The nudge check(..., hint=True) gives (only when asked: after real attempts check offers it)
    hint: str = ""
    kind: str = "implement"  # one of KINDS
    # Dotted names of further callables this exercise may not use, beyond the rule that applies
    # to every exercise (no attncourse function that the cell's ``needs`` does not import, no
    # torch built-in attention unless ``needs`` imports it by name; see ``engine.guard``).
    forbids: Tuple[str, ...] = ()
    # (rtol, atol) that replaces the dtype-based table of ``engine.tolerance`` (a ``predict`` exercise
    # states how close a written-down number must be, e.g. ``(0.1, 0.0)`` for "within 10%");
    # integer answers are then compared with it too.  The feedback quotes it.
    tolerance: Optional[Tuple[float, float]] = None
    # How the answer must work, where the method is the point: a factory of a probe (see
    # ``engine.method``) that watches each call and names the rule an answer broke; such a case fails
    # with status "method" and the exercise scores 0.
    method: Optional[Callable[[], Any]] = None
    # (question, worked answer): a "why" question that is not graded; the prompt asks it and keeps
    # the worked answer behind a dropdown, in the student edition too
    reflect: Optional[Tuple[str, str]] = None
    # ids this exercise had before (an id that named a cause was renamed to name the function):
    # ``get`` still finds it under them, so saved notebooks and gradebooks keep working
    former_ids: Tuple[str, ...] = ()
    # names the function had before (a name that named a cause was renamed): ``score`` and the
    # grader still find a saved notebook's function under them when the current name is not defined
    former_functions: Tuple[str, ...] = ()
    # True where the exercise is about precision (overflow, float16, a running maximum's start ...):
    # the answer is judged at the precision of the case and of its own outputs.  Otherwise it is
    # judged at float32's tolerance at the finest, since an answer computed in float32 and returned
    # as float64 has float64's dtype but not its precision (``engine.tolerance``).
    precision: bool = False
    _cache: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "solution", textwrap.dedent(self.solution).strip("\n") + "\n")
        if self.stub is not None:
            object.__setattr__(self, "stub", textwrap.dedent(self.stub).strip("\n"))
        if not re.fullmatch(r"(ch[0-9]{2}|bugs)\.[a-z][a-z0-9_]*", self.id):
            raise ValueError(f"exercise id {self.id!r} must look like 'ch01.name' or 'bugs.name'")
        if self.function not in _functions_defined(self.solution):
            raise ValueError(f"{self.id}: the solution does not define {self.function}()")
        if self.solution.count(BEGIN_SOLUTION) != 1 or self.solution.count(END_SOLUTION) != 1:
            raise ValueError(f"{self.id}: the solution needs one {BEGIN_SOLUTION} / {END_SOLUTION} pair")
        if self.kind not in KINDS:
            raise ValueError(f"{self.id}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.array_kind not in ("numpy", "torch"):
            raise ValueError(f"{self.id}: array_kind must be 'numpy' or 'torch'")
        if "\n" in self.hint:
            raise ValueError(f"{self.id}: the hint must be one line")
        if self.tolerance is not None:
            rtol, atol = self.tolerance
            if not (rtol >= 0 and atol >= 0):
                raise ValueError(
                    f"{self.id}: tolerance must be (rtol, atol) with both >= 0, got {self.tolerance}"
                )

    @property
    def function_names(self) -> Tuple[str, ...]:
        """The function's name now, then the names it had before (``former_functions``)."""
        return (self.function, *self.former_functions)

    @property
    def chapter(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def header(self) -> str:
        """The comment on the exercise cell's first line."""
        unit = "point" if self.points == 1 else "points"
        return f"# Exercise {self.number}: {self.title} ({self.points} {unit})"

    @property
    def params(self) -> Tuple[str, ...]:
        """The graded function's parameter names, in order."""
        for node in ast.parse(self.solution).body:
            if isinstance(node, ast.FunctionDef) and node.name == self.function:
                return tuple(a.arg for a in node.args.args)
        raise AssertionError("unreachable: checked in __post_init__")

    def allowed(self) -> List[str]:
        """What the answer may call, from ``needs``: ``['numpy', 'softmax (attncourse)']``.

        >>> get("ch09.static_cache_step").allowed()
        ['numpy', 'softmax (from attncourse)']
        """
        out: List[str] = []
        for line in self.needs:
            m = re.fullmatch(r"\s*import\s+([\w.]+)(?:\s+as\s+\w+)?\s*", line)
            if m:
                out.append(m.group(1))
                continue
            m = re.fullmatch(r"\s*from\s+([\w.]+)\s+import\s+([\w\s,]+)", line)
            if m:
                names = [n.strip() for n in m.group(2).split(",") if n.strip()]
                if m.group(1) == "torch":
                    out += [f"torch.{n}" for n in names]
                else:
                    out += [f"{n} (from {m.group(1)})" for n in names]
        return out

    def cell_source(self) -> str:
        """The exercise cell of the book (solution) version."""
        return f"{self.header}\n{self.solution}".rstrip("\n")

    def student_stub(self) -> str:
        """What replaces the solution region in the student version.

        The exercise's ``stub`` (the buggy code of a spot-the-bug exercise), else a
        ``raise NotImplementedError`` with a neutral message: the hint is shown only when asked
        for (``check(..., hint=True)``), never by the stub.
        """
        if self.stub is not None:
            return self.stub
        return STUB_LINE

    def solution_code(self) -> str:
        """The solution without its markers: what the "worked solution" block shows."""
        lines = [ln for ln in self.solution.splitlines() if ln.strip() not in (BEGIN_SOLUTION, END_SOLUTION)]
        return "\n".join(lines).rstrip("\n")

    def solution_function(self) -> Callable[..., Any]:
        """The book's solution, compiled (with the imports in ``needs``)."""
        if "solution" not in self._cache:
            namespace: Dict[str, Any] = {"__name__": f"solution_{self.id.replace('.', '_')}"}
            exec(compile("\n".join(self.needs) + "\n", f"<imports {self.id}>", "exec"), namespace)
            exec(compile(self.solution, f"<solution {self.id}>", "exec"), namespace)
            self._cache["solution"] = namespace[self.function]
        return self._cache["solution"]


_REGISTRY: Dict[str, Exercise] = {}
_FORMER: Dict[str, str] = {}  # a former id -> the id it has now


def register(*exercises: Exercise) -> None:
    """Add exercises to the registry (ids and function names must be new)."""
    for ex in exercises:
        if ex.id in _REGISTRY:
            raise ValueError(f"exercise {ex.id!r} is registered twice")
        clash = [e.id for e in _REGISTRY.values() if e.function == ex.function]
        if clash:
            raise ValueError(f"{ex.id}: function name {ex.function!r} is already used by {clash[0]}")
        for old in ex.former_ids:
            if old in _REGISTRY or _FORMER.get(old, ex.id) != ex.id:
                raise ValueError(f"{ex.id}: former id {old!r} already names another exercise")
            _FORMER[old] = ex.id
        _REGISTRY[ex.id] = ex


def current_id(exercise_id: Any) -> Any:
    """The id an exercise has now, for its current or a former id; anything else unchanged.

    >>> current_id("ch01.stable_softmax")
    'ch01.stable_softmax'
    """
    if isinstance(exercise_id, str) and exercise_id in _FORMER:
        return _FORMER[exercise_id]
    return exercise_id


def get(exercise_id: str) -> Exercise:
    """The exercise with this id (or a former id of it); a ``KeyError`` that suggests the nearest ids otherwise."""
    try:
        return _REGISTRY[_FORMER.get(exercise_id, exercise_id)]
    except KeyError:
        import difflib

        near = difflib.get_close_matches(str(exercise_id), list(_REGISTRY), n=1)
        hint = f" Did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
        raise KeyError(f"unknown exercise id {exercise_id!r}.{hint}") from None


def chapter_key(chapter: Any) -> str:
    """``1``, ``"1"``, ``"ch01"`` or ``"bugs"`` -> the registry's chapter key."""
    text = str(chapter).strip().lower()
    if text in CHAPTERS:
        return text
    if text.isdigit() and f"ch{int(text):02d}" in CHAPTERS:
        return f"ch{int(text):02d}"
    if text in ("a", "appendix", "common bugs", "common_bugs"):
        return "bugs"
    raise KeyError(f"unknown chapter {chapter!r}; use one of {', '.join(CHAPTERS)}")


def all_exercises(chapter: Any = None) -> List[Exercise]:
    """Every registered exercise (of one chapter, if given), in book order."""
    exercises = list(_REGISTRY.values())
    if chapter is not None:
        key = chapter_key(chapter)
        exercises = [e for e in exercises if e.chapter == key]
    order = list(CHAPTERS)
    return sorted(
        exercises, key=lambda e: (order.index(e.chapter), [int(p) for p in e.number.split(".")[1:]])
    )
