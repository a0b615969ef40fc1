"""The registry of toolsets: the one place a tool is listed.

Register a toolset by adding it to `TOOLSETS` (one line). Everything that reads a tool call asks `current_registry()`:
`spec_for(name)` (UnknownTool for a name no toolset answers), `names()`, `build(settings, env)`, `checks(...)`.
Tests may add a toolset of their own for a scope with `using_registry(REGISTRY.with_toolsets(extra))`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any

from core.settings import Settings
from core.tools.contract import PlannedCall, ToolEnv, Toolset, ToolSpec, UnknownTool
from core.tools.contract import Tool as RunnableTool
from core.tools.knowledge.toolset import KnowledgeToolset
from core.tools.logs.toolset import LogsToolset
from core.tools.mcp.toolset import McpToolset
from core.tools.metrics.toolset import MetricsToolset
from core.tools.sql.toolset import SqlToolset

if TYPE_CHECKING:
    from core.health.result import Check


class ToolRegistry:
    """An immutable list of toolsets and the lookups every consumer makes by tool name."""

    def __init__(self, toolsets: Sequence[Toolset]) -> None:
        self.toolsets: tuple[Toolset, ...] = tuple(toolsets)
        self._specs: tuple[ToolSpec, ...] = tuple(spec for toolset in self.toolsets for spec in toolset.specs)
        names = [spec.name for spec in self._specs]
        if len(set(names)) != len(names):
            raise ValueError(f"two toolsets describe the same tool: {sorted(n for n in names if names.count(n) > 1)}")

    def with_toolsets(self, *extra: Toolset) -> ToolRegistry:
        """This registry plus `extra` (the extra-toolset test; a new source in production is a line in TOOLSETS)."""
        return ToolRegistry((*self.toolsets, *extra))

    def find(self, name: str) -> ToolSpec | None:
        """The spec describing tool `name`, or None."""
        return next((spec for spec in self._specs if spec.matches(name)), None)

    def spec_for(self, name: str) -> ToolSpec:
        """The spec describing tool `name`; raises UnknownTool (never a default)."""
        spec = self.find(name)
        if spec is None:
            raise UnknownTool(name, self.names())
        return spec

    def specs(self) -> tuple[ToolSpec, ...]:
        """Every registered spec, in registry order."""
        return self._specs

    def names(self) -> tuple[str, ...]:
        """The registered specs' names (a family's name is its prefix, e.g. 'mcp')."""
        return tuple(spec.name for spec in self._specs)

    async def build(self, settings: Settings, env: ToolEnv) -> dict[str, RunnableTool[Any]]:
        """Every configured tool by name, in registry order (a toolset may offer none)."""
        tools: dict[str, RunnableTool[Any]] = {}
        for toolset in self.toolsets:
            for tool in await toolset.build(settings, env):
                if tool.name in tools:
                    raise ValueError(f"two toolsets offer a tool named {tool.name!r}")
                self.spec_for(tool.name)  # every offered tool has a spec, so its records can be read
                tools[tool.name] = tool
        return tools

    def checks(self, settings: Settings, *, readiness: bool) -> list[Check]:
        """Every toolset's checks, in registry order."""
        return [check for toolset in self.toolsets for check in toolset.checks(settings, readiness=readiness)]

    def first_look(self, service: str | None, start: datetime, end: datetime) -> list[PlannedCall]:
        """Every toolset's first-look calls for a service and window, in registry order."""
        return [call for toolset in self.toolsets for call in toolset.first_look(service, start, end)]


TOOLSETS: tuple[Toolset, ...] = (
    KnowledgeToolset(),
    LogsToolset(),
    SqlToolset(),
    MetricsToolset(),
    McpToolset(),
)
"""The registered toolsets: one line each."""

REGISTRY = ToolRegistry(TOOLSETS)
_CURRENT: ContextVar[ToolRegistry] = ContextVar("tool_registry", default=REGISTRY)


def current_registry() -> ToolRegistry:
    """The registry of the running context: REGISTRY unless a test scoped another with using_registry."""
    return _CURRENT.get()


def spec_for(name: str) -> ToolSpec:
    """current_registry().spec_for(name): raises UnknownTool for a name no toolset describes."""
    return _CURRENT.get().spec_for(name)


@contextmanager
def using_registry(registry: ToolRegistry) -> Iterator[ToolRegistry]:
    """Scope another registry (tasks started inside inherit it)."""
    token = _CURRENT.set(registry)
    try:
        yield registry
    finally:
        _CURRENT.reset(token)
