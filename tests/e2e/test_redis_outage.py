"""Redis killed for 20 s while two real `diagbot serve` replicas have six turns in flight, then restarted on the
same data: every turn ends in exactly one final message. Turns answered while the stores were down (their answer
records and job finishes could not be written) are not run and answered again when Redis is back — the bug this
guards against answered one of them a second time, SUCCESS under its FAILURE."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.e2e.test_durable_turns import assert_one_final_each, send_mentions
from tests.fakes.cluster import cluster
from tests.redis_server import redis_server
from tests.sql_databases import empty_database

pytestmark = [pytest.mark.postgres]
OUTAGE_S = 20.0
CLAIM_AFTER_S = 3.0  # the cluster's DIAG_QUEUE_CLAIM_AFTER_S


async def test_redis_killed_for_20_s_with_turns_in_flight_answers_each_turn_once(tmp_path: Path) -> None:
    with redis_server(tmp_path / "redis") as server:
        async with empty_database("postgres", tmp_path) as url, cluster(tmp_path, url, redis_url=server.url) as c:
            await c.start("a")
            await c.start("b")
            early = await send_mentions(c, 0, 3, "delay=4 why?", 5000)  # finish while Redis is down
            late = await send_mentions(c, 1, 3, "delay=30 why?", 6000)  # finish after it is back
            await c.until(lambda: c.chat_model.calls >= 6, 30, "six runs in flight")
            server.kill()
            down_at = time.monotonic()
            await c.until(lambda: all(c.finals(ts) for ts in early), OUTAGE_S - 2, "the early turns answered")
            await asyncio.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down_at)))  # the rest of the outage
            server.start()
            await c.until(lambda: all(c.finals(ts) for ts in early + late), 90, "every turn answered")
            # A redelivered job is taken over after CLAIM_AFTER_S and would answer within its run's delay (4 s):
            # wait well past both for the second answers the bug produced.
            await asyncio.sleep(3 * CLAIM_AFTER_S + 8)  # a negative: its absence is the behaviour under test
            assert_one_final_each(c, early + late)
            # A re-run would edit the same placeholder, so the thread alone cannot show it: count what was sent.
            sent = [call for call in c.slack.calls if call.method in ("chat.update", "chat.postMessage")
                    and (call.params.get("metadata") or {}).get("event_type") == "diag_run_finished"]
            assert len(sent) == 6, [call.params.get("text") for call in sent]
            assert c.chat_model.calls == 6  # no turn was run a second time
            assert all(r.proc.returncode is None for r in c.replicas)  # both replicas rode it out
