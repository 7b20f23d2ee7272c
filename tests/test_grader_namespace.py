"""What the grader runs of a notebook's chapter cells: the statements its answers reach.

The unit tests read ``namespace.plan`` directly; the slow ones grade notebooks with
`attncourse grade`: answers that use the chapter's imports and helpers score what ``check`` gives,
and no solution notebook of the book carries an error note (one run of the book's solutions)."""

from __future__ import annotations

import ast
import json
import math
import signal
from pathlib import Path

import pytest
from grader_support import Reply, chapter_notebook, code, exercise_cell, needs_bwrap

from attncourse.cli import main
from attncourse.exercises import all_exercises, get
from attncourse.exercises.engine.check import check
from attncourse.grading.namespace import plan

ROOT = Path(__file__).resolve().parents[1]


def kept(cells, functions=(), defined=()):
    """The statements run of each chapter cell, as source lines (``[]``: the cell is not run)."""
    modules = plan(cells, functions, defined)
    return [
        [ast.unparse(node).split("\n")[0] for node in module.body] if module is not None else []
        for (kind, _), module in zip(cells, modules)
        if kind == "chapter"
    ]


def test_the_imports_constants_and_helpers_an_answer_reads_run_and_nothing_else():
    cells = [
        ("chapter", "import math\nimport torch\nfrom torch import nn\nimport matplotlib.pyplot as plt"),
        ("chapter", "d_model = 8\nx = torch.randn(2, d_model)\nfig = plt.figure()\nplt.plot(x)"),
        ("chapter", "def scale_of(d):\n    return 1 / math.sqrt(d)\n\nclass Net(nn.Module):\n    pass"),
        ("chapter", "losses = []\nfor step in range(10**9):\n    losses.append(step)"),
        ("exercise", "def answer(q, k):\n    return torch.softmax(q @ k.T * scale_of(d_model), -1)"),
    ]
    assert kept(cells, ["answer"]) == [
        ["import math", "import torch"],
        ["d_model = 8"],
        ["def scale_of(d):"],
        [],
    ]


def test_a_chapter_class_runs_with_its_base_when_an_answer_uses_it_and_not_at_all_otherwise():
    cells = [
        ("chapter", "import torch\nfrom torch import nn"),
        (
            "chapter",
            "class PreviousToken(nn.Module):\n    def forward(self, x):\n        return torch.roll(x, 1)",
        ),
        ("added", "print('mine')"),
    ]
    assert kept(cells) == [[], []]
    cells.append(("exercise", "def answer(x):\n    return PreviousToken()(x)"))
    assert kept(cells, ["answer"]) == [
        ["import torch", "from torch import nn"],
        ["class PreviousToken(nn.Module):"],
    ]


def test_a_name_is_served_by_its_bindings_since_the_last_plain_assignment():
    cells = [
        ("chapter", "import numpy as np\nW = np.zeros(3)\nW = np.ones(3)"),
        ("chapter", "W[0] = 5\nW.fill(2)\nif W.sum() > 0:\n    W = W * 2\nprint(W)"),
        ("exercise", "def answer(x):\n    return x @ W"),
    ]
    assert kept(cells, ["answer"]) == [
        ["import numpy as np", "W = np.ones(3)"],
        ["W[0] = 5", "W.fill(2)", "if W.sum() > 0:"],
    ]


def test_a_function_reads_the_names_bound_after_it_and_a_statement_those_bound_before_it():
    cells = [
        ("chapter", "n = 1\nscale = 10"),
        ("chapter", "def helper(x):\n    return x * scale\nfirst = n + 1"),
        ("chapter", "scale = 20\nn = 5"),
        ("exercise", "def answer(x):\n    return helper(x) + first"),
    ]
    # helper may be called after every cell: both bindings of scale; first was computed from n = 1
    assert kept(cells, ["answer"]) == [
        ["n = 1", "scale = 10"],
        ["def helper(x):", "first = n + 1"],
        ["scale = 20"],
    ]


def test_a_students_own_binding_hides_the_chapters():
    cells = [
        ("chapter", "import numpy as np\nq = np.load('too_big_to_run.npy')"),
        ("added", "q = np.ones((2, 3))\nprint(q.sum())"),
        ("exercise", "def answer(x):\n    return [v for v in x if v]  # v and x are its own"),
    ]
    assert kept(cells, ["answer"]) == [["import numpy as np"]]


