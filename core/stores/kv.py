"""Small shared state (dedup keys, locks, cancel flags): Redis, or in-process for a single process."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from core.errors import StoreUnavailable
from core.stores.redis_lean import LeanRedis

T = TypeVar("T")


def ttl_ms(ttl_s: float) -> int:
    """Seconds (float) to whole milliseconds, at least 1 (Redis refuses PX 0)."""
    if not math.isfinite(ttl_s) or ttl_s <= 0:
        raise ValueError(f"ttl_s must be a positive number of seconds, got {ttl_s!r}")
    return max(1, math.ceil(ttl_s * 1000))


class InMemoryKV:
    """KeyValueStore in this process's memory, with per-key expiry."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._data: dict[str, tuple[float, str]] = {}

    def _live(self, key: str) -> str | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._data[key]
            return None
        return entry[1]

    async def set_if_absent(self, key: str, value: str, ttl_s: float) -> bool:
        """Set the key only if it is absent (or expired); True when this call set it."""
        expires_at = self._clock() + ttl_ms(ttl_s) / 1000
        if self._live(key) is not None:
            return False
        self._data[key] = (expires_at, value)
        return True

    async def get(self, key: str) -> str | None:
        """The live value of a key, or None."""
        return self._live(key)

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        """Set a key with a TTL, replacing any value."""
        self._data[key] = (self._clock() + ttl_ms(ttl_s) / 1000, value)

    async def delete(self, key: str) -> None:
        """Remove a key (no error if absent)."""
        self._data.pop(key, None)

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """The live values of several keys (None where absent)."""
        return [self._live(key) for key in keys]

    async def renew(self, key: str, value: str, ttl_s: float) -> bool:
        """Reset the TTL if the key still holds `value`."""
        expires_at = self._clock() + ttl_ms(ttl_s) / 1000
        if self._live(key) != value:
            return False
        self._data[key] = (expires_at, value)
        return True

    async def delete_if(self, key: str, value: str) -> bool:
        """Delete the key if it still holds `value`."""
        if self._live(key) != value:
            return False
        del self._data[key]
        return True

    async def set_many(self, values: Mapping[str, str], ttl_s: float, ttls: Mapping[str, float] | None = None) -> None:
        """set() of several keys with one TTL (`ttls`: another for some of them)."""
        for key, value in values.items():
            await self.set(key, value, ttls.get(key, ttl_s) if ttls else ttl_s)

    async def renew_many(self, leases: Mapping[str, str], ttl_s: float) -> list[bool]:
        """renew() of several leases; True for each still owned."""
        return [await self.renew(key, value, ttl_s) for key, value in leases.items()]

    async def delete_many(self, keys: Sequence[str], owned: Mapping[str, str] | None = None) -> None:
        """delete() of `keys`, delete_if() of each `owned` lease."""
        for key in keys:
            self._data.pop(key, None)
        for key, value in (owned or {}).items():
            await self.delete_if(key, value)

    async def incr(self, key: str, ttl_s: float) -> int:
        """Add one to a counter (created with `ttl_s`, never extended)."""
        current = self._live(key)
        if current is None:
            self._data[key] = (self._clock() + ttl_ms(ttl_s) / 1000, "1")
            return 1
        count = int(current) + 1
        self._data[key] = (self._data[key][0], str(count))
        return count


# Compare-and-act on a lease: atomic in Redis, so an owner whose lease expired and was taken cannot touch the new one.
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end"
_DELETE_IF = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"
# The same for many leases at once (KEYS: the leases; ARGV: the TTL in ms, then each owner's value in KEYS' order).
_RENEW_MANY = """
local held = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[i + 1] then held[i] = redis.call('PEXPIRE', key, ARGV[1]) else held[i] = 0 end
end
return held
"""
# KEYS: the keys; ARGV: each key's value, then its TTL in ms, in KEYS' order (redis-py's pipeline costs more client
# CPU).
_SET_MANY = "for i, key in ipairs(KEYS) do redis.call('SET', key, ARGV[2 * i - 1], 'PX', ARGV[2 * i]) end return 1"
# KEYS: plain keys, then owned leases; ARGV: how many plain keys, then each lease owner's value in KEYS' order.
_DELETE_MANY = """
local plain = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  if i <= plain or redis.call('GET', key) == ARGV[i - plain + 1] then redis.call('DEL', key) end
end
return 1
"""
_INCR = "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n"


