"""The access policy (core/access_policy.py) applied to a Slack asker before any run starts.

The channel and DM rules are decided from the ids alone; user groups listed in DIAG_DM_USERS are resolved with
usergroups.users.list and guests (users.info `is_restricted` / `is_ultra_restricted`) are refused unless
DIAG_ALLOW_GUESTS, both cached for a short time in this process. A Slack look-up that fails refuses (fail closed)
with a "try again" line: a policy that cannot be checked is not applied as if it allowed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_errors import error_code
from core.access_policy import AccessPolicy, Refusal, is_dm_channel

log = logging.getLogger(__name__)

LOOKUP_TTL_S = 60.0
MAX_CACHED = 10_000
V = TypeVar("V")


class _TtlCache(Generic[V]):
    """A bounded cache whose entries expire (oldest dropped first beyond `size`)."""

    def __init__(self, ttl_s: float, size: int = MAX_CACHED) -> None:
        self._ttl_s = ttl_s
        self._size = size
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def get(self, key: str) -> V | None:
        hit = self._entries.get(key)
        if hit is None or hit[0] <= time.monotonic():
            return None
        return hit[1]

    def put(self, key: str, value: V) -> None:
        self._entries[key] = (time.monotonic() + self._ttl_s, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class _Lookups(Generic[V]):
    """Cached look-ups; concurrent misses of one key share a single call (a burst of DMs is one Slack call)."""

    def __init__(self, ttl_s: float) -> None:
        self._cache: _TtlCache[V] = _TtlCache(ttl_s)
        self._pending: dict[str, asyncio.Future[V]] = {}

    async def get(self, key: str, load: Callable[[str], Awaitable[V]]) -> V:
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        pending = self._pending.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            value = await load(key)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waited
            raise
        finally:
            del self._pending[key]
        self._cache.put(key, value)
        future.set_result(value)
        return value


class LookupFailed(Exception):
    """Slack did not answer a policy look-up."""


class AskGate:
    """Decides whether a user may start work in a channel; `refusal` is the one line to show them, or None."""

    def __init__(self, policy: AccessPolicy, client: AsyncWebClient, ttl_s: float = LOOKUP_TTL_S) -> None:
        self.policy = policy
        self._client = client
        self._groups: _Lookups[frozenset[str]] = _Lookups(ttl_s)
        self._guests: _Lookups[bool] = _Lookups(ttl_s)

    async def refusal(self, channel: str, user: str, channel_type: str | None = None) -> Refusal | None:
        """Why `user` may not ask in `channel`, or None when they may."""
        is_dm = is_dm_channel(channel, channel_type)
        if (why := self.policy.place_refusal(channel, user, is_dm)) is not None:
            return why
        try:
            listed = self.policy.dm.everyone or user in self.policy.dm.users
            if is_dm and not listed and not await self._in_a_group(user):
                return Refusal.DM_USER
            if not self.policy.allow_guests and await self._is_guest(user):
                return Refusal.GUEST
        except LookupFailed:
            return Refusal.UNCHECKED
        return None

    async def _in_a_group(self, user: str) -> bool:
        for group in sorted(self.policy.dm.groups):
            if user in await self._groups.get(group, self._members):
                return True
        return False

    async def _is_guest(self, user: str) -> bool:
        return await self._guests.get(user, self._look_up_guest)

    async def _members(self, group: str) -> frozenset[str]:
        try:
            resp = await self._client.usergroups_users_list(usergroup=group)
        except Exception as exc:
            log.warning("usergroups.users.list of %s failed: %s", group, error_code(exc))
            raise LookupFailed from exc
        return frozenset(u for u in resp.get("users") or [] if isinstance(u, str))

    async def _look_up_guest(self, user: str) -> bool:
        try:
            resp = await self._client.users_info(user=user)
        except Exception as exc:
            log.warning("users.info of %s failed: %s", user, error_code(exc))
            raise LookupFailed from exc
        info = resp.get("user") or {}
        return bool(info.get("is_restricted") or info.get("is_ultra_restricted"))
