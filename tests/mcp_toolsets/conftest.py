"""Real MCP servers for the toolset tests: mcp-server-git over a repository made here, prometheus-mcp-server over a
real Prometheus holding known samples (stdio and streamable HTTP), and our misbehaving test servers."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.binaries import debian_binary
from tests.mcp_servers import free_port, own_server, stop, wait_for_port

COMMITS = (
    ("2026-11-29T22:40:00+00:00", "order-service: bump HikariCP to 5.1.0"),
    ("2026-11-29T22:58:00+00:00", "deploy order-service 2.4.1: lower maximumPoolSize from 40 to 10"),
)


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.fixture(scope="session")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with two known commits (the second is the incident's deploy)."""
    repo = tmp_path_factory.mktemp("deploys")
    _git(repo, "init", "-q", "-b", "main")
    for when, message in COMMITS:
        (repo / "pool.properties").write_text(f"# {message}\n", encoding="utf-8")
        _git(repo, "add", "pool.properties")
        env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "PATH": "/usr/bin:/bin",
               "GIT_AUTHOR_NAME": "deploy-bot", "GIT_AUTHOR_EMAIL": "deploy@example.test",
               "GIT_COMMITTER_NAME": "deploy-bot", "GIT_COMMITTER_EMAIL": "deploy@example.test"}
        _git(repo, "commit", "-q", "-m", message, env=env)
    return repo


PROM_NOW = datetime.now(UTC).replace(microsecond=0)
"""Samples are written relative to the session's start (Prometheus drops blocks older than its retention)."""


def _openmetrics() -> str:
    lines = ["# TYPE http_requests_total counter", "# HELP http_requests_total Requests served."]
    start = PROM_NOW - timedelta(minutes=30)
    for step in range(31):
        ts = int((start + timedelta(minutes=step)).timestamp())
        lines.append(f'http_requests_total{{service="checkout-api",code="502"}} {17 * step} {ts}')
        lines.append(f'http_requests_total{{service="checkout-api",code="200"}} {1000 * step} {ts}')
    lines.append("# TYPE db_pool_active_connections gauge")
    for step in range(31):
        ts = int((start + timedelta(minutes=step)).timestamp())
        lines.append(f'db_pool_active_connections{{service="order-service"}} {10 if step > 20 else 4} {ts}')
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus (Debian's package) whose TSDB holds known samples of the last 30 minutes."""
    base = tmp_path_factory.mktemp("prometheus")
    source = base / "samples.om"
    source.write_text(_openmetrics(), encoding="utf-8")
    data = base / "data"
    subprocess.run([str(debian_binary("promtool")), "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
                   check=True, capture_output=True)
    config = base / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\n", encoding="utf-8")
    port = free_port()
    process = subprocess.Popen(
        [str(debian_binary("prometheus")), f"--config.file={config}", f"--storage.tsdb.path={data}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=30d"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


@pytest.fixture(scope="session")
def oddities_http() -> Iterator[str]:
    """Our misbehaving test server over streamable HTTP (the official SDK's MCPServer), as a subprocess."""
    port = free_port()
    process = subprocess.Popen([*own_server("oddities"), "http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)
