"""No shortcuts: an answer that calls what its exercise asks for scores 0, however it is reached."""

from __future__ import annotations

import functools
import sys
import threading

import numpy as np
import pytest

import attncourse
import attncourse as ac
import attncourse.functional
from attncourse.exercises import Case, Exercise, check, get, reset
from attncourse.exercises.engine.check import call, run_cases
from attncourse.exercises.engine.guard import Guard, allowed_names

SPLIT = get("ch04.output_without_token")  # needs: numpy and softmax, so attncourse.split_heads is forbidden
X = np.arange(24.0).reshape(1, 3, 8)
COPIED_EARLY = attncourse.functional.split_heads  # taken long before any check runs


@pytest.fixture(autouse=True)
def _fresh_scores():
    reset()
    yield
    reset()


def shortcut(exercise, fn, *args):
    outcome = call(exercise, fn, list(args))
    return outcome.shortcut


def _thread_call(x, h):
    out = []
    worker = threading.Thread(target=lambda: out.append(COPIED_EARLY(x, h)))
    worker.start()
    worker.join()
    return out[0]


EVASIONS = {
    "direct": lambda x, h: attncourse.split_heads(x, h),
    "alias": lambda x, h: ac.split_heads(x, h),
    "getattr": lambda x, h: getattr(ac, "split" + "_heads")(x, h),
    "submodule": lambda x, h: attncourse.functional.split_heads(x, h),
    "copied before the check": lambda x, h: COPIED_EARLY(x, h),
    "the function itself": COPIED_EARLY,
    "functools.partial": lambda x, h: functools.partial(COPIED_EARLY, n_heads=h)(x),
    "map": lambda x, h: next(map(COPIED_EARLY, [x], [h])),
    "np.vectorize": lambda x, h: np.vectorize(lambda i: COPIED_EARLY(x, h), otypes=[object])(0),
    "eval": lambda x, h: eval("COPIED_EARLY(x, h)", {"COPIED_EARLY": COPIED_EARLY, "x": x, "h": h}),
    "a thread": _thread_call,
    "lazy __array__": lambda x, h: type(
        "Lazy", (), {"__array__": lambda self, *a, **k: COPIED_EARLY(x, h)}
    )(),
}


@pytest.mark.parametrize("how", list(EVASIONS))
def test_every_route_to_the_package_function_is_caught(how):
    assert shortcut(SPLIT, EVASIONS[how], X, 2) == "attncourse.split_heads"


def test_a_registered_reference_is_caught_too():
    found = shortcut(
        SPLIT, lambda x, h: get("ch05.multi_head_attention").reference(x, *[np.eye(8)] * 4, h), X, 2
    )
    assert found.startswith("the exercise") and "attncourse.exercises.chapters.ch05" in found


