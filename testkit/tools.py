"""FakeTool: a tiny Tool for boundary tests that returns a given RawResult, raises, or sleeps; backends_for: the
tools settings configure, by name."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.contracts.evidence import RawResult
from core.settings import Settings
from core.tools.clock import tool_env
from core.tools.registry import current_registry


class FakeArgs(BaseModel):
    """Arguments of a FakeTool: a required query and a bounded limit, nothing else."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    limit: int = Field(default=5, ge=1, le=50)


class FakeTool:
    """A Tool double: answers `result` (or `respond(args)`), raises `error`, and sleeps `delay_s` first."""

    def __init__(
        self,
        name: str,
        result: RawResult | None = None,
        *,
        error: BaseException | None = None,
        delay_s: float = 0.0,
        respond: Callable[[BaseModel], RawResult] | None = None,
        args_model: type[BaseModel] = FakeArgs,
    ) -> None:
        self.name = name
        self.args_model = args_model
        self._result = result if result is not None else RawResult(total_count=0)
        self._error = error
        self._delay_s = delay_s
        self._respond = respond
        self.calls: list[BaseModel] = []
        self.cancelled = 0

    async def run(self, args: BaseModel) -> RawResult:
        """Record the call, wait, then fail or answer as configured."""
        self.calls.append(args)
        if self._delay_s:
            try:
                await asyncio.sleep(self._delay_s)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        if self._error is not None:
            raise self._error
        return self._respond(args) if self._respond is not None else self._result


async def backends_for(settings: Settings) -> dict[str, Any]:
    """Every registered toolset's tools as `settings` configure them, by name: the native backends themselves
    (LogsTool, LokiLogsTool, SqlTool, ...), other tools as they are. What they open is left for the test to close."""
    tools = await current_registry().build(settings, tool_env(settings, AsyncExitStack()))
    return {name: getattr(tool, "backend", tool) for name, tool in tools.items()}
