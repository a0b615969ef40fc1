"""Pipeline overhead and concurrency: everything but model latency, through the real ChatService.

The model is the local OpenAI-compatible server in a separate process, answering every call after a fixed
delay (router -> agent: query_logs -> agent: submit draft -> semantic guard = 4 model calls per run). Tools
run for real on the bundled demo data, guard and release for real; stores in-process (`--stores sqlite`
puts runs, timeline and audit in a SQLite file instead).

Prints: per-run overhead (wall time minus the model delays) and its share of a run; wall time of 1, 100 and
500 concurrent runs (distinct sessions) with this process's CPU time per run, and the ratio 500 / 1; peak RSS.

Then the same runs as queued turns across processes (`--queue-workers 1,2`): the bench enqueues turn jobs on Redis
Streams (a private redis-server when one is installed, else REDIS_URL under a prefix of its own) and 1, then 2 (one
per core), worker processes run them as `diagbot worker` does — build_services + build_bot (logging at INFO,
metrics): the job worker -> turn runner (placeholder, progress, final message once) -> ChatService, with the
in-process scripted model, Redis session locks and answer records. The Slack Web API is an in-process stub in each
worker (Slack is remote in production; its HTTP is not the pipeline's). Prints the wall time of the batch against
one queued run (goal <= 1.3x with a worker per core), CPU ms per run summed over the workers (goal <= 4.5 ms), each
worker's share of the runs and each process's peak RSS (goal <= 300 MB).

The per-run cost account (bench/cost_account.py), for every batch: Redis commands, round trips and bytes sent per
run (counted in redis-py's connection, in the workers and on the enqueue side), the private server's commands by
name and its CPU, SQL statements per run (SQLAlchemy's execute event); then one more batch (`--account-runs`) under
py-spy for CPU ms per run by stage (ingress, queue, turn lifecycle, router, agent loop, tools, boundary + redaction,
guard, judge, release, render, delivery, stores, ...) and by innermost library (json, pydantic, logging, redis...).

`--against TREE` runs the queued measurement and the account on this tree and on another checkout with its own
.venv (e.g. the previous main in a second worktree), A B A B, and prints both side by side with their ratio:

    python bench/bench_pipeline.py [--delay 1.0] [--counts 1,100,500] [--stores sqlite|memory] [--queue-workers 1,2]
    python bench/bench_pipeline.py --against ../perf-base --queue-workers 2 [--rounds 2] [--top 40]"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import logging
import math
import os
import resource
import signal
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

# BENCH_SRC: the tree to measure (another checkout with its own venv, for the side-by-side account); default this one.
sys.path.insert(0, os.environ.get("BENCH_SRC") or str(Path(__file__).resolve().parent.parent))

import cost_account  # beside this file, whichever tree is measured

from bot.app import build_bot
from bot.serve import queue_for
from core.bootstrap import Services, build_services
from core.contracts.release import Outcome
from core.contracts.run import SessionKey, Turn
from core.llm.model import ModelReply
from core.llm.openai_model import parse_completion
from core.observability.log_setup import configure_logging
from core.queue.job import TurnJob, turn_job_id
from core.queue.redis_streams import RedisJobQueue
from core.runtime import tune_gc
from core.settings import DEMO_CLOCK, Settings
from core.stores.memory import InMemoryAuditStore, InMemoryRunStore, InMemoryTimelineStore
from testkit.openai_server import FakeOpenAIServer

SRC = Path(sys.path[0]).resolve()
HERE = Path(__file__).resolve().parent.parent  # this bench's own tree (its doubles)


def model_calls(single_s: float, delay_s: float) -> int:
    """Model calls a run made, from its wall time (each waits `delay_s`; the pipeline adds well under half of one).
    Router, agent steps and the semantic guard: 4 before the first look, 3 with it (its results let the agent
    submit at its first step)."""
    return max(1, round(single_s / delay_s))


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
            calls = model_calls(single, delay_s)
            overhead = single - calls * delay_s
            print(f"single run: {single:.3f} s wall, {calls} model calls x {delay_s:.2f} s delay")
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


LAGS: list[float] = []
"""A worker's event-loop lags (ms) since its last stats line: what an ack served by that loop would wait."""


