"""Dedup claims in real Redis: first claim wins per event_id and per (channel, ts); keys expire; a store outage drops retries."""

from __future__ import annotations

import redis.asyncio as aioredis

from bot.dedup import DEDUP_TTL_S, Deduplicator
from core.stores.kv import RedisKV


async def test_first_claim_wins_and_keys_outlive_slack_retries(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """event_id and (channel, ts) are each claimable once, with a TTL longer than Slack's ~5 min retry."""
    dedup = Deduplicator(RedisKV(redis_client, prefix=key_prefix))
    assert await dedup.claim_event("Ev1")
    assert not await dedup.claim_event("Ev1")
    assert await dedup.claim_event("Ev2")
    assert await dedup.claim_message("C1", "1.0")
    assert not await dedup.claim_message("C1", "1.0")
    assert await dedup.claim_message("C2", "1.0")
    ttl = await redis_client.pttl(f"{key_prefix}diag:dedup:event:Ev1")
    assert 6 * 60 * 1000 < ttl <= DEDUP_TTL_S * 1000


async def test_claims_are_shared_between_processes(redis_client: aioredis.Redis, key_prefix: str) -> None:
    """Two bot instances on one Redis see each other's claims."""
    a = Deduplicator(RedisKV(redis_client, prefix=key_prefix))
    b = Deduplicator(RedisKV(redis_client, prefix=key_prefix))
    assert await a.claim_message("C1", "9.9")
    assert not await b.claim_message("C1", "9.9")


async def test_redis_down_takes_first_deliveries_once_and_drops_retries() -> None:
    """An unreachable store: a first delivery is claimed once in this process, a Slack retry is dropped (fail closed)."""
    client = aioredis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    dedup = Deduplicator(RedisKV(client))
    try:
        assert await dedup.claim_event("Ev1")
        assert not await dedup.claim_event("Ev1")
        assert not await dedup.claim_event("Ev2", retry_num=1)
        assert await dedup.claim_message("C1", "1.0")
        assert not await dedup.claim_message("C1", "1.0")
    finally:
        await dedup.aclose()
        await client.aclose()
