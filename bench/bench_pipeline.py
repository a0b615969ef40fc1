"""Pipeline overhead and concurrency: everything but model latency, through the real ChatService.

The model is the local OpenAI-compatible server in a separate process, answering every call after a fixed
delay (router -> agent: query_logs -> agent: submit draft -> semantic guard = 4 model calls per run). Tools
run for real on the bundled demo data, guard and release for real; stores in-process (`--stores sqlite`
puts runs, timeline and audit in a SQLite file instead).

Prints: per-run overhead (wall time minus the model delays) and its share of a run; wall time of 1, 100 and
500 concurrent runs (distinct sessions) with this process's CPU time per run, and the ratio 500 / 1; peak RSS.

    python bench/bench_pipeline.py [--delay 1.0] [--counts 1,100,500] [--stores sqlite|memory]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.bootstrap import Services, build_services
from core.contracts.release import Outcome
from core.contracts.run import SessionKey, Turn
from core.llm.model import ModelReply
from core.llm.openai_model import parse_completion
from core.runtime import tune_gc
from core.settings import DEMO_CLOCK, Settings
from core.stores.memory import InMemoryAuditStore, InMemoryRunStore, InMemoryTimelineStore
from testkit.openai_server import FakeOpenAIServer

MODEL_CALLS_PER_RUN = 4


def respond(request: dict[str, Any], delay_s: float) -> dict[str, Any]:
    """A stateless scripted model: what to answer follows from the system prompt title and the history."""
    messages = request["messages"]
    title = str(messages[0]["content"]).splitlines()[0].strip()
    if title == "# Intent Router":
        return {"content": json.dumps({"intent": "DIAGNOSIS"}), "delay_s": delay_s}
    if title == "# Semantic Guard":
        return {"content": json.dumps({"verdict": "SUPPORTED", "reason": "the cited lines show it"}), "delay_s": delay_s}
    results = [m for m in messages if m.get("role") == "tool"]
    if not results:
        arguments = {"service": "order-service", "query": "HikariPool", "level": "ERROR"}
        return {"tool_calls": [{"id": "call_logs", "name": "query_logs", "arguments": arguments}], "delay_s": delay_s}
    call_id = orjson.loads(results[0]["content"])["tool_call_id"]  # the model's own reading: not pipeline CPU
    draft = {
        "conclusion": None,
        "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "tool_call_ids": [call_id],
                      "text": "order-service logged HikariPool connection errors at ERROR level."}],
        "action_plan": [], "recommendations": [],
        "limitations": {"scope": "order-service ERROR logs in the default window", "missing_info": ["database metrics"]},
    }
    return {"tool_calls": [{"id": "call_submit", "name": "submit_diagnosis_draft", "arguments": draft}], "delay_s": delay_s}


class DelayedModel:
    """In-process ChatModel answering like the server after the same delay: isolates the pipeline from HTTP + SDK cost.

    The request and the reply still cross a JSON boundary as they would on the wire: the request body (messages and
    tool schemas) is encoded and decoded, the reply is a chat completion document decoded by the same parser the
    OpenAI model uses. Only the HTTP exchange and the SDK are left out.
    """

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    async def complete(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                       timeout_s: float = 60.0) -> ModelReply:
        body: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            body["tools"] = tools
        entry = respond(orjson.loads(orjson.dumps(body)), self.delay_s)
        await asyncio.sleep(self.delay_s)
        calls = [{"id": c["id"], "type": "function",
                  "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                 for c in entry.get("tool_calls", [])]
        message: dict[str, Any] = {"role": "assistant", "content": entry.get("content")}
        if calls:
            message["tool_calls"] = calls
        completion = {"id": "chatcmpl-bench", "object": "chat.completion", "model": model,
                      "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                      "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}
        return parse_completion(orjson.loads(orjson.dumps(completion)))


async def serve_model(delay_s: float) -> None:
    """Child process: the fake model server, answering forever; prints its base URL."""
    server = FakeOpenAIServer(models=["bench-model"])
    server.push(*([lambda request: respond(request, delay_s)] * 200_000))
    async with server:
        print(server.base_url, flush=True)
        await asyncio.Event().wait()


async def one_run(services: Services, session: str, failures: list[str] | None = None) -> float:
    turn = Turn(session=SessionKey(team="bench", channel="c", thread_ts=session), text="why is order-service failing?",
                user="u", message_ts=session)
    started = time.perf_counter()
    outcome = await services.chat_service.handle(turn)
    elapsed = time.perf_counter() - started
    if outcome.outcome is not Outcome.SUCCESS:
        reason = f"{outcome.outcome.value}: {outcome.fallback.reason if outcome.fallback else ''}"
        if failures is None:
            raise RuntimeError(f"bench run ended {reason}: the scripted pipeline broke")
        failures.append(reason)
    return elapsed


async def batch(services: Services, count: int, tag: str) -> tuple[float, float, list[str]]:
    """Wall time and this process's CPU time of `count` concurrent runs, and the runs that did not succeed."""
    failures: list[str] = []
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one_run(services, f"{tag}-{i}", failures) for i in range(count)))
    return time.perf_counter() - started, time.process_time() - cpu, failures


