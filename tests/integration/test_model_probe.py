"""`diagbot check --model`'s probe against the local OpenAI-compatible server simulating real endpoint defects."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from core.llm.probe import AgentShape, probe_model
from core.settings import Settings
from entrypoints.check import agent_shape
from testkit.openai_server import FakeOpenAIServer
from tests.fakes.llama_cpp_endpoint import CHATML_FUNCTION_CALLING, GGUF_TEMPLATE, llama_cpp

DEFECTS = ("needs_tool_choice", "drops_tool_results", "html_escapes", "content_null_500", "no_tools", "prose_only")


def endpoint(defects: set[str]) -> Any:
    """A callable script entry behaving like an endpoint with the given defects (llama-cpp-python style)."""

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        last = str(messages[-1].get("content") or "")
        if "html_escapes" in defects:
            last = html.escape(last)
        if "content_null_500" in defects and any(m["role"] == "assistant" and m.get("content") is None for m in messages):
            return {"status": 500, "body": {"error": {"message": "'NoneType' object has no attribute 'strip'"}}}
        if not request.get("tools"):
            if "prose_only" in defects:
                return {"content": "Sure, happy to help!"}
            if '"snapshot"' in last:
                return {"content": '{"verdict": "SUPPORTED", "reason": "shown"}'}
            if "JSON" in last:
                return {"content": '{"ok": true}'}
            return {"content": last.split(": ", 1)[-1]}
        tool_results = [m["content"] for m in messages if m["role"] == "tool"]
        if tool_results:
            if "drops_tool_results" in defects:
                return {"content": "I do not know which word."}
            word = re.search(r"ZEBRA-[0-9A-F]+", " ".join(str(t) for t in tool_results))
            return {"content": word.group(0) if word else "done"}
        if "no_tools" in defects or ("needs_tool_choice" in defects and not request.get("tool_choice")):
            return {"content": "I would call echo now."}
        if '"snapshot"' in last:
            return {"content": '{"verdict": "SUPPORTED", "reason": "shown"}'}
        return {"tool_calls": [{"id": "c1", "name": "query_logs", "arguments": {"service": "order-service", "query": "x"}}]}

    return answer


def shape(settings: Settings | None = None) -> AgentShape:
    """The requests the bot would send with these settings."""
    return agent_shape(settings or Settings())


async def probe(defects: set[str] | None = None, *, script: Any = None, settings: Settings | None = None,
                ) -> dict[str, tuple[bool, str]]:
    async with FakeOpenAIServer(models=["m"]) as server:
        server.push(*[script or endpoint(defects or set())] * 20)
        results = await probe_model(server.base_url, "k", "m", shape(settings), timeout_s=5)
    return {r.name.removeprefix("model."): (r.level.value == "ok", r.line()) for r in results}


async def test_a_capable_endpoint_passes_every_probe() -> None:
    """Tools, tool results, null content, plain JSON, the review and an unescaped prompt all work: every line is ok."""
    results = await probe(set())
    assert all(ok for ok, _ in results.values()), results
    assert set(results) >= {"plain_json", "tool_calls", "tool_results", "null_content", "prompt_escaping", "review"}


async def test_the_agent_probe_sends_what_the_agent_sends() -> None:
    """The agent's probe carries the agent's system prompt, every offered function (the submit one included, with
    strict schemas by default) and the configured tool_choice."""
    async with FakeOpenAIServer(models=["m"]) as server:
        server.push(*[endpoint(set())] * 20)
        await probe_model(server.base_url, "k", "m", shape(Settings(diag_model_tool_choice="auto")), timeout_s=5)
    agent = [r for r in server.requests if r.get("tools")]
    first = agent[0]
    assert first["messages"][0]["content"].startswith("# Diagnosis Agent")
    names = [t["function"]["name"] for t in first["tools"]]
    assert {"query_logs", "query_mysql", "lookup_knowledge", "submit_diagnosis_draft"} <= set(names)
    assert all(t["function"].get("strict") for t in first["tools"])
    assert first["tool_choice"] == "auto"
    review = next(r for r in server.requests if r["messages"][0]["content"].startswith("# Semantic Guard"))
    assert "tools" not in review


@pytest.mark.parametrize(("defect", "capability", "fix"), [
    ("needs_tool_choice", "tool_calls", "DIAG_MODEL_TOOL_CHOICE=auto"),
    ("no_tools", "tool_calls", "chat template"),
    ("drops_tool_results", "tool_results", "role=tool"),
    ("html_escapes", "prompt_escaping", "autoescape"),
    ("content_null_500", "null_content", 'content: ""'),
    ("prose_only", "plain_json", "DIAGNOSIS"),
])
async def test_each_endpoint_defect_is_reported_with_its_fix(defect: str, capability: str, fix: str) -> None:
    """Each simulated defect fails exactly its capability, and the line names the fix."""
    results = await probe({defect})
    ok, line = results[capability]
    assert not ok
    assert fix in line
    others = {name: v for name, v in results.items()
              if name not in (capability, "tool_results", "tool_calls", "review")}
    assert all(o for o, _ in others.values()), others


async def test_llama_cpp_function_calling_handler_refuses_required_and_drops_tool_results() -> None:
    """llama-cpp-python's chatml-function-calling with DIAG_MODEL_TOOL_CHOICE=required: the probe sees the HTTP 500
    the agent would get, says the bot falls back to tool_choice=auto, and that tool results never reach the model."""
    results = await probe(script=llama_cpp(CHATML_FUNCTION_CALLING), settings=Settings(diag_model_tool_choice="required"))
    ok, line = results["tool_choice"]
    assert not ok
    assert "refused tool_choice=required (HTTP 500)" in line
    assert "DIAG_MODEL_TOOL_CHOICE=auto" in line
    assert results["tool_calls"][0], results["tool_calls"]
    assert "natively" in results["tool_calls"][1]
    ok, line = results["tool_results"]
    assert not ok
    assert "GGUF's own template" in line


async def test_llama_cpp_function_calling_handler_without_tool_choice_needs_auto() -> None:
    """Without tool_choice the handler leaves the tools out of the prompt: the probe says to send tool_choice=auto."""
    results = await probe(script=llama_cpp(CHATML_FUNCTION_CALLING))
    ok, line = results["tool_calls"]
    assert not ok
    assert "DIAG_MODEL_TOOL_CHOICE=auto" in line


async def test_llama_cpp_with_the_models_own_template_gets_text_calls_the_bot_parses() -> None:
    """The GGUF's own template: calls come as <tool_call> text, which the probe reads as the bot does, and the tool
    result reaches the model."""
    results = await probe(script=llama_cpp(GGUF_TEMPLATE))
    ok, line = results["tool_calls"]
    assert ok, line
    assert "as text (tool_call_tag)" in line
    assert results["tool_results"][0], results["tool_results"]


async def test_an_unreachable_endpoint_is_one_line_per_probe_not_a_traceback() -> None:
    """A closed port: every probe is a problem saying the endpoint is unreachable."""
    results = await probe_model("http://127.0.0.1:9/v1", "k", "m", shape(), timeout_s=2)
    assert results
    assert all(r.level.value == "warning" and "unreachable" in r.line() for r in results)
    json.dumps([r.model_dump() for r in results])


async def test_diagbot_check_model_prints_one_line_per_capability(tmp_path: Any) -> None:
    """`diagbot check --model` adds a model.* line per capability; no model configured is FATAL (exit 1)."""
    from entrypoints.check import check_command

    lines: list[str] = []
    async with FakeOpenAIServer(models=["m"]) as server:
        server.push(*[endpoint({"needs_tool_choice"})] * 20)
        settings = Settings(openai_base_url=server.base_url, openai_api_key="k", diag_model="m",
                            database_url=f"sqlite+aiosqlite:///{tmp_path}/d.db")
        await check_command(settings, lines.append, probe_model=True)
    probe_lines = [line for line in lines if " model." in line]
    assert {line.split()[1].rstrip(":") for line in probe_lines} >= {
        "model.plain_json", "model.tool_calls", "model.tool_results", "model.null_content", "model.prompt_escaping",
        "model.review"}
    assert any("DIAG_MODEL_TOOL_CHOICE=auto" in line for line in probe_lines)
    unconfigured: list[str] = []
    code = await check_command(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/e.db"), unconfigured.append,
                               probe_model=True)
    assert code == 1
    assert any("model.probe" in line and "DIAG_MODEL" in line for line in unconfigured)
