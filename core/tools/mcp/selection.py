"""Which of a server's listed tools are offered: the allow-list, intersected with what exists and is read-only and
has a schema the model API can take. Every tool left out is a problem line naming why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.tools.mcp.config import McpServerConfig, function_name
from core.tools.mcp.schema import OfferedSchema, SchemaProblem, offer

if TYPE_CHECKING:
    from core.tools.mcp.sdk import ListedTool

MAX_TOOL_DESCRIPTION_CHARS = 1024
_SHOWN_NAMES = 12


@dataclass(frozen=True)
class OfferedTool:
    """One MCP tool as the agent sees it: mcp_<server>_<tool>, its description and argument schema."""

    function: str
    server: str
    tool: str
    description: str
    schema: OfferedSchema
    read_only_declared: bool


def _description(config: McpServerConfig, listed: ListedTool) -> str:
    text = listed.description or f"The {listed.name} tool of the {config.name} MCP server."
    prefix = f"[MCP server {config.name}, read-only] "
    return (prefix + text)[:MAX_TOOL_DESCRIPTION_CHARS]


def _names(listed: list[ListedTool]) -> str:
    names = sorted({t.name for t in listed})
    shown = ", ".join(names[:_SHOWN_NAMES])
    return shown + (f" and {len(names) - _SHOWN_NAMES} more" if len(names) > _SHOWN_NAMES else "") if names else "none"


def select(config: McpServerConfig, listed: list[ListedTool], *, strict: bool = True) -> tuple[list[OfferedTool], list[str]]:
    """(offered tools in allow-list order, problems): only allow-listed tools that exist, declare no write, are
    listed once and have a schema the model API can take."""
    by_name: dict[str, list[ListedTool]] = {}
    for tool in listed:
        by_name.setdefault(tool.name, []).append(tool)
    offered: list[OfferedTool] = []
    problems: list[str] = []
    for name in config.tools:
        found = by_name.get(name, [])
        if not found:
            problems.append(f"allow-listed tool {name!r} is not offered by the server (it lists: {_names(listed)})")
            continue
        if len(found) > 1:
            problems.append(f"the server lists {name!r} {len(found)} times; a duplicate name is not offered")
            continue
        tool = found[0]
        if tool.destructive is True:
            problems.append(f"{name!r} declares destructiveHint: true; a destructive tool is never offered")
            continue
        if tool.read_only is False:
            problems.append(f"{name!r} declares readOnlyHint: false (it changes its environment); it is not offered")
            continue
        try:
            schema = offer(tool.input_schema, strict=strict)
        except SchemaProblem as exc:
            problems.append(f"{name!r} cannot be offered: {exc}")
            continue
        offered.append(OfferedTool(
            function=function_name(config.name, name), server=config.name, tool=name,
            description=_description(config, tool), schema=schema, read_only_declared=tool.read_only is True,
        ))
    return offered, problems
