"""Which statements of a notebook's chapter cells the grader runs: those its answers reach.

An answer may use any name the student's notebook gave it: the chapter's imports (``torch``,
``F``, ``ac``), its constants and its helpers, and whatever the student's own cells define.  The
grader runs the exercise cells and the cells the student added in full; of the chapter's other
cells it runs only the top-level statements that bind a name those cells read, and, transitively,
the statements those statements read, in notebook order.  Plots, sliders and training loops that
no answer depends on are not run; a training loop that defines a model an answer uses is.

The analysis reads the code, it runs nothing (``ast``; Python's scoping rules):

* a statement's *now* reads are the names it reads when it runs (a ``def``'s decorators and
  defaults, a ``class`` body, a comprehension); its *later* reads are the free names of the
  functions it defines, read when they are called, at any time after it;
* a statement *binds* the names it assigns, imports or defines, and the names whose value it
  changes in place: ``x[0] = 1``, ``x.w = 1``, ``x.fill_(0)`` (a method called on a name that
  no import binds); it *replaces* a name it assigns at top level unconditionally (so an earlier
  binding of that name no longer matters);
* a read of a name is served by the statements that bind it before the reader, back to the last
  one that replaces it; a later read also by every statement that binds it after its function is
  defined (the function may be called then); the graded functions are read after the last cell,
  and a chapter ``def`` of a graded function's name runs whatever reads it.

What it does not follow: a value changed only by being passed to a function
(``nn.init.zeros_(w)``), names reached through ``globals()`` or ``eval`` of a string, and a
random generator's state advanced by a statement nothing else needs.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

__all__ = ["Statement", "analyse", "plan"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _root(node: ast.AST) -> Optional[str]:
    """The name at the bottom of ``a.b[c].d`` (``None`` when it is a call's result or a literal)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _params(args: ast.arguments) -> Set[str]:
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    return names | {a.arg for a in (args.vararg, args.kwarg) if a is not None}


def _header(args: ast.arguments) -> List[ast.AST]:
    """What a ``def`` or ``lambda`` evaluates when it is defined: defaults and annotations."""
    parts: List[ast.AST] = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None and a.annotation is not None:
            parts.append(a.annotation)
    return parts


class _Scope:
    """Names one scope reads and binds, walked without recursion inside the scope.

    ``loads``: read when the code runs; ``deferred``: free names of the functions it defines;
    ``stores``: bound here; ``mutated``: changed in place (``x[0] = 1``, ``x.a = 1``);
    ``methods``: names a method is called on (``x.fill_(0)``); ``imports``: bound by an import;
    ``star``: a ``from m import *``.
    """

    def __init__(self) -> None:
        self.loads: Set[str] = set()
        self.deferred: Set[str] = set()
        self.stores: Set[str] = set()
        self.mutated: Set[str] = set()
        self.methods: Set[str] = set()
        self.imports: Set[str] = set()
        self.globals: Set[str] = set()
        self.star = False

    def walk(self, nodes: Iterable[ast.AST]) -> "_Scope":
        stack = list(nodes)[::-1]
        while stack:
            node = stack.pop()
            children: List[ast.AST] = []
            if isinstance(node, ast.Name):
                (self.loads if isinstance(node.ctx, ast.Load) else self.stores).add(node.id)
            elif isinstance(node, _FUNCTIONS):
                self.stores.add(node.name)
                children = list(node.decorator_list) + _header(node.args)
                if node.returns is not None:
                    children.append(node.returns)
                self.deferred |= _free(node.body, _params(node.args))
            elif isinstance(node, ast.Lambda):
                children = _header(node.args)
                self.deferred |= _free([node.body], _params(node.args))
            elif isinstance(node, ast.ClassDef):
                self.stores.add(node.name)
                children = list(node.decorator_list) + list(node.bases) + list(node.keywords)
                body = _Scope().walk(node.body)
                self._take(body, body.stores)
            elif isinstance(node, _COMPREHENSIONS):
                first, *rest = node.generators
                children = [first.iter]
                inner: List[ast.AST] = [first.target, *first.ifs]
                for gen in rest:
                    inner += [gen.target, gen.iter, *gen.ifs]
                inner += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
                body = _Scope().walk(inner)
                self._take(body, body.stores)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name == "*":
                        self.star = True
                    else:
                        name = alias.asname or alias.name.split(".")[0]
                        self.stores.add(name)
                        self.imports.add(name)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.globals.update(node.names)
            else:
                if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
                    name = _root(node)
                    if name is not None:
                        self.mutated.add(name)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    name = _root(node.func)
                    if name is not None:
                        self.methods.add(name)
                elif isinstance(node, ast.ExceptHandler) and node.name:
                    self.stores.add(node.name)
                elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                    self.stores.add(node.name)
                elif isinstance(node, ast.MatchMapping) and node.rest:
                    self.stores.add(node.rest)
                children = list(ast.iter_child_nodes(node))
            stack.extend(reversed(children))
        return self

    def _take(self, inner: "_Scope", local: Set[str]) -> None:
        """Add what an inner scope that runs now (a class body, a comprehension) reads and changes."""
        self.loads |= inner.loads - local
        self.deferred |= inner.deferred
        self.mutated |= inner.mutated - local
        self.methods |= inner.methods - local
        self.imports |= inner.imports
        self.star = self.star or inner.star


def _free(body: Sequence[ast.AST], params: Set[str]) -> Set[str]:
    """The free names of a function's body: what it reads from the notebook when it is called."""
    scope = _Scope().walk(body)
    local = (scope.stores - scope.globals) | params
    return (scope.loads | scope.deferred) - local


@dataclass
class Statement:
    """One top-level statement of a cell, and the names it reads and binds."""

    cell: int  # the position of its cell in the list given to ``plan``
    node: ast.stmt
    now: Set[str] = field(default_factory=set)
    later: Set[str] = field(default_factory=set)
    binds: Set[str] = field(default_factory=set)
    replaces: Set[str] = field(default_factory=set)
    methods: Set[str] = field(default_factory=set)
    imports: Set[str] = field(default_factory=set)
    star: bool = False


def _replaced(node: ast.stmt) -> Set[str]:
    """Names a top-level statement binds whatever happened before it (no condition, no loop)."""
    if isinstance(node, _DEFINITIONS):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"}
    targets: List[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    names: Set[str] = set()
    while targets:
        t = targets.pop()
        if isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            targets.extend(t.elts)
        elif isinstance(t, ast.Starred):
            targets.append(t.value)
    return names


def analyse(node: ast.stmt, cell: int = 0) -> Statement:
    """What one top-level statement reads and binds.

    >>> s = analyse(ast.parse("def f(x, s=scale):\\n    return np.exp(x) * w").body[0])
    >>> sorted(s.now), sorted(s.later), sorted(s.binds)
    (['scale'], ['np', 'w'], ['f'])
    >>> s = analyse(ast.parse("for h in heads:\\n    table[h] = [g(v) for v in vs if v]").body[0])
    >>> sorted(s.now), sorted(s.binds), sorted(s.replaces)
    (['g', 'h', 'heads', 'table', 'vs'], ['h', 'table'], [])
    """
    scope = _Scope().walk([node])
    return Statement(
        cell,
        node,
        now=scope.loads,
        later=scope.deferred,
        binds=scope.stores | scope.mutated,
        replaces=_replaced(node),
        methods=scope.methods,
        imports=scope.imports,
        star=scope.star,
    )


def _parse(source: str) -> Optional[ast.Module]:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the runner reports it when the cell is run in full


def plan(
    cells: Sequence[Tuple[str, str]], functions: Iterable[str] = (), defined: Iterable[str] = ()
) -> List[Optional[ast.Module]]:
    """For each cell ``(kind, source)``, the module to run: the whole cell for an ``exercise`` or
    ``added`` cell, the statements the others reach for a ``chapter`` cell (``None``: nothing).

    ``functions`` are names read after the last cell (the graded functions whose exercise cells
    the notebook holds); a ``def`` or ``class`` of a chapter cell named in ``defined`` runs whatever
    reads it (a graded function the student moved out of its exercise cell is still graded).

    >>> cells = [("chapter", "import math\\nimport matplotlib.pyplot as plt\\nscale = math.pi"),
    ...          ("chapter", "plt.plot([scale])\\ndef helper(x):\\n    return x * scale"),
    ...          ("added", "def answer(x):\\n    return helper(x) + 1")]
    >>> [ast.unparse(m) if m else None for m in plan(cells, ["answer"])]
    ['import math\\nscale = math.pi', 'def helper(x):\\n    return x * scale', 'def answer(x):\\n    return helper(x) + 1']
    """
    statements: List[Statement] = []
    modules: List[Optional[ast.Module]] = []
    for c, (kind, source) in enumerate(cells):
        tree = _parse(source)
        modules.append(tree if kind != "chapter" else None)
        if tree is None:
            continue
        for node in tree.body:
            try:
                statements.append(analyse(node, c))
            except RecursionError:  # scopes nested past what the walk follows: its reads stay unknown
                continue
    imported = set().union(*(s.imports for s in statements)) if statements else set()
    binders: Dict[str, List[int]] = {}
    stars: List[int] = []
    for p, s in enumerate(statements):
        s.binds |= s.methods - imported
        for name in s.binds:
            binders.setdefault(name, []).append(p)  # in increasing order
        if s.star:
            stars.append(p)

    def positions(name: str) -> List[int]:
        found = binders.get(name, [])
        return sorted({*found, *stars}) if stars else found

    def before(name: str, p: int) -> List[int]:
        """The binders of ``name`` a read at position ``p`` may see: back to the last replacement."""
        found = []
        candidates = positions(name)
        for q in reversed(candidates[: bisect.bisect_left(candidates, p)]):
            found.append(q)
            if name in statements[q].replaces:
                break
        return found

    def after(name: str, p: int) -> List[int]:
        candidates = positions(name)
        return candidates[bisect.bisect_right(candidates, p) :]

    needed: Set[int] = set()
    todo = [p for p, s in enumerate(statements) if cells[s.cell][0] != "chapter"]
    for name in functions:
        todo += before(name, len(statements))
    wanted = set(defined)
    todo += [
        p for p, s in enumerate(statements) if isinstance(s.node, _DEFINITIONS) and s.node.name in wanted
    ]
    while todo:
        p = todo.pop()
        if p in needed:
            continue
        needed.add(p)
        s = statements[p]
        for name in s.now:
            todo += before(name, p)
        for name in s.later:
            todo += before(name, p) + after(name, p)
    for c, (kind, _) in enumerate(cells):
        if kind == "chapter":
            body = [s.node for p, s in enumerate(statements) if s.cell == c and p in needed]
            modules[c] = ast.Module(body=body, type_ignores=[]) if body else None
    return modules
