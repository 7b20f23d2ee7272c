"""The sandbox policy: what a notebook being graded can see and do, in one place.

``--sandbox auto`` (the default) is bubblewrap or nothing: if ``bwrap`` is missing or cannot
start here, ``find_sandbox`` raises ``GradingError`` with the fix, and no marks are written.
Inside bubblewrap a notebook gets

* an empty root with the system directories, the Python installation and ``attncourse`` mounted
  read-only (wherever they live: ``/tmp``, ``/root``, a conda prefix), a fresh ``/tmp``, and its
  own job folder as the only writable place; the submissions, the bundle and the output folder
  are not mounted, and are hidden by an empty folder where they sit inside something mounted;
* no network (a new network namespace), a new PID namespace (everything it leaves running dies
  with it), no capabilities, user ``nobody``;
* a seccomp filter that refuses to create processes (``fork``, ``vfork``, ``clone`` without
  ``CLONE_THREAD``, ``clone3``): threads work, fork bombs and subprocesses do not;
* resource limits set by the runner before it reads the notebook: ``RLIMIT_DATA`` for memory
  (not ``RLIMIT_AS``, which stops a CUDA build of torch from loading), ``RLIMIT_FSIZE`` per file,
  ``RLIMIT_CPU``, no core files; the grader kills the whole sandbox at the wall-time limit.

``--sandbox none`` runs the runner as a plain child process, for notebooks you trust: the grader
warns and records it in ``results.json``.
"""

from __future__ import annotations

import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .limits import GradingError, Limits

__all__ = [
    "MODES",
    "FIX",
    "Sandbox",
    "find_sandbox",
    "resource_limits",
    "apply_resource_limits",
    "seccomp_program",
    "runner_env",
]

MODES = ("auto", "bwrap", "none")
NOBODY = 65534
FIX = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install bubblewrap`) "
    "and allow unprivileged user namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`; on Ubuntu "
    "24.04 also `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`), or run the grader as root; "
    "only for notebooks you trust, pass --sandbox none"
)
RUNNER = "attncourse.grading.runner"
TMP_BYTES = 256 * 2**20  # the sandbox's /tmp lives in memory: this caps it
PACKAGE_ROOT = os.path.realpath(Path(__file__).parents[2])  # the folder holding attncourse/
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/fonts",
)


# ----------------------------------------------------------------------------- limits


def resource_limits(limits: Limits) -> Dict[str, int]:
    """The ``RLIMIT_*`` values (by name, without the prefix) the runner sets on itself.

    >>> resource_limits(Limits(memory_mb=512, time_s=10))["DATA"] == 512 * 2**20
    True
    """
    return {
        "DATA": int(limits.memory_mb) * 2**20,
        "FSIZE": int(limits.file_mb) * 2**20,
        "CPU": int(limits.time_s) + 5,
        "CORE": 0,
    }


def apply_resource_limits(values: Dict[str, int]) -> None:
    """Lower this process's limits to ``values`` (never raises one above its hard limit)."""
    import resource
    import signal

    for name, value in values.items():
        which = getattr(resource, f"RLIMIT_{name}")
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(int(value), hard)
        resource.setrlimit(which, (int(value), int(value)))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-long write fails instead of killing


# ----------------------------------------------------------------------------- seccomp

