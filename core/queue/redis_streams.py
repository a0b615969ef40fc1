"""The turn queue on Redis Streams with one consumer group, through redis-py (no extra dependency).

Why Streams and not a job library (SAQ, arq, taskiq): a turn needs exactly what consumer groups give natively — a
delivery owned by one consumer until acknowledged (XREADGROUP), a heartbeat that resets the delivery's idle time
(XCLAIM JUSTID by its owner), and take-over of a dead consumer's deliveries by idle time (XAUTOCLAIM) — plus three
things no library offers and which must be atomic with the enqueue: dedup by the user message's identity, the
DIAG_QUEUE_MAX bound, and the per-thread order. Each of those is one Lua script here, on the Redis the bot already
uses for its canonical store, dedup and leases.

Keys (under the store prefix):
- `turns`: the stream; an entry is one delivery of a job (`job` field: TurnJob JSON). Finished and handed-back
  entries are deleted, so XLEN is the number of jobs waiting or running (the backpressure bound).
- `turn-job:<job_id>`: `queued` from enqueue to finish, then `done` (kept a day: the job id is the dedup key).
- `turn-thread:<session>`: a sorted set of the session's unfinished job ids in arrival order (score fixed at the
  first enqueue; a hand-back keeps it). A job runs only when it is first.
- `turn-run:<job_id>` / `run-job:<run_id>`: the run id of the job's latest attempt, and back (restart links, cancel
  of a queued turn by run id, the recovery job).
- `turn-cancel:<job_id>`: a cancel that reached the job before it started.
- `turns-dead`: the dead-letter stream (bounded): entries that were not turn jobs, raw (bounded), with the reason;
  each is answered in its thread when it names one (core/queue/poison.py), and counted.

Not for Redis Cluster: the scripts touch keys of several hash slots.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from core.errors import StoreUnavailable
from core.observability.metrics import Metrics
from core.queue.job import Claim, Enqueued, Poison, QueueDepth, Started, StartState, TurnJob
from core.queue.poison import DEAD_LETTER_MAXLEN, bounded_raw, reason_of, salvage
from core.stores.redis_lean import LeanRedis

log = logging.getLogger(__name__)

T = TypeVar("T")

GROUP = "workers"
RECORD_TTL_S = 24 * 3600
MAX_ORDER_SKIPS = 16

# KEYS: job key, stream, thread set, run-job key. ARGV: payload, max jobs, ttl ms, job id, run id.
_ENQUEUE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'duplicate' end
if redis.call('XLEN', KEYS[2]) >= tonumber(ARGV[2]) then return 'full' end
redis.call('SET', KEYS[1], 'queued', 'PX', ARGV[3])
local id = redis.call('XADD', KEYS[2], '*', 'job', ARGV[1])
local ms, seq = string.match(id, '(%d+)-(%d+)')
if tonumber(seq) > 999 then seq = '999' end
redis.call('ZADD', KEYS[3], 'NX', ms .. string.format('%03d', tonumber(seq)), ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
redis.call('SET', KEYS[4], ARGV[4], 'PX', ARGV[3])
return 'queued'
"""

# KEYS: stream. ARGV: group, consumer, entry ids... Returns the ids another consumer owns now (an entry no longer
# pending was finished, most often by this consumer just after its upkeep listed it: not a take-over).
# KEYS: turn-run record, run-job record; ARGV: run id, job id, TTL s. Returns the previous attempt's run id (or nil).
_BEGIN = """
local previous = redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3], 'GET')
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
return previous
"""
_HEARTBEAT = """
local lost = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if #p == 1 and p[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
  elseif #p == 1 then
    table.insert(lost, ARGV[i])
  end
end
return lost
"""

# KEYS: thread set. ARGV: job id, job-key prefix, max skips. 1 when the job is first among the thread's live jobs.
_NEXT_IN_THREAD = """
for _ = 1, tonumber(ARGV[3]) do
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #head == 0 or head[1] == ARGV[1] then return 1 end
  if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false then return 1 end
  local state = redis.call('GET', ARGV[2] .. head[1])
  if state == 'queued' then return 0 end
  redis.call('ZREM', KEYS[1], head[1])
end
return 0
"""

# The three steps of a job's start in one round trip: first in its thread (as _NEXT_IN_THREAD), not cancelled,
# then its attempt recorded (as _BEGIN). KEYS: thread set, cancel flag, turn-run record, run-job record. ARGV: job
# id, job-key prefix, max skips, run id, TTL s. Returns {0} (wait), {-1} (cancelled) or {1, previous run id or false}.
_START = """
local first = false
for _ = 1, tonumber(ARGV[3]) do
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #head == 0 or head[1] == ARGV[1] or redis.call('ZSCORE', KEYS[1], ARGV[1]) == false then
    first = true
    break
  end
  if redis.call('GET', ARGV[2] .. head[1]) == 'queued' then return {0} end
  redis.call('ZREM', KEYS[1], head[1])
end
if not first then return {0} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {-1} end
local previous = redis.call('SET', KEYS[3], ARGV[4], 'EX', ARGV[5], 'GET')
redis.call('SET', KEYS[4], ARGV[1], 'EX', ARGV[5])
return {1, previous}
"""