async def tick_lags(every_s: float = 0.01) -> None:
    """Record how late a 10 ms sleep wakes up, for the life of the worker."""
    while True:
        started = time.perf_counter()
        await asyncio.sleep(every_s)
        LAGS.append((time.perf_counter() - started - every_s) * 1000)


def process_stats(slack: StubSlack) -> dict[str, Any]:
    """What a worker reports: CPU seconds so far, current and peak RSS (MiB), final messages posted by outcome, its
    Redis and SQL counts, its loop lag p99 / max since the last report."""
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * resource.getpagesize() / 2**20
    lags = sorted(LAGS) or [0.0]
    LAGS.clear()
    return {"cpu_s": time.process_time(), "rss_mb": rss,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "finals": slack.finals[0],
            "outcomes": dict(slack.outcomes), "counts": dict(cost_account.COUNTS),
            "lag_p99_ms": lags[int(0.99 * (len(lags) - 1))], "lag_max_ms": lags[-1]}


DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - the log stream of a worker process, for its whole life


async def serve_worker(delay_s: float, concurrency: int, prefix: str, redis_url: str, stores: str) -> None:
    """Child process: one queue worker as `diagbot worker` builds it (logging at INFO, metrics), over the in-process
    model and Slack stub; answers `stats` lines on stdin until EOF."""
    cost_account.install_counters()
    cost_account.install_gc_clock()
    configure_logging(logging.INFO, stream=DEVNULL)
    with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp:
        settings = Settings(redis_url=redis_url, diag_redis_prefix=prefix, openai_api_key="bench",
                            diag_model="bench-model", database_url=f"sqlite+aiosqlite:///{tmp}/bench.db",
                            diag_clock=DEMO_CLOCK, slack_bot_token=SecretStr("xoxb-bench"),
                            slack_signing_secret=SecretStr("bench"), diag_worker_concurrency=concurrency)
        overrides: dict[str, Any] = {}
        if stores == "memory":
            overrides = {"runs": InMemoryRunStore(), "timeline_store": InMemoryTimelineStore(), "audit": InMemoryAuditStore()}
        services = await build_services(settings, model=DelayedModel(delay_s), **overrides)
        slack = StubSlack()
        bot = build_bot(settings, services.chat_service, services.kv, client=slack, queue=queue_for(services),
                        metrics=services.metrics, feedback=services.feedback)
        tune_gc()
        if thresholds := os.environ.get("BENCH_GC_THRESHOLDS"):  # e.g. 100000,20,20: try other GC settings
            gc.set_threshold(*(int(t) for t in thresholds.split(",")))
        bot.start()
        ticker = asyncio.create_task(tick_lags())
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        try:
            while (line := await loop.run_in_executor(None, sys.stdin.readline)).strip():
                if line.strip() == "stats":
                    print(json.dumps(process_stats(slack)), flush=True)
        finally:
            ticker.cancel()
            await bot.aclose(1.0)
            await services.aclose()


