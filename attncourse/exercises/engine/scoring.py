"""The scoring policy, one for ``check``, ``score`` and the grader: case groups, all or nothing.

Every case belongs to a group that names what it tests (``Case.group``: shape, masking, edge rows
...).  The public cases define an exercise's groups; the points are shared equally among them,
and a group is earned only when every one of its cases passes, public and hidden.  A hidden case
joins a public group and never adds one, so ``check`` (public cases only) and the grader (public
and hidden) count the same groups, and a wrong idea that passes a hidden case by coincidence earns
nothing for it.
"""

from __future__ import annotations

from typing import Dict, Protocol, Sequence, Tuple


class CaseResult(Protocol):
    """What scoring reads of a judged case (``compare.CaseResult`` has it); scoring imports nothing."""

    name: str
    group: str
    hidden: bool
    passed: bool
    status: str


class Exercise(Protocol):
    """What scoring reads of an exercise."""

    points: int


__all__ = ["group_verdicts", "groups_passed", "points_earned"]


def _group_key(c: CaseResult) -> str:
    key = c.group or c.name
    return key[len("hidden: ") :] if key.startswith("hidden: ") else key


def group_verdicts(cases: Sequence[CaseResult]) -> Dict[str, bool]:
    """Each group's name (public cases' order) -> whether every one of its cases passed.

    The public cases define the groups; a hidden case joins the public group it names, so
    ``check`` (public cases) and the grader (public and hidden) count the same groups.  A hidden
    case whose group is none of the public ones (a mistake in the hidden cases, which
    ``tests/test_scoring_policy.py`` refuses) counts against every group: failing it earns
    nothing, passing it adds nothing.
    """
    public = [c for c in cases if not c.hidden] or list(cases)
    won: Dict[str, bool] = {key: True for key in dict.fromkeys(_group_key(c) for c in public)}
    for c in cases:
        key = _group_key(c)
        if key in won:
            won[key] = won[key] and c.passed
        elif not c.passed:
            won = dict.fromkeys(won, False)
    return won


def groups_passed(cases: Sequence[CaseResult]) -> Tuple[int, int]:
    """(groups whose every case passed, groups): see ``group_verdicts``."""
    won = group_verdicts(cases)
    return sum(won.values()), len(won)


def points_earned(exercise: Exercise, cases: Sequence[CaseResult]) -> float:
    """The scoring policy, one for ``check``, ``score`` and the grader.

    An answer that used what the exercise forbids (status ``shortcut``) or broke its method rule
    (status ``method``) scores 0.  Otherwise the points are shared equally among the case groups
    of the public cases (``Case.group``: shape, masking, edge rows ...; hidden cases join them,
    never adding a group) and a group is earned only when every one of its cases, public and
    hidden, passes.
    """
    if not cases or any(c.status in ("shortcut", "method") for c in cases):
        return 0.0
    won, total = groups_passed(cases)
    return round(exercise.points * won / total, 2)
