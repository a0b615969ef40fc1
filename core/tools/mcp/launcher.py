"""Runs a stdio MCP server so that it ends with the process that started it, then becomes that server (exec).

`python -m core.tools.mcp.launcher PROGRAM ARGS...`: on Linux it asks the kernel to SIGKILL it when its parent dies
(prctl PR_SET_PDEATHSIG survives exec), so a server that ignores EOF on stdin cannot outlive a killed diagbot.
Elsewhere it only execs (the SDK still closes stdin and kills the server's process group on a normal exit).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def main(argv: list[str]) -> None:
    """Exec argv[0] with its arguments (searched on PATH), dying with the parent."""
    if not argv:
        sys.stderr.write("usage: python -m core.tools.mcp.launcher PROGRAM [ARGS...]\n")
        raise SystemExit(2)
    _die_with_parent()
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write(f"cannot start {argv[0]}: {exc.strerror or exc}\n")
        raise SystemExit(127) from None


if __name__ == "__main__":
    main(sys.argv[1:])
