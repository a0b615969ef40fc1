"""ToolBoundary over real stores: Redis canonical records, SQLite audit and timeline."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from core.contracts.evidence import EvidenceStatus, InvocationState, RawResult
from core.contracts.run import Budgets, EventType
from core.errors import ToolFailure
from core.evidence.boundary import ToolBoundary
from core.evidence.projection import projection_size
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import RedisCanonicalStore
from core.stores.sql import Database, SqlAuditStore, SqlTimelineStore
from core.stores.sql.migrate import upgrade
from testkit.tool_names import ToolName
from testkit.tools import FakeTool

pytestmark = pytest.mark.redis

LOGS = ToolName.QUERY_LOGS


def _logs(n: int) -> RawResult:
    items = [{"timestamp": f"2024-05-01T23:0{i % 10}:00Z", "service": "order-service", "level": "ERROR",
              "message": f"HikariPool-1 timeout after 30000ms db=mysql://app:pw{i}@db/shop", "trace_id": f"t{i}"}
             for i in range(n)]
    window = {"start": "2024-05-01T22:00:00Z", "end": "2024-05-01T23:00:00Z"}
    return RawResult(items=items, total_count=n, effective_arguments=window)


@pytest.fixture
async def sql(sqlite_url: str) -> AsyncIterator[Database]:
    """A fresh SQLite audit/timeline database."""
    db = Database(sqlite_url)
    await upgrade(db)
    yield db
    await db.dispose()


def _ctx(run_id: str, db: Database, budgets: Budgets | None = None) -> RunContext:
    return RunContext(run_id=run_id, session_key="T:C:1", query="why?", timeline=RunTimeline(run_id, SqlTimelineStore(db)),
                      budgets=budgets or Budgets())


async def test_call_is_recorded_in_redis_sqlite_and_timeline(
    redis_client: aioredis.Redis, key_prefix: str, sql: Database
) -> None:
    """A FOUND call: READY record in Redis with TTL and raw result, audit row in SQLite, TOOL_CALL event; secrets hidden."""
    canonical = RedisCanonicalStore(redis_client, prefix=key_prefix, ttl_s=300)
    audit = SqlAuditStore(sql)
    boundary = ToolBoundary({LOGS: FakeTool(LOGS, _logs(80))}, canonical, audit)
    ctx = _ctx("run-1", sql)
    projection = await boundary.invoke(ctx, "call_1", "query_logs", json.dumps({"query": "timeout"}))

    assert projection["evidence_status"] == EvidenceStatus.EVIDENCE_FOUND
    assert projection["count"] == 80
    assert projection["truncated"] is True
    assert projection["window_start"] == "2024-05-01T22:00:00Z"
    assert "pw1@" not in json.dumps(projection)
    assert projection_size(projection) <= 8192

    (record,) = await canonical.list_run("run-1", with_raw=True)
    assert record.state == InvocationState.READY
    assert record.projection == projection
    assert record.raw_result is not None
    assert len(record.raw_result.items) == 80
    assert 0 < await redis_client.ttl(f"{key_prefix}inv:run-1:call_1") <= 300

    (meta,) = await audit.invocations("run-1")
    assert (meta.tool_call_id, meta.state, meta.count, meta.truncated) == ("call_1", InvocationState.READY, 80, True)
    assert meta.raw_bytes > meta.projection_bytes == projection_size(projection)

    (event,) = await SqlTimelineStore(sql).list("run-1")
    assert event.type == EventType.TOOL_CALL
    assert event.summary["tool_call_id"] == "call_1"
    assert "HikariPool" not in json.dumps(event.summary)


async def test_duplicate_provider_ids_are_minted_per_run_in_redis(
    redis_client: aioredis.Redis, key_prefix: str, sql: Database
) -> None:
    """The Redis reservation makes a reused provider id in one run get a fresh id; another run keeps it."""
    canonical = RedisCanonicalStore(redis_client, prefix=key_prefix)
    boundary = ToolBoundary({LOGS: FakeTool(LOGS, _logs(1))}, canonical, SqlAuditStore(sql))
    ctx = _ctx("run-1", sql)
    first = await boundary.invoke(ctx, "call_1", "query_logs", {"query": "a"})
    second = await boundary.invoke(ctx, "call_1", "query_logs", {"query": "b"})
    other = await boundary.invoke(_ctx("run-2", sql), "call_1", "query_logs", {"query": "c"})
    assert first["tool_call_id"] == "call_1"
    assert second["tool_call_id"].startswith("call_")
    assert second["tool_call_id"] != "call_1"
    assert other["tool_call_id"] == "call_1"
    ids = [r.tool_call_id for r in await canonical.list_run("run-1")]
    assert ids == ["call_1", second["tool_call_id"]]


async def test_failed_call_is_a_failed_record_and_audit_row(redis_client: aioredis.Redis, key_prefix: str, sql: Database) -> None:
    """A ToolFailure leaves a FAILED canonical record and an audit row with the error code."""
    canonical = RedisCanonicalStore(redis_client, prefix=key_prefix)
    audit = SqlAuditStore(sql)
    tool = FakeTool(LOGS, error=ToolFailure("LOGS_UNREADABLE", "log folder missing"))
    boundary = ToolBoundary({LOGS: tool}, canonical, audit)
    projection = await boundary.invoke(_ctx("run-1", sql), "call_1", "query_logs", {"query": "a"})
    assert projection["error"]["code"] == "LOGS_UNREADABLE"
    record = (await canonical.get_many("run-1", ["call_1"]))["call_1"]
    assert record is not None
    assert record.state == InvocationState.FAILED
    (meta,) = await audit.invocations("run-1")
    assert meta.error_code == "LOGS_UNREADABLE"
    assert meta.evidence_status == EvidenceStatus.ERROR


async def test_redis_down_gives_store_unavailable_and_audit_still_works(sql: Database) -> None:
    """With Redis unreachable, the call is an ERROR (STORE_UNAVAILABLE) and the backend is not trusted as evidence."""
    client = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    try:
        tool = FakeTool(LOGS, _logs(3))
        boundary = ToolBoundary({LOGS: tool}, RedisCanonicalStore(client), SqlAuditStore(sql))
        ctx = _ctx("run-1", sql)
        projection = await boundary.invoke(ctx, "call_1", "query_logs", {"query": "a"})
    finally:
        await client.aclose()
    assert projection["evidence_status"] == EvidenceStatus.ERROR
    assert projection["error"]["code"] == "STORE_UNAVAILABLE"
    assert projection["logs"] == []
    assert tool.calls == []
    (event,) = await SqlTimelineStore(sql).list("run-1")
    assert event.summary["error_code"] == "STORE_UNAVAILABLE"
