"""Per-session serialisation and the registry of active runs (SPEC §7, §8).

Turns of one session run one at a time. Two layers make that hold:

- an in-process `asyncio.Lock` per session (cheap, FIFO among waiters of this process);
- a KV lease `session-lock:<session>` owned by the run id, taken with set-if-absent and a short TTL
  (`lease_s`, default 15 s) that this process renews while the owner runs. A process that dies (kill -9,
  OOM) stops renewing, so its lease lapses within `lease_s`: a dead owner never blocks a thread for minutes.
  Renewal and release compare the owner first (atomic in Redis), so an owner whose lease lapsed cannot
  extend or free the next owner's.

Cancellation works across processes too: `cancel:<run_id>` is a KV flag, and `session-run:<session>` /
`run-active:<run_id>` say which run a session is running right now. `run-active:<run_id>` is also the run's
heartbeat (a lease renewed like the lock): the recovery job treats a RUNNING run without it as abandoned.

One keeper task per gate renews every lease of all local runs in one round trip (a script) and polls their cancel
flags in one round trip (EXISTS of every flag, one integer back; MGET only when some are up). No run
ever waits for a helper task to stop: a task that is cancelled may keep running (redis-py can swallow a
cancel), so ending a run only removes it from the keeper's maps, and the keeper exits by itself when idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from core.ports import KeyValueStore

log = logging.getLogger(__name__)

LEASE_S = 15.0
CANCEL_TTL_MARGIN_S = 30.0
KEEPER_STOP_TIMEOUT_S = 1.0


def lock_key(session_key: str) -> str:
    """KV key of a session's cross-process turn lock."""
    return f"session-lock:{session_key}"


def cancel_key(run_id: str) -> str:
    """KV key of a run's cancel flag."""
    return f"cancel:{run_id}"


def active_run_key(run_id: str) -> str:
    """KV key present while a run is running (value: its session key); its heartbeat."""
    return f"run-active:{run_id}"


def session_run_key(session_key: str) -> str:
    """KV key naming the run a session is running now."""
    return f"session-run:{session_key}"


@runtime_checkable
class PresenceCount(Protocol):
    """A KV store that counts how many of several keys exist without reading them (RedisKV: EXISTS, one integer
    back); the cancel poll falls back to get_many for any other."""

    async def count_present(self, keys: Sequence[str]) -> int: ...


@dataclass
class _Active:
    session_key: str
    cancelled: asyncio.Event
    cancel_key: str


@dataclass
class _Hold:
    """Who holds a session's in-process lock; released once, by its turn or by `release()` (the watchdog)."""

    run_id: str
    lock: asyncio.Lock
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.lock.release()