# Classic BPF over struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6];}
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_EAGAIN, _ENOSYS = 11, 38
_CLONE_THREAD = 0x00010000
# machine -> (AUDIT_ARCH, clone, clone3, [fork, vfork]); aarch64 has no fork/vfork system calls
_ARCH = {
    "x86_64": (0xC000003E, 56, 435, (57, 58)),
    "aarch64": (0xC00000B7, 220, 435, ()),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(machine: Optional[str] = None) -> Optional[bytes]:
    """The filter that stops a sandboxed notebook from creating processes (``None``: unknown machine).

    ``clone3`` answers ``ENOSYS`` so that glibc falls back to ``clone``, whose flags a filter can
    read: with ``CLONE_THREAD`` (a thread) it is allowed, without it (a process) it fails with
    ``EAGAIN``, as do ``fork`` and ``vfork``.  Another architecture's system calls are refused.

    >>> len(seccomp_program("x86_64")) % 8, seccomp_program("sparc") is None
    (0, True)
    """
    machine = machine or platform.machine()
    if machine not in _ARCH:
        return None
    arch, clone, clone3, forks = _ARCH[machine]
    prog = [
        _insn(_LD_ABS, 0, 0, 4),  # arch
        _insn(_JEQ, 1, 0, arch),
        _insn(_RET, 0, 0, _ERRNO | _ENOSYS),
        _insn(_LD_ABS, 0, 0, 0),  # syscall number
    ]
    if machine == "x86_64":  # the x32 ABI's numbers
        prog += [_insn(_JGE, 0, 1, 0x40000000), _insn(_RET, 0, 0, _ERRNO | _ENOSYS)]
    prog += [_insn(_JEQ, 0, 1, clone3), _insn(_RET, 0, 0, _ERRNO | _ENOSYS)]
    for nr in forks:
        prog += [_insn(_JEQ, 0, 1, nr), _insn(_RET, 0, 0, _ERRNO | _EAGAIN)]
    prog += [
        _insn(_JEQ, 0, 3, clone),
        _insn(_LD_ABS, 0, 0, 16),  # low 32 bits of args[0]: the clone flags
        _insn(_JSET, 1, 0, _CLONE_THREAD),
        _insn(_RET, 0, 0, _ERRNO | _EAGAIN),
        _insn(_RET, 0, 0, _ALLOW),
    ]
    return b"".join(prog)


# ----------------------------------------------------------------------------- the layout


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _python_paths(python: str) -> List[str]:
    """The interpreter's prefixes and ``sys.path``, as it reports them."""
    code = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix] + sys.path))"
    try:
        out = subprocess.run([python, "-s", "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise GradingError(f"{python} does not run: {e}") from None
    if out.returncode != 0:
        raise GradingError(f"{python} does not run: {out.stderr.strip()[-300:]}")
    import json

    return [p for p in json.loads(out.stdout) if p]


def runner_env(job_dir: str) -> Dict[str, str]:
    """The whole environment of the runner (nothing of the grader's is passed on)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": PACKAGE_ROOT,  # the grader's own attncourse, whichever Python runs it
        "PYTHONSAFEPATH": "1",  # the job folder is not put on sys.path
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONIOENCODING": "utf-8",
        "HOME": job_dir,
        "TMPDIR": os.path.join(job_dir, "tmp"),
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": os.path.join(job_dir, "tmp"),
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
    }


@dataclass(frozen=True)
class Sandbox:
    """How runs are started: ``mode`` is ``"bwrap"`` or ``"none"``."""

    mode: str
    python: str = sys.executable
    ro_binds: Tuple[str, ...] = ()
    symlinks: Tuple[Tuple[str, str], ...] = ()
    masks: Tuple[str, ...] = ()  # protected folders inside a read-only mount, hidden by an empty tmpfs
    seccomp: Optional[bytes] = None
    tmp_bytes: Optional[int] = None  # the size of the sandbox's /tmp (bwrap >= 0.7 can set it)
    user: Optional[int] = None  # mode "none" only: the uid the runner runs as (a root grader's nobody)

    def describe(self) -> str:
        if self.mode == "none" and self.user is not None:
            return "no bubblewrap: notebooks run as user nobody, with resource limits only"
        if self.mode == "none":
            return "none: notebooks run with your permissions (trusted notebooks only)"
        processes = "no new processes" if self.seccomp else "processes NOT limited (unknown machine)"
        return f"bubblewrap: read-only system, no network, own PID namespace, {processes}"

    def argv(self, job_dir: str, seccomp_fd: Optional[int] = None) -> List[str]:
        """The command that runs the runner on ``job_dir`` (its only writable folder)."""
        runner = [self.python, "-s", "-B", "-m", RUNNER, job_dir]
        if self.mode == "none":
            return runner
        size = ["--size", str(self.tmp_bytes)] if self.tmp_bytes else []
        cmd = [
            "bwrap",
            *size,
            "--tmpfs",
            "/tmp",
        ]  # first: a later --tmpfs /tmp would hide the mounts below it
        for path in self.ro_binds:
            cmd += ["--ro-bind", path, path]
        for target, link in self.symlinks:
            cmd += ["--symlink", target, link]
        for path in self.masks:
            cmd += [*(["--size", "4096"] if self.tmp_bytes else []), "--tmpfs", path]
        cmd += ["--bind", job_dir, job_dir]
        cmd += ["--proc", "/proc", "--dev", "/dev"]
        cmd += ["--unshare-all", "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
        cmd += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv", "--chdir", job_dir]
        for key, value in runner_env(job_dir).items():
            cmd += ["--setenv", key, value]
        if seccomp_fd is not None:
            cmd += ["--seccomp", str(seccomp_fd)]
        return cmd + ["--"] + runner


def _layout(python: str, protected: Sequence[str]) -> Sandbox:
    wanted = []
    for p in _python_paths(python) + [os.path.dirname(python), os.path.dirname(os.path.realpath(python))]:
        p = os.path.realpath(p)
        if os.path.exists(p) and p != "/":
            wanted.append(p)
    wanted.append(os.path.join(PACKAGE_ROOT, "attncourse"))  # the package alone, not the project around it
    symlinks, system = [], []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            symlinks.append((os.readlink(d), d))
        elif os.path.isdir(d):
            system.append(d)
    binds: List[str] = []
    for p in sorted(set(wanted) | set(system), key=len):
        if not any(_inside(p, b) for b in binds):
            binds.append(p)
    for b in binds:
        for q in protected:
            if _inside(b, q):
                raise GradingError(
                    f"{b} (needed to run Python) is inside {q}, a folder notebooks must not see; "
                    "move the submissions, bundle or output folder elsewhere"
                )
    masks = tuple(sorted({q for q in protected for b in binds if _inside(q, b) and os.path.isdir(q)}))
    ro = tuple(binds) + tuple(e for e in ETC_FILES if os.path.exists(e))
    return Sandbox("bwrap", python, ro, tuple(symlinks), masks, seccomp_program(), _tmp_size())


def _tmp_size() -> Optional[int]:
    """``TMP_BYTES`` if this bwrap can size a tmpfs (``--size``, bubblewrap 0.7 and later)."""
    try:
        out = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return TMP_BYTES if "--size" in out.stdout + out.stderr else None


def find_sandbox(mode: str = "auto", python: str = sys.executable, protected: Sequence[str] = ()) -> Sandbox:
    """The sandbox to grade in: bubblewrap (``auto``, ``bwrap``) or none (``none``).

    ``protected`` are folders the notebooks must not see (submissions, bundle, output).  Raises
    ``GradingError`` saying why and how to fix it when bubblewrap is wanted but cannot run.
    """
    if mode not in MODES + ("nobody",):
        raise GradingError(f"unknown sandbox {mode!r}: use {', '.join(MODES)}")
    if mode == "none":
        return Sandbox("none", python)
    if mode == "nobody":  # Gradescope's container without bubblewrap: no sandbox, but not root
        return Sandbox("none", python, user=NOBODY if os.geteuid() == 0 else None)
    if shutil.which("bwrap") is None:
        raise GradingError(f"bubblewrap (bwrap) is not installed, so notebooks cannot be sandboxed: {FIX}")
    box = _layout(python, [os.path.realpath(p) for p in protected])
    problem = probe(box)
    if problem:
        raise GradingError(f"bubblewrap cannot start a sandbox here ({problem}): {FIX}")
    return box


def probe(box: Sandbox) -> str:
    """Start the sandbox once, import the runner in it and write a file; "" if that worked."""
    with tempfile.TemporaryDirectory(prefix="attncourse-probe-") as scratch:
        job = os.path.join(scratch, "job")
        os.makedirs(job)
        argv = box.argv(job)
        code = f"import numpy, {RUNNER}; open('probe.txt', 'w').write('probe-ok')"
        argv = argv[: argv.index("-m")] + ["-c", code]
        try:
            out = subprocess.run(argv, capture_output=True, timeout=120, stdin=subprocess.DEVNULL, cwd=job)
        except (OSError, subprocess.SubprocessError) as e:
            return str(e)
        try:
            ok = Path(job, "probe.txt").read_text() == "probe-ok"
        except OSError:
            ok = False
        if out.returncode == 0 and ok:
            return ""
        text = out.stderr.decode("utf-8", "replace").strip().splitlines()
        return (text[-1] if text else f"exit code {out.returncode}")[:300]
