"""The guarantee above every component: each accepted turn ends in one final message by a known time.

A turn's run is hard-bounded by the core (its deadline plus the release grace), but a component may still hang in
a way no timeout reaches (a task that swallows its cancel, a driver stuck in C). The Watchdog does not rely on the
turn's task at all: it looks at every turn in flight every `interval_s`, and a turn that is not delivering its final
message by `due` (hard backstop + `watchdog_grace_s`) is handed, once, to the runner's take-over, which finishes
it from outside: a clear FAILURE in its thread through the per-turn answer record (bot/final_once.py, so a late
answer of the stuck run can never become a second final message), and its session released.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from bot.stream import TurnProgress
from core.contracts.run import Budgets, SessionKey
from core.service.chat_service import release_grace_s

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnTarget:
    """The user message a turn answers, and the thread its answer goes to."""

    channel: str
    thread_ts: str
    message_ts: str

    @property
    def key(self) -> str:
        """`<channel>:<message_ts>`: the message's dedup key and its queue job id (core.queue.job.turn_job_id)."""
        return f"{self.channel}:{self.message_ts}"


@dataclass(frozen=True)
class TurnTiming:
    """When a turn must be answered, counted from its acceptance."""

    run_deadline_s: float = Budgets().deadline_s
    """The run's own deadline (Budgets.deadline_s)."""
    watchdog_grace_s: float = 10.0
    """How long past the run's hard backstop (deadline + release grace) before the watchdog takes the turn over."""
    final_margin_s: float = 60.0
    """How long past the hard backstop the final message may keep trying to reach Slack (outages shorter than this
    still end in the answer)."""
    interval_s: float = 1.0
    """How often the watchdog looks."""

    @property
    def backstop_s(self) -> float:
        """The core's hard end of a run: its deadline plus the release grace."""
        return self.run_deadline_s + release_grace_s(self.run_deadline_s)

    @property
    def due_s(self) -> float:
        """Seconds after acceptance at which a turn not yet delivering is taken over."""
        return self.backstop_s + self.watchdog_grace_s

    @property
    def answer_by_s(self) -> float:
        """Seconds after acceptance by which the final message is in the thread, or its failure logged."""
        return self.backstop_s + max(self.final_margin_s, self.watchdog_grace_s + 1.0)


@dataclass
class TurnState:
    """One accepted turn in flight."""

    target: TurnTarget
    session: SessionKey
    run_id: str
    progress: TurnProgress
    due: float
    until: float
    task: asyncio.Task[None] | None = None
    finishing: bool = False
    """The turn itself is delivering its final message (the watchdog leaves it alone)."""
    abandoned: bool = False
    """The watchdog took the turn over (the turn itself posts nothing more)."""
    replaces: str | None = None
    """The run id of the attempt this one re-runs (its unfinished answer claim may be taken over)."""
    on_taken_over: Callable[[], Awaitable[None]] | None = None
    """Called once the watchdog has answered the turn (the queue worker finishes the job)."""


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
                      state.target.key, state.run_id)
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
