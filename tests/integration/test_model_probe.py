"""`diagbot check --model`'s probe against the local OpenAI-compatible server simulating real endpoint defects."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from core.llm.probe import probe_model
from testkit.openai_server import FakeOpenAIServer

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
            if "JSON" in last:
                return {"content": '{"ok": true}'}
            return {"content": last.split(": ", 1)[-1]}
        tool_results = [m["content"] for m in messages if m["role"] == "tool"]
        if tool_results:
            if "drops_tool_results" in defects:
                return {"content": "I do not know which word."}
            word = re.search(r"ZEBRA-[0-9A-F]+", " ".join(tool_results))
            return {"content": word.group(0) if word else "done"}
        if "no_tools" in defects or ("needs_tool_choice" in defects and not request.get("tool_choice")):
            return {"content": "I would call echo now."}
        token = re.search(r"PROBE-[0-9A-F]+", last)
        return {"tool_calls": [{"id": "c1", "name": "echo", "arguments": {"token": token.group(0) if token else ""}}]}

    return answer


async def probe(defects: set[str], models: list[str] | None = None) -> dict[str, tuple[bool, str]]:
    async with FakeOpenAIServer(models=models or ["m"]) as server:
        server.push(*[endpoint(defects)] * 12)
        results = await probe_model(server.base_url, "k", "m", timeout_s=5)
    return {r.name.removeprefix("model."): (r.level.value == "ok", r.line()) for r in results}


async def test_a_capable_endpoint_passes_every_probe() -> None:
    """Tools, tool results, null content, plain JSON and an unescaped prompt all work: every line is ok."""
    results = await probe(set())
    assert all(ok for ok, _ in results.values()), results


@pytest.mark.parametrize(("defect", "capability", "fix"), [
    ("needs_tool_choice", "tool_calls", "DIAG_MODEL_TOOL_CHOICE=required"),
    ("no_tools", "tool_calls", "chat_format"),
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
    others = {name: v for name, v in results.items() if name not in (capability, "tool_results", "tool_calls")}
    assert all(o for o, _ in others.values()), others


async def test_an_unreachable_endpoint_is_one_line_per_probe_not_a_traceback() -> None:
    """A closed port: every probe is a problem saying the endpoint is unreachable."""
    results = await probe_model("http://127.0.0.1:9/v1", "k", "m", timeout_s=2)
    assert results
    assert all(r.level.value == "warning" and "unreachable" in r.line() for r in results)
    json.dumps([r.model_dump() for r in results])


async def test_diagbot_check_model_prints_one_line_per_capability(tmp_path: Any) -> None:
    """`diagbot check --model` adds a model.* line per capability; no model configured is FATAL (exit 1)."""
    from core.settings import Settings
    from entrypoints.check import check_command

    lines: list[str] = []
    async with FakeOpenAIServer(models=["m"]) as server:
        server.push(*[endpoint({"needs_tool_choice"})] * 20)
        settings = Settings(openai_base_url=server.base_url, openai_api_key="k", diag_model="m",
                            database_url=f"sqlite+aiosqlite:///{tmp_path}/d.db")
        await check_command(settings, lines.append, probe_model=True)
    probe_lines = [line for line in lines if " model." in line]
    assert {line.split()[1].rstrip(":") for line in probe_lines} >= {
        "model.plain_json", "model.tool_calls", "model.tool_results", "model.null_content", "model.prompt_escaping"}
    assert any("DIAG_MODEL_TOOL_CHOICE=required" in line for line in probe_lines)
    unconfigured: list[str] = []
    code = await check_command(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/e.db"), unconfigured.append,
                               probe_model=True)
    assert code == 1
    assert any("model.probe" in line and "DIAG_MODEL" in line for line in unconfigured)
