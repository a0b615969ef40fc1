"""Held-out MCP shapes from the specification (server/tools: structured content with an output schema, resource
links): a conforming answer is evidence with its structured fields and the link's identity; an answer whose
structured content breaks the tool's own output schema is one clear ERROR for that call and leaves the connection
(and the server process) working for the next call."""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.errors import ToolFailure
from core.settings import Settings
from core.tools.contract import ToolEnv
from core.tools.mcp.toolset import McpToolset

SERVER = Path(__file__).resolve().parent / "servers" / "schema_server.py"


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "toolsets.toml"
    path.write_text(f'[[mcp]]\nname = "k8s"\ncommand = ["{sys.executable}", "{SERVER}"]\n'
                    'tools = ["counted", "drifted"]\ntimeout_s = 10\n', encoding="utf-8")
    return path


async def test_structured_content_breaking_its_output_schema_is_one_error_not_a_dead_server(tmp_path: Path) -> None:
    settings = Settings(diag_toolsets_file=_file(tmp_path))
    async with AsyncExitStack() as stack:
        tools = {t.name: t for t in await McpToolset().build(
            settings, ToolEnv(clock=lambda: datetime.now(UTC), pinned=None, stack=stack))}
        counted, drifted = tools["mcp_k8s_counted"], tools["mcp_k8s_drifted"]
        first = await counted.run(counted.validate({}))
        [structured, *rest] = first.items
        assert structured == {"type": "structured", "json": {"pods": 3, "pid": structured["json"]["pid"]}}
        assert {"type": "resource_link", "uri": "file:///var/log/pods.log", "name": "pods.log",
                "mimeType": "text/plain"}.items() <= rest[-1].items()
        with pytest.raises(ToolFailure) as failed:
            await drifted.run(drifted.validate({}))
        assert failed.value.code == "MCP_TOOL_ERROR"
        assert "output schema" in failed.value.message
        again = await counted.run(counted.validate({}))
        assert again.items[0]["json"]["pid"] == structured["json"]["pid"]  # the same server process
