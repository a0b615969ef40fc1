"""Soak: ≥ 10,000 turns on one process through the durable queue path, each ending in exactly one final message.

One process runs the bot as `diagbot serve` does (build_services + build_bot): turns are submitted with
`TurnJobs.submit` (what the event listeners call after the ack), queued on Redis Streams (`RedisJobQueue`), taken by
the process's `JobWorker` and run by `TurnRunner` through the real ChatService — Redis session locks and canonical
store, SQLite runs/timeline/audit, real tools on the bundled demo data, guard and release — with bench_pipeline's
in-process scripted model (router -> query_logs -> draft -> semantic guard, a short delay per call). The fake Slack Web
API runs in a child process (it keeps every message; its memory is not the bot's).

Threads get several turns each (follow-ups queue behind their thread's running turn). Submission is open-loop with
a bounded number of turns outstanding. Prints turns, final messages, turns without a final (goal 0), turns with
more than one, runs left RUNNING, and the bot process's RSS at start, along the way and at the end.

    python bench/bench_soak.py [--turns 10000] [--per-thread 4] [--outstanding 200] [--delay 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import resource
import sqlite3
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import redis.asyncio as aioredis
from aiohttp import web
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_pipeline import DelayedModel

from bot.app import build_bot
from bot.serve import queue_for
from core.bootstrap import build_services
from core.contracts.run import SessionKey
from core.runtime import tune_gc
from core.settings import DEMO_CLOCK, Settings
from tests.fakes.slack_server import FakeSlack

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
EVENT_TYPE = "diag_run_finished"
CHANNEL = "C1"
ANSWER_WAIT_S = 180.0


def rss_mb() -> float:
    """This process's current resident set size, MiB (Linux /proc)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def serve_fake_slack(port_queue: Any) -> None:
    """Child process: the fake Slack Web API, plus /bench/finals listing every message that became a final one."""

    async def run() -> None:
        slack = await FakeSlack().start()
        finals: dict[str, dict[str, Any]] = {}  # message ts -> thread, run id, outcome

        def watch(name: str) -> None:
            handler = getattr(slack, name)

            def wrapped(params: dict[str, Any]) -> dict[str, Any]:
                result: dict[str, Any] = handler(params)
                metadata = params.get("metadata") or {}
                if result.get("ok") and metadata.get("event_type") == EVENT_TYPE:
                    ts = str(result.get("ts") or params.get("ts"))
                    stored = slack.messages.get((str(params.get("channel")), ts)) or {}
                    payload = metadata.get("event_payload") or {}
                    finals.setdefault(ts, {"ts": ts, "thread_ts": stored.get("thread_ts"),
                                           "run_id": payload.get("run_id"), "outcome": payload.get("outcome")})
                return result

            setattr(slack, name, wrapped)

        for name in ("_m_chat_postMessage", "_m_chat_update"):
            watch(name)

        async def count(_: web.Request) -> web.Response:
            slack.calls.clear()  # recorded calls are for tests' assertions; a soak would only accumulate them
            return web.json_response({"finals": len(finals), "messages": len(slack.messages)})

        async def listing(_: web.Request) -> web.Response:
            return web.json_response(list(finals.values()))

        app = web.Application()
        app.router.add_get("/bench/count", count)
        app.router.add_get("/bench/finals", listing)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_queue.put((slack.port, site._server.sockets[0].getsockname()[1]))  # type: ignore[union-attr]
        await asyncio.Event().wait()

    asyncio.run(run())


async def finals_count(http: aiohttp.ClientSession, url: str) -> int:
    async with http.get(f"{url}/bench/count") as resp:
        return int((await resp.json())["finals"])


