"""One offered MCP tool behind the ToolBoundary (the contract's Tool): the server's JSON Schema validates its
arguments, the server's content is its raw result."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from core.contracts.evidence import RawResult
from core.errors import ToolFailure
from core.evidence.redaction import Redactor
from core.tools.contract import InvalidArguments
from core.tools.mcp.content import blocks_of, bounded, is_empty, json_size
from core.tools.mcp.manager import McpManager
from core.tools.mcp.sdk import CallResult, InvalidResult, ServerError, ServerUnavailable
from core.tools.mcp.selection import OfferedTool

_MAX_MESSAGE_CHARS = 400


def _server_message(result: CallResult) -> str:
    texts = [b.get("text", "") for b in result.content if isinstance(b.get("text"), str)]
    text = " ".join(t.strip() for t in texts if t.strip())
    return text[:_MAX_MESSAGE_CHARS] or "no message"


class McpTool:
    """mcp_<server>_<tool>: validated arguments go to the server (one call at a time per server); its content is
    the evidence, bounded by the server's max_output_bytes."""

    def __init__(self, tool: OfferedTool, manager: McpManager, *, max_output_bytes: int, timeout_s: float,
                 redactor: Redactor | None = None) -> None:
        self.offered = tool
        self._manager = manager
        self._max_output_bytes = max_output_bytes
        self._timeout_s = timeout_s
        self._redactor = redactor or Redactor()

    @property
    def name(self) -> str:
        return self.offered.function

    @property
    def description(self) -> str:
        return self.offered.description

    @property
    def strict(self) -> bool:
        """Whether the schema has an OpenAI strict-mode form (an open map, oneOf, ... has none: sent non-strict)."""
        return self.offered.schema.strict

    def parameters(self) -> dict[str, Any]:
        """The server's input schema as the agent sees it (local $refs inlined, descriptive keywords dropped)."""
        return dict(self.offered.schema.plain)

    def strict_parameters(self) -> dict[str, Any] | None:
        """The strict-mode form of the schema, or None when it has none."""
        return dict(self.offered.schema.parameters) if self.strict else None

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments as the server takes them (strict-mode nulls dropped), checked against its schema."""
        schema = self.offered.schema
        prepared = schema.prepared(arguments)
        problems = schema.problems(prepared)
        if problems:
            raise InvalidArguments(f"Invalid arguments for {self.name}: " + "; ".join(problems) + ".")
        return prepared

    def effective(self, args: dict[str, Any]) -> dict[str, Any]:
        return dict(args)

    async def run(self, args: dict[str, Any]) -> RawResult:
        """Call the tool; ToolFailure (TIMEOUT, SERVER_UNAVAILABLE, MCP_ERROR, MCP_TOOL_ERROR) for every failure."""
        server = self.offered.server
        try:
            result = await self._manager.call(self.name, dict(args))
        except TimeoutError:
            raise ToolFailure("TIMEOUT", f"The {server} MCP server did not answer within {self._timeout_s:g} s; "
                                         "it is restarted for the next call.") from None
        except ServerUnavailable as exc:
            raise ToolFailure("SERVER_UNAVAILABLE", f"The {server} MCP server is unavailable: {exc}") from None
        except InvalidResult as exc:
            message = self._redactor.redact(str(exc)[:_MAX_MESSAGE_CHARS])
            raise ToolFailure("MCP_TOOL_ERROR", f"The {self.offered.tool} tool's answer does not match its own "
                                                f"output schema, so it is not evidence: {message}") from None
        except ServerError as exc:
            message = self._redactor.redact(exc.message[:_MAX_MESSAGE_CHARS])
            raise ToolFailure("MCP_ERROR", f"The {server} MCP server refused the call (JSON-RPC {exc.code}): {message}") from None
        if result.is_error:
            message = self._redactor.redact(_server_message(result))
            raise ToolFailure("MCP_TOOL_ERROR", f"The {self.offered.tool} tool reported an error: {message}")
        return await asyncio.to_thread(self._raw, result, dict(args))

    def _raw(self, result: CallResult, arguments: dict[str, Any]) -> RawResult:
        items = blocks_of(result)
        notes: dict[str, Any] = {"mcp_server": self.offered.server, "output_bytes": json_size(items)}
        if is_empty(items):
            return RawResult(items=[], total_count=0, effective_arguments=arguments, notes=notes)
        kept, cut = bounded(items, self._max_output_bytes)
        if cut:
            notes.update(bytes_truncated=True, max_output_bytes=self._max_output_bytes)
        return RawResult(items=kept, total_count=len(items), effective_arguments=arguments, notes=notes)
