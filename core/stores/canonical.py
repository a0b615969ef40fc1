"""Canonical tool records keyed by (run_id, tool_call_id): Redis for production, in-process for one process."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import orjson
import redis.asyncio as aioredis
from pydantic import ValidationError
from pydantic_core import from_json
from redis.exceptions import RedisError

from core.contracts.evidence import CanonicalRecord, RawResult
from core.errors import StoreUnavailable
from core.stores.redis_lean import LeanRedis

logger = logging.getLogger(__name__)

DEFAULT_TTL_S = 6 * 3600
T = TypeVar("T")


def _split(record: CanonicalRecord, raw_json: str | None = None) -> tuple[str, str | None]:
    """The record without its raw result, and the raw result: stored apart so reads that don't need it stay small.
    `raw_json`: the raw result's model_dump_json() when the caller already has it."""
    raw = None if record.raw_result is None else raw_json or record.raw_result.model_dump_json()
    return record.model_dump_json(exclude={"raw_result"}), raw


def _record(data: bytes | str) -> CanonicalRecord:
    """One stored record's JSON as a validated CanonicalRecord (ValidationError when it is not one).

    pydantic-core's own JSON parser (the one model_validate_json runs, so NaN, integers of any size, escapes and
    repeated keys read alike) builds the objects and the model validates them in Python mode: three quarters of
    model_validate_json's cost (bench/bench_guard.py's 20 records: 340 -> 252 us). JSON gives only dicts, lists, str,
    int, float, bool and None, which both modes accept and convert alike. orjson would be faster still but reads an
    integer beyond 64 bits as a float. JSON that does not parse goes to model_validate_json for the same refusal."""
    try:
        value = from_json(data)
    except (ValueError, TypeError):  # TypeError: a str that is not Unicode text (a lone surrogate)
        return CanonicalRecord.model_validate_json(data)
    return CanonicalRecord.model_validate(value)


def _parse(data: bytes | str | None, where: str, raw: bytes | str | None = None) -> CanonicalRecord | None:
    """Decode one stored record (and its raw result when given); a corrupt one counts as missing (logged, never raised)."""
    if data is None:
        return None
    try:
        record = _record(data)
        if raw is not None:
            record.raw_result = RawResult.model_validate_json(raw)
        return record
    except ValidationError as exc:
        logger.warning("canonical record %s is unreadable (%d errors); treated as missing", where, exc.error_count())
        return None


def _dump(data: bytes | str | None, where: str) -> dict[str, Any] | None:
    """One stored record (its JSON without the raw result) as the object it encodes; unreadable JSON counts as
    missing (logged, never raised). The JSON was written by model_dump_json, so the object is what
    model_dump(mode="json") of the parsed record gives, key for key."""
    if data is None:
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        try:  # integers beyond 64 bits, which orjson does not read
            value = json.loads(data)
        except ValueError:
            value = None
    if not isinstance(value, dict):
        logger.warning("canonical record %s is unreadable (not a JSON object); treated as missing", where)
        return None
    return value