class RedisKV:
    """KeyValueStore over Redis: SET NX PX for dedup and locks; every key under `prefix`."""

    def __init__(self, client: aioredis.Redis, prefix: str = "diag:") -> None:
        self._client = client
        self._prefix = prefix
        lean = self._lean = LeanRedis(client)  # the commands without redis-py's per-command layers
        self._renew = lean.script(_RENEW)
        self._delete_if = lean.script(_DELETE_IF)
        self._renew_many = lean.script(_RENEW_MANY)
        self._set_many = lean.script(_SET_MANY)
        self._delete_many = lean.script(_DELETE_MANY)
        self._incr = lean.script(_INCR)

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        try:
            return await operation()
        except (RedisError, OSError) as exc:
            raise StoreUnavailable("key-value store (Redis)", type(exc).__name__) from exc

    async def set_if_absent(self, key: str, value: str, ttl_s: float) -> bool:
        """Set the key only if absent (SET NX PX); True when this call set it."""
        px = ttl_ms(ttl_s)
        result: Any = await self._call(lambda: self._lean.execute("SET", self._prefix + key, value, "PX", px, "NX"))
        return bool(result)

    async def get(self, key: str) -> str | None:
        """The value of a key, or None."""
        value: Any = await self._call(lambda: self._lean.execute("GET", self._prefix + key))
        if value is None:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        """Set a key with a TTL (SET PX), replacing any value."""
        px = ttl_ms(ttl_s)
        await self._call(lambda: self._lean.execute("SET", self._prefix + key, value, "PX", px))

    async def delete(self, key: str) -> None:
        """Remove a key (no error if absent)."""
        await self._call(lambda: self._lean.execute("DEL", self._prefix + key))

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """MGET of several keys (None where absent)."""
        if not keys:
            return []
        values: Any = await self._call(lambda: self._lean.execute("MGET", *[self._prefix + k for k in keys]))
        return [None if v is None else (v.decode() if isinstance(v, bytes) else str(v)) for v in values]

    async def count_present(self, keys: Sequence[str]) -> int:
        """How many of the keys exist (EXISTS: one integer back, however many keys; none read or decoded)."""
        if not keys:
            return 0
        count: Any = await self._call(lambda: self._lean.execute("EXISTS", *[self._prefix + k for k in keys]))
        return int(count)

    async def renew(self, key: str, value: str, ttl_s: float) -> bool:
        """PEXPIRE the key if it still holds `value` (one Lua script: atomic)."""
        px = ttl_ms(ttl_s)
        result: Any = await self._call(lambda: self._renew(keys=[self._prefix + key], args=[value, px]))
        return bool(result)

    async def delete_if(self, key: str, value: str) -> bool:
        """DEL the key if it still holds `value` (one Lua script: atomic)."""
        result: Any = await self._call(lambda: self._delete_if(keys=[self._prefix + key], args=[value]))
        return bool(result)

    async def set_many(self, values: Mapping[str, str], ttl_s: float, ttls: Mapping[str, float] | None = None) -> None:
        """SET PX of several keys in one Lua script (one round trip); `ttls`: another TTL for some of them."""
        if not values:
            return
        keys = [self._prefix + key for key in values]
        px = ttl_ms(ttl_s)
        args: list[str | int] = []
        for key, value in values.items():
            args += (value, ttl_ms(ttls[key]) if ttls and key in ttls else px)
        await self._call(lambda: self._set_many(keys=keys, args=args))

    async def renew_many(self, leases: Mapping[str, str], ttl_s: float) -> list[bool]:
        """renew() of several leases in one Lua script (each compare-and-PEXPIRE atomic)."""
        if not leases:
            return []
        keys = [self._prefix + key for key in leases]
        args: list[str | int] = [ttl_ms(ttl_s), *leases.values()]
        held: Any = await self._call(lambda: self._renew_many(keys=keys, args=args))
        return [bool(h) for h in held]

    async def delete_many(self, keys: Sequence[str], owned: Mapping[str, str] | None = None) -> None:
        """DEL of `keys` and compare-and-DEL of each `owned` lease, in one Lua script."""
        owned = owned or {}
        if not keys and not owned:
            return
        names = [self._prefix + key for key in (*keys, *owned)]
        args: list[str | int] = [len(keys), *owned.values()]
        await self._call(lambda: self._delete_many(keys=names, args=args))

    async def incr(self, key: str, ttl_s: float) -> int:
        """INCR, with PEXPIRE when the counter was just created (one Lua script: atomic across replicas)."""
        px = ttl_ms(ttl_s)
        result: Any = await self._call(lambda: self._incr(keys=[self._prefix + key], args=[px]))
        return int(result)
