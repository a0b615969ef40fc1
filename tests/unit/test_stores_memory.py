"""In-process stores: canonical, key-value, audit, timeline and runs behave like their Redis/SQL counterparts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.contracts.evidence import CanonicalRecord, InvocationMeta, InvocationState
from core.contracts.run import EventType, RunRecord, TimelineEvent
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.kv import InMemoryKV, ttl_ms
from core.stores.memory import InMemoryAuditStore, InMemoryRunStore, InMemoryTimelineStore
from testkit.tool_names import ToolName

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _record(call_id: str, run_id: str = "run-1", offset_s: int = 0) -> CanonicalRecord:
    return CanonicalRecord(run_id=run_id, tool_call_id=call_id, tool_name=ToolName.QUERY_LOGS, arguments={"q": call_id},
                           state=InvocationState.PENDING, started_at=T0 + timedelta(seconds=offset_s))


async def test_in_memory_canonical_reserve_put_get_and_order() -> None:
    """Reserve once per run, records round-trip as copies, list_run follows call order, unknown ids are None."""
    store = InMemoryCanonicalStore()
    assert await store.reserve("run-1", "a") is True
    assert await store.reserve("run-1", "a") is False
    assert await store.reserve("run-2", "a") is True
    for call_id in ("b", "a"):
        await store.put(_record(call_id))
    await store.put(_record("b").model_copy(update={"state": InvocationState.READY}))
    got = await store.get_many("run-1", ["a", "b", "zzz"])
    assert got["zzz"] is None
    assert got["b"] is not None
    assert got["b"].state == InvocationState.READY
    assert [r.tool_call_id for r in await store.list_run("run-1")] == ["b", "a"]
    assert await store.reserve("run-1", "b") is False


async def test_in_memory_canonical_list_run_dumps_are_the_json_dumps_of_list_run() -> None:
    """list_run_dumps: model_dump(mode="json") of each list_run record without its raw result, in call order."""
    store = InMemoryCanonicalStore()
    for call_id in ("b", "a"):
        await store.put(_record(call_id).model_copy(update={"projection": {"items": [{"x": 0.1 + 0.2}]},
                                                            "duration_ms": 1.5}))
    expected = [r.model_dump(mode="json", exclude={"raw_result"}) for r in await store.list_run("run-1")]
    assert await store.list_run_dumps("run-1") == expected
    assert [d["tool_call_id"] for d in expected] == ["b", "a"]
    assert await store.list_run_dumps("run-2") == []


async def test_in_memory_canonical_records_expire() -> None:
    """After the TTL a record is gone (and its id may be reserved again only if never reserved before)."""
    clock = Clock()
    store = InMemoryCanonicalStore(ttl_s=10, clock=clock)
    await store.put(_record("a"))
    clock.now += 11
    assert (await store.get_many("run-1", ["a"]))["a"] is None
    assert await store.list_run("run-1") == []


async def test_in_memory_kv_nx_ttl_and_delete() -> None:
    """set_if_absent is NX with expiry; set replaces; delete removes."""
    clock = Clock()
    kv = InMemoryKV(clock=clock)
    assert await kv.set_if_absent("k", "1", 5) is True
    assert await kv.set_if_absent("k", "2", 5) is False
    assert await kv.get("k") == "1"
    clock.now += 6
    assert await kv.get("k") is None
    assert await kv.set_if_absent("k", "3", 0.5) is True
    await kv.set("k", "4", 60)
    assert await kv.get("k") == "4"
    await kv.delete("k")
    await kv.delete("missing")
    assert await kv.get("k") is None


async def test_in_memory_kv_leases_renew_and_release_only_for_their_owner() -> None:
    """renew/delete_if act only while the key holds the owner's value; a lapsed lease cannot be renewed."""
    clock = Clock()
    kv = InMemoryKV(clock=clock)
    await kv.set("lock", "owner", 5)
    assert await kv.renew("lock", "other", 5) is False
    clock.now += 4
    assert await kv.renew("lock", "owner", 5) is True
    clock.now += 4
    assert await kv.get_many(["lock", "missing"]) == ["owner", None]
    assert await kv.delete_if("lock", "other") is False
    assert await kv.delete_if("lock", "owner") is True
    await kv.set("lock", "owner", 1)
    clock.now += 2
    assert await kv.renew("lock", "owner", 5) is False


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_ttl_must_be_positive_and_finite(bad: float) -> None:
    """A TTL of zero, negative or non-finite seconds is refused rather than making a key that never expires."""
    with pytest.raises(ValueError, match="ttl_s"):
        ttl_ms(bad)


