"""Real MCP servers for the toolset tests: mcp-server-git over a repository made here, prometheus-mcp-server over the
shared real Prometheus holding the demo incident's metrics (stdio and streamable HTTP), and our misbehaving test
servers."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.prometheus import PrometheusServer
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


@pytest.fixture(scope="session")
def prometheus_url(prometheus_server: PrometheusServer) -> str:
    """The shared real Prometheus (tests/fixtures/prometheus.py) over the demo incident's metrics."""
    return prometheus_server.url


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