class InMemoryCanonicalStore:
    """Canonical store inside this process. Records are kept serialised, as in Redis, so nothing aliases."""

    def __init__(self, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._records: dict[tuple[str, str], tuple[float, str, str | None]] = {}
        self._reserved: dict[str, set[str]] = {}
        self._order: dict[str, list[str]] = {}

    def _live(self, run_id: str, tool_call_id: str) -> tuple[str, str | None] | None:
        entry = self._records.get((run_id, tool_call_id))
        if entry is None:
            return None
        expires_at, data, raw = entry
        if expires_at <= self._clock():
            del self._records[(run_id, tool_call_id)]
            return None
        return data, raw

    async def reserve(self, run_id: str, tool_call_id: str) -> bool:
        """Claim an id for a run; False if already used in that run."""
        ids = self._reserved.setdefault(run_id, set())
        if tool_call_id in ids or self._live(run_id, tool_call_id) is not None:
            return False
        ids.add(tool_call_id)
        return True

    async def reserve_pending(self, record: CanonicalRecord) -> bool:
        """reserve and put in one step: claim the record's id for its run and write it; False (nothing written) if the
        id was used in that run."""
        if not await self.reserve(record.run_id, record.tool_call_id):
            return False
        await self.put(record)
        return True

    async def put(self, record: CanonicalRecord) -> None:
        """Create or replace a record (with the store's TTL)."""
        await self.put_dumped(record, None)

    async def put_dumped(self, record: CanonicalRecord, raw_json: str | None) -> None:
        """put, with the raw result's JSON when the caller already has it (ports.DumpedPuts)."""
        key = (record.run_id, record.tool_call_id)
        order = self._order.setdefault(record.run_id, [])
        if record.tool_call_id not in order:
            order.append(record.tool_call_id)
        self._reserved.setdefault(record.run_id, set()).add(record.tool_call_id)
        self._records[key] = (self._clock() + self._ttl_s, *_split(record, raw_json))

    async def get_many(
        self, run_id: str, tool_call_ids: Sequence[str], *, with_raw: bool = False
    ) -> dict[str, CanonicalRecord | None]:
        """Read several records of one run (raw results only with_raw); missing ones map to None."""
        found: dict[str, CanonicalRecord | None] = {}
        for i in tool_call_ids:
            live = self._live(run_id, i)
            found[i] = None if live is None else _parse(live[0], f"{run_id}/{i}", live[1] if with_raw else None)
        return found

    async def list_run(self, run_id: str, *, with_raw: bool = False) -> list[CanonicalRecord]:
        """All live records of a run, in call order."""
        found = await self.get_many(run_id, list(self._order.get(run_id, [])), with_raw=with_raw)
        return [record for record in found.values() if record is not None]

    async def list_run_dumps(self, run_id: str) -> list[dict[str, Any]]:
        """The run's live records without raw results, in call order, as the JSON objects kept."""
        found = []
        for call_id in list(self._order.get(run_id, [])):
            live = self._live(run_id, call_id)
            dump = None if live is None else _dump(live[0], f"{run_id}/{call_id}")
            if dump is not None:
                found.append(dump)
        return found


# A claim and a write each in one server-side script: one command and one reply instead of a MULTI/EXEC of four and
# eight (each queued command answers QUEUED before EXEC answers them all), and atomic the same way.
# KEYS: ids set; ARGV: call id, ttl s. Returns SADD's count (1: claimed now).
_RESERVE = "local added = redis.call('SADD', KEYS[1], ARGV[1]) redis.call('EXPIRE', KEYS[1], ARGV[2]) return added"
# KEYS: record, raw, ids set, order zset; ARGV: record JSON, raw JSON ('' = none), call id, order score, ttl s.
# ZADD NX keeps the first score, so PENDING -> READY does not move a call in the order.
_PUT = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[5])
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[5]) end
redis.call('SADD', KEYS[3], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[5])
redis.call('ZADD', KEYS[4], 'NX', ARGV[4], ARGV[3])
redis.call('EXPIRE', KEYS[4], ARGV[5])
return 1
"""

# reserve then put of a new call's first (PENDING) record, in one script: nothing is written when the id was used.
# KEYS and ARGV as _PUT's. Returns 1 when claimed and written, 0 when the id was taken.
_RESERVE_PUT = """
local added = redis.call('SADD', KEYS[3], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[5])
if added == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[5])
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[5]) end
redis.call('ZADD', KEYS[4], 'NX', ARGV[4], ARGV[3])
redis.call('EXPIRE', KEYS[4], ARGV[5])
return 1
"""

# KEYS: order zset; ARGV: record-key prefix, raw-key prefix ('' = no raw results). A run's index and its records in
# one round trip: {ids, records, raws} (missing records are nil). A run holds at most DIAG_MAX_TOOL_CALLS records,
# far below Lua's unpack limit.
_LIST = """
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
if #ids == 0 then return {ids, {}, {}} end
local keys = {}
for i, id in ipairs(ids) do keys[i] = ARGV[1] .. id end
local records = redis.call('MGET', unpack(keys))
local raws = {}
if ARGV[2] ~= '' then
  for i, id in ipairs(ids) do keys[i] = ARGV[2] .. id end
  raws = redis.call('MGET', unpack(keys))
