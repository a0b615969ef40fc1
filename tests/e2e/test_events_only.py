"""`diagbot serve` with DIAG_SERVE_RUNS=false takes events only: real processes, one serve and one worker sharing
Redis and PostgreSQL. Every mention is acked and enqueued by serve and run and answered once by the worker; serve
runs none itself (its /metrics count no run). Without REDIS_URL that mode refuses to start: the turns would never
run."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.bot.slack_requests import mention
from tests.fakes.cluster import Cluster, cluster
from tests.sql_databases import empty_database

pytestmark = [pytest.mark.postgres, pytest.mark.redis]
TURNS = 4


async def runs_counted(c: Cluster, port: int) -> float:
    """The sum of diagbot_runs_total on a process's /metrics."""
    async with c.http.get(f"http://127.0.0.1:{port}/metrics") as resp:
        text = await resp.text()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("diagbot_runs_total"))


async def test_an_events_only_serve_leaves_every_run_to_the_worker(tmp_path: Path) -> None:
    async with empty_database("postgres", tmp_path) as url, cluster(tmp_path, url) as c:
        serve = await c.start("a", DIAG_SERVE_RUNS="false")
        worker = await c.start("w", command="worker", SLACK_SIGNING_SECRET="")
        threads = [f"{6000 + i}.000100" for i in range(TURNS)]
        for ts in threads:
            status, _ = await c.sender(serve).event(mention(f"<@UBOT> why? (thread {ts})", ts=ts), event_id=f"Ev{ts}")
            assert status == 200
        await c.until(lambda: all(c.finals(ts) for ts in threads), 90, "every turn answered by the worker")
        assert all(len(c.finals(ts)) == 1 for ts in threads)
        assert "taking events only" in serve.log()
        assert await runs_counted(c, serve.port) == 0
        assert await runs_counted(c, worker.port) == TURNS


async def test_events_only_without_redis_refuses_to_start(tmp_path: Path) -> None:
    env = {"DIAG_SERVE_RUNS": "false", "SLACK_BOT_TOKEN": "xoxb-x", "SLACK_SIGNING_SECRET": "s",
           "DATABASE_URL": f"sqlite:///{tmp_path}/d.db", "PATH": "/usr/bin:/bin"}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "entrypoints.cli", "serve", env=env,
                                                stderr=asyncio.subprocess.PIPE, cwd=Path(__file__).parents[2])
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2
    assert b"DIAG_SERVE_RUNS=false needs REDIS_URL" in err
