"""Pipeline overhead and concurrency: everything but model latency, through the real ChatService.

The model is the local OpenAI-compatible server in a separate process, answering every call after a fixed
delay (router -> agent: query_logs -> agent: submit draft -> semantic guard = 4 model calls per run). Tools
run for real on the bundled demo data, guard and release for real, stores in-process + SQLite.

Prints: per-run overhead (wall time minus the model delays) and its share of a run; wall time of 1, 100 and
500 concurrent runs (distinct sessions) and the ratio 500 / 1; peak RSS.

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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.bootstrap import Services, build_services
from core.contracts.release import Outcome
from core.contracts.run import SessionKey, Turn
from core.demo import DEMO_CLOCK
from core.settings import Settings
from core.stores.memory import InMemoryAuditStore, InMemoryRunStore, InMemoryTimelineStore
from core.testing.openai_server import FakeOpenAIServer

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
    call_id = json.loads(results[0]["content"])["tool_call_id"]
    draft = {
        "conclusion": None,
        "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "tool_call_ids": [call_id],
                      "text": "order-service logged HikariPool connection errors at ERROR level."}],
        "action_plan": [], "recommendations": [],
        "limitations": {"scope": "order-service ERROR logs in the default window", "missing_info": ["database metrics"]},
    }
    return {"tool_calls": [{"id": "call_submit", "name": "submit_diagnosis_draft", "arguments": draft}], "delay_s": delay_s}


async def serve_model(delay_s: float) -> None:
    """Child process: the fake model server, answering forever; prints its base URL."""
    server = FakeOpenAIServer(models=["bench-model"])
    server.push(*([lambda request: respond(request, delay_s)] * 200_000))
    async with server:
        print(server.base_url, flush=True)
        await asyncio.Event().wait()


async def one_run(services: Services, session: str) -> float:
    turn = Turn(session=SessionKey(team="bench", channel="c", thread_ts=session), text="why is order-service failing?",
                user="u", message_ts=session)
    started = time.perf_counter()
    outcome = await services.chat_service.handle(turn)
    elapsed = time.perf_counter() - started
    if outcome.outcome is not Outcome.SUCCESS:
        raise SystemExit(f"bench run ended {outcome.outcome.value} {outcome.fallback_type}: the scripted pipeline broke")
    return elapsed


async def batch(services: Services, count: int, tag: str) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(one_run(services, f"{tag}-{i}") for i in range(count)))
    return time.perf_counter() - started


async def measure(base_url: str, delay_s: float, counts: list[int], stores: str) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        settings = Settings(openai_base_url=base_url, openai_api_key="bench", diag_model="bench-model",
                            database_url=f"sqlite+aiosqlite:///{tmp}/bench.db", diag_clock=DEMO_CLOCK)
        overrides: dict[str, Any] = {}
        if stores == "memory":
            overrides = {"runs": InMemoryRunStore(), "timeline_store": InMemoryTimelineStore(), "audit": InMemoryAuditStore()}
        services = await build_services(settings, **overrides)
        try:
            await one_run(services, "warmup")
            singles = [await one_run(services, f"single-{i}") for i in range(3)]
            single = min(singles)
            model_time = MODEL_CALLS_PER_RUN * delay_s
            overhead = single - model_time
            print(f"stores: in-process canonical/KV + {'in-memory' if stores == 'memory' else 'SQLite'} runs/timeline/audit")
            print(f"single run: {single:.3f} s wall, {MODEL_CALLS_PER_RUN} model calls x {delay_s:.2f} s delay")
            print(f"pipeline overhead per run: {overhead * 1000:.1f} ms = {100 * overhead / single:.2f} % of the run "
                  f"(goal <= 5 %)")
            walls: dict[int, float] = {}
            for count in counts:
                walls[count] = await batch(services, count, f"c{count}")
                print(f"{count:>4} concurrent runs: {walls[count]:.3f} s wall "
                      f"({walls[count] / single:.2f}x one run)")
            top = max(counts)
            print(f"ratio {top} concurrent / single: {walls[top] / single:.2f} (goal <= 1.3)")
        finally:
            await services.aclose()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS (pipeline process): {peak_mb:.0f} MiB")


def main() -> None:
    """Start the model server process, run the measurements, stop the server."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=1.0, help="model delay per call, seconds")
    parser.add_argument("--counts", default="1,100,500", help="concurrency levels")
    parser.add_argument("--stores", choices=["sqlite", "memory"], default="sqlite")
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
        asyncio.run(measure(base_url, args.delay, [int(c) for c in args.counts.split(",")], args.stores))
    finally:
        child.terminate()
        child.wait(timeout=10)


if __name__ == "__main__":
    main()
