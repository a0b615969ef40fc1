"""EvidenceGuard cost next to one Redis round trip: 20 canonical records, a 10-analysis draft with grounded numbers.

Run: python bench/bench_guard.py   (needs Redis at 127.0.0.1:6379 or $TEST_REDIS_URL). Goal: guard.check <= 5x one MGET.

Each EvidenceGuard keeps its own bounded, exact caches across its checks (projection parse outcomes, evidence search
answers, per-item grounding answers), so a re-check of the same calls (after repair, or this loop) is "warm"; "cold"
is the first check of a new guard, as for a draft whose calls the guard has never seen.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid

import redis.asyncio as aioredis

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CanonicalRecord
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.stores.canonical import RedisCanonicalStore
from testkit.release import logs_record, sql_record

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
RUN = "bench-run"
ITERATIONS = 400
WARMUP = 30


def build_records() -> list[CanonicalRecord]:
    """15 log queries (15 lines each, near the projection bound) and 5 SQL queries (20 rows each)."""
    records: list[CanonicalRecord] = []
    for i in range(15):
        lines = [
            (
                f"2026-11-29T23:{j:02d}:{(j * 7) % 60:02d}.{j:03d}Z",
                "ERROR",
                f"HikariPool-{i} - Connection is not available, request timed out after {30000 + j}ms "
                f"(total={10 + j}, active={10 + j}, idle=0, waiting={i * 3 + j}) order_id=ord-{1000 + j * 13}",
            )
            for j in range(15)
        ]
        records.append(logs_record(RUN, f"call_logs_{i:02d}", lines, service=f"svc-{i}", count=40 + i))
    for i in range(5):
        rows = [[f"svc-{k}", f"4.{18 + k}.0", f"2026-11-29 22:{k:02d}:00", 1000 + k * 17] for k in range(20)]
        records.append(sql_record(RUN, f"call_sql_{i}", f"SELECT * FROM deploys LIMIT {20 + i}", ["s", "v", "at", "n"], rows))
    return records


def build_draft(records: list[CanonicalRecord]) -> DiagnosisDraft:
    analyses = []
    for a in range(10):
        first, second = records[a * 2], records[a * 2 + 1]
        if first.tool_name == "query_logs":
            text = (
                f"{40 + a * 2} ERROR lines on svc-{a * 2}: HikariPool-{a * 2} timed out after 30000ms at 23:00, "
                f"waiting={a * 6}, between 22:30 and 23:30."
            )
        else:
            text = "Deploy 4.18.0 of svc-0 at 22:00 with n=1000; 20 rows shown."
        analyses.append(
            {"analysis_id": f"a{a}", "kind": "NORMAL", "text": text, "tool_call_ids": [first.tool_call_id, second.tool_call_id]}
        )
    return DiagnosisDraft.model_validate(
        {
            "conclusion": {
                "text": "HikariPool-0 exhaustion since 23:00 across 15 services.",
                "based_on_analysis_ids": ["a0", "a7"],
            },
            "analysis": analyses,
            "action_plan": [{"action": "Check pool sizes of 4.18.0.", "based_on_analysis_ids": ["a9"]}],
            "limitations": {"scope": "logs 22:30-23:30 and deploys"},
        }
    )


async def main() -> None:
    client = aioredis.from_url(REDIS_URL)
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"
    store = RedisCanonicalStore(client, prefix, ttl_s=300)
    try:
        records = build_records()
        for record in records:
            await store.put(record)
        draft = build_draft(records)
        rules = load_rules()
        guard = EvidenceGuard(store, rules)
        result = await guard.check(RUN, draft)
        assert result.valid, [(v.code, v.path, v.message) for v in result.violations]
        keys = [store.record_key(RUN, r.tool_call_id) for r in records]
        ids = [r.tool_call_id for r in records]
        mget_t, read_t, check_t, cold_t = [], [], [], []
        # Interleaved and paired: each guard.check is compared with the MGET and store read just before it,
        # so load from other processes on the machine drifts out of the ratios.
        for i in range(WARMUP + ITERATIONS):
            t0 = time.perf_counter()
            await client.mget(keys)
            t1 = time.perf_counter()
            await store.get_many(RUN, ids)
            t2 = time.perf_counter()
            await guard.check(RUN, draft)
            t3 = time.perf_counter()
            cold_guard = EvidenceGuard(store, rules)  # caches belong to a guard: a new one is cold
            t4 = time.perf_counter()
            await cold_guard.check(RUN, draft)
            t5 = time.perf_counter()
            if i >= WARMUP:
                mget_t.append(t1 - t0)
                read_t.append(t2 - t1)
                check_t.append(t3 - t2)
                cold_t.append(t5 - t4)
        med = statistics.median
        mget, read, check, cold = med(mget_t) * 1e6, med(read_t) * 1e6, med(check_t) * 1e6, med(cold_t) * 1e6

        def ratio(times: list[float]) -> float:
            return med(t / m for t, m in zip(times, mget_t, strict=True))

        ratio_rules = med((c - r) / m for c, r, m in zip(check_t, read_t, mget_t, strict=True))
        ratio_cold_rules = med((c - r) / m for c, r, m in zip(cold_t, read_t, mget_t, strict=True))
        kib = sum(len(r.model_dump_json()) for r in records) / 1024
        print(f"records: {len(records)} ({kib:.0f} KiB canonical JSON), analyses: {len(draft.analysis)}, pairs: {ITERATIONS}")
        print(f"MGET of {len(keys)} keys (median):              {mget:8.0f} us   1.00x")
        print(f"store.get_many = MGET + record parsing:    {read:8.0f} us   {ratio(read_t):.2f}x MGET (paired median)")
        print(f"guard.check, warm (re-check):              {check:8.0f} us   {ratio(check_t):.2f}x MGET (paired, goal <= 5x)")
        print(f"guard.check, cold (a new guard):           {cold:8.0f} us   {ratio(cold_t):.2f}x MGET (paired, goal <= 5x)")
        print(f"guard rules alone (check - get_many):      warm {ratio_rules:.2f}x, cold {ratio_cold_rules:.2f}x MGET (paired)")
    finally:
        keys_left = [k async for k in client.scan_iter(match=f"{prefix}*")]
        if keys_left:
            await client.delete(*keys_left)
        await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
