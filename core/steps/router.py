"""IntentRouter: DIAGNOSIS | KNOWLEDGE | CHAT for one message; any failure routes to DIAGNOSIS (never lose the question)."""

from __future__ import annotations

import logging
import re
from typing import Literal

from pydantic import BaseModel

from core.contracts.run import Intent
from core.llm.model import ChatModel, ModelUnavailable
from core.llm.prompts import PromptLibrary
from core.llm.wire import parse_json_object, system_message, user_message

log = logging.getLogger(__name__)

_SMALL_TALK = re.compile(
    r"^\s*(hi|hello|hey|yo|help|thanks|thank you|thx|ty|ok|okay|cool|good (morning|afternoon|evening)|who are you\??)"
    r"[\s!.?]*$",
    re.IGNORECASE,
)


class RouteDecision(BaseModel):
    """An intent and how it was decided (safe to put on the timeline)."""

    intent: Intent
    source: Literal["rule", "model", "fallback"]


class IntentRouter:
    """Classifies a message with one small model call; greetings and 'help' are decided without the model."""

    def __init__(self, model: ChatModel, model_name: str, prompts: PromptLibrary, *, timeout_s: float = 20.0) -> None:
        self.model = model
        self.model_name = model_name
        self.prompts = prompts
        self.timeout_s = timeout_s

    async def route(self, text: str) -> Intent:
        """The intent of one message."""
        return (await self.decide(text)).intent

    async def decide(self, text: str) -> RouteDecision:
        """The intent and whether a rule, the model or the failure fallback decided it."""
        if not text.strip() or _SMALL_TALK.match(text):
            return RouteDecision(intent=Intent.CHAT, source="rule")
        messages = [system_message(self.prompts.get("intent_router")), user_message(text)]
        try:
            reply = await self.model.complete(model=self.model_name, messages=messages, tools=None, timeout_s=self.timeout_s)
        except ModelUnavailable as exc:
            log.warning("intent router: model unavailable (%s); routing to DIAGNOSIS", exc.status_code or "transport")
            return RouteDecision(intent=Intent.DIAGNOSIS, source="fallback")
        answer = parse_json_object(reply.content)
        raw = answer.get("intent") if answer else None
        if isinstance(raw, str) and raw.strip().upper() in Intent.__members__:
            return RouteDecision(intent=Intent(raw.strip().upper()), source="model")
        log.warning("intent router: malformed answer; routing to DIAGNOSIS")
        return RouteDecision(intent=Intent.DIAGNOSIS, source="fallback")
