"""Function schemas say what the contract needs, follow OpenAI's strict mode, and a grammar-following model that fills
only the required fields produces a draft the guard can accept (end to end through the real openai client)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.bootstrap import build_services
from core.contracts.release import Outcome
from core.contracts.run import SessionKey, Turn
from core.settings import DEMO_CLOCK, Settings
from core.steps.schemas import diagnosis_tools, knowledge_tools, repair_tools
from testkit.openai_server import FakeOpenAIServer
from testkit.strict import minimal_arguments, strict_mode_problems

ALL = {"diagnosis": diagnosis_tools, "repair": repair_tools, "knowledge": knowledge_tools}


def by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in tools}


@pytest.mark.parametrize("offer", list(ALL))
def test_strict_schemas_follow_openai_strict_mode(offer: str) -> None:
    """Every schema offered in strict mode passes the strict-mode rules and says strict: true."""
    for function in ALL[offer](strict=True):
        assert function["function"]["strict"] is True
        assert strict_mode_problems(function["function"]["parameters"]) == []


def test_the_old_lenient_schema_would_break_strict_mode() -> None:
    """The checker is not vacuous: the non-strict tool schemas (optional fields, maxLength) break the rules."""
    logs = by_name(diagnosis_tools())["query_logs"]["parameters"]
    assert any("every property must be required" in p for p in strict_mode_problems(logs))


@pytest.mark.parametrize("strict", [False, True])
def test_the_draft_schema_requires_what_the_guard_needs(strict: bool) -> None:
    """analysis (at least one item with id, kind, text and citations) and limitations.scope are required."""
    draft = by_name(diagnosis_tools(strict=strict))["submit_diagnosis_draft"]["parameters"]
    assert {"analysis", "limitations"} <= set(draft["required"])
    assert draft["properties"]["analysis"]["minItems"] == 1
    item = draft["properties"]["analysis"]["items"]
    assert {"analysis_id", "kind", "text", "tool_call_ids"} <= set(item["required"])
    assert "null" not in json.dumps(item["properties"]["kind"])
    assert item["properties"]["tool_call_ids"]["minItems"] == 1
    assert "scope" in draft["properties"]["limitations"]["required"]
    answer = by_name(knowledge_tools(strict=strict))["submit_knowledge_answer"]["parameters"]
    assert set(answer["required"]) == {"answer", "citations"}
    assert answer["properties"]["citations"]["minItems"] == 1


def grammar_following(request: dict[str, Any]) -> dict[str, Any]:
    """A weak model behind a grammar: first one minimal query_logs call, then a submit with only required fields."""
    functions = by_name(request["tools"])
    tool_ids = [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"]
    if not tool_ids:
        def log_text(path: str) -> Any:
            return {"service": "order-service", "query": "HikariPool"}.get(path, "x")
        args = minimal_arguments(functions["query_logs"]["parameters"], log_text)
        return {"tool_calls": [{"id": "call_1", "name": "query_logs", "arguments": args}]}

    def draft_text(path: str) -> Any:
        return {"analysis[].tool_call_ids": tool_ids, "analysis[].analysis_id": "a1",
                "analysis[].text": "order-service logged HikariPool connection errors",
                "limitations.scope": "order-service logs in the default window"}.get(path, "")
    args = minimal_arguments(functions["submit_diagnosis_draft"]["parameters"], draft_text)
    return {"tool_calls": [{"id": "call_2", "name": "submit_diagnosis_draft", "arguments": args}]}


async def test_a_grammar_following_model_in_strict_mode_gets_its_draft_published(tmp_path: Path) -> None:
    """Against a strict-mode server, a model filling only required fields produces a draft that passes both guards."""
    async with FakeOpenAIServer(strict=True) as server:
        server.push({"content": '{"intent": "DIAGNOSIS"}'}, grammar_following, grammar_following,
                    {"content": json.dumps({"verdict": "SUPPORTED", "reason": "the lines show the errors"})})
        settings = Settings(openai_base_url=server.base_url, openai_api_key="test", diag_model="m", diag_clock=DEMO_CLOCK,
                            database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db", diag_model_strict=True)
        services = await build_services(settings)
        try:
            turn = Turn(session=SessionKey(team="T", channel="C", thread_ts="1"), text="why is order-service failing?",
                        user="U", message_ts="1.1")
            outcome = await services.chat_service.handle(turn)
        finally:
            await services.aclose()
    assert outcome.outcome is Outcome.SUCCESS, outcome
    assert all(t["function"].get("strict") for t in server.requests[1]["tools"])


async def test_an_endpoint_refusing_strict_gets_the_schemas_without_it(tmp_path: Path) -> None:
    """A 400 on strict schemas is learnt once: the same call is re-sent without `strict` and the run goes on."""
    from core.llm.openai_model import OpenAIChatModel

    async with FakeOpenAIServer() as server:
        server.push({"status": 400, "body": {"error": {"message": "strict is not supported"}}}, {"content": "ok"},
                    {"content": "again"})
        model = OpenAIChatModel(server.base_url, "k")
        try:
            first = await model.complete(model="m", messages=[{"role": "user", "content": "hi"}],
                                         tools=diagnosis_tools(strict=True))
            second = await model.complete(model="m", messages=[{"role": "user", "content": "hi"}],
                                          tools=diagnosis_tools(strict=True))
        finally:
            await model.aclose()
    assert (first.content, second.content) == ("ok", "again")
    assert [any(t["function"].get("strict") for t in r["tools"]) for r in server.requests] == [True, False, False]


async def test_an_endpoint_refusing_null_content_gets_empty_content() -> None:
    """llama-cpp-python answers content: null with HTTP 500: the request is re-sent with "" and remembered."""
    from core.llm.openai_model import OpenAIChatModel

    history: list[dict[str, Any]] = [{"role": "user", "content": "q"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "query_logs", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "{}"}]
    async with FakeOpenAIServer() as server:
        server.push({"status": 500, "body": {"error": {"message": "'NoneType' object is not subscriptable"}}},
                    {"content": "fine"})
        model = OpenAIChatModel(server.base_url, "k", max_retries=0)
        try:
            reply = await model.complete(model="m", messages=history)
        finally:
            await model.aclose()
    assert reply.content == "fine"
    assert server.requests[1]["messages"][1]["content"] == ""
