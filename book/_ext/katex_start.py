"""Start sphinxcontrib-katex's Node server reliably on a busy machine.

sphinxcontrib-katex (0.9) waits until the server's unix socket file exists and then connects once.
Node creates that file when it binds, a moment before it listens, so on a loaded machine the one
connect can land in between and fail with ``ConnectionRefusedError``, which aborts the build; and
its 5 s start-up limit is short when the machine is busy executing notebooks.  This extension
replaces the start-up with one that retries the connection until the server listens, gives it 60 s,
and says so if the server exits.  Nothing else of sphinxcontrib-katex changes.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from subprocess import PIPE, Popen
from typing import Any, Dict, Tuple

STARTUP_TIMEOUT = 60.0  # seconds


def start_server_process(cls: Any, rundir: Path, timeout: float) -> Tuple[Popen, socket.socket]:
    """Start ``cls.build_command(socket=...)`` in ``rundir`` and connect to its unix socket,
    retrying while the socket exists but does not listen yet."""
    socket_path = Path(rundir) / "katex.sock"
    process = Popen(cls.build_command(socket=socket_path), stdin=PIPE, stdout=PIPE, cwd=rundir)
    deadline = time.monotonic() + timeout
    while True:
        if socket_path.is_socket():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(socket_path))
                return process, sock
            except ConnectionRefusedError:  # bound, not listening yet
                sock.close()
        if process.poll() is not None:
            raise RuntimeError(f"the KaTeX server exited with status {process.returncode} before it listened")
        if time.monotonic() > deadline:
            process.kill()
            raise cls.timeout_error(timeout)
        time.sleep(0.005)


def setup(app: Any) -> Dict[str, Any]:
    try:
        import sphinxcontrib.katex as katex
    except ImportError:  # the extension is not installed: nothing to make reliable
        return {"parallel_read_safe": True, "parallel_write_safe": True}
    katex.STARTUP_TIMEOUT = max(float(getattr(katex, "STARTUP_TIMEOUT", 0.0)), STARTUP_TIMEOUT)
    katex.KaTeXServer.start_server_process = classmethod(start_server_process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
