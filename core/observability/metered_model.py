"""MeteredChatModel: the ChatModel port with its latency recorded per pipeline stage (wired in bootstrap)."""

from __future__ import annotations

import time
from typing import Any

from core.llm.model import ModelReply
from core.observability.metrics import Metrics
from core.ports import ChatModel


class MeteredChatModel:
    """Wraps a ChatModel; every `complete` call observes diagbot_model_call_duration_seconds{stage, result}."""

    def __init__(self, model: ChatModel, metrics: Metrics, stage: str) -> None:
        self._model = model
        self._metrics = metrics
        self._stage = stage

    async def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        timeout_s: float = 60.0,
    ) -> ModelReply:
        """Forward the call; a raised error (unavailable, cancelled, timeout) is observed as `error`."""
        started = time.monotonic()
        ok = False
        try:
            reply = await self._model.complete(model=model, messages=messages, tools=tools, timeout_s=timeout_s)
            ok = True
            return reply
        finally:
            self._metrics.model_call(self._stage, ok, time.monotonic() - started)
