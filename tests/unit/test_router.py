"""IntentRouter: rule shortcuts, the model path, and DIAGNOSIS on any failure."""

from __future__ import annotations

import pytest

from core.contracts.run import Intent
from core.llm.model import ModelUnavailable
from core.llm.prompts import PromptLibrary
from core.settings import PROMPTS_DIR
from core.steps.router import IntentRouter
from testkit.models import ScriptedChatModel, reply


@pytest.fixture
def prompts() -> PromptLibrary:
    return PromptLibrary(PROMPTS_DIR)


@pytest.mark.parametrize("text", ["hi", "Hello!", "help", "thanks", "  ", "who are you?"])
async def test_greetings_and_help_are_chat_without_a_model_call(prompts: PromptLibrary, text: str) -> None:
    """Obvious small talk is CHAT and costs no model call."""
    model = ScriptedChatModel()
    decision = await IntentRouter(model, "m", prompts).decide(text)
    assert (decision.intent, decision.source) == (Intent.CHAT, "rule")
    assert model.requests == []


@pytest.mark.parametrize(
    ("answer", "intent"),
    [('{"intent": "KNOWLEDGE"}', Intent.KNOWLEDGE), ('{"intent": "CHAT"}', Intent.CHAT),
     ('```json\n{"intent": "DIAGNOSIS"}\n```', Intent.DIAGNOSIS), ('{"intent": "knowledge"}', Intent.KNOWLEDGE)],
)
async def test_model_answer_decides_the_intent(prompts: PromptLibrary, answer: str, intent: Intent) -> None:
    """The model's JSON {"intent"} answer is used (fenced or bare, case-insensitive)."""
    model = ScriptedChatModel([reply(answer)])
    router = IntentRouter(model, "router-model", prompts)
    assert await router.route("what does the runbook say about HikariCP exhaustion?") == intent
    (request,) = model.requests
    assert request.tools is None
    assert request.messages[0]["content"] == prompts.get("intent_router")
    assert request.messages[1] == {"role": "user", "content": "what does the runbook say about HikariCP exhaustion?"}


@pytest.mark.parametrize(
    "step",
    [reply("It's a knowledge question."), reply('{"intent": "REBOOT"}'), reply('{"mood": "KNOWLEDGE"}'),
     reply(calls=[("x", "query_logs", "{}")]), ModelUnavailable("down", status_code=500)],
)
async def test_any_failure_routes_to_diagnosis(prompts: PromptLibrary, step: object) -> None:
    """Prose, unknown intents, wrong keys, tool calls and transport errors all route to DIAGNOSIS."""
    model = ScriptedChatModel([step])  # type: ignore[list-item]
    decision = await IntentRouter(model, "m", prompts).decide("why is order-service failing?")
    assert (decision.intent, decision.source) == (Intent.DIAGNOSIS, "fallback")


@pytest.mark.parametrize(
    ("answer", "intent"),
    [("KNOWLEDGE", Intent.KNOWLEDGE), ("knowledge.", Intent.KNOWLEDGE), ("`CHAT`", Intent.CHAT),
     ("**DIAGNOSIS**", Intent.DIAGNOSIS), ("intent: KNOWLEDGE", Intent.KNOWLEDGE),
     ('Sure! Here is the classification:\n```json\n{"intent": "KNOWLEDGE"}\n```\nHope that helps.', Intent.KNOWLEDGE),
     ('The answer is {"intent": "CHAT"} because it is a greeting.', Intent.CHAT)],
)
async def test_loose_answers_of_small_models_are_read(prompts: PromptLibrary, answer: str, intent: Intent) -> None:
    """A bare intent word, a fenced JSON object in prose, or a JSON object inside prose decide the intent."""
    model = ScriptedChatModel([reply(answer)])
    decision = await IntentRouter(model, "m", prompts).decide("what does the runbook say about HikariCP exhaustion?")
    assert (decision.intent, decision.source) == (intent, "model")


@pytest.mark.parametrize("answer", ["KNOWLEDGE or CHAT", "I think DIAGNOSIS", '{"intent": "REBOOT"} {"x": 1}', "x" * 5000])
async def test_unreadable_answers_route_to_diagnosis_and_say_why(prompts: PromptLibrary, answer: str) -> None:
    """Two candidate words, a word inside a sentence, unknown intents or an oversized answer: DIAGNOSIS, with a reason."""
    model = ScriptedChatModel([reply(answer)])
    decision = await IntentRouter(model, "m", prompts).decide("why is order-service failing?")
    assert (decision.intent, decision.source) == (Intent.DIAGNOSIS, "fallback")
    assert decision.reason == "unreadable router answer"
