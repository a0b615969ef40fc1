"""ScriptedChatModel: an in-process ChatModel double answering from a script and recording every request."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from core.llm.model import ModelReply, ModelToolCall, ModelUnavailable

ScriptStep = ModelReply | Exception | Callable[["ModelRequest"], "ModelReply | Exception"]


@dataclass
class ModelRequest:
    """One recorded call of complete()."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    timeout_s: float
    tool_names: list[str] = field(default_factory=list)


def reply(content: str | None = None, *, calls: Iterable[tuple[str | None, str, str]] = (),
          reasoning: str | None = None) -> ModelReply:
    """Build a ModelReply from (id, name, arguments-json) triples."""
    tool_calls = [ModelToolCall(id=i, name=n, arguments=a) for i, n, a in calls]
    return ModelReply(content=content, tool_calls=tool_calls, reasoning=reasoning,
                      finish_reason="tool_calls" if tool_calls else "stop")


class ScriptedChatModel:
    """Answers each complete() with the next script step: a reply, an exception to raise, or a callable of the request."""

    def __init__(self, script: Iterable[ScriptStep] = (), *, delay_s: float = 0.0) -> None:
        self._script: deque[ScriptStep] = deque(script)
        self.delay_s = delay_s
        self.requests: list[ModelRequest] = []

    def push(self, *steps: ScriptStep) -> None:
        """Append steps to the script."""
        self._script.extend(steps)

    @property
    def remaining(self) -> int:
        """Steps not yet used."""
        return len(self._script)

    async def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        timeout_s: float = 60.0,
    ) -> ModelReply:
        """Record the request and return (or raise) the next scripted step."""
        request = ModelRequest(
            model=model,
            messages=[dict(m) for m in messages],  # the caller keeps appending to its list; snapshot it
            tools=tools,
            timeout_s=timeout_s,
            tool_names=[t["function"]["name"] for t in tools or []],
        )
        self.requests.append(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if not self._script:
            raise ModelUnavailable("script exhausted")
        step = self._script.popleft()
        outcome = step(request) if callable(step) else step
        if isinstance(outcome, Exception):
            raise outcome
        return outcome
