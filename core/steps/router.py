"""IntentRouter: DIAGNOSIS | KNOWLEDGE | CHAT for one message; any failure routes to DIAGNOSIS (never lose the question).

Small models answer the wire format loosely: a bare intent word, a fenced JSON object or a JSON object inside
prose are read; anything else routes to DIAGNOSIS, and the decision says why (it goes on the timeline).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Literal

from pydantic import BaseModel

from core.contracts.run import Intent
from core.llm.model import ModelUnavailable
from core.llm.model_step import ModelStep
from core.llm.prompts import PromptLibrary
from core.llm.wire import parse_json_object, system_message, user_message
from core.ports import ChatModel, Timeline

log = logging.getLogger(__name__)

_SMALL_TALK = re.compile(
    r"^\s*(hi|hello|hey|yo|help|thanks|thank you|thx|ty|ok|okay|cool|good (morning|afternoon|evening)|who are you\??)"
    r"[\s!.?]*$",
    re.IGNORECASE,
)
_BARE_WORD = re.compile(r"^[\s`'\"*_]*(?:intent\s*[:=]\s*)?[`'\"*_]*(?P<word>[A-Za-z]+)[`'\"*_.!\s]*$", re.IGNORECASE)
_FENCED = re.compile(r"```(?:json|JSON)?\s*(?P<body>\{.*?\})\s*```", re.DOTALL)
_OBJECT = re.compile(r"\{[^{}]{0,400}\}")
MAX_ANSWER_CHARS = 4000


class RouteDecision(BaseModel):
    """An intent, how it was decided and, for a fallback, why (safe to put on the timeline)."""

    intent: Intent
    source: Literal["rule", "model", "fallback"]
    reason: str | None = None


def _intent_of(value: object) -> Intent | None:
    if isinstance(value, str) and value.strip().upper() in Intent.__members__:
        return Intent(value.strip().upper())
    return None


def read_intent(content: str | None) -> Intent | None:
    """The intent in a router answer: JSON {"intent"} (bare, fenced, or inside prose) or a bare intent word."""
    if not content or len(content) > MAX_ANSWER_CHARS:
        return None
    answer = parse_json_object(content)
    if answer is not None:
        return _intent_of(answer.get("intent"))
    bare = _BARE_WORD.match(content)
    if bare:
        return _intent_of(bare.group("word"))
    candidates = [m.group("body") for m in _FENCED.finditer(content)] + _OBJECT.findall(content)
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict) and (intent := _intent_of(value.get("intent"))) is not None:
            return intent
    return None


class IntentRouter:
    """Classifies a message with one small model call; greetings and 'help' are decided without the model."""

    def __init__(self, model: ChatModel, model_name: str, prompts: PromptLibrary, *, timeout_s: float = 20.0) -> None:
        self.model_name = model_name
        self.prompts = prompts
        self._step = ModelStep(model, model_name, "router", timeout_s=timeout_s)

    async def route(self, text: str) -> Intent:
        """The intent of one message."""
        return (await self.decide(text)).intent

    async def decide(
        self, text: str, *, timeline: Timeline | None = None, time_left_s: float | None = None
    ) -> RouteDecision:
        """The intent and whether a rule, the model or the failure fallback decided it."""
        if not text.strip() or _SMALL_TALK.match(text):
            return RouteDecision(intent=Intent.CHAT, source="rule")
        messages = [system_message(self.prompts.get("intent_router")), user_message(text)]
        try:
            reply = await self._step.call(messages, None, step=1, timeline=timeline, time_left_s=time_left_s)
        except ModelUnavailable as exc:
            log.warning("intent router: model unavailable (%s); routing to DIAGNOSIS", exc.status_code or "transport")
            return RouteDecision(intent=Intent.DIAGNOSIS, source="fallback", reason="model unavailable")
        intent = None if reply.tool_calls else read_intent(reply.content)
        if intent is not None:
            return RouteDecision(intent=intent, source="model")
        log.warning("intent router: unreadable answer; routing to DIAGNOSIS")
        return RouteDecision(intent=Intent.DIAGNOSIS, source="fallback", reason="unreadable router answer")
