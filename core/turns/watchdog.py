"""The guarantee above every component: each accepted turn ends in one final message by a known time.

A turn's run is hard-bounded by the core (its deadline plus the release grace), but a component may still hang in
a way no timeout reaches (a task that swallows its cancel, a driver stuck in C). The Watchdog does not rely on the
turn's task at all: it looks at every turn in flight every `interval_s`, and a turn that is not delivering its final
message by `due` (TurnTiming.due_s after its run started) is handed, once, to the runner's take-over, which
finishes it from outside: a clear FAILURE in its thread through the answer record (core/turns/answers.py, so a
late answer of the stuck run can never become a second final message), and its session released.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from core.contracts.run import SessionKey
from core.turns.surface import Target, TurnProgress

log = logging.getLogger(__name__)


class JobHooks(Protocol):
    """What the queue does around one attempt (the worker's held job implements it)."""

    async def ready(self) -> tuple[bool, str | None]:
        """Wait until the job is first of its thread and record the attempt: (go, the run id this one re-runs)."""
        ...

    async def taken_over(self) -> None:
        """The watchdog answered the turn from outside: finish the job."""
        ...


@dataclass
class TurnState:
    """One accepted turn in flight."""

    job_id: str
    target: Target
    session: SessionKey
    run_id: str
    progress: TurnProgress
    due: float
    until: float
    task: asyncio.Task[None] | None = None
    hooks: JobHooks | None = None
    finishing: bool = False
    """The turn itself is delivering its final message (the watchdog leaves it alone)."""
    abandoned: bool = False
    """The watchdog took the turn over (the turn itself posts nothing more)."""
    replaces: str | None = None
    """The run id of the attempt this one re-runs (its unfinished answer claim may be taken over)."""


class Watchdog:
    """Hands every turn that is past `due` and not finishing to `take_over`, once."""

    def __init__(self, interval_s: float, take_over: Callable[[TurnState], Coroutine[Any, Any, None]],
                 spawn: Callable[[Coroutine[Any, Any, None], str], None]) -> None:
        self._interval_s = interval_s
        self._take_over = take_over
        self._spawn = spawn
        self._turns: dict[str, TurnState] = {}
        self._task: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._turns)

    def watch(self, state: TurnState) -> None:
        """Start watching a turn (the watchdog task starts with the first one and ends when none is left)."""
        self._turns[state.run_id] = state
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._loop(), name="turn-watchdog")

    def forget(self, state: TurnState) -> None:
        """The turn has ended (its final message is out, or it was taken over)."""
        if self._turns.get(state.run_id) is state:
            del self._turns[state.run_id]

    def check(self, now: float | None = None) -> int:
        """Take over every overdue turn now; returns how many were taken over."""
        now = time.monotonic() if now is None else now
        overdue = [s for s in self._turns.values() if not s.finishing and not s.abandoned and now >= s.due]
        for state in overdue:
            state.abandoned = True
            log.error("turn %s (run %s) passed its deadline without an answer; the watchdog finishes it",
                      state.job_id, state.run_id)
            self._spawn(self._take_over(state), f"watchdog:{state.run_id}")
        return len(overdue)

    async def _loop(self) -> None:
        while self._turns:
            await asyncio.sleep(self._interval_s)
            self.check()

    async def aclose(self) -> None:
        """Stop looking (shutdown)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)
