"""Where the real MCP servers of the toolset tests are (.ci/fetch-mcp-servers installs each in its own venv), and
the test servers of our own (tests/mcp_toolsets/servers) that misbehave on purpose."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

MCP_VENVS = Path(os.environ.get("DIAG_TEST_MCP", "/opt/diagbot-mcp"))
SERVERS_DIR = Path(__file__).resolve().parent / "mcp_toolsets" / "servers"


def mcp_server_binary(venv: str, script: str) -> Path:
    """The console script of a third-party MCP server; the test fails naming the fix when it is missing."""
    path = MCP_VENVS / venv / "bin" / script
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} not found: run .ci/fetch-mcp-servers (as .ci/run does)")
    return path


def own_server(name: str) -> list[str]:
    """argv of one of our own test servers, run by this interpreter (it has the mcp SDK)."""
    return [sys.executable, str(SERVERS_DIR / f"{name}.py")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float = 20.0) -> None:
    """Until something listens on 127.0.0.1:port; fails if the process exits first or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited with {process.returncode} before listening on {port}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"nothing listened on 127.0.0.1:{port} within {timeout_s} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """End a server the test started (SIGTERM, then SIGKILL)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