# KEYS: stream, job key, thread set. ARGV: group, entry id, job id.
_FINISH = """
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('SET', KEYS[2], 'done', 'KEEPTTL') end
redis.call('ZREM', KEYS[3], ARGV[3])
return 1
"""

# KEYS: stream, dead-letter stream, job key, thread set. ARGV: group, entry id, job id ('' when unknown), max dead
# entries, reason, raw, answered. The entry leaves the stream and its thread's order, and is kept as a dead letter.
_BURY = """
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'entry', ARGV[2], 'reason', ARGV[5], 'raw', ARGV[6],
           'answered', ARGV[7])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
if ARGV[3] ~= '' then
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('SET', KEYS[3], 'done', 'KEEPTTL') end
  redis.call('ZREM', KEYS[4], ARGV[3])
end
return 1
"""

# KEYS: stream. ARGV: group, entry id, new payload. Atomic: the job is never both gone and not yet back.
_HAND_BACK = """
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return redis.call('XADD', KEYS[1], '*', 'job', ARGV[3])
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisJobQueue:
    """JobQueue over a Redis stream and consumer group; any number of processes share it."""

    durable = True

    def __init__(self, client: aioredis.Redis, prefix: str = "diag:", metrics: Metrics | None = None) -> None:
        self._client = client
        self._prefix = prefix
        self._stream = prefix + "turns"
        self.dead_letters = prefix + "turns-dead"
        self._metrics = metrics or Metrics()
        lean = LeanRedis(client)  # the scripts without redis-py's per-command layers
        self._enqueue = lean.script(_ENQUEUE)
        self._heartbeat = lean.script(_HEARTBEAT)
        self._begin = lean.script(_BEGIN)
        self._next_in_thread = lean.script(_NEXT_IN_THREAD)
        self._start = lean.script(_START)
        self._finish = lean.script(_FINISH)
        self._hand_back = lean.script(_HAND_BACK)
        self._bury = lean.script(_BURY)
        self._group_ready = False

    def _key(self, kind: str, name: str) -> str:
        return f"{self._prefix}{kind}:{name}"

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        try:
            return await operation()
        except (RedisError, OSError) as exc:
            if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
                # The stream lost its group (Redis restarted empty, failed over or was flushed; an enqueue's XADD
                # then made a bare stream): the next call creates it again instead of failing forever.
                self._group_ready = False
            raise StoreUnavailable("turn queue (Redis)", type(exc).__name__) from exc

    async def _ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            await self._call(lambda: self._client.xgroup_create(self._stream, GROUP, id="0", mkstream=True))
        except StoreUnavailable as exc:
            if not isinstance(exc.__cause__, ResponseError) or "BUSYGROUP" not in str(exc.__cause__):
                raise
        self._group_ready = True

    async def enqueue(self, job: TurnJob, max_jobs: int) -> Enqueued:
        """Queue a job unless its message was queued before or `max_jobs` are waiting (one atomic script)."""
        await self._ensure_group()
        keys = [self._key("turn-job", job.job_id), self._stream, self._key("turn-thread", job.session.as_str()),
                self._key("run-job", job.run_id)]
        args: list[str | int] = [job.encode(), max_jobs, RECORD_TTL_S * 1000, job.job_id, job.run_id]
        result = await self._call(lambda: self._enqueue(keys=keys, args=args))
        return Enqueued(_text(result))

    def _claims(self, entries: Sequence[Any], deliveries: int) -> tuple[list[Claim], list[tuple[str, Poison]]]:
        """The deliveries as claims; an entry that is not a turn job becomes a poison claim addressing its thread,
        or, when it names none, is returned apart to be dead-lettered at once."""
        claims: list[Claim] = []
        unanswerable: list[tuple[str, Poison]] = []
        for entry_id, fields in entries:
            entry = _text(entry_id)
            if not fields:  # the entry was deleted while pending (XAUTOCLAIM reports it)
                continue
            raw = fields.get(b"job") or fields.get("job")
            try:
                job = TurnJob.decode(raw or b"")
            except ValueError as exc:
                poison = Poison(reason=reason_of(exc), raw=bounded_raw(raw))
                stand_in = salvage(raw)
                if stand_in is None:
                    unanswerable.append((entry, poison))
                else:
                    claims.append(Claim(job=stand_in, entry=entry, deliveries=deliveries, poison=poison))
                continue
            claims.append(Claim(job=job, entry=entry, deliveries=deliveries))
        return claims, unanswerable

    async def _bury_entry(self, entry: str, poison: Poison, job: TurnJob | None) -> None:
        """Move a poison entry to the dead-letter stream; with its stand-in job, out of its thread's order too."""
        job_id, session = (job.job_id, job.session.as_str()) if job is not None else ("", "-")
        keys = [self._stream, self.dead_letters, self._key("turn-job", job_id or "-"), self._key("turn-thread", session)]
        args: list[str | int] = [GROUP, entry, job_id, DEAD_LETTER_MAXLEN, poison.reason, poison.raw,
                                 "1" if job is not None else "0"]
        await self._call(lambda: self._bury(keys=keys, args=args))
        self._metrics.queue_job("poison")

    async def _drop(self, unanswerable: Sequence[tuple[str, Poison]]) -> None:
        for entry, poison in unanswerable:
            log.error("queue entry %s is not a turn job (%s) and names no thread to answer in; dead-lettered",
                      entry, poison.reason)
            await self._bury_entry(entry, poison, None)

    async def take(self, consumer: str, count: int, block_s: float) -> list[Claim]:
        """Up to `count` new deliveries for `consumer`, waiting up to `block_s` for the first."""
        await self._ensure_group()
        block_ms = max(1, int(block_s * 1000))
        reply: Any = await self._call(lambda: self._client.xreadgroup(
            GROUP, consumer, {self._stream: ">"}, count=count, block=block_ms))
        entries = reply[0][1] if reply else []
        claims, poison = self._claims(entries, deliveries=1)
        await self._drop(poison)
        return claims

    async def reclaim(self, consumer: str, idle_s: float, count: int) -> list[Claim]:
        """Take over deliveries whose consumer stopped heartbeating `idle_s` ago (a dead or stalled worker)."""
        await self._ensure_group()
        reply: Any = await self._call(lambda: self._client.xautoclaim(
            self._stream, GROUP, consumer, min_idle_time=int(idle_s * 1000), start_id="0-0", count=count))
        claims, poison = self._claims(reply[1], deliveries=2)
        await self._drop(poison)
        return [await self._with_deliveries(c) for c in claims]

    async def _with_deliveries(self, claim: Claim) -> Claim:
        """The claim with its delivery count (XPENDING's times-delivered, raised by each take-over)."""
        pending: Any = await self._call(lambda: self._client.xpending_range(
            self._stream, GROUP, min=claim.entry, max=claim.entry, count=1))
        if not pending:
            return claim
        times = int(pending[0].get("times_delivered") or 2)
        return dataclasses.replace(claim, deliveries=max(2, times))

    async def heartbeat(self, consumer: str, claims: Sequence[Claim]) -> list[Claim]:
        """Reset the idle time of `consumer`'s deliveries; returns those another worker has taken over."""
        if not claims:
            return []
        args = [GROUP, consumer, *(c.entry for c in claims)]
        lost: Any = await self._call(lambda: self._heartbeat(keys=[self._stream], args=args))
        gone = {_text(x) for x in lost}
        return [c for c in claims if c.entry in gone]

    async def begin(self, job: TurnJob, run_id: str) -> str | None:
        """Record `run_id` as the job's current attempt; the previous attempt's run id, if one started."""
        keys = [self._key("turn-run", job.job_id), self._key("run-job", run_id)]
        args: list[str | int] = [run_id, job.job_id, RECORD_TTL_S]
        previous: Any = await self._call(lambda: self._begin(keys=keys, args=args))  # both records, one round trip
        prev = None if previous is None else _text(previous)
        return None if prev == run_id else prev

    async def next_in_thread(self, job: TurnJob) -> bool:
        """True when no earlier unfinished job of the same thread is ahead of this one."""
        keys = [self._key("turn-thread", job.session.as_str())]
        args: list[str | int] = [job.job_id, self._key("turn-job", ""), MAX_ORDER_SKIPS]
        return bool(await self._call(lambda: self._next_in_thread(keys=keys, args=args)))

    async def start(self, job: TurnJob, run_id: str) -> Started:
        """next_in_thread, is_cancelled and begin in one script (one round trip instead of three): WAIT while an
        earlier job of the thread is ahead, CANCELLED when a cancel reached the job first, else the attempt is
        recorded (STARTED, with the previous attempt's run id)."""
        keys = [self._key("turn-thread", job.session.as_str()), self._key("turn-cancel", job.job_id),
                self._key("turn-run", job.job_id), self._key("run-job", run_id)]
        args: list[str | int] = [job.job_id, self._key("turn-job", ""), MAX_ORDER_SKIPS, run_id, RECORD_TTL_S]
        reply: Any = await self._call(lambda: self._start(keys=keys, args=args))
        state = int(reply[0])
        if state == 0:
            return Started(StartState.WAIT)
        if state < 0:
            return Started(StartState.CANCELLED)
        previous = reply[1] if len(reply) > 1 and reply[1] not in (None, False, 0) else None
        prev = None if previous is None else _text(previous)
        return Started(StartState.STARTED, None if prev == run_id else prev)

    async def finish(self, claim: Claim) -> None:
        """The job is answered (or refused for good): remove it; the thread's next job may run. A poison entry's
        raw text goes to the dead-letter stream."""
        job = claim.job
        if claim.poison is not None:
            await self._bury_entry(claim.entry, claim.poison, job)
            return
        keys = [self._stream, self._key("turn-job", job.job_id), self._key("turn-thread", job.session.as_str())]
        await self._call(lambda: self._finish(keys=keys, args=[GROUP, claim.entry, job.job_id]))

    async def hand_back(self, claim: Claim) -> None:
        """Give an unfinished job back for another worker (shutdown): a new delivery, its attempt raised."""
        job = claim.job.model_copy(update={"attempt": claim.job.attempt + 1})
        await self._call(lambda: self._hand_back(keys=[self._stream], args=[GROUP, claim.entry, job.encode()]))

    async def cancel_queued(self, session_key: str) -> int:
        """Flag the session's jobs that have not started yet as cancelled; how many were flagged."""
        members: Any = await self._call(lambda: self._client.zrange(self._key("turn-thread", session_key), 0, -1))
        flagged = 0
        for member in members:
            if await self.cancel_job(_text(member)):
                flagged += 1
        return flagged

    async def cancel_job(self, job_id: str) -> bool:
        """Flag one job as cancelled if it is queued and no attempt has started it; True when flagged."""
        state: Any = await self._call(lambda: self._client.get(self._key("turn-job", job_id)))
        started: Any = await self._call(lambda: self._client.exists(self._key("turn-run", job_id)))
        if state is None or _text(state) != "queued" or started:
            return False
        result: Any = await self._call(lambda: self._client.set(
            self._key("turn-cancel", job_id), "1", ex=RECORD_TTL_S, nx=True))
        return bool(result)

    async def job_of_run(self, run_id: str) -> str | None:
        """The job a run id belongs to (its first attempt's id, or any re-run's)."""
        value: Any = await self._call(lambda: self._client.get(self._key("run-job", run_id)))
        return None if value is None else _text(value)

    async def current_run(self, job_id: str) -> str | None:
        """The run id of the job's latest started attempt."""
        value: Any = await self._call(lambda: self._client.get(self._key("turn-run", job_id)))
        return None if value is None else _text(value)

    async def job_state(self, job_id: str) -> str | None:
        """`queued` (waiting or running), `done`, or None (unknown or expired)."""
        value: Any = await self._call(lambda: self._client.get(self._key("turn-job", job_id)))
        return None if value is None else _text(value)

    async def is_cancelled(self, job_id: str) -> bool:
        """True when a cancel reached the job before it started."""
        return bool(await self._call(lambda: self._client.exists(self._key("turn-cancel", job_id))))

    async def depth(self) -> QueueDepth:
        """Unfinished jobs and the age of the oldest delivery."""
        jobs: Any = await self._call(lambda: self._client.xlen(self._stream))
        if not jobs:
            return QueueDepth(0, 0.0)
        first: Any = await self._call(lambda: self._client.xrange(self._stream, count=1))
        age = 0.0
        if first:
            ms = int(_text(first[0][0]).split("-", 1)[0])
            age = max(0.0, time.time() - ms / 1000)
        return QueueDepth(int(jobs), age)

    async def _delete_consumer(self, name: str) -> None:
        await self._call(lambda: self._client.xgroup_delconsumer(self._stream, GROUP, name))

    async def forget_consumers(self, idle_s: float) -> int:
        """Remove consumers with nothing pending that have been idle `idle_s` (replicas that are gone)."""
        await self._ensure_group()
        consumers: Any = await self._call(lambda: self._client.xinfo_consumers(self._stream, GROUP))
        removed = 0
        for info in consumers:
            name = _text(info.get("name") or info.get(b"name") or "")
            pending = int(info.get("pending") or info.get(b"pending") or 0)
            idle_ms = int(info.get("idle") or info.get(b"idle") or 0)
            if name and pending == 0 and idle_ms >= idle_s * 1000:
                await self._delete_consumer(name)
                removed += 1
        return removed
