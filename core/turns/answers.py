"""Exactly one final message per turn, however many times the turn runs (SPEC §10).

Every final message goes through `Answers.post`: the run, a re-run on another worker after a crash, the watchdog,
the queue giving up, the recovery job alike. Two records per turn, in the shared KV:

- `turn-placeholder:<job_id>`: the placeholder's ts, written once (set-if-absent) by whoever posted it first; a
  re-run edits that same message, so a second final would replace the first, never add one.
- `turn-answer:<job_id>`: the answer record. A poster claims it (`claim:<run_id>`, set-if-absent, TTL
  `answer_claim_ttl_s` so a poster that dies mid-post frees it), delivers, then writes `done:<ts>`. Whoever finds
  `done:` posts nothing; whoever finds another live claim waits `claim_wait_s` for it, then leaves it the answer.

With the KV down the post still goes ahead (answering twice would beat never answering, but see below it does not
come to that): the answer is remembered in this process and its `done:` record written as soon as the KV is back
(`flush`). A job redelivered after such an outage is first checked against the thread itself
(`TurnSurface.final_in_thread`: the final carries the run's `diag_run_finished` metadata), so a turn answered while
the stores were down is never run and answered again — even when the process that answered it died meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Collection

from core.ports import KeyValueStore
from core.turns.surface import Final, Target, TurnSurface
from core.turns.timing import TurnTiming

log = logging.getLogger(__name__)

# Answers delivered while the KV was down, kept until their record is written (bounded: the oldest are dropped,
# and the thread check still covers them).
MAX_UNRECORDED = 10_000


def answer_key(job_id: str) -> str:
    """KV key of a turn's answer record."""
    return f"turn-answer:{job_id}"


def placeholder_key(job_id: str) -> str:
    """KV key of a turn's placeholder ts."""
    return f"turn-placeholder:{job_id}"


