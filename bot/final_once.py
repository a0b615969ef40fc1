"""Exactly one final message per turn, however many times the turn runs (issue 10 item 4).

Every final message of a queued turn goes through `post_final_once`: the run, a re-run on another worker
after a crash, the delivery watchdog and the recovery job alike. Two records per turn job, in the shared KV:

- `turn-placeholder:<job_id>`: the placeholder's ts, written once (set-if-absent) by whoever posted it
  first; a re-run edits that same message, so a second final would replace the first, never add one.
- `turn-answer:<job_id>`: the per-turn answer record. A poster first claims it (`claim:<run_id>`, set-if-
  absent with a short TTL so a poster that dies mid-post frees it), delivers, then writes `done:<ts>`.
  Anyone who finds `done:` posts nothing; anyone who finds another live claim waits for it to end.

With the KV down the post goes ahead: answering twice beats never answering (the outage is logged).
"""

from __future__ import annotations

import asyncio
import logging
import time

from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import DeliveryPolicy, deliver_final
from bot.render.message import SlackMessage
from core.ports import KeyValueStore

log = logging.getLogger(__name__)

ANSWER_TTL_S = 24 * 3600.0
CLAIM_TTL_S = 90.0
CLAIM_POLL_S = 0.5


def answer_key(job_id: str) -> str:
    """KV key of a turn's answer record."""
    return f"turn-answer:{job_id}"


def placeholder_key(job_id: str) -> str:
    """KV key of a turn's placeholder ts."""
    return f"turn-placeholder:{job_id}"


async def answered(kv: KeyValueStore, job_id: str) -> bool:
    """True once the turn's final message is in the thread."""
    value = await kv.get(answer_key(job_id))
    return value is not None and value.startswith("done:")


async def keep_placeholder(kv: KeyValueStore, job_id: str, ts: str) -> str:
    """Record this placeholder as the turn's; returns the one that counts (an earlier poster's, if any)."""
    if await kv.set_if_absent(placeholder_key(job_id), ts, ANSWER_TTL_S):
        return ts
    return await kv.get(placeholder_key(job_id)) or ts


async def _claim(kv: KeyValueStore, job_id: str, claim: str, wait_s: float, replaces: str | None = None) -> bool:
    """Take the answer record; False when the turn is answered (or another claim outlived wait_s). A claim of the
    attempt this one re-runs (`replaces`: that attempt died between claiming and posting) is taken over at once."""
    until = time.monotonic() + wait_s
    while not await kv.set_if_absent(answer_key(job_id), claim, CLAIM_TTL_S):
        current = await kv.get(answer_key(job_id))
        if current is not None and current.startswith("done:"):
            return False
        if replaces is not None and current == f"claim:{replaces}":
            log.warning("turn %s: taking over the answer record of run %s, which stopped before posting", job_id,
                        replaces)
            await kv.delete_if(answer_key(job_id), current)
            continue
        if time.monotonic() >= until:
            log.warning("turn %s: another poster still holds its answer record; not posting", job_id)
            return False
        await asyncio.sleep(CLAIM_POLL_S)
    return True


async def post_final_once(client: AsyncWebClient, kv: KeyValueStore, job_id: str, run_id: str, channel: str,
                          thread_ts: str, placeholder_ts: str | None, msg: SlackMessage, *, until: float | None = None,
                          policy: DeliveryPolicy = DeliveryPolicy(), wait_s: float = CLAIM_TTL_S,
                          replaces: str | None = None) -> str | None:
    """Deliver `msg` as the turn's one final message; its ts, or None when the turn was already answered.
    `replaces`: the run id of the attempt this one re-runs (its unfinished claim does not block this post; both
    would edit the same placeholder)."""
    claim = f"claim:{run_id}"
    try:
        if not await _claim(kv, job_id, claim, wait_s, replaces):
            return None
    except Exception as exc:  # the shared store is down: post anyway (logged)
        log.warning("answer record of turn %s unavailable (%s); posting without it", job_id, type(exc).__name__)
        return await deliver_final(client, channel, thread_ts, placeholder_ts, msg, until=until, policy=policy)
    ts = await deliver_final(client, channel, thread_ts, placeholder_ts, msg, until=until, policy=policy)
    try:
        if ts is None:
            await kv.delete_if(answer_key(job_id), claim)  # nothing visible: a later attempt may still answer
        else:
            await kv.set(answer_key(job_id), f"done:{ts}", ANSWER_TTL_S)
    except Exception as exc:
        log.warning("answer record of turn %s not written: %s", job_id, type(exc).__name__)
    return ts
