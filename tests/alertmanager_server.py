"""A real Alertmanager (Debian's prometheus-alertmanager, tests/binaries.py) of a test's own, on free ports.

That build reads its default templates from /usr/share/prometheus/alertmanager/ (a path compiled in). When the
machine has no such folder, the process runs in a mount namespace of its own whose /usr/share is an overlay with
the unpacked package's share folder on top (root: `unshare --mount`; otherwise a user namespace as well): nothing
outside the process sees a change.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.binaries import debian_binary, debian_share
from tests.fakes.cluster import free_port

SYSTEM_TEMPLATES = Path("/usr/share/prometheus/alertmanager")
START_TIMEOUT_S = 20.0


def _command(binary: Path, config: Path, workdir: Path, port: int) -> list[str]:
    run = [str(binary), f"--config.file={config}", f"--storage.path={workdir / 'data'}",
           f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=", "--log.level=debug"]
    if (SYSTEM_TEMPLATES / "default.tmpl").is_file():
        return run
    share = debian_share("prometheus", "alertmanager")
    if not (share / "default.tmpl").is_file():
        pytest.fail(f"alertmanager's templates not found under {share}: run .ci/fetch-debs")
    upper = workdir / "share"
    (upper / "prometheus").mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        (upper / "prometheus" / "alertmanager").symlink_to(share)
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("alertmanager needs /usr/share/prometheus/alertmanager or util-linux's unshare")
    namespaces = ["--mount"] if os.geteuid() == 0 else ["--user", "--map-root-user", "--mount"]
    script = 'mount -t overlay overlay -o "lowerdir=$0:/usr/share" /usr/share && exec "$@"'
    return [unshare, *namespaces, "--propagation", "private", "sh", "-c", script, str(upper), *run]


class Alertmanager:
    """One alertmanager process; `url` is its HTTP API."""

    def __init__(self, workdir: Path, config: dict[str, Any]) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.config_path = workdir / "alertmanager.yml"
        self.config_path.write_text(json.dumps(config, indent=1))  # JSON is YAML: no YAML writer needed
        self.log_path = workdir / "alertmanager.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self) -> None:
        command = _command(debian_binary("prometheus-alertmanager"), self.config_path, self.workdir, self.port)
        out = self.log_path.open("ab")
        self._proc = subprocess.Popen(command, stdout=out, stderr=out)
        out.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"alertmanager exited {self._proc.returncode}:\n{self.log()[-3000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as resp:
                if resp.status == 200:
                    return
            time.sleep(0.1)  # a process starting: nothing to wait on but its port
        raise RuntimeError(f"alertmanager did not become ready:\n{self.log()[-3000:]}")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()


@contextlib.contextmanager
def alertmanager(workdir: Path, config: dict[str, Any]) -> Iterator[Alertmanager]:
    """A started Alertmanager with `config` (its alertmanager.yml as a dict), stopped at the end."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = Alertmanager(workdir, config)
    server.start()
    try:
        yield server
    finally:
        server.stop()
