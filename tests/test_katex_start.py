"""book/_ext/katex_start.py: the KaTeX server's start-up survives a socket that is bound before it listens."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "katex_start", Path(__file__).resolve().parents[1] / "book" / "_ext" / "katex_start.py"
)
katex_start = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(katex_start)

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="unix sockets only")

# A server like Node's: bind (the socket file appears), wait, then listen and accept one client.
SLOW_SERVER = """
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
time.sleep(float(sys.argv[2]))
s.listen(1)
conn, _ = s.accept()
conn.sendall(b"ok")
time.sleep(5)
"""


class FakeServer:
    delay = 0.5
    exit_at_once = False

    @classmethod
    def build_command(cls, socket):
        if cls.exit_at_once:
            return [sys.executable, "-c", "raise SystemExit(3)"]
        return [sys.executable, "-c", SLOW_SERVER, str(socket), str(cls.delay)]

    @staticmethod
    def timeout_error(timeout):
        return TimeoutError(f"no server after {timeout} s")


def test_connects_once_the_server_listens_after_binding(tmp_path):
    process, sock = katex_start.start_server_process(FakeServer, tmp_path, timeout=20)
    try:
        assert sock.recv(2) == b"ok"  # connected to the server, although the first tries were refused
    finally:
        sock.close()
        process.kill()


def test_a_server_that_never_listens_times_out(tmp_path):
    class NeverListens(FakeServer):
        delay = 30

    with pytest.raises(TimeoutError, match="no server after 1"):
        katex_start.start_server_process(NeverListens, tmp_path, timeout=1)


def test_a_server_that_exits_is_named(tmp_path):
    class Exits(FakeServer):
        exit_at_once = True

    with pytest.raises(RuntimeError, match="exited with status 3"):
        katex_start.start_server_process(Exits, tmp_path, timeout=20)
