"""Per-session serialisation and the registry of active runs (SPEC §7, §8).

Turns of one session run one at a time. Two layers make that hold:

- an in-process `asyncio.Lock` per session (cheap, FIFO among waiters of this process);
- a KV lock `session-lock:<session>` taken with set-if-absent and a TTL, so two processes sharing
  Redis also serialise. The TTL is the run deadline plus a margin: runs are hard-bounded by their
  deadline, so a lock left by a crashed process frees itself and never needs refreshing.

Cancellation works across processes too: `cancel:<run_id>` is a KV flag a running run polls, and
`session-run:<session>` / `run-active:<run_id>` say which run a session is running right now.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from core.ports import KeyValueStore

log = logging.getLogger(__name__)

LOCK_MARGIN_S = 30.0


def lock_key(session_key: str) -> str:
    """KV key of a session's cross-process turn lock."""
    return f"session-lock:{session_key}"


def cancel_key(run_id: str) -> str:
    """KV key of a run's cancel flag."""
    return f"cancel:{run_id}"


def active_run_key(run_id: str) -> str:
    """KV key present while a run is running (value: its session key)."""
    return f"run-active:{run_id}"


def session_run_key(session_key: str) -> str:
    """KV key naming the run a session is running now."""
    return f"session-run:{session_key}"


@dataclass
class _Active:
    session_key: str
    cancelled: asyncio.Event


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
    ) -> None:
        """`shared=False` (an in-process KV) skips polling the cancel flag: no other process can set it."""
        self._kv = kv
        self._shared = shared
        self._lock_ttl_s = run_deadline_s + LOCK_MARGIN_S
        self._lock_poll_s = lock_poll_s
        self._cancel_poll_s = cancel_poll_s
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiters: dict[str, int] = {}
        self._active: dict[str, _Active] = {}

    @contextlib.asynccontextmanager
    async def turn(self, session_key: str, run_id: str) -> AsyncIterator[None]:
        """Hold the session for one turn: in-process lock first, then the shared KV lock."""
        lock = self._locks.setdefault(session_key, asyncio.Lock())
        self._waiters[session_key] = self._waiters.get(session_key, 0) + 1
        try:
            async with lock:
                await self._acquire_shared(session_key, run_id)
                try:
                    yield
                finally:
                    await self._release_shared(session_key, run_id)
        finally:
            self._waiters[session_key] -= 1
            if self._waiters[session_key] == 0:
                # Nobody waits on this session in this process: forget its lock so the map stays small.
                del self._waiters[session_key]
                del self._locks[session_key]

    async def _acquire_shared(self, session_key: str, run_id: str) -> None:
        key = lock_key(session_key)
        # Polling, not an Event: the holder may be another process sharing the KV store.
        while not await self._kv.set_if_absent(key, run_id, self._lock_ttl_s):  # noqa: ASYNC110
            await asyncio.sleep(self._lock_poll_s)

    async def _release_shared(self, session_key: str, run_id: str) -> None:
        key = lock_key(session_key)
        # Shielded so a cancelled turn still frees the shared lock instead of leaving it to its TTL.
        owner = await asyncio.shield(self._kv.get(key))
        if owner == run_id:
            await asyncio.shield(self._kv.delete(key))

    @contextlib.asynccontextmanager
    async def active(self, session_key: str, run_id: str, cancelled: asyncio.Event) -> AsyncIterator[None]:
        """Register a running run so it can be cancelled here or from another process."""
        self._active[run_id] = _Active(session_key, cancelled)
        await self._kv.set(active_run_key(run_id), session_key, self._lock_ttl_s)
        await self._kv.set(session_run_key(session_key), run_id, self._lock_ttl_s)
        watcher = None
        if self._shared:
            watcher = asyncio.create_task(self._watch_cancel_flag(run_id, cancelled), name=f"cancel-watch-{run_id}")
        try:
            yield
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            del self._active[run_id]
            await asyncio.shield(self._forget(session_key, run_id))

    async def _forget(self, session_key: str, run_id: str) -> None:
        await self._kv.delete(active_run_key(run_id))
        await self._kv.delete(cancel_key(run_id))
        if await self._kv.get(session_run_key(session_key)) == run_id:
            await self._kv.delete(session_run_key(session_key))

    async def _watch_cancel_flag(self, run_id: str, cancelled: asyncio.Event) -> None:
        while not cancelled.is_set():
            try:
                if await self._kv.get(cancel_key(run_id)) is not None:
                    cancelled.set()
                    return
            except Exception:  # a KV hiccup must not kill the run; the in-process path still works
                log.warning("cancel flag poll failed for %s", run_id)
            await asyncio.sleep(self._cancel_poll_s)

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
        return await self._kv.set_if_absent(cancel_key(run_id), "1", self._lock_ttl_s)

    async def cancel_session(self, session_key: str) -> bool:
        """Cancel the run the session is running now; False if it runs nothing."""
        for run_id, active in self._active.items():
            if active.session_key == session_key:
                return await self.cancel_run(run_id)
        remote_run_id = await self._kv.get(session_run_key(session_key))
        if remote_run_id is None:
            return False
        return await self.cancel_run(remote_run_id)

    def is_active(self, run_id: str) -> bool:
        """True while the run is running in this process."""
        return run_id in self._active
