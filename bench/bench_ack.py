"""Ack latency of the Events endpoint while 200, then 1,000 runs are in flight, against a bare Bolt app.

Starts the local fake Slack Web API, then (1) diagbot's app (build_bot) working its own runs, with a chat service
whose runs last minutes, (2) diagbot taking events only (DIAG_SERVE_RUNS=false: build_bot(work=False) over the
Redis Streams queue of a private redis-server; the runs are left to `diagbot worker` processes, none here), (3) a
bare Bolt AsyncApp whose app_mention listener does nothing. For each it sends signed app_mention requests over
real HTTP (distinct event_ids and ts): first 200 to fill (diagbot: 200 runs in flight, each with a placeholder and
a progress edit), then paced rounds (50/s, alternating the apps), a saturated burst (4 concurrent) that brings
diagbot to 1,000 runs in flight, and paced rounds again at 1,000 in flight. Prints p50/p99 per app and load,
the ratios to the bare app, and the goals: paced p99 <= 1.5x the bare app with the runs in the same process, and
<= 50 ms with 1,000 in flight; and each app's CPU time per request.

diagbot (both kinds) is served as `diagbot serve` serves it: from its ingress thread (bot/ingress.py). With
--one-loop a fourth app, 'one-loop', is diagbot with runs served from its main loop as before that thread, measured
in the same alternating rounds. With --run-cpu-ms N each run does N ms of pure-Python work on the main loop in one
piece when it starts (what a cold guard check or a big redaction is), so the ack path's exposure to it shows.

Run: python bench/bench_ack.py [--one-loop] [--run-cpu-ms 4]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from pydantic import SecretStr
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cost_account

from bot.app import build_bot
from bot.health import Readiness
from bot.ingress import IngressThread, MainLoop, ingress_app
from bot.serve import build_web_app
from core.contracts.evidence import EvidenceStatus
from core.contracts.progress import ProgressStage, ProgressUpdate, ToolProgress
from core.contracts.release import FailureCause, Outcome, ReleaseOutcome
from core.contracts.run import RunRecord, TimelineEvent, Turn
from core.ports import ProgressSink
from core.queue.redis_streams import RedisJobQueue
from core.runtime import event_loop, run_loop, tune_gc
from core.settings import Settings
from core.stores.kv import InMemoryKV
from core.stores.redis_client import redis_client_from_url
from tests.fakes.slack_server import FakeSlack

SECRET = "bench-secret"
IN_FLIGHT = 200
MEASURED = 400
CONCURRENCY = 4
RUNS = IN_FLIGHT + 2 * MEASURED
"""Every request starts a run that lasts minutes: the worker runs them all at once (up to 1,000, the setting's
maximum), as the app did before turns went through the job queue, instead of queueing all but 16."""
RATE = 50
ROUNDS = 4
KINDS = ("diagbot", "events-only", "bare")
ONE_LOOP = "one-loop"
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


def busy(ms: float) -> None:
    """Pure-Python work holding the GIL for `ms` (a run's guard check, redaction or rendering)."""
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


class SlowChat:
    """A ChatServicePort whose runs report progress once and then take minutes (until cancelled); with `cpu_ms`,
    each run first does that much CPU-bound work on the loop, in one piece."""

    def __init__(self, cpu_ms: float = 0.0) -> None:
        self.started = 0
        self.cpu_ms = cpu_ms

    async def handle(self, turn: Turn, progress: ProgressSink | None = None) -> ReleaseOutcome:
        self.started += 1
        if self.cpu_ms:
            busy(self.cpu_ms)
        run_id = f"run_{self.started}"
        if progress is not None:
            await progress.update(run_id, ProgressUpdate(stage=ProgressStage.TOOL_FINISHED, tool=ToolProgress(
                tool_call_id="call_1", tool="query_logs", evidence_status=EvidenceStatus.EVIDENCE_FOUND, count=3)))
        await asyncio.sleep(600)
        return ReleaseOutcome(run_id=run_id, outcome=Outcome.FAILURE)

    async def has_session(self, session_key: str) -> bool:
        return False

    async def cancel_run(self, run_id: str) -> bool:
        return False

    async def cancel_session(self, session_key: str) -> bool:
        return False

    async def abandon(self, session_key: str, run_id: str,
                      cause: FailureCause = FailureCause.DEADLINE) -> ReleaseOutcome:
        return ReleaseOutcome(run_id=run_id, outcome=Outcome.FAILURE)

    async def stale_runs(self, min_age_s: float, limit: int = 100) -> list[RunRecord]:
        return []

    async def get_run(self, run_id: str) -> RunRecord | None:
        return None

    async def timeline(self, run_id: str) -> list[TimelineEvent]:
        return []


def signed(n: int, prefix: str) -> tuple[bytes, dict[str, str]]:
    """A signed app_mention delivery with a unique event_id and ts."""
    ts = f"{1700000000 + n}.{n:06d}"
    body = json.dumps({"token": "x", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
                       "event_id": f"Ev{prefix}{n:07d}", "event_time": int(time.time()),
                       "event": {"type": "app_mention", "user": "U1", "text": "<@UBOT> why?", "ts": ts,
                                 "channel": "C1", "event_ts": ts}})
    now = str(int(time.time()))
    sig = "v0=" + hmac.new(SECRET.encode(), f"v0:{now}:{body}".encode(), hashlib.sha256).hexdigest()
    return body.encode(), {"Content-Type": "application/json", "X-Slack-Request-Timestamp": now, "X-Slack-Signature": sig}


async def fire(session: aiohttp.ClientSession, url: str, start: int, count: int, prefix: str) -> list[float]:
    """Send `count` requests with CONCURRENCY workers; returns each ack latency in ms."""
    latencies: list[float] = []
    queue = list(range(start, start + count))

    async def worker() -> None:
        while queue:
            body, headers = signed(queue.pop(), prefix)
            t = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            latencies.append((time.perf_counter() - t) * 1000)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return latencies


def pct(values: list[float], p: float) -> float:
    """Percentile by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def serve_fake_slack(port_queue: Any) -> None:
    """Process: the fake Slack Web API (Slack is remote in production, so it gets its own process here too)."""

    async def run() -> None:
        slack = await FakeSlack().start()
        port_queue.put(slack.port)
        await asyncio.Event().wait()

    asyncio.run(run())


def serve_app(kind: str, slack_url: str, redis_url: str, cpu_ms: float, port_queue: Any) -> None:
    """Process: diagbot working its runs (kind='diagbot'), diagbot taking events only ('events-only': enqueue on
    Redis, no worker) or a bare Bolt app ('bare') on a free local port. diagbot serves from its ingress thread, as
    `diagbot serve` does (bot/ingress.py); 'one-loop' is 'diagbot' served from its main loop as before the ingress
    thread (--one-loop); the bare app serves from its one loop."""

    async def serve_here(web_app: web.Application) -> None:
        runner = web.AppRunner(web_app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_queue.put(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        await asyncio.Event().wait()

    async def run() -> None:
        tune_gc()  # as `diagbot serve` does; applied to the bare app too, so only the adapter differs
        if kind == "bare":
            bare = AsyncApp(signing_secret=SECRET, client=AsyncWebClient(token="xoxb-bench", base_url=slack_url))

            @bare.event("app_mention")
            async def nothing() -> None:
                return None

            web_app = bare.web_app(path="/slack/events")
            web_app.router.add_get("/in-flight", cpu_only)
            await serve_here(web_app)
        settings = Settings(slack_bot_token=SecretStr("xoxb-bench"), slack_signing_secret=SecretStr(SECRET),
                            slack_api_url=slack_url, diag_worker_concurrency=min(RUNS, 1000),
                            diag_queue_max=100_000)
        chat = SlowChat(cpu_ms)
        queue = None
        if kind == "events-only":  # as `diagbot serve` with DIAG_SERVE_RUNS=false builds it
            queue = RedisJobQueue(redis_client_from_url(redis_url), f"bench-ack:{time.time_ns()}:")
        bot = build_bot(settings, chat, InMemoryKV(), queue=queue, work=kind != "events-only")
        main = MainLoop(asyncio.get_running_loop())

        async def in_flight(_: web.Request) -> web.Response:
            # turns go through the job queue: jobs.in_flight counts queued and running ones; a SlowChat run
            # never ends, so the runs started are the runs active
            return web.json_response({"in_flight": bot.deps.jobs.in_flight, "active": chat.started,
                                      "cpu_s": time.process_time()})

        def build() -> web.Application:
            app = ingress_app(bot.app, main, Readiness([]), path="/slack/events", signing_secret=SECRET,
                              body_timeout_s=5.0)
            app.router.add_get("/in-flight", main.relay(in_flight))
            return app

        if kind == "one-loop":
            web_app = build_web_app(bot.app)
            web_app.router.add_get("/in-flight", in_flight)
            await serve_here(web_app)
        port_queue.put(await IngressThread(build, "127.0.0.1", 0).start())
        await asyncio.Event().wait()

    run_loop(run(), bench_loop())  # every app on the loop `diagbot serve` runs, so only the adapter differs


def bench_loop() -> str:
    """The loop the apps run on: DIAG_EVENT_LOOP's (auto: uvloop when installed), or BENCH_LOOP for an A B."""
    return event_loop(os.environ.get("BENCH_LOOP") or os.environ.get("DIAG_EVENT_LOOP") or "auto")  # type: ignore[arg-type]


async def cpu_only(_: web.Request) -> web.Response:
    """The bare app's /in-flight: its process CPU time only."""
    return web.json_response({"in_flight": 0, "active": 0, "cpu_s": time.process_time()})


async def paced(session: aiohttp.ClientSession, url: str, start: int, count: int, prefix: str) -> list[float]:
    """Open-loop load: one request every 1/RATE s whatever the answers (how Slack delivers events)."""
    latencies: list[float] = []

    async def one(n: int) -> None:
        body, headers = signed(n, prefix)
        t = time.perf_counter()
        async with session.post(url, data=body, headers=headers) as resp:
            await resp.read()
            assert resp.status == 200, resp.status
        latencies.append((time.perf_counter() - t) * 1000)

    tasks = []
    for n in range(start, start + count):
        tasks.append(asyncio.create_task(one(n)))
        await asyncio.sleep(1 / RATE)
    await asyncio.gather(*tasks)
    return latencies


async def fill(session: aiohttp.ClientSession, port: int, prefix: str) -> None:
    """Start IN_FLIGHT long runs (diagbot) or deliveries (bare) and let their background work settle."""
    await fire(session, f"http://127.0.0.1:{port}/slack/events", 0, IN_FLIGHT, prefix)


def start(target: Any, *args: Any) -> tuple[Any, int]:
    """Start a server process and wait for its port."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue), daemon=True)
    proc.start()
    return proc, queue.get(timeout=60)


def show(title: str, ms: dict[str, list[float]]) -> dict[str, float]:
    """Print one table; returns each diagbot kind's p99 ratio to the bare app."""
    print(f"\n[{title}]")
    print(f"{'':12} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8} {'p99/bare':>9}")
    bare99 = pct(ms["bare"], 99)
    ratios = {}
    for name, vals in ms.items():
        ratios[name] = pct(vals, 99) / bare99
        print(f"{name:12} {pct(vals, 50):8.2f} {pct(vals, 99):8.2f} {statistics.mean(vals):8.2f} {ratios[name]:8.2f}x")
    return ratios


async def active(session: aiohttp.ClientSession, port: int, when: str) -> None:
    async with session.get(f"http://127.0.0.1:{port}/in-flight") as resp:
        counts = await resp.json()
    print(f"diagbot turns in flight {when}: {counts['in_flight']} (runs active: {counts['active']})")


async def cpu_s(session: aiohttp.ClientSession, ports: dict[str, int]) -> dict[str, float]:
    """Each app process's CPU time so far (user + system, all its threads)."""
    found = {}
    for kind, port in ports.items():
        async with session.get(f"http://127.0.0.1:{port}/in-flight") as resp:
            found[kind] = float((await resp.json())["cpu_s"])
    return found


async def paced_rounds(session: aiohttp.ClientSession, ports: dict[str, int], start: int) -> dict[str, list[float]]:
    """ROUNDS paced rounds per app, alternating the apps so machine noise (shared cores) falls on all alike."""
    found: dict[str, list[float]] = {kind: [] for kind in ports}
    n = start
    for _ in range(ROUNDS):
        for kind, port in ports.items():
            found[kind] += await paced(session, f"http://127.0.0.1:{port}/slack/events", n, MEASURED // ROUNDS,
                                       kind[0] + "p")
            await asyncio.sleep(2.0)  # this app's background posts finish before the next is measured
        n += MEASURED // ROUNDS
    return found


async def measure(slack_url: str, redis_url: str, kinds: tuple[str, ...], cpu_ms: float,
                  procs: list[Any]) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[float]],
                                             dict[str, float]]:
    ports = {}
    for kind in kinds:
        proc, ports[kind] = start(serve_app, kind, slack_url, redis_url, cpu_ms)
        procs.append(proc)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:
        for kind, port in ports.items():
            await fill(session, port, kind[0])
        await asyncio.sleep(3.0)  # placeholders and first progress edits of the first wave go out
        await active(session, ports["diagbot"], "before measuring")
        cpu_before = await cpu_s(session, ports)
        paced_ms = await paced_rounds(session, ports, IN_FLIGHT)
        saturated_ms: dict[str, list[float]] = {}
        n = IN_FLIGHT + MEASURED
        for kind, port in ports.items():
            saturated_ms[kind] = await fire(session, f"http://127.0.0.1:{port}/slack/events", n, MEASURED, kind[0])
            await asyncio.sleep(2.0)
        await active(session, ports["diagbot"], "after the saturated burst")
        paced_full = await paced_rounds(session, ports, IN_FLIGHT + 2 * MEASURED)
        await active(session, ports["diagbot"], "at the end")
        cpu_after = await cpu_s(session, ports)
    per_request = {kind: (cpu_after[kind] - cpu_before[kind]) * 1000 / (3 * MEASURED) for kind in ports}
    return paced_ms, saturated_ms, paced_full, per_request


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--one-loop", action="store_true", help="also measure diagbot served from its main loop")
    parser.add_argument("--run-cpu-ms", type=float, default=0.0, help="CPU-bound work per run on the main loop")
    args = parser.parse_args()
    kinds = (*KINDS[:1], ONE_LOOP, *KINDS[1:]) if args.one_loop else KINDS
    slack_proc, slack_port = start(serve_fake_slack)
    slack_url = f"http://127.0.0.1:{slack_port}/api/"
    procs = [slack_proc]
    try:
        with cost_account.private_redis() as private_url:
            paced_ms, saturated_ms, paced_full, cpu_ms = await measure(slack_url, private_url or REDIS_URL, kinds,
                                                                       args.run_cpu_ms, procs)
    finally:
        for proc in procs:
            proc.terminate()
            proc.join()
    print(f"{MEASURED} requests per app and load; every request starts one more long run in diagbot (events-only: "
          f"one more queued turn); load average {os.getloadavg()[0]:.2f} (2 cores, shared); CPU-bound work per run: "
          f"{args.run_cpu_ms:g} ms; event loop of every app: {bench_loop()}")
    ratios = show(f"paced {RATE}/s, {ROUNDS} alternating rounds, 200-600 runs in flight", paced_ms)
    show(f"saturated, {CONCURRENCY} concurrent (throughput-bound: includes each run's Slack posts), 600-1000 in "
         f"flight", saturated_ms)
    show(f"paced {RATE}/s again, 1000 runs in flight (and 400 queued)", paced_full)
    print("\nCPU per request over the three measured phases (process user+system, every thread; diagbot: the "
          "ack and its run's placeholder and progress edit): "
          + ", ".join(f"{kind} {ms:.2f} ms" for kind, ms in cpu_ms.items()))
    met = ratios["diagbot"] <= 1.5 and pct(paced_ms["diagbot"], 99) <= 50
    full_p99 = {kind: pct(paced_full[kind], 99) for kind in ("diagbot", "events-only")}
    print(f"\ngoal (paced, runs in the same process: p99 <= 1.5x the bare app): {'met' if met else 'NOT met'} - "
          f"{ratios['diagbot']:.2f}x (events only: {ratios['events-only']:.2f}x)")
    print(f"goal (paced, 1000 runs in flight: p99 <= 50 ms): "
          f"{'met' if full_p99['diagbot'] <= 50 else 'NOT met'} - {full_p99['diagbot']:.1f} ms "
          f"(events only: {full_p99['events-only']:.1f} ms)")


if __name__ == "__main__":
    asyncio.run(main())
