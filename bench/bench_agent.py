"""Benchmark of the model area: agent loop overhead (in-process vs over HTTP), parallel tool calls, judge input capping.

Run: python bench/bench_agent.py   (prints figures; ratios are what matter on a shared machine)
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.contracts.draft import Analysis, AnalysisKind, DiagnosisDraft
from core.contracts.release import VerifiedEvidenceSnapshot
from core.contracts.run import Budgets, EventType
from core.llm.model import ModelReply, ModelToolCall
from core.llm.openai_model import OpenAIChatModel
from core.llm.prompts import PromptLibrary
from core.run import RunContext
from core.settings import PROMPTS_DIR
from core.steps.agent import DiagnosisAgent
from core.steps.judge import build_judge_input
from core.steps.schemas import diagnosis_tools
from testkit.models import ModelRequest, ScriptedChatModel
from testkit.openai_server import FakeOpenAIServer

STEPS = 5  # four tool steps, then the submit
LOGS_ARGS = {"service": "order-service", "query": "timeout"}


class NullTimeline:
    async def record(self, type: EventType, summary: dict[str, Any] | None = None, duration_ms: float = 0.0) -> None:
        return None


class NullAudit:
    async def record_invocation(self, meta: Any) -> None:
        return None

    async def record_reasoning(self, run_id: str, stage: str, step: int, content: str | None) -> None:
        return None


class CannedBoundary:
    """Answers every call at once (or after delay_s) with a small FOUND projection."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.n = 0

    async def invoke(self, ctx: RunContext, tool_call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
        self.n += 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return {
            "tool_call_id": tool_call_id or f"m{self.n}",
            "tool_name": name,
            "evidence_status": "EVIDENCE_FOUND",
            "count": 1,
            "truncated": False,
            "logs": [{"message": "timeout after 30000ms"}],
        }


def submit_args(ids: list[str]) -> str:
    return json.dumps(
        {
            "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": "timeouts", "tool_call_ids": ids[:10]}],
            "limitations": {"scope": "order-service"},
        }
    )


def scripted_steps() -> list[Any]:
    def submit(request: ModelRequest) -> ModelReply:
        ids = [m["tool_call_id"] for m in request.messages if m["role"] == "tool"]
        return ModelReply(tool_calls=[ModelToolCall(id="s", name="submit_diagnosis_draft", arguments=submit_args(ids))])

    calls = [
        ModelReply(tool_calls=[ModelToolCall(id=f"c{i}", name="query_logs", arguments=json.dumps(LOGS_ARGS))])
        for i in range(STEPS - 1)
    ]
    return [*calls, submit]


def http_steps() -> list[Any]:
    def submit(request: dict[str, Any]) -> dict[str, Any]:
        ids = [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"]
        return {"tool_calls": [{"id": "s", "name": "submit_diagnosis_draft", "arguments": submit_args(ids)}]}

    return [*({"tool_calls": [{"id": f"c{i}", "name": "query_logs", "arguments": LOGS_ARGS}]} for i in range(STEPS - 1)), submit]


def ctx(budgets: Budgets | None = None) -> RunContext:
    return RunContext(run_id="bench", session_key="s", query="why?", timeline=NullTimeline(), budgets=budgets or Budgets())


async def loop_in_process(prompts: PromptLibrary, runs: int) -> float:
    """Mean microseconds per agent step with the in-process scripted model."""
    tools = diagnosis_tools()  # built once, as bootstrap does
    started = time.perf_counter()
    for _ in range(runs):
        agent = DiagnosisAgent(ScriptedChatModel(scripted_steps()), "m", CannedBoundary(), prompts, NullAudit(),
                               tools=tools)
        result = await agent.run(ctx(), None)
        assert result.stop_reason == "submitted"
    return (time.perf_counter() - started) / (runs * STEPS) * 1e6


async def loop_over_http(prompts: PromptLibrary, runs: int) -> float:
    """Mean microseconds per agent step through the openai SDK and the local server."""
    async with FakeOpenAIServer() as server:
        model = OpenAIChatModel(server.base_url, "k", max_retries=0)
        tools = diagnosis_tools()
        try:
            started = time.perf_counter()
            for _ in range(runs):
                server.push(*http_steps())
                result = await DiagnosisAgent(model, "m", CannedBoundary(), prompts, NullAudit(), tools=tools).run(ctx(), None)
                assert result.stop_reason == "submitted"
            return (time.perf_counter() - started) / (runs * STEPS) * 1e6
        finally:
            await model.aclose()


async def parallel_ratio(prompts: PromptLibrary, calls: int, delay_s: float) -> float:
    """Wall time of one step with `calls` parallel tool calls of delay_s each, over the sequential sum."""
    reply = ModelReply(
        tool_calls=[ModelToolCall(id=f"p{i}", name="query_logs", arguments=json.dumps(LOGS_ARGS)) for i in range(calls)]
    )
    model = ScriptedChatModel([reply])
    started = time.perf_counter()
    await DiagnosisAgent(model, "m", CannedBoundary(delay_s), prompts, NullAudit()).run(ctx(Budgets(max_steps=1)), None)
    return (time.perf_counter() - started) / (calls * delay_s)


def judge_input_figures() -> tuple[int, int, float]:
    """Bytes of a large snapshot before/after capping to 96 KiB, and ms per build."""
    lines = [
        {
            "timestamp": "2026-11-29T23:00:00Z",
            "service": "order-service",
            "level": "ERROR",
            "message": "HikariPool-1 - Connection is not available " + "x" * 2000,
            "fields": {},
        }
        for _ in range(50)
    ]
    projections = {
        f"c{i}": {
            "tool_call_id": f"c{i}",
            "tool_name": "query_logs",
            "evidence_status": "EVIDENCE_FOUND",
            "count": 50,
            "truncated": False,
            "logs": lines,
        }
        for i in range(20)
    }
    snapshot = VerifiedEvidenceSnapshot(run_id="bench", projections=projections, rule_set_version="r")
    draft = DiagnosisDraft(
        analysis=[
            Analysis(analysis_id=f"a{i}", kind=AnalysisKind.NORMAL, text="t" * 900, tool_call_ids=[f"c{i}"]) for i in range(20)
        ]
    )
    raw = len(json.dumps({"projections": projections}).encode())
    times = []
    for _ in range(5):
        started = time.perf_counter()
        body, _ = build_judge_input("why?", draft, snapshot, 96 * 1024)
        times.append(time.perf_counter() - started)
    return raw, len(json.dumps(body, ensure_ascii=False).encode()), statistics.median(times) * 1000


async def main() -> None:
    prompts = PromptLibrary(PROMPTS_DIR)
    await loop_in_process(prompts, 5)  # warm-up
    in_process = await loop_in_process(prompts, 200)
    over_http = await loop_over_http(prompts, 40)
    print(f"agent loop, in-process scripted model : {in_process:8.0f} us/step")
    print(f"agent loop, openai SDK + local server : {over_http:8.0f} us/step")
    print(f"  HTTP/in-process ratio                : {over_http / in_process:8.1f}x")
    ratio = await parallel_ratio(prompts, 8, 0.1)
    print(f"8 parallel tool calls of 100 ms       : wall/sequential = {ratio:.2f} (1.00 would be sequential)")
    raw, capped, ms = judge_input_figures()
    print(
        f"semantic guard input, 20x50 log lines : {raw / 1024:.0f} KiB snapshot -> {capped / 1024:.1f} KiB request "
        f"(cap 96 KiB), {ms:.1f} ms to build"
    )


if __name__ == "__main__":
    asyncio.run(main())