async def measure(base_url: str, delay_s: float, counts: list[int], stores: str, model: str) -> None:
    """Overhead of one run and wall time of concurrent batches, for one model transport."""
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        settings = Settings(openai_base_url=base_url, openai_api_key="bench", diag_model="bench-model",
                            database_url=f"sqlite+aiosqlite:///{tmp}/bench.db", diag_clock=DEMO_CLOCK)
        overrides: dict[str, Any] = {}
        if stores == "memory":
            overrides = {"runs": InMemoryRunStore(), "timeline_store": InMemoryTimelineStore(), "audit": InMemoryAuditStore()}
        if model == "inprocess":
            overrides["model"] = DelayedModel(delay_s)
        services = await build_services(settings, **overrides)
        tune_gc()  # as `diagbot serve` does after start-up: the bench measures the production configuration
        transport = "local OpenAI-compatible server (separate process) through the openai SDK" if model == "http" else \
            "in-process scripted model (no HTTP, no SDK)"
        print(f"\n-- model: {transport}; stores: in-process canonical/KV + "
              f"{'in-memory' if stores == 'memory' else 'SQLite'} runs/timeline/audit")
        try:
            await one_run(services, "warmup")
            single = min([await one_run(services, f"single-{i}") for i in range(2)])
            overhead = single - MODEL_CALLS_PER_RUN * delay_s
            print(f"single run: {single:.3f} s wall, {MODEL_CALLS_PER_RUN} model calls x {delay_s:.2f} s delay")
            share = 100 * overhead / single
            print(f"pipeline overhead per run: {overhead * 1000:.1f} ms = {share:.2f} % of the run (goal <= 5 %)")
            walls: dict[int, float] = {}
            for count in counts:
                walls[count], cpu, failures = await batch(services, count, f"{model}{count}")
                failed = f", {len(failures)} not SUCCESS (first: {failures[0]})" if failures else ""
                print(f"{count:>4} concurrent runs: {walls[count]:.3f} s wall ({walls[count] / single:.2f}x one run), "
                      f"{cpu * 1000 / count:.1f} ms CPU per run in this process{failed}")
            top = max(counts)
            print(f"ratio {top} concurrent / single: {walls[top] / single:.2f} (goal <= 1.3)")
        finally:
            await services.aclose()


def main() -> None:
    """Start the model server process, run the measurements, stop the server."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=1.0, help="model delay per call, seconds")
    parser.add_argument("--counts", default="1,100,500", help="concurrency levels")
    parser.add_argument("--stores", choices=["memory", "sqlite"], default="memory",
                        help="runs/timeline/audit in memory (the pipeline alone) or in SQLite (adds commit cost)")
    parser.add_argument("--model", choices=["both", "http", "inprocess"], default="both",
                        help="model transport: the local server through the openai SDK, an in-process double, or both")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model:
        asyncio.run(serve_model(args.delay))
        return
    child = subprocess.Popen([sys.executable, __file__, "--serve-model", "--delay", str(args.delay)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        base_url = child.stdout.readline().strip()
        if not base_url.startswith("http"):
            raise SystemExit("the model server did not start")
        counts = [int(c) for c in args.counts.split(",")]
        for model in (["inprocess", "http"] if args.model == "both" else [args.model]):
            asyncio.run(measure(base_url, args.delay, counts, args.stores, model))
    finally:
        child.terminate()
        child.wait(timeout=10)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS (pipeline process): {peak_mb:.0f} MiB")


if __name__ == "__main__":
    main()
