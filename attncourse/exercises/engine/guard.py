"""No shortcuts: notice when an answer calls what its exercise asks the learner to write.

``Guard(exercise).run(fn)`` calls ``fn()`` with a profile hook installed (``sys.setprofile``, and
``threading.setprofile`` for threads started meanwhile) and records, in ``Guard.found``, the
first forbidden callable the answer used.  ``engine.check.call`` runs every answer through it, so
``check`` in a notebook and the grader's runner apply the same rule:

* every callable defined in the ``attncourse`` package (the core modules, and the exercises'
  references) is forbidden, except those the exercise's ``needs`` imports
  by name (``from attncourse import softmax`` hands out ``softmax``; a class hands out its
  methods) and the classes of ``attncourse`` objects passed in as inputs;
* torch's built-in attention is forbidden unless ``needs`` imports it by name:
  ``torch.nn.functional.scaled_dot_product_attention`` and the fused kernels behind it (also
  reached through ``torch.ops.aten``), ``torch.nn.functional.multi_head_attention_forward``,
  ``torch.nn.MultiheadAttention``, the ``torch.nn.Transformer*`` layers and ``flex_attention``;
* the dotted names in ``Exercise.forbids`` are forbidden too;
* switching the hook off (``sys.setprofile``, ``threading.setprofile``) counts as a shortcut.

A call counts when no ``attncourse`` frame sits between it and the answer: an allowed helper may
use the package internally (``MultiHeadAttention.forward`` calls ``scaled_dot_product_attention``),
but torch or numpy in between do not excuse anything (``torch.vmap(sdpa)``, ``np.vectorize``,
``functools.partial``, ``map`` are all caught).  Because the hook sees code objects, not names,
aliases (``import attncourse as a``), ``getattr``, ``attncourse.functional.<name>``, a copy of the
function object taken before the check, ``exec`` of a string and module objects built earlier are
all caught.

What it does not catch (documented in the instructors' page): the package's source pasted into the
answer (new code objects), work done in another process (``multiprocessing``, ``subprocess``) or a
thread started with ``_thread`` directly, answers precomputed before ``check`` runs, and an answer
that deliberately digs the hook out of memory.  The worked solutions are not guarded: they are
printed in the book.  It is a rule a learner can see enforced, not a
security boundary: the grader's marks rest on the sandbox and on the parent process computing
them from plain data.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import sys
import threading
import types
from typing import Any, Callable, Dict, Iterable, Optional, Set, Tuple

__all__ = ["Guard", "allowed_names", "TORCH_ATTENTION"]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
# Files of the package that hold no answer: the exercise machinery, the command line, plotting and
# widgets (they draw, they compute nothing an exercise asks for), the device helper, the messages
# (i18n: the engine words its feedback through it while an answer runs).
# _validation.py holds the decorator that names a public function in its errors: its wrapper frame
# is neutral, and the decorated function's own frame, one level down, is what gets recognised.
_NEUTRAL_TOP = {
    "__init__.py",
    "cli.py",
    "bench.py",
    "device.py",
    "__main__.py",
    "_validation.py",
    "_backend.py",
    "i18n.py",
}
_NEUTRAL_PREFIXES = ("plotting", "widgets", "grading")
_REFERENCE_FILES = re.compile(r"^chapters/(ch\d\d|bugs|_shared)\.py$")
_NEUTRAL_CODE_NAMES = {"<module>", "__getattr__", "__dir__"}

# torch's built-in attention (forbidden unless ``needs`` imports it by name), recognised by where
# its code lives and by the names of the kernels, so nothing has to be imported to recognise it.
TORCH_ATTENTION: Tuple[str, ...] = (
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.MultiheadAttention",
    "torch.nn.Transformer",
    "torch.nn.TransformerEncoder",
    "torch.nn.TransformerDecoder",
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.attention.flex_attention.flex_attention",
)
_TORCH_PY = {
    # file inside torch/ -> (qualname pattern, public name)
    "nn/modules/activation.py": (re.compile(r"^MultiheadAttention\."), "torch.nn.MultiheadAttention"),
    "nn/modules/transformer.py": (
        re.compile(r"^(Transformer(Encoder|Decoder)?(Layer)?)\."),
        "torch.nn.{0}",
    ),
    "nn/functional.py": (
        re.compile(r"^(multi_head_attention_forward|scaled_dot_product_attention)$"),
        "torch.nn.functional.{0}",
    ),
    "nn/attention/flex_attention.py": (
        re.compile(r"^(flex_attention)$"),
        "torch.nn.attention.flex_attention.{0}",
    ),
}
_TORCH_OPS_CALL = re.compile(r"^(OpOverloadPacket|OpOverload)\.__call__$")
_TORCH_KERNEL = re.compile(
    r"scaled_dot_product|flash_attention|efficient_attention|cudnn_attention|multi_head_attention"
)

# The hook's own state is switched off by these: calling them while an answer runs is a shortcut.
_TAMPER_PY = {("threading.py", "setprofile"), ("threading.py", "setprofile_all_threads")}

_NEUTRAL: Tuple[Optional[str], bool] = (None, False)
_OPS = "<torch.ops>"


def allowed_names(needs: Iterable[str]) -> Set[str]:
    """Dotted names that ``from X import a, b`` lines in ``needs`` hand out.

    >>> sorted(allowed_names(["import numpy as np", "from attncourse import softmax, split_heads"]))
    ['attncourse.softmax', 'attncourse.split_heads']
    """
    names: Set[str] = set()
    for line in needs:
        try:
            tree = ast.parse(line)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.update(f"{node.module}.{a.name}" for a in node.names if a.name != "*")
    return names


def _public_at_import() -> Dict[str, Any]:
    """attncourse's public functions as imported, before any answer ran: a notebook that rebinds
    ``attncourse.softmax`` must not make the real ``softmax`` it was handed look forbidden."""
    import attncourse

    names = [n for n in getattr(attncourse, "__all__", ()) if n in vars(attncourse)]  # lazy ones skipped
    return {f"attncourse.{n}": vars(attncourse)[n] for n in names}


_PUBLIC_AT_IMPORT = _public_at_import()


def _resolve(dotted: str, *, load: bool) -> Any:
    """The object a dotted name refers to, or None.

    Only packages already imported are looked into.  With ``load`` a missing submodule or a lazy
    attribute (``attncourse.MultiHeadAttention``) may be imported; without it (inside the hook)
    nothing runs: plain lookups in modules that are there.
    """
    parts = dotted.split(".")
    if parts[0] not in sys.modules:
        return None
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        obj: Any = sys.modules.get(module_name)
        if obj is None and load:
            try:
                obj = importlib.import_module(module_name)
            except Exception:
                obj = None
        if obj is None:
            continue
        for attr in parts[cut:]:
            if load:
                try:
                    obj = getattr(obj, attr, None)
                except ImportError:  # a lazy name whose library is missing: nothing can call it
                    return None
            else:
                namespace = getattr(obj, "__dict__", None)
                obj = namespace.get(attr) if isinstance(namespace, (dict, types.MappingProxyType)) else None
            if obj is None:
                return None
        return obj
    return None


def _codes_of(obj: Any) -> Set[types.CodeType]:
    """The code objects that run when ``obj`` (a function or a class) is called or used."""
    obj = getattr(obj, "__func__", obj)
    codes: Set[types.CodeType] = set()
    if isinstance(obj, type):
        home = obj.__module__ or ""
        for klass in obj.__mro__:
            # the class's own methods, and those of bases in its module (or in attncourse);
            # what it inherits from elsewhere (object, nn.Module) stays neutral
            theirs = klass.__module__ or ""
            if theirs != home and not (home.startswith("attncourse") and theirs.startswith("attncourse")):
                continue
            for value in vars(klass).values():
                value = getattr(value, "__func__", value)
                if isinstance(value, property):
                    value = value.fget
                code = getattr(value, "__code__", None)
                if isinstance(code, types.CodeType):
                    codes.add(code)
    else:
        # a decorated function (functools.wraps, numpy's array-function dispatcher) runs its
        # wrapped implementation: that is the code to recognise
        seen = 0
        while obj is not None and seen < 5:
            code = getattr(obj, "__code__", None)
            # the wrapper of ``_validation.public`` is one code object shared by every public
            # function: it names none of them, so only the wrapped implementation counts
            if isinstance(code, types.CodeType) and not code.co_filename.endswith("_validation.py"):
                codes.add(code)
            obj, seen = getattr(obj, "__wrapped__", None), seen + 1
    return codes


def _classify_file(code: types.CodeType) -> Tuple[Optional[str], bool]:
    """(forbidden name or None, whether the frame excuses what it calls) from where code lives."""
    filename = code.co_filename
    qualname = getattr(code, "co_qualname", code.co_name)
    if filename.startswith(_PKG_DIR):
        if code.co_name in _NEUTRAL_CODE_NAMES:
            return _NEUTRAL
        rel = filename[len(_PKG_DIR) :].replace(os.sep, "/")
        if rel.startswith("exercises/"):
            base = rel[len("exercises/") :]
            if _REFERENCE_FILES.match(base):
                return f"the exercise's reference (attncourse.exercises.{base[:-3].replace('/', '.')})", False
            return _NEUTRAL
        if rel in _NEUTRAL_TOP or rel.startswith(_NEUTRAL_PREFIXES):
            return _NEUTRAL
        module = rel[:-3].replace("/", ".")
        top = qualname.split(".")[0]
        import attncourse

        public = (
            f"attncourse.{top}" if top in getattr(attncourse, "__all__", ()) else f"attncourse.{module}.{top}"
        )
        return public, True
    norm = filename.replace(os.sep, "/")
    if "/torch/" in norm:
        rel = norm.rsplit("/torch/", 1)[1]
        rule = _TORCH_PY.get(rel)
        if rule is not None:
            m = rule[0].match(qualname)
            if m:
                return rule[1].format(m.group(1)) if "{0}" in rule[1] else rule[1], False
        if rel == "_ops.py" and _TORCH_OPS_CALL.match(qualname):
            return _OPS, False
        return _NEUTRAL
    if (os.path.basename(norm), code.co_name) in _TAMPER_PY:
        return f"threading.{code.co_name} (it switches off the check)", False
    return _NEUTRAL


class Guard:
    """Watch one answer run and record the first forbidden callable it used (``found``).

    >>> import attncourse
    >>> from attncourse.exercises import get
    >>> guard = Guard(get("ch04.output_without_token"))
    >>> import numpy as np
    >>> _ = guard.run(lambda: attncourse.split_heads(np.zeros((1, 2, 4)), 2))
    >>> guard.found
    'attncourse.split_heads'
    """

    def __init__(self, exercise: Any, inputs: Iterable[Any] = ()) -> None:
        self.exercise = exercise
        self.found: Optional[str] = None
        self._cache: Dict[types.CodeType, Tuple[Optional[str], bool]] = {}
        self._allowed_codes: Set[types.CodeType] = set()
        self._allowed_builtins: Set[int] = set()
        self._forbidden_codes: Dict[types.CodeType, str] = {}
        self._forbidden_builtins: Dict[int, str] = {}
        self._keep: list = []  # keeps resolved builtins alive, so their ids stay theirs
        needs = getattr(exercise, "needs", ()) or ()
        self._allowed_pending = set(allowed_names(needs))
        self._forbidden_pending = set(getattr(exercise, "forbids", ()) or ())
        for value in inputs:
            klass = type(value)
            if (klass.__module__ or "").startswith("attncourse"):
                self._allowed_codes |= _codes_of(klass)
        self._n_modules = -1
        self._resolve_pending(load=True)
        self._hook = self._profile  # one bound method, so sys.getprofile() can be compared with it
        self._boundary: Optional[types.CodeType] = None
        self.installed: Optional[bool] = None  # set by run()

    # ------------------------------------------------------------------ names -> code objects
    def _resolve_pending(self, load: bool = False) -> None:
        self._n_modules = len(sys.modules)
        for dotted in list(self._allowed_pending):
            if dotted in _PUBLIC_AT_IMPORT:
                self._allowed_codes |= _codes_of(_PUBLIC_AT_IMPORT[dotted])
            obj = _resolve(dotted, load=load)
            if obj is None:
                continue
            self._allowed_pending.discard(dotted)
            if isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
                self._allowed_builtins.add(id(obj))
                self._keep.append(obj)
            self._allowed_codes |= _codes_of(obj)
        for dotted in list(self._forbidden_pending):
            obj = _resolve(dotted, load=load)
            if obj is None:
                continue
            self._forbidden_pending.discard(dotted)
            if isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
                self._forbidden_builtins[id(obj)] = dotted
                self._keep.append(obj)
            for code in _codes_of(obj):
                self._forbidden_codes[code] = dotted
        self._cache.clear()

    def _classify(self, code: types.CodeType) -> Tuple[Optional[str], bool]:
        verdict = self._cache.get(code)
        if verdict is None:
            if code in self._forbidden_codes:
                verdict = (self._forbidden_codes[code], False)
            elif code in self._allowed_codes:
                verdict = (None, True)
            else:
                verdict = _classify_file(code)
            self._cache[code] = verdict
        return verdict

    def _excused(self, frame: Any) -> bool:
        """True when an attncourse (or explicitly allowed) frame sits between ``frame`` and the answer."""
        while frame is not None and frame.f_code is not self._boundary:
            if self._classify(frame.f_code)[1]:
                return True
            frame = frame.f_back
        return False

    # ------------------------------------------------------------------ the hook
    def _builtin_name(self, fn: Any) -> Optional[str]:
        key = id(fn)
        if key in self._forbidden_builtins:
            return self._forbidden_builtins[key]
        if fn is sys.setprofile:
            return "sys.setprofile (it switches off the check)"
        name = getattr(fn, "__name__", None)
        if not isinstance(name, str) or "attention" not in name or key in self._allowed_builtins:
            return None
        module = getattr(fn, "__module__", None) or type(getattr(fn, "__self__", None)).__module__ or ""
        if str(module).startswith("torch") and _TORCH_KERNEL.search(name):
            return (
                "torch.nn.functional.scaled_dot_product_attention"
                if name == "scaled_dot_product_attention"
                else f"torch.{name}"
            )
        return None

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if self.found is not None:
            return
        if event == "call":
            if self._allowed_pending or self._forbidden_pending:
                if len(sys.modules) != self._n_modules:
                    self._resolve_pending()
            name, _ = self._classify(frame.f_code)
            if name is None:
                return
            if name is _OPS:
                op = frame.f_locals.get("self")
                label = str(getattr(op, "_qualified_op_name", "") or getattr(op, "_name", "") or op)
                if not _TORCH_KERNEL.search(label):
                    return
                name = f"torch.ops.{label.replace('::', '.')}"
            if not self._excused(frame.f_back):
                self.found = name
        elif event == "c_call":
            if frame.f_code is self._boundary:
                return  # run() itself, taking the hook off
            name = self._builtin_name(arg)
            if name is not None and not self._excused(frame):
                self.found = name

    # ------------------------------------------------------------------ running an answer
    def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` with the hook installed; the hook comes off again whatever ``fn`` does.

        Where the hook cannot be installed (an audit hook that refuses ``sys.setprofile``), ``fn``
        runs unwatched and ``installed`` is False, so the caller can tell.
        """
        self._boundary = Guard.run.__code__
        previous, previous_threads = sys.getprofile(), threading.getprofile()
        threading.setprofile(self._hook)  # first: once the hook is on, this call would count
        try:
            sys.setprofile(self._hook)
        except Exception:  # refused by an audit hook: run unwatched rather than fail every answer
            threading.setprofile(previous_threads)
            self.installed = False
            return fn()
        self.installed = True
        try:
            return fn()
        finally:
            current = sys.getprofile()
            sys.setprofile(previous)
            threading.setprofile(previous_threads)
            if current is not self._hook and self.found is None:
                self.found = "sys.setprofile (it switches off the check)"
