"""The MCP toolset: DIAG_TOOLSETS_FILE's servers as tools (started where the services are built, closed with them)
and their `diagbot check` lines (the file, then one line per server: its offered tools and every problem)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from core.health.result import Check, CheckResult, Level, static
from core.tools.contract import PlannedCall, Tool, ToolEnv, ToolSpec
from core.tools.mcp.config import START_TIMEOUT_S, McpServerConfig, ToolsetsFile, ToolsetsFileError, load_toolsets
from core.tools.mcp.spec import McpSpec

if TYPE_CHECKING:
    from core.settings import Settings
    from core.tools.mcp.manager import McpManager, ServerState

# The SDK (about half a second to import) is imported only when a toolsets file is configured: manager and tool
# are imported inside build() and the checks.

log = logging.getLogger(__name__)

FILE_CHECK = "toolsets.file"
_CHECK_SLACK_S = 5.0


def server_check_name(name: str) -> str:
    return f"tool.mcp.{name}"


class McpToolset:
    """Every server of DIAG_TOOLSETS_FILE; none when the variable is unset."""

    name = "mcp"
    specs: Sequence[ToolSpec] = (McpSpec(),)

    async def build(self, settings: Settings, env: ToolEnv) -> Sequence[Tool[Any]]:
        """Start and list every server; ToolsetsFileError (a ValueError listing every problem) for an invalid file.
        A server that does not start is a warning and offers nothing."""
        path = settings.diag_toolsets_file
        if path is None:
            return ()
        toolsets = load_toolsets(path)
        await _import_sdk()
        from core.tools.mcp.manager import McpManager
        from core.tools.mcp.tool import McpTool

        manager = McpManager(toolsets, strict=settings.diag_model_strict)
        env.stack.push_async_callback(manager.close)
        await manager.start()
        for state in manager.servers:
            for problem in state.problems:
                log.warning("MCP server %s: %s", state.config.name, problem)
        configs = {state.config.name: state.config for state in manager.servers}
        tools = [McpTool(tool, manager, max_output_bytes=configs[tool.server].max_output_bytes,
                         timeout_s=configs[tool.server].timeout_s) for tool in manager.tools.values()]
        log.info("MCP toolsets: %d tools offered from %d servers", len(tools), len(configs))
        return tools

    def checks(self, settings: Settings, *, readiness: bool) -> Sequence[Check]:
        """The file (FATAL when invalid) and, for `diagbot check`, each server started, listed and closed again."""
        path = settings.diag_toolsets_file
        if path is None:
            return ()
        try:
            toolsets = load_toolsets(path)
        except ToolsetsFileError as exc:
            result = CheckResult(name=FILE_CHECK, level=Level.FATAL, detail=f"{path}: " + "; ".join(exc.problems),
                                 fix="correct DIAG_TOOLSETS_FILE (docs/toolsets.md) or unset it")
            return (Check(FILE_CHECK, static(result)),)
        names = ", ".join(s.name for s in toolsets.mcp) or "none"
        ok = CheckResult(name=FILE_CHECK, level=Level.OK, detail=f"{path}: {len(toolsets.mcp)} MCP servers ({names})")
        if readiness or not toolsets.mcp:
            return (Check(FILE_CHECK, static(ok)),)
        probe = _Probe(toolsets, strict=settings.diag_model_strict)
        bound = START_TIMEOUT_S + max(s.timeout_s for s in toolsets.mcp) + _CHECK_SLACK_S
        return (Check(FILE_CHECK, static(ok)),
                *(Check(server_check_name(s.name), probe.runner(s), failing=Level.WARN, timeout_s=bound,
                        fix="see docs/toolsets.md") for s in toolsets.mcp))

    def first_look(self, service: str | None, start: datetime, end: datetime) -> Sequence[PlannedCall]:
        return ()


class _Probe:
    """One start of every server shared by the per-server checks; closed when the last of them is done."""

    def __init__(self, toolsets: ToolsetsFile, *, strict: bool) -> None:
        self._toolsets, self._strict = toolsets, strict
        self._manager: McpManager | None = None
        self._started: asyncio.Future[None] | None = None
        self._pending = len(toolsets.mcp)

    def runner(self, config: McpServerConfig) -> Any:
        async def run() -> CheckResult:
            try:
                manager = await self._start()
                state = next(s for s in manager.servers if s.config.name == config.name)
                return server_line(state)
            finally:
                self._pending -= 1
                if self._pending == 0 and self._manager is not None:
                    with contextlib.suppress(Exception):
                        await self._manager.close()

        return run

    async def _start(self) -> McpManager:
        if self._started is None:  # set before any await: the per-server checks start together
            self._started = asyncio.ensure_future(self._boot())
        await asyncio.shield(self._started)
        assert self._manager is not None
        return self._manager

    async def _boot(self) -> None:
        await _import_sdk()
        from core.tools.mcp.manager import McpManager

        self._manager = McpManager(self._toolsets, strict=self._strict)
        await self._manager.start()


async def _import_sdk() -> None:
    """Import the SDK in a worker thread: building its pydantic models takes about a second of CPU, which on the
    event loop would stall every other check (or request) running beside it."""
    await asyncio.to_thread(importlib.import_module, "core.tools.mcp.tool")


def server_line(state: ServerState) -> CheckResult:
    """One server: transport, program or URL, offered tools, and every problem (WARN when there is any)."""
    config = state.config
    offered = [t.function for t in state.offered]
    where = f"{config.transport} {config.where}"
    if not state.available:
        return CheckResult(name=server_check_name(config.name), level=Level.WARN,
                           detail=f"{where}: not available, its tools are not offered: " + "; ".join(state.problems),
                           fix="start the server or correct its command/url in DIAG_TOOLSETS_FILE")
    unhinted = [t.function for t in state.offered if not t.read_only_declared]
    detail = f"{where}: offers {', '.join(offered) or 'no tools'} ({state.listed} listed)"
    if unhinted:
        detail += f"; declares no readOnlyHint: {', '.join(unhinted)} (offered because allow-listed)"
    if state.problems:
        return CheckResult(name=server_check_name(config.name), level=Level.WARN,
                           detail=detail + f"; {len(state.problems)} problem(s): " + "; ".join(state.problems),
                           fix="correct the allow-list in DIAG_TOOLSETS_FILE or the server's flags (docs/toolsets.md)")
    return CheckResult(name=server_check_name(config.name), level=Level.OK, detail=detail)
