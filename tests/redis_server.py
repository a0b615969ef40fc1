"""A redis-server of a test's own on a free loopback port, to kill and restart (never the shared one).

Append-only file fsynced on every write, so a kill -9 loses nothing the server acknowledged and a restart on the
same directory comes back with the same streams and keys — an outage, not a flush.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT_S = 10.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One redis-server process on `port`, persisting to `workdir`."""

    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed")
        self._binary = binary
        self._workdir = workdir
        self.port = _free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (or restart) the server on the same port and directory; returns once it accepts connections."""
        log = (self._workdir / "redis.log").open("ab")
        self._proc = subprocess.Popen(
            [self._binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self._workdir),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no"],
            stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
            time.sleep(0.05)  # a server starting: nothing to wait on but its port
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        """kill -9: the outage begins."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait(10)


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[RedisServer]:
    """A started server, killed at the end."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = RedisServer(workdir)
    server.start()
    try:
        yield server
    finally:
        server.kill()