async def soak(args: argparse.Namespace, slack_port: int, bench_port: int) -> bool:
    bench_url = f"http://127.0.0.1:{bench_port}"
    prefix = f"soak:{uuid.uuid4().hex[:10]}:"  # keys of their own on the shared Redis, removed at the end
    admin = aioredis.from_url(REDIS_URL)
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        settings = Settings(redis_url=REDIS_URL, diag_redis_prefix=prefix, database_url=f"sqlite+aiosqlite:///{tmp}/soak.db",
                            diag_model="bench-model", openai_api_key="bench", diag_clock=DEMO_CLOCK,
                            slack_bot_token=SecretStr("xoxb-soak"), slack_signing_secret=SecretStr("soak"),
                            slack_api_url=f"http://127.0.0.1:{slack_port}/api/",
                            diag_worker_concurrency=args.concurrency)
        services = await build_services(settings, model=DelayedModel(args.delay))
        bot = build_bot(settings, services.chat_service, services.kv, queue=queue_for(services))
        tune_gc()
        bot.start()
        rss: list[tuple[int, float]] = [(0, rss_mb())]
        threads = [f"{1900000000 + i}.000001" for i in range(-(-args.turns // args.per_thread))]
        plan = [(threads[i % len(threads)], f"{1900000000 + i % len(threads)}.{i // len(threads) + 1:06d}")
                for i in range(args.turns)]  # round-robin: a thread's turns arrive while its earlier ones run
        results: Counter[str] = Counter()
        started, cpu = time.monotonic(), time.process_time()
        try:
            async with aiohttp.ClientSession() as http:
                answered = 0
                for n, (thread_ts, ts) in enumerate(plan):
                    while n - answered >= args.outstanding:
                        await asyncio.sleep(0.05)  # finals arrive in the other process: poll its count
                        answered = await finals_count(http, bench_url)
                    session = SessionKey(team="T1", channel=CHANNEL, thread_ts=thread_ts)
                    results[(await bot.deps.jobs.submit(session, "why is order-service failing?", "U1", ts)).value] += 1
                    if (n + 1) % 1000 == 0:
                        rss.append((n + 1, rss_mb()))
                        print(f"  {n + 1} turns submitted, {answered} answered, {time.monotonic() - started:.0f} s, "
                              f"RSS {rss[-1][1]:.0f} MiB", flush=True)
                deadline = time.monotonic() + ANSWER_WAIT_S
                while answered < args.turns and time.monotonic() < deadline:
                    await asyncio.sleep(0.2)
                    answered = await finals_count(http, bench_url)
                wall, cpu = time.monotonic() - started, time.process_time() - cpu
                await asyncio.sleep(3.0)  # a late second final would arrive now
                async with http.get(f"{bench_url}/bench/finals") as resp:
                    finals: list[dict[str, Any]] = await resp.json()
            rss.append((-1, rss_mb()))  # at the end, every answer in
            jobs: Counter[str] = Counter()
            unattributed = 0
            for final in finals:
                job: Any = await admin.get(f"{prefix}run-job:{final['run_id']}")
                if job is None:
                    unattributed += 1
                else:
                    jobs[job.decode() if isinstance(job, bytes) else str(job)] += 1
        finally:
            await bot.aclose(5.0)
            await services.aclose()
            keys = [k async for k in admin.scan_iter(match=f"{prefix}*", count=1000)]
            for i in range(0, len(keys), 1000):
                await admin.delete(*keys[i:i + 1000])
            await admin.aclose()
        with contextlib.closing(sqlite3.connect(f"{tmp}/soak.db")) as db:
            statuses = dict(db.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
    expected = {f"{CHANNEL}:{ts}" for _, ts in plan}
    without = len(expected - set(jobs))
    twice = sum(1 for job, k in jobs.items() if k > 1)
    outcomes = Counter(str(f["outcome"]) for f in finals)
    print("\n== soak: one process, queue path (TurnJobs.submit -> Redis Streams -> JobWorker -> TurnRunner -> "
          "ChatService) ==")
    print(f"turns:                     {args.turns} in {len(threads)} threads ({args.per_thread} per thread), "
          f"submitted {dict(results)}; {args.outstanding} outstanding at most, {args.concurrency} runs at a time")
    print(f"final messages:            {len(finals)} (outcomes {dict(outcomes)})")
    print(f"turns without a final:     {without}  goal 0")
    print(f"turns with > 1 final:      {twice}  goal 0")
    if unattributed:
        print(f"unattributed finals:       {unattributed}")
    print(f"runs by status:            {statuses}")
    print(f"wall {wall:.0f} s ({args.turns / wall:.0f} turns/s), CPU {cpu * 1000 / args.turns:.1f} ms per turn "
          f"in the bot process; model delay {args.delay} s x 4 calls per turn")
    print("RSS (bot process):         " + ", ".join(f"{mb:.0f} MiB {'at the end' if n < 0 else f'after {n}'}"
                                                      for n, mb in rss)
          + f"; peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(f"RSS start -> end:          {rss[0][1]:.0f} -> {rss[-1][1]:.0f} MiB "
          f"(after the first 1,000 turns: {rss[1][1] if len(rss) > 2 else float('nan'):.0f} MiB)")
    met = without == 0 and twice == 0 and len(finals) == args.turns
    print(f"goal (0 turns without a final message, none with two): {'met' if met else 'NOT met'}")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--per-thread", type=int, default=4, help="turns per thread")
    parser.add_argument("--outstanding", type=int, default=200, help="turns submitted but not yet answered, at most")
    parser.add_argument("--concurrency", type=int, default=16, help="DIAG_WORKER_CONCURRENCY")
    parser.add_argument("--delay", type=float, default=0.02, help="model delay per call, seconds")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    ports = ctx.Queue()
    child = ctx.Process(target=serve_fake_slack, args=(ports,), daemon=True)
    child.start()
    try:
        slack_port, bench_port = ports.get(timeout=60)
        return 0 if asyncio.run(soak(args, slack_port, bench_port)) else 1
    finally:
        child.terminate()
        child.join(10)


if __name__ == "__main__":
    raise SystemExit(main())
