"""One offered MCP tool behind the ToolBoundary: its argument model (the server's JSON Schema) and its run."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from core.contracts.evidence import RawResult
from core.errors import ToolFailure
from core.evidence.redaction import Redactor
from core.tools.mcp.content import blocks_of, bounded, is_empty, json_size
from core.tools.mcp.manager import McpManager
from core.tools.mcp.schema import OfferedSchema
from core.tools.mcp.sdk import CallResult, ServerError, ServerUnavailable
from core.tools.mcp.selection import OfferedTool

_MAX_MESSAGE_CHARS = 400


class McpArguments(BaseModel):
    """Arguments of an MCP tool: any JSON object its input schema accepts (checked against that schema)."""

    model_config = ConfigDict(extra="allow")
    offered: ClassVar[OfferedSchema]

    @model_validator(mode="before")
    @classmethod
    def _by_schema(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise PydanticCustomError("mcp_arguments", "arguments must be a JSON object of named fields")
        prepared = cls.offered.prepared(data)
        problems = cls.offered.problems(prepared)
        if problems:
            raise PydanticCustomError("mcp_arguments", "{detail}", {"detail": "; ".join(problems)})
        return prepared


def arguments_model(tool: OfferedTool) -> type[McpArguments]:
    """A pydantic model whose validation is the tool's own input schema."""
    return type(f"Args_{tool.function}", (McpArguments,), {"offered": tool.schema, "__module__": __name__})


def _server_message(result: CallResult) -> str:
    texts = [b.get("text", "") for b in result.content if isinstance(b.get("text"), str)]
    text = " ".join(t.strip() for t in texts if t.strip())
    return text[:_MAX_MESSAGE_CHARS] or "no message"


class McpTool:
    """mcp_<server>_<tool>: validated arguments go to the server (one call at a time per server); its content is
    the evidence, bounded by the server's max_output_bytes."""

    def __init__(self, tool: OfferedTool, manager: McpManager, *, max_output_bytes: int, timeout_s: float,
                 redactor: Redactor | None = None) -> None:
        self.name = tool.function
        self.offered = tool
        self.args_model = arguments_model(tool)
        self._manager = manager
        self._max_output_bytes = max_output_bytes
        self._timeout_s = timeout_s
        self._redactor = redactor or Redactor()

    async def run(self, args: McpArguments) -> RawResult:
        """Call the tool; ToolFailure (TIMEOUT, SERVER_UNAVAILABLE, MCP_ERROR, MCP_TOOL_ERROR) for every failure."""
        arguments = args.model_dump(mode="json")
        server = self.offered.server
        try:
            result = await self._manager.call(self.name, arguments)
        except TimeoutError:
            raise ToolFailure("TIMEOUT", f"The {server} MCP server did not answer within {self._timeout_s:g} s; "
                                         "it is restarted for the next call.") from None
        except ServerUnavailable as exc:
            raise ToolFailure("SERVER_UNAVAILABLE", f"The {server} MCP server is unavailable: {exc}") from None
        except ServerError as exc:
            message = self._redactor.redact(exc.message[:_MAX_MESSAGE_CHARS])
            raise ToolFailure("MCP_ERROR", f"The {server} MCP server refused the call (JSON-RPC {exc.code}): {message}") from None
        if result.is_error:
            message = self._redactor.redact(_server_message(result))
            raise ToolFailure("MCP_TOOL_ERROR", f"The {self.offered.tool} tool reported an error: {message}")
        return await asyncio.to_thread(self._raw, result, arguments)

    def _raw(self, result: CallResult, arguments: dict[str, Any]) -> RawResult:
        items = blocks_of(result)
        if is_empty(items):
            return RawResult(items=[], total_count=0, effective_arguments=arguments,
                             notes={"mcp_server": self.offered.server, "output_bytes": json_size(items)})
        size = json_size(items)
        kept, cut = bounded(items, self._max_output_bytes)
        notes: dict[str, Any] = {"mcp_server": self.offered.server, "output_bytes": size}
        if cut:
            notes.update(bytes_truncated=True, max_output_bytes=self._max_output_bytes)
        return RawResult(items=kept, total_count=len(items), effective_arguments=arguments, notes=notes)