class SessionGate:
    """Serialises turns per session and tracks which run is active, in-process and through the KV store."""

    def __init__(
        self,
        kv: KeyValueStore,
        *,
        run_deadline_s: float,
        shared: bool = True,
        lock_poll_s: float = 0.05,
        cancel_poll_s: float = 0.25,
        lease_s: float = LEASE_S,
    ) -> None:
        """`shared=False` (an in-process KV) skips polling the cancel flag: no other process can set it."""
        self._kv = kv
        self._shared = shared
        self._cancel_ttl_s = run_deadline_s + CANCEL_TTL_MARGIN_S
        self._lock_poll_s = lock_poll_s
        self._cancel_poll_s = cancel_poll_s
        self._lease_s = lease_s
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiters: dict[str, int] = {}
        self._active: dict[str, _Active] = {}
        self._holds: dict[str, _Hold] = {}
        self._leases: dict[str, str] = {}  # KV key -> the value its owner wrote (renewed by the keeper)
        self._keeper: asyncio.Task[None] | None = None
        self._count_present = kv.count_present if isinstance(kv, PresenceCount) else None

    @property
    def lease_s(self) -> float:
        """TTL of every lease this gate holds; a dead owner's lease lapses within it."""
        return self._lease_s

    @contextlib.asynccontextmanager
    async def turn(self, session_key: str, run_id: str) -> AsyncIterator[None]:
        """Hold the session for one turn: in-process lock first, then the shared KV lease."""
        lock = self._locks.setdefault(session_key, asyncio.Lock())
        self._waiters[session_key] = self._waiters.get(session_key, 0) + 1
        try:
            await lock.acquire()
            hold = self._holds[session_key] = _Hold(run_id, lock)
            try:
                await self._acquire_shared(session_key, run_id)
                try:
                    yield
                finally:
                    await self._release_shared(session_key, run_id)
            finally:
                hold.release()
                if self._holds.get(session_key) is hold:
                    del self._holds[session_key]
        finally:
            self._waiters[session_key] -= 1
            if self._waiters[session_key] == 0:
                # Nobody waits on this session in this process: forget its lock so the map stays small.
                del self._waiters[session_key]
                del self._locks[session_key]

    async def _acquire_shared(self, session_key: str, run_id: str) -> None:
        key = lock_key(session_key)
        # Polling, not an Event: the holder may be another process sharing the KV store.
        while not await self._kv.set_if_absent(key, run_id, self._lease_s):  # noqa: ASYNC110
            await asyncio.sleep(self._lock_poll_s)
        self._hold(key, run_id)

    async def _release_shared(self, session_key: str, run_id: str) -> None:
        key = lock_key(session_key)
        self._leases.pop(key, None)
        self._idle_check()
        # Shielded so a cancelled turn still frees the shared lock instead of leaving it to its lease.
        await asyncio.shield(self._kv.delete_if(key, run_id))

    def _idle_check(self) -> None:
        # Nothing left to renew or poll: stop the keeper now rather than at its next tick (never awaited).
        if not self._leases and not self._active and self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None

    def _hold(self, key: str, value: str) -> None:
        self._leases[key] = value
        if self._keeper is None or self._keeper.done():
            self._keeper = asyncio.create_task(self._keep(), name="session-gate-keeper")

    @contextlib.asynccontextmanager
    async def active(self, session_key: str, run_id: str, cancelled: asyncio.Event,
                     marks: Mapping[str, tuple[str, float]] | None = None) -> AsyncIterator[None]:
        """Register a running run so it can be cancelled here or from another process. `marks` (key -> value, TTL)
        are written in the same round trip as the leases, and kept: neither renewed nor deleted at the end."""
        self._active[run_id] = _Active(session_key, cancelled, cancel_key(run_id))
        try:
            values = {active_run_key(run_id): session_key, session_run_key(session_key): run_id}
            ttls: dict[str, float] | None = None
            if marks:
                ttls = {key: ttl for key, (_, ttl) in marks.items()}
                values.update({key: value for key, (value, _) in marks.items()})
            await self._kv.set_many(values, self._lease_s, ttls)
            self._hold(active_run_key(run_id), session_key)
            self._hold(session_run_key(session_key), run_id)
            yield
        finally:
            self._active.pop(run_id, None)  # release() may have dropped it already
            self._leases.pop(active_run_key(run_id), None)
            if self._leases.get(session_run_key(session_key)) == run_id:
                del self._leases[session_run_key(session_key)]
            self._idle_check()
            await asyncio.shield(self._forget(session_key, run_id))

    async def _forget(self, session_key: str, run_id: str) -> None:
        await self._kv.delete_many([active_run_key(run_id), cancel_key(run_id)],
                                   owned={session_run_key(session_key): run_id})

    async def _keep(self) -> None:
        """Renew leases every lease/3 and poll cancel flags; ends when nothing is held (restarted on demand)."""
        next_renewal = time.monotonic() + self._lease_s / 3
        while self._leases or self._active:
            await asyncio.sleep(min(self._cancel_poll_s, self._lease_s / 3))
            try:
                if self._shared:
                    await self._poll_cancel_flags()
                if time.monotonic() >= next_renewal:
                    next_renewal = time.monotonic() + self._lease_s / 3
                    await self._renew_all()
            except Exception as exc:  # a KV hiccup must not stop renewing; the next tick tries again
                log.warning("session lease keeper: %s", type(exc).__name__)

    async def _poll_cancel_flags(self) -> None:
        """Set the event of every local run whose cancel flag is up. A flag is rare: with a KV that counts keys the
        tick asks only how many are up (one integer back), and reads them (MGET) only when some are."""
        run_ids = [run_id for run_id, active in self._active.items() if not active.cancelled.is_set()]
        if not run_ids:
            return
        keys = [self._active[run_id].cancel_key for run_id in run_ids]
        if self._count_present is not None and not await self._count_present(keys):
            return
        flags = await self._kv.get_many(keys)
        for run_id, flag in zip(run_ids, flags, strict=True):
            active = self._active.get(run_id)
            if flag is not None and active is not None:
                active.cancelled.set()

    async def _renew_all(self) -> None:
        leases = dict(self._leases)  # every lease of every local run in one round trip
        held = await self._kv.renew_many(leases, self._lease_s)
        for (key, value), renewed in zip(leases.items(), held, strict=True):
            if renewed or self._leases.get(key) != value:
                continue
            # Lapsed (this process stalled longer than the lease): write it back only if nobody took it.
            if not await self._kv.set_if_absent(key, value, self._lease_s):
                log.warning("lease %s was lost to another owner", key.split(":", 1)[0])
                self._leases.pop(key, None)
            elif self._leases.get(key) != value:  # released while we wrote it back
                await self._kv.delete_if(key, value)

    async def aclose(self) -> None:
        """Stop the keeper (bounded: never wait on a task that may not honour its cancel)."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None and not keeper.done():
            keeper.cancel()
            await asyncio.wait({keeper}, timeout=KEEPER_STOP_TIMEOUT_S)

    async def cancel_run(self, run_id: str) -> bool:
        """Cancel a running run (here or in another process); False if unknown or already finished."""
        local = self._active.get(run_id)
        if local is not None:
            if local.cancelled.is_set():
                return False
            local.cancelled.set()
            return True
        if await self._kv.get(active_run_key(run_id)) is None:
            return False
        return await self._kv.set_if_absent(cancel_key(run_id), "1", self._cancel_ttl_s)

    async def cancel_session(self, session_key: str) -> bool:
        """Cancel the run the session is running now; False if it runs nothing."""
        for run_id, active in self._active.items():
            if active.session_key == session_key:
                return await self.cancel_run(run_id)
        remote_run_id = await self._kv.get(session_run_key(session_key))
        if remote_run_id is None:
            return False
        return await self.cancel_run(remote_run_id)

    async def release(self, session_key: str, run_id: str) -> None:
        """Free a session whose turn is stuck (the bot's watchdog): its waiters here go on, its leases stop being
        renewed and are dropped, and the stuck turn's own release later is a no-op. Only `run_id`'s hold is freed."""
        hold = self._holds.get(session_key)
        if hold is not None and hold.run_id == run_id:
            hold.release()
            del self._holds[session_key]
        active = self._active.pop(run_id, None)
        if active is not None:
            active.cancelled.set()
        for key, value in ((lock_key(session_key), run_id), (active_run_key(run_id), session_key),
                           (session_run_key(session_key), run_id)):
            if self._leases.get(key) == value:
                del self._leases[key]
        self._idle_check()
        await self._kv.delete_many([active_run_key(run_id)],
                                   owned={lock_key(session_key): run_id, session_run_key(session_key): run_id})

    def is_active(self, run_id: str) -> bool:
        """True while the run is running in this process."""
        return run_id in self._active