def test_the_graded_functions_are_read_after_the_last_cell():
    cells = [("chapter", "from attncourse.explore import softmax_jacobian as answer\nother = 1")]
    assert kept(cells) == [[]]
    assert kept(cells, ["answer"]) == [["from attncourse.explore import softmax_jacobian as answer"]]


def test_a_graded_function_defined_in_a_chapter_cell_runs_even_without_its_exercise_cell():
    cells = [
        ("chapter", "import numpy as np\nfrom attncourse import softmax as stable_softmax"),
        ("chapter", "def temperature_softmax(x, t):\n    return np.exp(x / t)\ndef other():\n    pass"),
    ]
    # another chapter's graded function only runs as a def or class, never from an import
    assert kept(cells, [], ["temperature_softmax", "stable_softmax"]) == [
        ["import numpy as np"],
        ["def temperature_softmax(x, t):"],
    ]


def test_cells_that_do_not_parse_or_nest_deeply_are_left_to_the_runner():
    deep = "x = " + " + ".join(["y"] * 1_000)  # deeper than compile() follows
    cells = [
        ("chapter", "y = 1\ndef broken(:"),
        ("chapter", "y = 2"),
        ("added", "print(("),
        ("added", deep),
        ("exercise", "def answer():\n    return y"),
    ]
    modules = plan(cells, ["answer"])
    assert modules[0] is None and modules[2] is None  # the runner reports the added cell's syntax error
    assert ast.unparse(modules[1]) == "y = 2"
    assert isinstance(modules[3], ast.Module)  # read without recursion: its reads are known


def test_the_runner_runs_what_the_answers_reach_in_notebook_order():
    from attncourse.grading.runner import _run_cells

    cells = [
        {"index": 1, "kind": "chapter", "source": "import math\nimport json\n%matplotlib inline"},
        {"index": 2, "kind": "chapter", "source": "raise RuntimeError('a plot')"},
        {"index": 3, "kind": "chapter", "source": "TAU = 2 * math.pi\nprint(json.dumps([TAU]))"},
        {"index": 4, "kind": "added", "source": "def turns(x):\n    return x / TAU"},
        {"index": 5, "kind": "chapter", "source": "def later(x):\n    return math.floor(x)\nlater(1 / 0)"},
    ]
    request = {"cells": cells, "prelude": "", "exercises": [], "limits": {"cell_s": 10}}
    namespace: dict = {}
    reply = Reply()
    handler = signal.getsignal(signal.SIGALRM)  # the runner's cell timer replaces it
    try:
        _run_cells(request, namespace, reply)
    finally:
        signal.signal(signal.SIGALRM, handler)
    assert reply.ran == ["cell 1", "cell 3", "cell 4"] and reply.notes == []
    assert namespace["turns"](math.pi) == 0.5 and "json" not in namespace and "later" not in namespace


# ---------------------------------------------------------------------------------- graded

IMPORTS = """\
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

import attncourse as ac
%matplotlib inline
"""

CONSTANTS = """\
N_PROJECTIONS = 4  # W_Q, W_K, W_V, W_O
fig = draw_projections(N_PROJECTIONS)  # a plot: nothing an answer reads
"""

DRAWING = """\
def draw_projections(n):
    raise RuntimeError("a drawing: not run while grading")

history = draw_projections(100)  # a training loop, nothing an answer reads
"""

ADDED = """\
from einops import rearrange as _rearrange

def to_heads(t, n_heads):
    return _rearrange(t, "b l (h d) -> b h l d", h=n_heads)
"""

