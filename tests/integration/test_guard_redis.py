"""EvidenceGuard and DiagnosisRelease over the real RedisCanonicalStore."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from core.contracts.draft import DiagnosisDraft
from core.contracts.release import FallbackStage, FallbackType, Outcome
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.release.fallback import STAGE_TEXT
from core.release.release import DiagnosisRelease
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import RedisCanonicalStore
from core.stores.memory import InMemoryTimelineStore
from testkit.release import CountingCanonicalStore, FixedJudge, ScriptedRepairer, logs_record
from tests.unit.test_guard_codes import L0, L1, OTHER_RUN, RUN, S1, run_records, valid_draft

pytestmark = pytest.mark.redis


async def _store(client: aioredis.Redis, prefix: str) -> RedisCanonicalStore:
    store = RedisCanonicalStore(client, prefix, ttl_s=60)
    for record in [*run_records(), logs_record(OTHER_RUN, "call_prev", [("2026-11-29T22:00:00Z", "ERROR", "timeout")])]:
        await store.put(record)
    return store


async def test_valid_draft_verifies_against_redis_in_one_read(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """Records written to Redis verify a valid draft with one batched read; the snapshot holds exactly the cited calls."""
    store = CountingCanonicalStore(await _store(redis_client, key_prefix))
    result = await EvidenceGuard(store, load_rules()).check(RUN, DiagnosisDraft.model_validate(valid_draft()))
    assert result.valid, result.violations
    assert result.snapshot is not None
    assert list(result.snapshot.projections) == [L1, L0, S1]
    assert store.get_many_calls == [[L1, L0, S1]]


async def test_previous_runs_call_is_not_citable_in_redis(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A call that really exists in Redis, but for another run, is INVOCATION_MISSING for this run."""
    store = await _store(redis_client, key_prefix)
    draft = valid_draft()
    draft["analysis"][0] = {"analysis_id": "a1", "kind": "NORMAL", "text": "a timeout was logged", "tool_call_ids": ["call_prev"]}
    draft["conclusion"]["based_on_analysis_ids"] = ["a3"]
    draft["conclusion"]["text"] = "version 4.18.0 is deployed"
    # a recommendation resting on the deploys call may not name the pool that only the logs showed
    draft["recommendations"][0] = {"text": "Compare pool settings across releases.", "based_on_analysis_ids": ["a3"]}
    result = await EvidenceGuard(store, load_rules()).check(RUN, DiagnosisDraft.model_validate(draft))
    assert {v.code for v in result.violations} == {"INVOCATION_MISSING"}


async def test_tampered_and_corrupt_keys_are_rejected(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """A key holding another run's record is INVOCATION_ID_MISMATCH; an unreadable value counts as missing."""
    store = await _store(redis_client, key_prefix)
    foreign = run_records(OTHER_RUN)[0]
    await redis_client.set(store.record_key(RUN, L1), foreign.model_dump_json())
    await redis_client.set(store.record_key(RUN, S1), b"{not json")
    result = await EvidenceGuard(store, load_rules()).check(RUN, DiagnosisDraft.model_validate(valid_draft()))
    assert {(v.code, v.path) for v in result.violations} == {
        ("INVOCATION_ID_MISMATCH", "analysis[0].tool_call_ids[0]"),
        ("INVOCATION_MISSING", "analysis[2].tool_call_ids[0]"),
    }


def _ctx(timeline: InMemoryTimelineStore) -> RunContext:
    return RunContext(run_id=RUN, session_key="T:C:1", query="why errors?", timeline=RunTimeline(RUN, timeline))


async def test_release_publishes_from_redis_and_falls_back_with_redis_facts(
    redis_client: aioredis.Redis, key_prefix: str
) -> None:
    """Release over Redis: SUCCESS for a supported draft; an unrepaired broken draft falls back with facts read from Redis."""
    store = await _store(redis_client, key_prefix)
    guard = EvidenceGuard(store, load_rules())
    release = DiagnosisRelease(guard, ScriptedRepairer(), FixedJudge(), store)
    success = await release.release(_ctx(InMemoryTimelineStore()), DiagnosisDraft.model_validate(valid_draft()))
    assert success.outcome is Outcome.SUCCESS
    broken = valid_draft()
    broken["analysis"][0]["tool_call_ids"] = ["call_prev"]
    fallback = await release.release(_ctx(InMemoryTimelineStore()), DiagnosisDraft.model_validate(broken))
    assert fallback.fallback_type is FallbackType.EVIDENCE_VALIDATION_FAILED
    assert fallback.fallback is not None
    ids = [f.tool_call_id for f in fallback.fallback.observed_facts]
    assert set(ids[:3]) == {L1, S1, "call_kb"}, "FOUND facts first"
    assert "call_prev" not in ids


async def test_unreachable_redis_falls_back_instead_of_crashing(key_prefix: str) -> None:
    """With Redis unreachable the release ends in a clear SAFE_FALLBACK naming the evidence store."""
    client = aioredis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2, socket_timeout=0.2)
    try:
        store = RedisCanonicalStore(client, key_prefix, ttl_s=60)
        release = DiagnosisRelease(EvidenceGuard(store, load_rules()), ScriptedRepairer(), FixedJudge(), store)
        timeline = InMemoryTimelineStore()
        outcome = await release.release(_ctx(timeline), DiagnosisDraft.model_validate(valid_draft()))
    finally:
        await client.aclose()
    assert outcome.outcome is Outcome.SAFE_FALLBACK
    assert outcome.fallback is not None
    assert outcome.fallback.stage == STAGE_TEXT[FallbackStage.EVIDENCE_STORE]
    assert outcome.fallback.observed_facts == []
    first_event = (await timeline.list(RUN))[0]
    assert first_event.summary.get("error") == "CANONICAL_UNAVAILABLE"