class Answers:
    """The answer-once records of every turn, shared by every process through the KV, delivered by the surface."""

    def __init__(self, kv: KeyValueStore, surface: TurnSurface, timing: TurnTiming = TurnTiming()) -> None:
        self.kv = kv
        self.surface = surface
        self._timing = timing
        self._unrecorded: OrderedDict[str, str] = OrderedDict()  # job id -> ts of a final whose record is missing

    @property
    def unrecorded(self) -> int:
        """Answers delivered whose `done:` record is not written yet (the KV was down)."""
        return len(self._unrecorded)

    async def answered(self, job_id: str) -> bool:
        """True once the turn's final message is in the thread, as recorded (here or in the KV)."""
        if job_id in self._unrecorded:
            return True
        value = await self.kv.get(answer_key(job_id))
        return value is not None and value.startswith("done:")

    async def answered_anywhere(self, job_id: str, target: Target, after_ts: str, run_ids: Collection[str]) -> bool:
        """`answered`, else the thread itself: a final of one of `run_ids` (or in the turn's placeholder) that an
        outage kept from being recorded. Found there, the record is written now. Unknown (the surface cannot tell):
        False — the turn is re-run, answering rather than leaving it unanswered."""
        if await self.answered(job_id):
            return True
        placeholder = await self.placeholder(job_id)
        try:
            found = await self.surface.final_in_thread(target, placeholder, after_ts, run_ids)
        except Exception as exc:  # the surface cannot tell: re-run (its final edits the same placeholder)
            log.warning("turn %s: could not check its thread for an earlier final (%s)", job_id, type(exc).__name__)
            return False
        if found is None:
            return False
        log.warning("turn %s was answered (message %s) while its record could not be written; not running it again",
                    job_id, found)
        await self._record_done(job_id, found)
        return True

    async def placeholder(self, job_id: str) -> str | None:
        """The ts of the turn's placeholder, posted by an earlier attempt; None when unknown or the KV is down."""
        try:
            return await self.kv.get(placeholder_key(job_id))
        except Exception as exc:  # without it a new placeholder is posted; the final still goes once
            log.warning("placeholder record of turn %s unavailable: %s", job_id, type(exc).__name__)
            return None

    async def keep_placeholder(self, job_id: str, ts: str) -> str:
        """Record this placeholder as the turn's; returns the one that counts (an earlier poster's, if any)."""
        try:
            if await self.kv.set_if_absent(placeholder_key(job_id), ts, self._timing.answer_record_ttl_s):
                return ts
            return await self.kv.get(placeholder_key(job_id)) or ts
        except Exception as exc:  # this attempt still knows its ts; only a re-run elsewhere would miss it
            log.warning("placeholder of turn %s not recorded: %s", job_id, type(exc).__name__)
            return ts

    async def _claim(self, job_id: str, claim: str, wait_s: float, replaces: str | None) -> bool:
        """Take the answer record; False when the turn is answered (or another claim outlived wait_s). A claim of
        the attempt this one re-runs (`replaces`: it died between claiming and posting) is taken over at once."""
        key, until = answer_key(job_id), time.monotonic() + wait_s
        while not await self.kv.set_if_absent(key, claim, self._timing.answer_claim_ttl_s):
            current = await self.kv.get(key)
            if current is not None and current.startswith("done:"):
                return False
            if replaces is not None and current == f"claim:{replaces}":
                log.warning("turn %s: taking over the answer record of run %s, which stopped before posting", job_id,
                            replaces)
                await self.kv.delete_if(key, current)
                continue
            if time.monotonic() >= until:
                log.warning("turn %s: another poster still holds its answer record; not posting", job_id)
                return False
            await asyncio.sleep(self._timing.claim_poll_s)
        return True

    async def post(self, job_id: str, run_id: str, target: Target, placeholder_ts: str | None, final: Final, *,
                   until: float, wait_s: float | None = None, replaces: str | None = None) -> str | None:
        """Deliver `final` as the turn's one final message; its ts, or None when the turn was answered already or
        nothing could be delivered. `run_id` names this poster's claim; `replaces`: the run id of the attempt this
        one re-runs (its unfinished claim does not block this post; both would edit the same placeholder)."""
        claim = f"claim:{run_id}"
        if job_id in self._unrecorded:
            return None
        try:
            claimed = await self._claim(job_id, claim, self._timing.claim_wait_s if wait_s is None else wait_s,
                                        replaces)
        except Exception as exc:  # the KV is down: post anyway, remember it here, record it when the KV is back
            log.warning("answer record of turn %s unavailable (%s); posting, recorded when the store is back", job_id,
                        type(exc).__name__)
            claimed, claim = True, ""
        if not claimed:
            return None
        ts = await self.surface.deliver(target, placeholder_ts, final, until=until)
        if ts is None:
            if claim:  # nothing visible: a later attempt may still answer
                await self._quietly(self.kv.delete_if(answer_key(job_id), claim), job_id)
            return None
        await self._record_done(job_id, ts)
        return ts

    async def _record_done(self, job_id: str, ts: str) -> None:
        try:
            await self.kv.set(answer_key(job_id), f"done:{ts}", self._timing.answer_record_ttl_s)
            self._unrecorded.pop(job_id, None)
        except Exception as exc:
            log.warning("answer record of turn %s not written (%s); retried when the store is back", job_id,
                        type(exc).__name__)
            self._unrecorded[job_id] = ts
            while len(self._unrecorded) > MAX_UNRECORDED:
                self._unrecorded.popitem(last=False)

    async def flush(self) -> int:
        """Write the records of answers delivered while the KV was down; how many are still missing."""
        for job_id, ts in list(self._unrecorded.items()):
            try:
                await self.kv.set(answer_key(job_id), f"done:{ts}", self._timing.answer_record_ttl_s)
            except Exception:  # still down: the next flush tries again
                break
            self._unrecorded.pop(job_id, None)
        return len(self._unrecorded)

    @staticmethod
    async def _quietly(work: Awaitable[object], job_id: str) -> None:
        try:
            await work
        except Exception as exc:
            log.warning("answer record of turn %s not released: %s", job_id, type(exc).__name__)