ANSWERS = {
    "ch05.weights_from_dealt_heads": """
def weights_from_dealt_heads(W_q, W_k, W_v, W_o, n_heads):
    t = [torch.as_tensor(W, dtype=torch.float64) for W in (W_q, W_k, W_v, W_o)]
    q, k, v = (rearrange(W, "i (e h) -> i (h e)", h=n_heads).numpy() for W in t[:3])
    return q, k, v, rearrange(t[3], "(e h) o -> (h e) o", h=n_heads).numpy()
""",
    "ch05.merge_copied_heads": """
def merge_copied_heads(W_q, W_k, W_v, W_o, n_heads):
    t = [torch.as_tensor(W, dtype=torch.float64) for W in (W_q, W_k, W_v, W_o)]
    heads = [to_heads(W[None], n_heads)[0] for W in t[:3]]  # (H, d_model, d_head)
    a, b = next((a, b) for b in range(n_heads) for a in range(b)
                if all(torch.equal(h[a], h[b]) for h in heads))
    o = rearrange(t[3], "(h e) j -> h e j", h=n_heads).clone()
    o[a] += o[b]
    keep = [h for h in range(n_heads) if h != b]
    q, k, v = (rearrange(h[keep], "h i e -> i (h e)").numpy() for h in heads)
    return q, k, v, rearrange(o[keep], "h e j -> (h e) j").numpy()
""",
    "ch05.multi_head_attention": """
def multi_head_attention(x, W_q, W_k, W_v, W_o, n_heads):
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)
    q, k, v = (ac.split_heads(t(x) @ t(W), n_heads) for W in (W_q, W_k, W_v))
    weights = F.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    return (ac.merge_heads(weights @ v) @ t(W_o)).numpy(), weights.numpy()
""",
    "ch05.predict_causal_top_keys": """
def predict_causal_top_keys():
    return 3 * N_PROJECTIONS  # every query its own key
""",
    "ch05.mha_uneven_heads": """
def mha_uneven_heads(x, W_q, W_k, W_v, W_o, widths):
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)
    qs, ks, vs = (torch.split(t(x) @ t(W), list(widths), dim=-1) for W in (W_q, W_k, W_v))
    ws = [F.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1) for q, k in zip(qs, ks)]
    out = torch.cat([w @ v for w, v in zip(ws, vs)], dim=-1) @ t(W_o)
    return out.numpy(), torch.stack(ws, dim=1).numpy()
""",
    "ch05.heads_from_averaged_weights": """
def heads_from_averaged_weights(q, k, weights):
    q, k, w = (torch.as_tensor(a, dtype=torch.float64) for a in (q, k, weights))
    d = q.shape[-1]
    errs = {}
    for H in (h for h in range(1, d + 1) if d % h == 0):
        qh, kh = to_heads(q, H), to_heads(k, H)
        maps = F.softmax(qh @ kh.transpose(-1, -2) / math.sqrt(d // H), dim=-1).mean(dim=1)
        errs[H] = float((maps - w).abs().max())
    return min(errs, key=errs.get)
""",
    "ch05.mha_forward": """
def mha_forward(x, W_q, W_k, W_v, W_o, n_heads):
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)
    q, k, v = (to_heads(t(x) @ t(W), n_heads) for W in (W_q, W_k, W_v))
    weights = F.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    out = rearrange(weights @ v, "b h l d -> b l (h d)")
    return (out @ t(W_o)).numpy(), weights.numpy()
""",
}


@pytest.mark.slow
def test_answers_using_the_chapters_imports_and_an_added_helper_get_the_marks_check_gives(tmp_path):
    needs_bwrap()
    pytest.importorskip("torch")
    pytest.importorskip("einops")
    book = tmp_path / "book"
    book.mkdir()
    nb = chapter_notebook("ch05", "Multi-head attention")
    nb["cells"][1:1] = [code(IMPORTS), code(DRAWING), code(CONSTANTS)]
    (book / "05_multi_head_attention.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert main(["assign", str(book), str(tmp_path / "handout"), "--tests", str(ROOT / "hidden_cases")]) == 0
    student = json.loads((tmp_path / "handout" / "student" / "05_multi_head_attention.ipynb").read_text())
    assert sorted(ANSWERS) == sorted(ex.id for ex in all_exercises("ch05"))
    for ex_id, body in ANSWERS.items():
        exercise_cell(student, ex_id)["source"] = get(ex_id).header + "\n" + body
    student["cells"].insert(4, code(ADDED))
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "idiomatic.ipynb").write_text(json.dumps(student), encoding="utf-8")

    # in the notebook: the import cell, the constant, the added cell and the answers; check's marks
    namespace: dict = {}
    exec(IMPORTS.replace("%matplotlib inline", "") + CONSTANTS.split("\n")[0] + "\n" + ADDED, namespace)
    for ex_id, body in ANSWERS.items():
        exec(body, namespace)
    marks = {}
    for ex in all_exercises("ch05"):
        marks[ex.id] = check(ex.id, namespace[ex.function], show=False).earned
    assert marks == {ex.id: ex.points for ex in all_exercises("ch05")}

    out = tmp_path / "out"
    assert main(["grade", str(tmp_path / "handout" / "grading"), str(subs), str(out), "--jobs", "1"]) == 0
    student_row = json.loads((out / "results.json").read_text())["students"][0]
    graded = {ex_id: e["earned"] for ex_id, e in student_row["exercises"].items()}
    assert graded == marks
    assert student_row["notes"] == []  # the drawing and the training loop were not run