def test_ttl_rounds_up_to_whole_milliseconds() -> None:
    """Sub-millisecond TTLs become 1 ms (Redis refuses PX 0)."""
    assert ttl_ms(0.0001) == 1
    assert ttl_ms(1.5) == 1500


async def test_in_memory_audit_records_and_reasoning() -> None:
    """Invocation rows upsert by call id; missing reasoning is stored as 'unavailable'."""
    audit = InMemoryAuditStore()
    meta = InvocationMeta(run_id="r", tool_call_id="c", tool_name=ToolName.QUERY_LOGS, state=InvocationState.PENDING,
                          evidence_status=None, started_at=T0)
    await audit.record_invocation(meta)
    await audit.record_invocation(meta.model_copy(update={"state": InvocationState.READY}))
    assert [m.state for m in await audit.invocations("r")] == [InvocationState.READY]
    await audit.record_reasoning("r", "agent", 1, None)
    await audit.record_reasoning("r", "agent", 2, "thinking")
    assert await audit.reasoning("r") == [("agent", 1, "unavailable"), ("agent", 2, "thinking")]


async def test_in_memory_timeline_orders_by_seq_and_rejects_duplicates() -> None:
    """Events come back by seq whatever the append order; a duplicate seq is refused."""
    store = InMemoryTimelineStore()
    for seq in (2, 1):
        await store.append(TimelineEvent(run_id="r", seq=seq, type=EventType.TOOL_CALL, at=T0))
    assert [e.seq for e in await store.list("r")] == [1, 2]
    with pytest.raises(ValueError, match="already exists"):
        await store.append(TimelineEvent(run_id="r", seq=1, type=EventType.TOOL_CALL, at=T0))


def _run(run_id: str, minutes: int, intent: str | None, outcome: str | None, session: str = "T:C:1") -> RunRecord:
    return RunRecord(run_id=run_id, session_key=session, team="T", channel="C", user="U", query="q", intent=intent,
                     outcome=outcome, started_at=T0 + timedelta(minutes=minutes))


async def test_in_memory_runs_latest_published_follows_the_session_rule() -> None:
    """Only DIAGNOSIS + SUCCESS runs count; the latest by start time wins; fallbacks and other sessions never count."""
    runs = InMemoryRunStore()
    assert await runs.latest_published("T:C:1") is None
    await runs.create(_run("r1", 0, "DIAGNOSIS", "SUCCESS"))
    await runs.create(_run("r2", 1, "DIAGNOSIS", "SAFE_FALLBACK"))
    await runs.create(_run("r3", 2, "KNOWLEDGE", "SUCCESS"))
    await runs.create(_run("r4", 3, "DIAGNOSIS", "SUCCESS", session="T:C:2"))
    latest = await runs.latest_published("T:C:1")
    assert latest is not None
    assert latest.run_id == "r1"
    with pytest.raises(ValueError, match="exists"):
        await runs.create(_run("r1", 0, None, None))
    with pytest.raises(KeyError):
        await runs.update(_run("nope", 0, None, None))
    await runs.update(_run("r2", 1, "DIAGNOSIS", "SUCCESS"))
    latest = await runs.latest_published("T:C:1")
    assert latest is not None
    assert latest.run_id == "r2"


async def test_in_memory_runs_has_session_once_any_run_exists() -> None:
    """has_session is false for an unknown thread and true once any run (even a chat) of it exists."""
    runs = InMemoryRunStore()
    record = RunRecord(run_id="r1", session_key="T:C:1", team="T", channel="C", user="U", query="hi", intent="CHAT",
                       started_at=T0)
    assert not await runs.has_session("T:C:1")
    await runs.create(record)
    assert await runs.has_session("T:C:1")
    assert not await runs.has_session("T:C:2")


async def test_in_memory_canonical_reads_raw_results_only_when_asked() -> None:
    """Like Redis: get_many leaves the raw result out unless with_raw, and then returns the record whole."""
    from core.contracts.evidence import EvidenceStatus, RawResult

    store = InMemoryCanonicalStore()
    record = CanonicalRecord(run_id="r", tool_call_id="c", tool_name=ToolName.QUERY_LOGS, arguments={},
                             state=InvocationState.READY, evidence_status=EvidenceStatus.NO_EVIDENCE,
                             raw_result=RawResult(total_count=0), started_at=T0)
    await store.put(record)
    lean = (await store.get_many("r", ["c"]))["c"]
    assert lean is not None
    assert lean.raw_result is None
    assert (await store.get_many("r", ["c"], with_raw=True))["c"] == record
