"""Pipeline overhead and concurrency: everything but model latency, through the real ChatService.

The model is the local OpenAI-compatible server in a separate process, answering every call after a fixed
delay (router -> agent: query_logs -> agent: submit draft -> semantic guard = 4 model calls per run). Tools
run for real on the bundled demo data, guard and release for real; stores in-process (`--stores sqlite`
puts runs, timeline and audit in a SQLite file instead).

Prints: per-run overhead (wall time minus the model delays) and its share of a run; wall time of 1, 100 and
500 concurrent runs (distinct sessions) with this process's CPU time per run, and the ratio 500 / 1; peak RSS.

Then the same runs as queued turns across processes (`--queue-workers 1,2`): the bench enqueues turn jobs on Redis
Streams (RedisJobQueue, keys under a prefix of their own) and 1, then 2 (one per core), worker processes run them as
`diagbot worker` does — build_services + build_bot: JobWorker -> TurnRunner (placeholder, progress, final message
once) -> ChatService, with the in-process scripted model, Redis session locks and answer records. The Slack Web
API is an in-process stub in each worker (Slack is remote in production; its HTTP is not the pipeline's). Prints
the wall time of the batch against one queued run (goal <= 1.3x with a worker per core), CPU ms per run summed
over the workers, each worker's share of the runs and each process's peak RSS (goal <= 300 MB).

    python bench/bench_pipeline.py [--delay 1.0] [--counts 1,100,500] [--stores sqlite|memory] [--queue-workers 1,2]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import redis.asyncio as aioredis
from pydantic import SecretStr
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.app import build_bot
from bot.serve import queue_for
from core.bootstrap import Services, build_services
from core.contracts.release import Outcome
from core.contracts.run import SessionKey, Turn
from core.llm.model import ModelReply
from core.llm.openai_model import parse_completion
from core.queue.job import TurnJob, turn_job_id
from core.queue.redis_streams import RedisJobQueue
from core.runtime import tune_gc
from core.settings import DEMO_CLOCK, Settings
from core.stores.memory import InMemoryAuditStore, InMemoryRunStore, InMemoryTimelineStore
from testkit.openai_server import FakeOpenAIServer

MODEL_CALLS_PER_RUN = 4
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
RSS_GOAL_MB = 300
RATIO_GOAL = 1.3


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


class StubSlack(AsyncWebClient):
    """The Slack Web API in process: every call succeeds at once; counts final messages."""

    def __init__(self) -> None:
        super().__init__(token="xoxb-bench")
        self._ts = itertools.count(1)
        # Shared by reference: build_bot wraps the client in a copy of it (bot/outgoing.py).
        self.finals = [0]
        self.outcomes: dict[str, int] = {}

    async def api_call(self, api_method: str, *, http_verb: str = "POST", files: Any = None, data: Any = None,
                       params: Any = None, json: Any = None, headers: Any = None, auth: Any = None
                       ) -> AsyncSlackResponse:
        body: dict[str, Any] = {**(params or {}), **(data if isinstance(data, dict) else {}), **(json or {})}
        metadata = body.get("metadata")
        event_type = metadata.get("event_type") if isinstance(metadata, dict) else getattr(metadata, "event_type", None)
        if event_type == "diag_run_finished":
            self.finals[0] += 1
            payload = metadata.get("event_payload") if isinstance(metadata, dict) else None
            outcome = str((payload or {}).get("outcome"))
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        ts = body.get("ts") or f"1700000000.{next(self._ts):06d}"
        reply = {"ok": True, "channel": body.get("channel", "C1"), "ts": ts, "message": {"ts": ts},
                 "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1"}
        return AsyncSlackResponse(client=self, http_verb=http_verb, api_url=api_method, req_args={}, data=reply,
                                  headers={}, status_code=200)


def process_stats(slack: StubSlack) -> dict[str, Any]:
    """What a worker reports: CPU seconds so far, current and peak RSS (MiB), final messages posted by outcome."""
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * resource.getpagesize() / 2**20
    return {"cpu_s": time.process_time(), "rss_mb": rss,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "finals": slack.finals[0],
            "outcomes": dict(slack.outcomes)}


async def serve_worker(delay_s: float, concurrency: int, prefix: str) -> None:
    """Child process: one queue worker as `diagbot worker` builds it; answers `stats` lines on stdin until EOF."""
    with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp:
        settings = Settings(redis_url=REDIS_URL, diag_redis_prefix=prefix, openai_api_key="bench",
                            diag_model="bench-model", database_url=f"sqlite+aiosqlite:///{tmp}/bench.db",
                            diag_clock=DEMO_CLOCK, slack_bot_token=SecretStr("xoxb-bench"),
                            slack_signing_secret=SecretStr("bench"), diag_worker_concurrency=concurrency)
        services = await build_services(settings, model=DelayedModel(delay_s), runs=InMemoryRunStore(),
                                        timeline_store=InMemoryTimelineStore(), audit=InMemoryAuditStore())
        slack = StubSlack()
        bot = build_bot(settings, services.chat_service, services.kv, client=slack, queue=queue_for(services))
        tune_gc()
        bot.start()
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        try:
            while (line := await loop.run_in_executor(None, sys.stdin.readline)).strip():
                if line.strip() == "stats":
                    print(json.dumps(process_stats(slack)), flush=True)
        finally:
            await bot.aclose(1.0)
            await services.aclose()


class Workers:
    """Worker processes of this bench, talked to over their stdin/stdout."""

    def __init__(self, count: int, delay_s: float, concurrency: int, prefix: str) -> None:
        self.procs = [subprocess.Popen([sys.executable, __file__, "--serve-worker", "--delay", str(delay_s),
                                        "--worker-concurrency", str(concurrency), "--redis-prefix", prefix],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                      for _ in range(count)]
        for proc in self.procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit("a queue worker did not start")

    def stats(self) -> list[dict[str, Any]]:
        found = []
        for proc in self.procs:
            assert proc.stdin is not None
            assert proc.stdout is not None
            proc.stdin.write("stats\n")
            proc.stdin.flush()
            found.append(json.loads(proc.stdout.readline()))
        return found

    def close(self) -> None:
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.close()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


async def queued_batch(redis: aioredis.Redis, queue: RedisJobQueue, prefix: str, count: int, tag: str) -> float:
    """Enqueue `count` turns of distinct threads at once; seconds until the workers finished every one."""
    jobs = []
    for i in range(count):
        ts = f"{tag}{i:05d}.000001"
        session = SessionKey(team="bench", channel="C1", thread_ts=ts)
        jobs.append(TurnJob(job_id=turn_job_id("C1", ts), session=session, text="why is order-service failing?",
                            user="u", message_ts=ts, run_id=f"run_{tag}_{i}"))
    started = time.perf_counter()
    gate = asyncio.Semaphore(32)  # a burst of submits, within this client's connection pool

    async def enqueue(job: TurnJob) -> None:
        async with gate:
            await queue.enqueue(job, 100_000)

    await asyncio.gather(*(enqueue(job) for job in jobs))
    stream = prefix + "turns"
    while await redis.xlen(stream):  # noqa: ASYNC110 - the workers are other processes; finish deletes the entry
        await asyncio.sleep(0.01)
    return time.perf_counter() - started


async def measure_queue(delay_s: float, counts: list[int], workers: int) -> dict[str, Any]:
    """1 queued run (best of 2 after a warm-up), then each batch, on `workers` worker processes."""
    redis = aioredis.from_url(REDIS_URL)
    prefix = f"bench-pipeline:{uuid.uuid4().hex[:10]}:"  # keys of their own on the shared Redis, removed at the end
    top = max(counts)
    concurrency = math.ceil(top / workers)
    pool = Workers(workers, delay_s, concurrency, prefix)
    queue = RedisJobQueue(redis, prefix)
    print(f"\n-- queued turns: {workers} worker process{'es' if workers > 1 else ''} "
          f"(DIAG_WORKER_CONCURRENCY={concurrency} each), Redis Streams queue, in-process model and Slack stub")
    try:
        await queued_batch(redis, queue, prefix, 1, f"w{workers}warm")
        single = min([await queued_batch(redis, queue, prefix, 1, f"w{workers}single{i}") for i in range(2)])
        print(f"single queued run: {single:.3f} s wall ({MODEL_CALLS_PER_RUN} model calls x {delay_s:.2f} s delay)")
        ratio = float("nan")
        failures = 0
        for count in counts:
            before = pool.stats()
            wall = await queued_batch(redis, queue, prefix, count, f"w{workers}c{count}")
            after = pool.stats()
            cpu_ms = sum(a["cpu_s"] - b["cpu_s"] for a, b in zip(after, before, strict=True)) * 1000 / count
            shares = "/".join(str(int(a["finals"] - b["finals"])) for a, b in zip(after, before, strict=True))
            not_success = sum(n - b["outcomes"].get(k, 0) for a, b in zip(after, before, strict=True)
                              for k, n in a["outcomes"].items() if k != "SUCCESS")
            ratio = wall / single
            failed = f", {not_success} NOT SUCCESS" if not_success else ""
            print(f"{count:>4} concurrent queued runs: {wall:.3f} s wall ({ratio:.2f}x one run), {cpu_ms:.1f} ms CPU "
                  f"per run (all workers), runs per worker {shares}{failed}; 2 cores (shared)")
            failures += not_success
        peaks = [s["peak_mb"] for s in pool.stats()]
        print(f"ratio {top} concurrent / single with {workers} worker process{'es' if workers > 1 else ''}: "
              f"{ratio:.2f} (goal <= {RATIO_GOAL} with one worker per core; 2 cores here, shared)")
        print("peak RSS per worker process: " + ", ".join(f"{p:.0f} MiB" for p in peaks)
              + f" (goal <= {RSS_GOAL_MB} MB)")
        return {"workers": workers, "ratio": ratio, "peaks": peaks, "failures": failures}
    finally:
        pool.close()
        keys = [k async for k in redis.scan_iter(match=f"{prefix}*", count=1000)]
        for i in range(0, len(keys), 1000):
            await redis.delete(*keys[i:i + 1000])
        await redis.aclose()


def main() -> None:
    """Start the model server process, run the measurements, stop the server."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=1.0, help="model delay per call, seconds")
    parser.add_argument("--counts", default="1,100,500", help="concurrency levels")
    parser.add_argument("--stores", choices=["memory", "sqlite"], default="memory",
                        help="runs/timeline/audit in memory (the pipeline alone) or in SQLite (adds commit cost)")
    parser.add_argument("--model", choices=["both", "http", "inprocess", "none"], default="both",
                        help="model transport: the local server through the openai SDK, an in-process double, both, "
                             "or none (only the queued runs)")
    parser.add_argument("--queue-workers", default="1,2",
                        help="worker process counts for the queued runs (2 = one per core here); empty: skip")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-concurrency", type=int, default=16, help=argparse.SUPPRESS)
    parser.add_argument("--redis-prefix", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model:
        asyncio.run(serve_model(args.delay))
        return
    if args.serve_worker:
        asyncio.run(serve_worker(args.delay, args.worker_concurrency, args.redis_prefix))
        return
    child = subprocess.Popen([sys.executable, __file__, "--serve-model", "--delay", str(args.delay)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        base_url = child.stdout.readline().strip()
        if not base_url.startswith("http"):
            raise SystemExit("the model server did not start")
        counts = [int(c) for c in args.counts.split(",")]
        models = {"both": ["inprocess", "http"], "none": []}.get(args.model, [args.model])
        for model in models:
            asyncio.run(measure(base_url, args.delay, counts, args.stores, model))
    finally:
        child.terminate()
        child.wait(timeout=10)
    if models:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\npeak RSS (pipeline process): {peak_mb:.0f} MiB (goal <= {RSS_GOAL_MB} MB)")
    results = [asyncio.run(measure_queue(args.delay, counts, int(n))) for n in args.queue_workers.split(",") if n]
    if results:
        best = results[-1]
        peak = max(p for r in results for p in r["peaks"])
        met = best["ratio"] <= RATIO_GOAL and peak <= RSS_GOAL_MB and not best["failures"]
        failed = f", {best['failures']} runs NOT SUCCESS" if best["failures"] else ""
        print(f"\ngoal (<= {RATIO_GOAL}x one run with {best['workers']} worker processes on 2 cores, peak RSS <= "
              f"{RSS_GOAL_MB} MB per process): {'met' if met else 'NOT met'} - measured {best['ratio']:.2f}x, "
              f"peak {peak:.0f} MiB{failed}")


if __name__ == "__main__":
    main()