class Workers:
    """Worker processes of this bench, talked to over their stdin/stdout."""

    def __init__(self, count: int, delay_s: float, concurrency: int, prefix: str, redis_url: str, stores: str) -> None:
        self.procs = [subprocess.Popen([sys.executable, __file__, "--serve-worker", "--delay", str(delay_s),
                                        "--worker-concurrency", str(concurrency), "--redis-prefix", prefix,
                                        "--redis-url", redis_url, "--stores", stores],
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

    @property
    def pids(self) -> list[int]:
        return [proc.pid for proc in self.procs]


async def queued_batch(redis: aioredis.Redis, queue: RedisJobQueue, prefix: str, count: int,
                       tag: str) -> tuple[float, float, dict[str, int]]:
    """Enqueue `count` turns of distinct threads at once; seconds until the workers finished every one, this
    process's CPU seconds for the enqueueing (the serve side of a queued turn) and its Redis counts for it."""
    jobs = []
    for i in range(count):
        ts = f"{tag}{i:05d}.000001"
        session = SessionKey(team="bench", channel="C1", thread_ts=ts)
        jobs.append(TurnJob(job_id=turn_job_id("C1", ts), session=session, text="why is order-service failing?",
                            user="u", message_ts=ts, run_id=f"run_{tag}_{i}"))
    started, cpu, counts = time.perf_counter(), time.process_time(), dict(cost_account.COUNTS)
    gate = asyncio.Semaphore(32)  # a burst of submits, within this client's connection pool

    async def enqueue(job: TurnJob) -> None:
        async with gate:
            await queue.enqueue(job, 100_000)

    await asyncio.gather(*(enqueue(job) for job in jobs))
    enqueue_cpu = time.process_time() - cpu
    sent = {key: value - counts.get(key, 0) for key, value in cost_account.COUNTS.items()}
    stream = prefix + "turns"
    while await redis.xlen(stream):  # noqa: ASYNC110 - the workers are other processes; finish deletes the entry
        await asyncio.sleep(0.01)
    return time.perf_counter() - started, enqueue_cpu, sent


async def server_snapshot(redis: aioredis.Redis, private: bool) -> dict[str, float]:
    """The private redis-server's counters (nothing when the bench shares REDIS_URL with others)."""
    if not private:
        return {}
    return cost_account.server_figures(await redis.info(), await redis.info("commandstats"))


def per_run(after: list[dict[str, Any]], before: list[dict[str, Any]], count: int) -> dict[str, Any]:
    """Workers' CPU ms, Redis and SQL counts per run between two stats snapshots, runs per worker, failures."""
    pairs = list(zip(after, before, strict=True))
    counts: dict[str, float] = {}
    for a, b in pairs:
        for key, value in a["counts"].items():
            counts[key] = counts.get(key, 0) + (value - b["counts"].get(key, 0)) / count
    return {"cpu_ms": sum(a["cpu_s"] - b["cpu_s"] for a, b in pairs) * 1000 / count, "counts": counts,
            "lag_p99_ms": max(a.get("lag_p99_ms", 0.0) for a in after),
            "lag_max_ms": max(a.get("lag_max_ms", 0.0) for a in after),
            "shares": "/".join(str(int(a["finals"] - b["finals"])) for a, b in pairs),
            "not_success": sum(n - b["outcomes"].get(k, 0) for a, b in pairs for k, n in a["outcomes"].items()
                               if k != "SUCCESS")}


QUIET_COMMANDS = ("cmd:xlen", "cmd:info", "cmd:ping", "cmd:client|setinfo", "cmd:hello", "cmd:scan", "cmd:del")
"""The bench's own commands on the private server (its wait loop, INFO snapshots, clean-up), left out of per-run."""


def show_counts(figures: dict[str, Any]) -> None:
    """Redis and SQL per run: every process of the bench (client side) and the server's view."""
    c = figures["counts"]
    ingress = figures["ingress_counts"]
    print(f"     Redis per run: workers {c.get('redis_commands', 0):.1f} commands in "
          f"{c.get('redis_round_trips', 0):.1f} round trips, {c.get('redis_bytes', 0):.0f} bytes sent; enqueue side "
          f"{ingress.get('redis_commands', 0):.1f} commands / {ingress.get('redis_round_trips', 0):.1f} round trips / "
          f"{ingress.get('redis_bytes', 0):.0f} bytes; SQL statements per run: {c.get('sql_statements', 0):.1f}; "
          f"GC pauses {c.get('gc_ms', 0):.2f} ms per run (gen2 {c.get('gc_ms_gen2', 0):.2f}); event-loop lag "
          f"p99 {figures.get('lag_p99_ms', 0):.1f} ms, max {figures.get('lag_max_ms', 0):.1f} ms")
    sql = {k[4:]: v for k, v in c.items() if k.startswith("sql:")}
    if sql:
        print("     SQL per run by statement: " + ", ".join(f"{k} {v:.1f}" for k, v in
                                                         sorted(sql.items(), key=lambda kv: -kv[1])))
    server = figures.get("server")
    if server:
        commands = {k: v for k, v in server.items() if k.startswith("cmd:") and k not in QUIET_COMMANDS}
        top = ", ".join(f"{k[4:].upper()} {v:.1f}" for k, v in sorted(commands.items(), key=lambda kv: -kv[1]))
        print(f"     redis-server per run: {sum(commands.values()):.1f} commands ({top}); "
              f"{server.get('net_input_bytes', 0):.0f} bytes in; {server.get('cpu_s', 0) * 1000:.2f} ms CPU")


async def run_batch(pool: Workers, redis: aioredis.Redis, queue: RedisJobQueue, prefix: str, count: int, tag: str,
                    private: bool) -> dict[str, Any]:
    before, server_before = pool.stats(), await server_snapshot(redis, private)
    wall, enqueue_cpu, ingress = await queued_batch(redis, queue, prefix, count, tag)
    after, server_after = pool.stats(), await server_snapshot(redis, private)
    figures = per_run(after, before, count)
    figures.update(wall=wall, enqueue_cpu_ms=enqueue_cpu * 1000 / count,
                   ingress_counts={k: v / count for k, v in ingress.items()},
                   server={k: v / count for k, v in cost_account.delta(server_after, server_before).items()})
    return figures


def show_account(cpu_ms: float, enqueue_ms: float, found: cost_account.Attribution, top: int) -> dict[str, Any]:
    """Print CPU ms per run by stage and by library; returns them."""
    total = found.total or 1
    stages = {name: cpu_ms * found.stages[name] / total for name in cost_account.STAGES}
    libraries = {name: cpu_ms * n / total for name, n in found.libraries.most_common(12)}
    print(f"\n   CPU per queued run by stage ({found.total} py-spy samples of the workers; ms per run):")
    print(f"     {'ingress (enqueue, serve side)':34} {enqueue_ms:6.2f}")
    for name, ms in stages.items():
        print(f"     {name:34} {ms:6.2f}  {100 * ms / cpu_ms if cpu_ms else 0:5.1f} %")
    print(f"     {'total (workers)':34} {cpu_ms:6.2f}")
    if found.unmatched:
        print("     other (ours) is: " + ", ".join(f"{k} {v}" for k, v in found.unmatched.most_common(6)))
    print("   by innermost library: " + ", ".join(f"{k} {v:.2f}" for k, v in libraries.items()))
    if top:
        print("   top functions (self samples):")
        for name, n in found.functions.most_common(top):
            print(f"     {n:6d}  {name}")
    return {"stages": stages, "libraries": libraries}


async def account(pool: Workers, redis: aioredis.Redis, queue: RedisJobQueue, prefix: str, count: int,
                  private: bool, top: int) -> dict[str, Any]:
    """A batch of its own under py-spy (sampling costs CPU on these 2 cores: not the batch that gives the ratio)."""
    try:
        sampler = cost_account.Sampler(pool.pids)
    except FileNotFoundError:
        print("\n   CPU by stage: skipped (no py-spy; `pip install py-spy`)")
        return {}
    figures = await run_batch(pool, redis, queue, prefix, count, "acct", private)
    raw = sampler.stop()
    found = cost_account.attribute(raw, (str(SRC), str(HERE)))  # the measured tree and this bench
    if not found.total:
        print("\n   CPU by stage: skipped (py-spy took no samples: ptrace not allowed?)")
        return {}
    gc_ms = figures["counts"].get("gc_ms", 0.0)
    print(f"\n   account batch: {count} concurrent queued runs under py-spy, {figures['cpu_ms']:.1f} ms CPU per run, of "
          f"which {gc_ms:.2f} ms garbage collection (spread over the stages that allocated when it started)")
    return {**show_account(figures["cpu_ms"], figures["enqueue_cpu_ms"], found, top), "gc_ms": gc_ms}


async def measure_queue(delay_s: float, counts: list[int], workers: int, redis_url: str, private: bool, stores: str,
                        account_runs: int, top: int) -> dict[str, Any]:
    """1 queued run (best of 2 after a warm-up), then each batch, on `workers` worker processes; then the account."""
    redis = aioredis.from_url(redis_url)
    prefix = f"bench-pipeline:{uuid.uuid4().hex[:10]}:"  # keys of their own on the shared Redis, removed at the end
    highest = max(counts)
    concurrency = math.ceil(max(highest, account_runs) / workers)
    pool = Workers(workers, delay_s, concurrency, prefix, redis_url, stores)
    queue = RedisJobQueue(redis, prefix)
    plural = "es" if workers > 1 else ""
    print(f"\n-- queued turns: {workers} worker process{plural} (DIAG_WORKER_CONCURRENCY={concurrency} each), Redis "
          f"Streams queue ({'private redis-server' if private else redis_url}), in-process model and Slack stub, "
          f"{stores} runs/timeline/audit, first look {os.environ.get('DIAG_FIRST_LOOK', 'on')}; load average "
          f"{os.getloadavg()[0]:.2f} (2 cores, shared)")
    result: dict[str, Any] = {"workers": workers, "batches": {}}
    try:
        await queued_batch(redis, queue, prefix, 1, f"w{workers}warm")
        single = min([(await queued_batch(redis, queue, prefix, 1, f"w{workers}single{i}"))[0] for i in range(2)])
        print(f"single queued run: {single:.3f} s wall ({model_calls(single, delay_s)} model calls x {delay_s:.2f} s "
              f"delay)")
        ratio = float("nan")
        failures = 0
        for count in counts:
            figures = await run_batch(pool, redis, queue, prefix, count, f"w{workers}c{count}", private)
            ratio = figures["wall"] / single
            failed = f", {figures['not_success']} NOT SUCCESS" if figures["not_success"] else ""
            print(f"{count:>4} concurrent queued runs: {figures['wall']:.3f} s wall ({ratio:.2f}x one run), "
                  f"{figures['cpu_ms']:.1f} ms CPU per run (all workers; enqueue side "
                  f"{figures['enqueue_cpu_ms']:.2f} ms), runs per worker {figures['shares']}{failed}; 2 cores (shared)")
            show_counts(figures)
            failures += figures["not_success"]
            result["batches"][count] = {**figures, "ratio": ratio}
        peaks = [s["peak_mb"] for s in pool.stats()]
        print(f"ratio {highest} concurrent / single with {workers} worker process{plural}: "
              f"{ratio:.2f} (goal <= {RATIO_GOAL} with one worker per core; 2 cores here, shared)")
        print("peak RSS per worker process: " + ", ".join(f"{p:.0f} MiB" for p in peaks)
              + f" (goal <= {RSS_GOAL_MB} MB)")
        if account_runs:
            result["account"] = await account(pool, redis, queue, prefix, account_runs, private, top)
        result.update(ratio=ratio, peaks=peaks, failures=failures, single=single)
        return result
    finally:
        pool.close()
        keys = [k async for k in redis.scan_iter(match=f"{prefix}*", count=1000)]
        for i in range(0, len(keys), 1000):
            await redis.delete(*keys[i:i + 1000])
        await redis.aclose()


CPU_GOAL_MS = 4.5


def goals(results: list[dict[str, Any]]) -> None:
    """The issue's goals over the last (one worker per core) queued measurement."""
    best = results[-1]
    peak = max(p for r in results for p in r["peaks"])
    top = max(best["batches"])
    cpu = best["batches"][top]["cpu_ms"]
    met = best["ratio"] <= RATIO_GOAL and peak <= RSS_GOAL_MB and not best["failures"]
    failed = f", {best['failures']} runs NOT SUCCESS" if best["failures"] else ""
    print(f"\ngoal (<= {RATIO_GOAL}x one run with {best['workers']} worker processes on 2 cores, peak RSS <= "
          f"{RSS_GOAL_MB} MB per process): {'met' if met else 'NOT met'} - measured {best['ratio']:.2f}x, "
          f"peak {peak:.0f} MiB{failed}; load average {os.getloadavg()[0]:.2f}")
    print(f"goal (CPU per queued run <= {CPU_GOAL_MS} ms, all workers, {top} concurrent): "
          f"{'met' if cpu <= CPU_GOAL_MS else 'NOT met'} - measured {cpu:.2f} ms")


def tree_name(tree: Path) -> str:
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip() or tree.name


def row_figures(result: dict[str, Any]) -> dict[str, float]:
    """The figures of one queued measurement that the side-by-side table compares."""
    top = max(result["batches"])
    batch = result["batches"][top]
    counts, server = batch["counts"], batch.get("server") or {}
    rows = {f"{top} queued: wall / one run": result["ratio"], f"{top} queued: CPU ms per run (workers)": batch["cpu_ms"],
            "enqueue side CPU ms per run": batch["enqueue_cpu_ms"],
            "Redis commands per run (workers)": counts.get("redis_commands", 0),
            "Redis round trips per run (workers)": counts.get("redis_round_trips", 0),
            "bytes sent to Redis per run (workers)": counts.get("redis_bytes", 0),
            "Redis commands per run (enqueue side)": batch["ingress_counts"].get("redis_commands", 0),
            "SQL statements per run": counts.get("sql_statements", 0),
            "GC pause ms per run (workers)": counts.get("gc_ms", 0),
            f"{top} queued: event-loop lag p99 ms (worst worker)": batch.get("lag_p99_ms", 0.0),
            "redis-server CPU ms per run": server.get("cpu_s", 0) * 1000,
            "peak RSS MiB (max worker)": max(result["peaks"])}
    for name, ms in (result.get("account") or {}).get("stages", {}).items():
        rows[f"CPU ms: {name}"] = ms
    for name, ms in (result.get("account") or {}).get("libraries", {}).items():
        rows[f"CPU ms in library: {name}"] = ms
    return rows


def side_by_side(trees: list[Path], args: argparse.Namespace) -> None:
    """Run the queued measurement on this tree and on `--against`, A B A B, then print both with their ratio."""
    runs: dict[Path, list[dict[str, float]]] = {tree: [] for tree in trees}
    for round_no in range(args.rounds):
        for tree in trees:
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                print(f"\n==== round {round_no + 1}: {tree_name(tree)} ({tree}); load average "
                      f"{os.getloadavg()[0]:.2f} (2 cores, shared)", flush=True)
                command = [str(tree / ".venv/bin/python"), __file__, "--model", "none", "--queue-workers",
                           args.queue_workers, "--counts", args.counts, "--delay", str(args.delay), "--stores",
                           args.stores, "--account-runs", str(args.account_runs), "--first-look", args.first_look,
                           "--json-out", out.name]
                env = {**os.environ, "BENCH_SRC": str(tree), "BENCH_PY_SPY": cost_account.py_spy() or ""}
                subprocess.run(command, env=env, check=True)
                runs[tree].append(row_figures(json.loads(Path(out.name).read_text())[-1]))
    this, other = trees
    names = list(dict.fromkeys(key for tree in trees for run in runs[tree] for key in run))
    print(f"\n== per-run cost account, {tree_name(this)} against {tree_name(other)} ({args.rounds} rounds A B A B, "
          f"{args.queue_workers.split(',')[-1]} worker processes, {args.stores} stores, first look {args.first_look}, "
          f"load average {os.getloadavg()[0]:.2f}, 2 cores)")
    print(f"{'figure':48} {tree_name(this):>10} {tree_name(other):>10} {'ratio':>6}  runs (A | B)")
    for name in names:
        a = [run.get(name, 0.0) for run in runs[this]]
        b = [run.get(name, 0.0) for run in runs[other]]
        mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
        ratio = f"{mean_a / mean_b:6.2f}" if mean_b else "     -"
        spread = " ".join(f"{v:.1f}" for v in a) + " | " + " ".join(f"{v:.1f}" for v in b)
        print(f"{name:48} {mean_a:10.2f} {mean_b:10.2f} {ratio}  {spread}")


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
    parser.add_argument("--account-runs", type=int, default=200,
                        help="runs of the batch sampled by py-spy for CPU by stage (0: none)")
    parser.add_argument("--top", type=int, default=0, help="also print the N functions with most samples")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout with its own .venv (e.g. the previous main): the queued measurement "
                             "and the cost account run on both, A B A B, and print side by side")
    parser.add_argument("--rounds", type=int, default=2, help="A B rounds with --against")
    parser.add_argument("--first-look", choices=["on", "off"], default="on",
                        help="DIAG_FIRST_LOOK for the runs (off: the same tool calls as trees before the first look, "
                             "for a like-for-like --against)")
    parser.add_argument("--shared-redis", action="store_true",
                        help="queue on REDIS_URL instead of a private redis-server (no server-side figures)")
    parser.add_argument("--json-out", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-concurrency", type=int, default=16, help=argparse.SUPPRESS)
    parser.add_argument("--redis-prefix", default="", help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", default=REDIS_URL, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_look == "off":
        os.environ["DIAG_FIRST_LOOK"] = "false"  # the worker processes inherit it; older trees ignore it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean-up (worker processes, private redis) runs
    if args.serve_model:
        asyncio.run(serve_model(args.delay))
        return
    if args.serve_worker:
        # the loop `diagbot worker` runs (DIAG_EVENT_LOOP, default auto: uvloop when installed); BENCH_LOOP=asyncio
        # or uvloop for an A B of the two (trees before core.runtime.run_loop ran asyncio's)
        choice = os.environ.get("BENCH_LOOP") or os.environ.get("DIAG_EVENT_LOOP") or "auto"
        try:
            from core.runtime import event_loop, run_loop
        except ImportError:
            asyncio.run(serve_worker(args.delay, args.worker_concurrency, args.redis_prefix, args.redis_url, args.stores))
        else:
            run_loop(serve_worker(args.delay, args.worker_concurrency, args.redis_prefix, args.redis_url, args.stores),
                     event_loop(choice))  # type: ignore[arg-type]
        return
    if args.against is not None:
        side_by_side([SRC, args.against.resolve()], args)
        return
    counts = [int(c) for c in args.counts.split(",")]
    models = {"both": ["inprocess", "http"], "none": []}.get(args.model, [args.model])
    if models:
        child = subprocess.Popen([sys.executable, __file__, "--serve-model", "--delay", str(args.delay)],
                                 stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None
            base_url = child.stdout.readline().strip()
            if not base_url.startswith("http"):
                raise SystemExit("the model server did not start")
            for model in models:
                asyncio.run(measure(base_url, args.delay, counts, args.stores, model))
        finally:
            child.terminate()
            child.wait(timeout=10)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\npeak RSS (pipeline process): {peak_mb:.0f} MiB (goal <= {RSS_GOAL_MB} MB)")
    cost_account.install_counters()
    with cost_account.private_redis(enabled=not args.shared_redis) as private_url:
        results = [asyncio.run(measure_queue(args.delay, counts, int(n), private_url or REDIS_URL, private_url is not None,
                                             args.stores, args.account_runs, args.top))
                   for n in args.queue_workers.split(",") if n]
    if results:
        goals(results)
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