def test_the_solution_and_an_honest_answer_are_not_flagged():
    case = SPLIT.public_cases()[0]
    assert shortcut(SPLIT, SPLIT.solution_function(), *case.args()) is None

    def honest(x, n_heads):
        *lead, L, d = x.shape
        return np.swapaxes(x.reshape(*lead, L, n_heads, d // n_heads), -3, -2)

    assert shortcut(SPLIT, honest, X, 2) is None


def test_handed_out_helpers_stay_allowed_and_may_call_the_package_inside():
    ex = get("ch05.multi_head_attention")  # needs hands out softmax, split_heads, merge_heads
    case = ex.public_cases()[0]
    results = run_cases(ex, ex.solution_function(), [case])
    assert results[0].passed and results[0].status == "passed"

    def cheat(x, W_q, W_k, W_v, W_o, n_heads):
        q, k, v = (ac.split_heads(x @ W, n_heads) for W in (W_q, W_k, W_v))
        out, weights = ac.scaled_dot_product_attention(q, k, v)  # not handed out here
        return ac.merge_heads(out) @ W_o, weights

    assert shortcut(ex, cheat, *case.args()) == "attncourse.scaled_dot_product_attention"


def test_a_shortcut_scores_zero_even_when_every_case_passes():
    result = check(
        "ch03.fix_late_scaling", lambda q, k, v: ac.scaled_dot_product_attention(q, k, v), show=False
    )
    assert result.earned == 0 and result.shortcut
    assert {c.status for c in result.cases} == {"shortcut"}
    assert result.message.startswith(
        "the reference may not be used here: your answer calls attncourse.scaled_dot_product_attention"
    )
    assert "the reference may not be used here" in result.text().splitlines()[0]


def test_torch_built_in_attention_is_caught_where_attention_is_to_be_written():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    ex = get("ch06.key_major_decoder")
    case = ex.public_cases()[0]

    def with_sdpa(q, k, v):
        q, k, v = (torch.from_numpy(np.asarray(a)) for a in (q, k, v))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy(), None

    def with_ops(q, k, v):
        q, k, v = (torch.from_numpy(np.asarray(a)) for a in (q, k, v))
        return torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True).numpy(), None

    def with_module(q, k, v):
        layer = torch.nn.MultiheadAttention(q.shape[-1], 1, batch_first=True)
        return layer(*(torch.from_numpy(a).float() for a in (q, k, v)))

    assert shortcut(ex, with_sdpa, *case.args()) == "torch.nn.functional.scaled_dot_product_attention"
    assert shortcut(ex, with_ops, *case.args()) == "torch.ops.aten.scaled_dot_product_attention"
    assert shortcut(ex, with_module, *case.args()) == "torch.nn.MultiheadAttention"


def _exercise(**fields):
    base = dict(
        id="ch09.guard_demo",
        number="9.99",
        title="a demo",
        points=1,
        function="guard_demo",
        solution="def guard_demo(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n",
        reference=lambda x: x,
        public_cases=lambda: [Case("one", x=np.ones(3))],
    )
    base.update(fields)
    return Exercise(**base)


def test_forbids_names_more_callables_python_and_builtin():
    import math

    ex = _exercise(forbids=("math.sqrt", "numpy.linalg.norm"))
    assert shortcut(ex, lambda x: x * math.sqrt(1.0), np.ones(3)) == "math.sqrt"
    assert (
        shortcut(ex, lambda x: x * np.linalg.norm(x) / np.linalg.norm(x), np.ones(3)) == "numpy.linalg.norm"
    )
    assert shortcut(ex, lambda x: x * np.sqrt(1.0), np.ones(3)) is None


def test_needs_can_hand_out_torch_attention_by_name():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    def attend(x):
        t = torch.from_numpy(x)[None, None]  # (1, 1, 3) as (B, L=1, E=3)
        return F.scaled_dot_product_attention(t, t, t)[0, 0].numpy()

    forbidden = _exercise()
    allowed = _exercise(
        needs=("import torch", "from torch.nn.functional import scaled_dot_product_attention")
    )
    assert shortcut(forbidden, attend, np.ones(3)) == "torch.nn.functional.scaled_dot_product_attention"
    assert shortcut(allowed, attend, np.ones(3)) is None


def test_switching_the_hook_off_is_itself_a_shortcut_and_the_hook_always_comes_off():
    def tamper(x, n_heads):
        sys.setprofile(None)
        return ac.split_heads(x, n_heads)

    def previous(frame, event, arg):
        return None

    sys.setprofile(previous)
    try:
        assert shortcut(SPLIT, tamper, X, 2).startswith("sys.setprofile")
        assert sys.getprofile() is previous  # whatever the answer did, the caller's profiler is back

        def boom(x, n_heads):
            raise RuntimeError("no")

        outcome = call(SPLIT, boom, [X, 2])
        assert outcome.kind == "raised" and outcome.shortcut is None
        assert sys.getprofile() is previous
    finally:
        sys.setprofile(None)
    assert threading.getprofile() is None


def test_attncourse_objects_passed_in_may_be_used():
    pytest.importorskip("torch")
    mha = ac.MultiHeadAttention(4, 2)
    guard = Guard(_exercise(), inputs=[mha])
    import torch

    guard.run(lambda: mha(torch.zeros(1, 3, 4)))
    assert guard.found is None
    assert Guard(_exercise()).run(lambda: mha(torch.zeros(1, 3, 4))) is not None
    other = Guard(_exercise())
    other.run(lambda: mha(torch.zeros(1, 3, 4)))
    assert other.found == "attncourse.MultiHeadAttention"


def test_allowed_names_reads_from_imports_only():
    assert allowed_names(["import numpy as np", "import attncourse as ac"]) == set()
    assert allowed_names(["from attncourse import softmax as sm, causal_mask"]) == {
        "attncourse.softmax",
        "attncourse.causal_mask",
    }


def test_an_audit_hook_that_refuses_setprofile_leaves_the_answer_unwatched_not_failed():
    # sys.addaudithook cannot be removed, so the refusal is simulated where the guard meets it
    import attncourse.exercises.engine.guard as guard_module

    class NoProfile:
        def __getattr__(self, name):
            return getattr(sys, name)

        @staticmethod
        def setprofile(fn):
            raise RuntimeError("sys.setprofile is not allowed here")

    real = guard_module.sys
    guard_module.sys = NoProfile()
    try:
        guard = Guard(SPLIT)
        out = guard.run(lambda: ac.split_heads(X, 2))
    finally:
        guard_module.sys = real
    assert out.shape == (1, 2, 3, 4) and guard.installed is False and guard.found is None


def test_torch_vmap_over_the_package_function_is_caught():
    torch = pytest.importorskip("torch")

    def vmapped(x, n_heads):
        return torch.vmap(COPIED_EARLY, in_dims=(0, None))(torch.from_numpy(x), n_heads).numpy()

    assert shortcut(SPLIT, vmapped, X, 2) == "attncourse.split_heads"


def test_every_name_in_the_torch_list_is_recognised():
    pytest.importorskip("torch")
    import importlib
    import types

    from attncourse.exercises.engine.guard import TORCH_ATTENTION, _classify_file, _codes_of

    guard = Guard(_exercise())
    for dotted in TORCH_ATTENTION:
        module, _, name = dotted.rpartition(".")
        obj = getattr(importlib.import_module(module), name)
        if isinstance(obj, types.BuiltinFunctionType):
            assert guard._builtin_name(obj) == dotted
        else:
            names = {_classify_file(code)[0] for code in _codes_of(obj)}
            assert dotted in names, (dotted, names)