end
return {ids, records, raws}
"""


class RedisCanonicalStore:
    """Canonical store in Redis: one JSON string per call with a TTL, plus per-run id set and ordered index."""

    def __init__(self, client: aioredis.Redis, prefix: str = "diag:", ttl_s: int = DEFAULT_TTL_S) -> None:
        self._client = client
        self._prefix = prefix
        self._ttl_s = ttl_s
        lean = self._lean = LeanRedis(client)  # the commands without redis-py's per-command layers
        self._reserve = lean.script(_RESERVE)
        self._put = lean.script(_PUT)
        self._list = lean.script(_LIST)
        self._reserve_put = lean.script(_RESERVE_PUT)

    def record_key(self, run_id: str, tool_call_id: str) -> str:
        """Redis key of one record."""
        return f"{self._prefix}inv:{run_id}:{tool_call_id}"

    def raw_key(self, run_id: str, tool_call_id: str) -> str:
        """Redis key of one record's raw backend result."""
        return f"{self._prefix}raw:{run_id}:{tool_call_id}"

    def _ids_key(self, run_id: str) -> str:
        return f"{self._prefix}run:{run_id}:ids"

    def _order_key(self, run_id: str) -> str:
        return f"{self._prefix}run:{run_id}:order"

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        try:
            return await operation()
        except (RedisError, OSError) as exc:
            raise StoreUnavailable("canonical store (Redis)", type(exc).__name__) from exc

    async def reserve(self, run_id: str, tool_call_id: str) -> bool:
        """Claim an id for a run atomically (SADD on the run's id set, one script); False if already used in that
        run."""
        added: Any = await self._call(lambda: self._reserve(keys=[self._ids_key(run_id)],
                                                            args=[tool_call_id, self._ttl_s]))
        return int(added) == 1

    def _put_parts(self, record: CanonicalRecord, raw_json: str | None = None) -> tuple[list[str], list[str | int]]:
        run_id, call_id = record.run_id, record.tool_call_id
        data, raw = _split(record, raw_json)
        keys = [self.record_key(run_id, call_id), self.raw_key(run_id, call_id), self._ids_key(run_id),
                self._order_key(run_id)]
        return keys, [data, raw or "", call_id, repr(record.started_at.timestamp()), self._ttl_s]

    async def put(self, record: CanonicalRecord) -> None:
        """Write the record with the TTL and index it in call order, atomically (one script)."""
        await self.put_dumped(record, None)

    async def put_dumped(self, record: CanonicalRecord, raw_json: str | None) -> None:
        """put, with the raw result's JSON when the caller already has it (ports.DumpedPuts)."""
        keys, args = self._put_parts(record, raw_json)
        await self._call(lambda: self._put(keys=keys, args=args))

    async def reserve_pending(self, record: CanonicalRecord) -> bool:
        """reserve and put in one script (one round trip instead of two for every tool call): claim the record's id
        for its run and write the record; False, with nothing written, when the id was used in that run."""
        keys, args = self._put_parts(record)
        added: Any = await self._call(lambda: self._reserve_put(keys=keys, args=args))
        return int(added) == 1

    async def get_many(
        self, run_id: str, tool_call_ids: Sequence[str], *, with_raw: bool = False
    ) -> dict[str, CanonicalRecord | None]:
        """Read several records of one run with a single MGET (raw results only with_raw, in the same MGET);
        missing or corrupt ones map to None."""
        ids = list(dict.fromkeys(tool_call_ids))
        if not ids:
            return {}
        keys = [self.record_key(run_id, i) for i in ids]
        if with_raw:
            keys += [self.raw_key(run_id, i) for i in ids]
        values: list[Any] = await self._call(lambda: self._lean.execute("MGET", *keys))
        raws = values[len(ids):] if with_raw else [None] * len(ids)
        return {i: _parse(v, f"{run_id}/{i}", r) for i, v, r in zip(ids, values[: len(ids)], raws, strict=True)}

    async def list_run(self, run_id: str, *, with_raw: bool = False) -> list[CanonicalRecord]:
        """All live records of a run, in call order (the index and the records in one script)."""
        args = [self.record_key(run_id, ""), self.raw_key(run_id, "") if with_raw else ""]
        reply: list[Any] = await self._call(lambda: self._list(keys=[self._order_key(run_id)], args=args))
        members, values, raws = reply
        found: list[CanonicalRecord] = []
        for index, member in enumerate(members):
            call_id = member.decode() if isinstance(member, bytes) else str(member)
            raw = raws[index] if with_raw and index < len(raws) else None
            record = _parse(values[index] if index < len(values) else None, f"{run_id}/{call_id}", raw)
            if record is not None:
                found.append(record)
        return found

    async def list_run_dumps(self, run_id: str) -> list[dict[str, Any]]:
        """The run's live records without raw results, in call order, as the JSON objects kept (one script, as
        list_run; no model is built)."""
        args = [self.record_key(run_id, ""), ""]
        reply: list[Any] = await self._call(lambda: self._list(keys=[self._order_key(run_id)], args=args))
        members, values, _ = reply
        found: list[dict[str, Any]] = []
        for index, member in enumerate(members):
            call_id = member.decode() if isinstance(member, bytes) else str(member)
            dump = _dump(values[index] if index < len(values) else None, f"{run_id}/{call_id}")
            if dump is not None:
                found.append(dump)
        return found
