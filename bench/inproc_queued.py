"""Queued runs through one worker in this process, for exact counts (callgrind, cProfile) of a run's CPU.

The worker is built as bench_pipeline's worker processes build it (build_services + build_bot with the in-process
scripted model and Slack stub, logging at INFO to /dev/null, memory runs/timeline/audit), on the Redis at REDIS_URL
under a prefix of its own. The jobs are enqueued from this process too (one enqueue per run, as the serve side).

    python bench/inproc_queued.py --runs 40 [--concurrency 20] [--delay 0.05] [--profile out.pstats]
    valgrind --tool=callgrind --callgrind-out-file=cg.out python bench/inproc_queued.py --runs 40
    BENCH_SRC=../other-tree python bench/inproc_queued.py ...   # measure another checkout with these doubles

Prints the wall time, this process's CPU ms per run and the Redis counts per run; with two --runs values under
callgrind, (instructions(b) - instructions(a)) / (b - a) is the instructions a run costs without start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cost_account, bench_pipeline (its doubles)
sys.path.insert(0, os.environ.get("BENCH_SRC") or str(Path(__file__).resolve().parent.parent))  # the tree measured

import cost_account
import redis.asyncio as aioredis
from bench_pipeline import DelayedModel, StubSlack
from pydantic import SecretStr

from bot.app import build_bot
from bot.serve import queue_for
from core.bootstrap import build_services
from core.contracts.run import SessionKey
from core.observability.log_setup import configure_logging
from core.queue.job import TurnJob, turn_job_id
from core.queue.redis_streams import RedisJobQueue
from core.runtime import tune_gc
from core.settings import DEMO_CLOCK, Settings
from core.stores.memory import InMemoryAuditStore, InMemoryRunStore, InMemoryTimelineStore

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
LOG = open(os.environ.get("BENCH_LOG", os.devnull), "w")  # noqa: SIM115 - the worker's log stream, for the process's life


async def main(runs: int, concurrency: int, delay_s: float, profile: str | None, warmup: int,
               slow_ticks: bool) -> None:
    cost_account.install_counters()
    os.environ.setdefault("DIAG_FIRST_LOOK", "false")
    prefix = f"inproc-queued:{uuid.uuid4().hex[:10]}:"
    configure_logging(logging.INFO, stream=LOG)
    redis = aioredis.from_url(REDIS_URL)
    with tempfile.TemporaryDirectory(prefix="inproc-queued-") as tmp:
        settings = Settings(redis_url=REDIS_URL, diag_redis_prefix=prefix, openai_api_key="bench",
                            diag_model="bench-model", database_url=f"sqlite+aiosqlite:///{tmp}/bench.db",
                            diag_clock=DEMO_CLOCK, slack_bot_token=SecretStr("xoxb-bench"),
                            slack_signing_secret=SecretStr("bench"), diag_worker_concurrency=concurrency)
        overrides: dict[str, Any] = {"runs": InMemoryRunStore(), "timeline_store": InMemoryTimelineStore(),
                                     "audit": InMemoryAuditStore()}
        services = await build_services(settings, model=DelayedModel(delay_s), **overrides)
        if slow_ticks:  # the session gate's cancel-flag poll runs per 0.25 s of wall time, not per run: under
            # callgrind (50x slower, and slower still on a loaded machine) it would count for a share of each run
            # that follows the machine's load. Its lease renewals (every lease/3) still run.
            services.chat_service._gate._cancel_poll_s = 3600.0  # a measurement setting
        slack = StubSlack()
        bot = build_bot(settings, services.chat_service, services.kv, client=slack, queue=queue_for(services),
                        metrics=services.metrics, feedback=services.feedback)
        tune_gc()
        bot.start()
        queue = RedisJobQueue(redis, prefix)

        async def batch(count: int, tag: str) -> None:
            target = slack.finals[0] + count
            for i in range(count):
                ts = f"{tag}{i:05d}.000001"
                session = SessionKey(team="bench", channel="C1", thread_ts=ts)
                await queue.enqueue(TurnJob(job_id=turn_job_id("C1", ts), session=session,
                                            text="why is order-service failing?", user="u", message_ts=ts,
                                            run_id=f"run_{tag}_{i}"), 100_000)
            while slack.finals[0] < target or await redis.xlen(prefix + "turns"):  # noqa: ASYNC110
                await asyncio.sleep(0.005)

        try:
            if warmup:
                await batch(warmup, "warm")
            counts = dict(cost_account.COUNTS)
            profiler = cProfile.Profile(time.thread_time) if profile else None
            started, cpu = time.perf_counter(), time.process_time()
            if profiler:
                profiler.enable()
            await batch(runs, "run")
            if profiler and profile:
                profiler.disable()
                profiler.dump_stats(profile)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            sent = {k: (v - counts.get(k, 0)) / runs for k, v in cost_account.COUNTS.items()}
            print(f"{runs} runs: {wall:.3f} s wall, {cpu * 1000 / runs:.2f} ms CPU per run; Redis per run "
                  f"{sent.get('redis_commands', 0):.2f} commands, {sent.get('redis_round_trips', 0):.2f} round trips; "
                  f"outcomes {slack.outcomes}", flush=True)
        finally:
            await bot.aclose(1.0)
            await services.aclose()
            keys = [k async for k in redis.scan_iter(match=f"{prefix}*", count=1000)]
            if keys:
                await redis.delete(*keys)
            await redis.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--slow-ticks", action="store_true",
                        help="no cancel-flag poll per 0.25 s of wall time (for instruction counts under callgrind)")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.concurrency, args.delay, args.profile, args.warmup, args.slow_ticks))
