"""The MCP connection manager against real servers: mcp-server-git and prometheus-mcp-server (PyPI, stdio and
streamable HTTP) and our misbehaving test servers. Every failure is a clear error or problem line, never a hang."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.errors import ToolFailure
from core.tools.contract import InvalidArguments
from core.tools.mcp.config import McpServerConfig, ToolsetsFile
from core.tools.mcp.content import json_size
from core.tools.mcp.manager import McpManager
from core.tools.mcp.tool import McpTool
from tests.mcp_servers import free_port, mcp_server_binary, own_server, stop, wait_for_port

INCIDENT_TIME = "2026-11-29T23:20:00Z"
"""Inside the demo incident's metrics (2026-11-29 22:00-23:30Z): order-service's pool is exhausted."""


def _tool(manager: McpManager, function: str) -> McpTool:
    offered = manager.tools[function]
    config = next(s.config for s in manager.servers if s.config.name == offered.server)
    return McpTool(offered, manager, max_output_bytes=config.max_output_bytes, timeout_s=config.timeout_s)


async def _run(manager: McpManager, function: str, **arguments: object) -> dict[str, Any]:
    tool = _tool(manager, function)
    raw = await tool.run(tool.validate(arguments))
    return raw.model_dump(mode="json")


@pytest.fixture
async def git_manager(git_repo: Path) -> AsyncIterator[McpManager]:
    config = McpServerConfig(
        name="git", command=(str(mcp_server_binary("git", "mcp-server-git")), "--repository", str(git_repo)),
        tools=("git_log", "git_show", "git_reset", "git_commit", "git_blame"), timeout_s=20)
    manager = McpManager(ToolsetsFile(mcp=(config,)))
    await manager.start()
    yield manager
    await manager.close()


async def test_git_server_offers_only_read_only_allow_listed_tools(git_manager: McpManager, git_repo: Path) -> None:
    assert list(git_manager.tools) == ["mcp_git_git_log", "mcp_git_git_show"]
    problems = git_manager.servers[0].problems
    assert any("'git_reset' declares destructiveHint: true" in p for p in problems), problems
    assert any("'git_commit' declares readOnlyHint: false" in p for p in problems), problems
    assert any("'git_blame' is not offered by the server" in p and "git_log" in p for p in problems), problems
    raw = await _run(git_manager, "mcp_git_git_log", repo_path=str(git_repo), max_count=5)
    text = json.dumps(raw["items"])
    assert "lower maximumPoolSize from 40 to 10" in text
    assert "bump HikariCP to 5.1.0" in text
    assert raw["effective_arguments"] == {"repo_path": str(git_repo), "max_count": 5}


async def test_git_arguments_are_checked_against_the_servers_schema(git_manager: McpManager, git_repo: Path) -> None:
    tool = _tool(git_manager, "mcp_git_git_log")
    with pytest.raises(InvalidArguments, match="max_count: must satisfy type"):
        tool.validate({"repo_path": str(git_repo), "max_count": "many"})
    with pytest.raises(InvalidArguments, match="a required property is missing"):
        tool.validate({})
    # strict-mode nulls mean "absent": the server gets its own default
    args = tool.validate({"repo_path": str(git_repo), "max_count": None, "start_timestamp": None})
    assert tool.effective(args) == {"repo_path": str(git_repo)}
    assert tool.strict
    assert tool.strict_parameters() is not None
    assert "repo_path" in tool.parameters()["properties"]


async def test_git_tool_error_is_a_clear_failure(git_manager: McpManager, git_repo: Path) -> None:
    with pytest.raises(ToolFailure) as failure:
        await _run(git_manager, "mcp_git_git_show", repo_path=str(git_repo), revision="no-such-ref")
    assert failure.value.code == "MCP_TOOL_ERROR"
    assert "no-such-ref" in failure.value.message


@pytest.fixture
async def prom_stdio(prometheus_url: str) -> AsyncIterator[McpManager]:
    config = McpServerConfig(
        name="prom", command=(str(mcp_server_binary("prometheus", "prometheus-mcp-server")),),
        env={"PROMETHEUS_URL": prometheus_url, "PROMETHEUS_DISABLE_LINKS": "true"},
        tools=("execute_query", "execute_range_query"), timeout_s=20)
    manager = McpManager(ToolsetsFile(mcp=(config,)))
    await manager.start()
    yield manager
    await manager.close()


async def test_prometheus_server_over_stdio_answers_with_structured_json(prom_stdio: McpManager) -> None:
    assert prom_stdio.servers[0].problems == []
    assert set(prom_stdio.tools) == {"mcp_prom_execute_query", "mcp_prom_execute_range_query"}
    raw = await _run(prom_stdio, "mcp_prom_execute_query", query='hikaricp_connections_pending{service="order-service"}',
                     time=INCIDENT_TIME)
    items = raw["items"]
    assert isinstance(items, list)
    assert items[0]["type"] == "structured"  # kept as JSON, not a text dump
    result = items[0]["json"]["result"]
    assert result[0]["metric"]["service"] == "order-service"
    assert result[0]["value"][1] == "52"
    assert len(items) == 1  # the JSON text duplicate of the structured content is not kept twice


@pytest.fixture(scope="module")
def prom_http(prometheus_url: str) -> Iterator[str]:
    """prometheus-mcp-server in its streamable-HTTP mode (a maintained server that speaks it)."""
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "PROMETHEUS_URL": prometheus_url, "PROMETHEUS_MCP_SERVER_TRANSPORT": "http",
           "PROMETHEUS_MCP_BIND_HOST": "127.0.0.1", "PROMETHEUS_MCP_BIND_PORT": str(port),
           "PROMETHEUS_DISABLE_LINKS": "true"}
    process = subprocess.Popen([str(mcp_server_binary("prometheus", "prometheus-mcp-server"))], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


async def test_prometheus_server_over_streamable_http(prom_http: str) -> None:
    config = McpServerConfig(name="promhttp", url=prom_http, headers={"X-Scope-OrgID": "tenant-1"},
                             tools=("execute_query",), timeout_s=20)
    manager = McpManager(ToolsetsFile(mcp=(config,)))
    await manager.start()
    try:
        assert manager.servers[0].problems == []
        assert list(manager.tools) == ["mcp_promhttp_execute_query"]
        raw = await _run(manager, "mcp_promhttp_execute_query", query='hikaricp_connections_max{service="order-service"}',
                         time=INCIDENT_TIME)
        assert raw["items"][0]["json"]["result"][0]["value"][1] == "20"
    finally:
        await manager.close()


ODD_TOOLS = ("hang", "crash", "huge", "fails", "inject", "error_rate", "nothing", "wipe", "labels", "unannotated")


@pytest.fixture
async def odd_stdio() -> AsyncIterator[McpManager]:
    config = McpServerConfig(name="odd", command=tuple(own_server("oddities")), tools=ODD_TOOLS, timeout_s=3,
                             max_output_bytes=64 * 1024)
    manager = McpManager(ToolsetsFile(mcp=(config,)))
    await manager.start()
    yield manager
    await manager.close()


async def test_hanging_call_times_out_and_the_server_is_restarted(odd_stdio: McpManager) -> None:
    started = time.monotonic()
    with pytest.raises(ToolFailure) as failure:
        await _run(odd_stdio, "mcp_odd_hang")
    assert failure.value.code == "TIMEOUT"
    assert time.monotonic() - started < 6
    raw = await _run(odd_stdio, "mcp_odd_error_rate", service="checkout-api")
    assert raw["items"][0]["json"]["error_ratio"] == 0.14
    assert odd_stdio.servers[0].restarts == 1


async def test_crash_mid_call_is_an_error_and_the_next_call_restarts_it(odd_stdio: McpManager) -> None:
    started = time.monotonic()
    with pytest.raises(ToolFailure) as failure:
        await _run(odd_stdio, "mcp_odd_crash")
    assert failure.value.code == "SERVER_UNAVAILABLE"
    assert time.monotonic() - started < 3
    raw = await _run(odd_stdio, "mcp_odd_error_rate", service="checkout-api")
    assert raw["total_count"] == 1


def _kill_stdio_oddities() -> None:
    """SIGKILL only the stdio test server of this process (the session's Prometheus is a child too)."""
    for child in _children(os.getpid()):
        argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if any(a.endswith(b"oddities.py") for a in argv) and b"http" not in argv:
            os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
async def test_a_server_that_died_while_idle_is_restarted_before_the_next_call(odd_stdio: McpManager) -> None:
    await _run(odd_stdio, "mcp_odd_error_rate", service="checkout-api")
    _kill_stdio_oddities()
    await asyncio.sleep(0.5)
    raw = await _run(odd_stdio, "mcp_odd_error_rate", service="checkout-api")  # not a failed call: pinged first
    assert raw["total_count"] == 1
    assert odd_stdio.servers[0].restarts == 1


async def test_ten_megabytes_are_cut_to_max_output_bytes_with_a_marker(odd_stdio: McpManager) -> None:
    raw = await _run(odd_stdio, "mcp_odd_huge", megabytes=10)
    assert raw["notes"]["bytes_truncated"] is True
    assert raw["notes"]["output_bytes"] > 10_000_000
    text = raw["items"][0]["text"]
    assert text.endswith("…[cut: over max_output_bytes]")
    assert json_size(raw["items"]) <= 64 * 1024


async def test_is_error_empty_destructive_and_open_schemas(odd_stdio: McpManager) -> None:
    state = odd_stdio.servers[0]
    assert "mcp_odd_wipe" not in odd_stdio.tools
    assert any("'wipe' declares destructiveHint: true" in p for p in state.problems)
    assert odd_stdio.tools["mcp_odd_labels"].schema.strict is False  # an open map: offered without strict
    assert odd_stdio.tools["mcp_odd_error_rate"].schema.strict is True
    assert odd_stdio.tools["mcp_odd_unannotated"].read_only_declared is False
    with pytest.raises(ToolFailure) as failure:
        await _run(odd_stdio, "mcp_odd_fails")
    assert failure.value.code == "MCP_TOOL_ERROR"
    assert "S3cr3tPassw0rd" not in failure.value.message
    assert "backend refused" in failure.value.message
    raw = await _run(odd_stdio, "mcp_odd_nothing", query="x")
    assert raw["items"] == []
    assert raw["total_count"] == 0


async def test_invalid_json_rpc_is_an_error_at_once_not_a_hang(caplog: pytest.LogCaptureFixture) -> None:
    config = McpServerConfig(name="garbage", command=(*own_server("garbage"), "garbage"), tools=("status",), timeout_s=10)
    manager = McpManager(ToolsetsFile(mcp=(config,)))
    await manager.start()
    try:
        assert list(manager.tools) == ["mcp_garbage_status"]
        started = time.monotonic()
        with pytest.raises(ToolFailure) as failure:
            await _run(manager, "mcp_garbage_status")
        assert failure.value.code == "SERVER_UNAVAILABLE"
        assert "not valid JSON-RPC" in failure.value.message
        assert time.monotonic() - started < 5
        logged = " ".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
        assert "this is not json-rpc" not in logged  # the SDK's log of the bad line keeps no payload
    finally:
        await manager.close()


async def test_servers_that_do_not_start_or_answer_are_problems() -> None:
    configs = (
        McpServerConfig(name="missing", command=("/nonexistent/mcp-server",), tools=("x",), timeout_s=5),
        McpServerConfig(name="refused", url=f"http://127.0.0.1:{free_port()}/mcp", tools=("x",), timeout_s=5),
        McpServerConfig(name="silent", command=(*own_server("garbage"), "silent"), tools=("status",), timeout_s=5),
    )
    manager = McpManager(ToolsetsFile(mcp=configs))
    started = time.monotonic()
    await manager.start()
    assert time.monotonic() - started < 15
    missing, refused, silent = manager.servers
    assert missing.problems
    assert "did not start" in missing.problems[0]
    assert "/nonexistent/mcp-server" in missing.problems[0]
    assert refused.problems
    assert "did not start" in refused.problems[0]
    assert silent.available
    assert list(manager.tools) == ["mcp_silent_status"]
    with pytest.raises(ToolFailure) as failure:  # initialises and lists, but never answers a call
        await _run(manager, "mcp_silent_status")
    assert failure.value.code == "TIMEOUT"
    await manager.close()


async def test_one_call_at_a_time_per_server(odd_stdio: McpManager) -> None:
    started = time.monotonic()
    await asyncio.gather(_run(odd_stdio, "mcp_odd_hang", seconds=0.6), _run(odd_stdio, "mcp_odd_hang", seconds=0.6))
    assert time.monotonic() - started >= 1.2


async def test_streamable_http_test_server(oddities_http: str) -> None:
    config = McpServerConfig(name="oddhttp", url=oddities_http, tools=("error_rate", "hang"), timeout_s=2)
    manager = McpManager(ToolsetsFile(mcp=(config,)))
    await manager.start()
    try:
        raw = await _run(manager, "mcp_oddhttp_error_rate", service="order-service", window_minutes=30)
        assert raw["items"][0]["json"]["window_minutes"] == 30
        with pytest.raises(ToolFailure) as failure:
            await _run(manager, "mcp_oddhttp_hang", seconds=30)
        assert failure.value.code == "TIMEOUT"
        raw = await _run(manager, "mcp_oddhttp_error_rate", service="order-service")
        assert raw["items"][0]["json"]["window_minutes"] == 60
    finally:
        await manager.close()


PARENT = """
import asyncio, os, sys
from core.tools.mcp.config import McpServerConfig
from core.tools.mcp.sdk import Connection

async def main():
    config = McpServerConfig(name="stubborn", command=tuple(sys.argv[1:]), tools=("status",), timeout_s=10)
    await Connection.open(config)
    print("ready", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text()
        found.update(int(p) for p in text.split())
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_stdio_server_does_not_outlive_a_killed_parent(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script), *own_server("garbage"), "stubborn"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline().strip() == b"ready"
        children = _children(parent.pid)
        assert children, "the server should be a child of the process that started it"
        parent.kill()
        parent.wait(5)
        deadline = time.monotonic() + 5
        while any(_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(c) for c in children)
    finally:
        stop(parent)
        if parent.stdout is not None:
            parent.stdout.close()