def book_notebooks() -> list:
    from attncourse.exercises.engine.notebook import exercises_in, read_notebook

    return [p for p in sorted((ROOT / "book").glob("*.ipynb")) if exercises_in(read_notebook(p.read_bytes()))]


def every_chapter() -> list:
    """``--chapter`` for every chapter with exercises: a folder of one notebook per chapter has no
    chapter that most submissions hold, so the run names them all."""
    from attncourse.exercises import CHAPTERS, all_exercises

    return [arg for key in CHAPTERS if all_exercises(key) for arg in ("--chapter", key)]


def imported_names(nb: dict) -> list:
    """The names the top-level imports of a notebook's chapter cells bind."""
    from attncourse.exercises.engine.notebook import exercise_id_of
    from attncourse.grading.runner import strip_magics

    names = []
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code" or exercise_id_of(cell) is not None:
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for node in ast.parse(strip_magics(source)).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bound = [a.asname or a.name.split(".")[0] for a in node.names]
                names += [name for name in bound if name not in names]
    return names


@pytest.mark.slow
def test_the_books_solutions_score_full_marks_with_no_error_note_and_every_imported_name_there(tmp_path):
    """Every chapter's worked solutions, graded in one run, each with a cell the student added that
    reads every name the chapter's cells import: full marks, no cell of the chapter fails, and
    every import works in the sandbox."""
    needs_bwrap()
    pytest.importorskip("torch")
    from attncourse.exercises.engine.notebook import read_notebook

    assert main(["assign", str(ROOT / "book"), str(tmp_path / "handout")]) == 0
    subs = tmp_path / "subs"
    subs.mkdir()
    wanted = {}
    for path in book_notebooks():
        nb = read_notebook(path.read_bytes())
        wanted[path.stem] = imported_names(nb)
        nb["cells"].append(code("used = [" + ", ".join(wanted[path.stem]) + "]\nprint(len(used))"))
        (subs / path.name).write_text(json.dumps(nb), encoding="utf-8")
    assert len(wanted) >= 15
    assert {"torch", "F", "math", "nn", "ac", "rearrange"} <= set().union(*wanted.values())
    out = tmp_path / "out"
    grade = ["grade", str(tmp_path / "handout" / "grading"), str(subs), str(out), "--jobs", "2"]
    assert main([*grade, *every_chapter()]) == 0
    rows = json.loads((out / "results.json").read_text())["students"]
    assert sorted(row["student"] for row in rows) == sorted(wanted)
    for row in rows:
        held = {get(ex_id).chapter for ex_id, e in row["exercises"].items() if e["earned"] > 0}
        assert len(held) == 1, (row["student"], held)
        short = [
            (ex_id, e["earned"])
            for ex_id, e in row["exercises"].items()
            if get(ex_id).chapter in held and e["earned"] != get(ex_id).points
        ]
        assert short == [], row["student"]
        # each notebook holds one chapter: the others' functions are "not found"; chapter 3 imports
        # a function named like chapter 1's exercise, which read is graded as the package's
        # reference; of this chapter, nothing is said
        others = {get(ex_id).chapter for ex_id in row["exercises"]} - held
        notes = [n for n in row["notes"] if not n.startswith("not found") and n.split(".")[0] not in others]
        assert row["status"] == "ok" and notes == [], row
