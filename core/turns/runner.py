"""Running one attempt of a turn: progress message, ChatService.handle, final message — and nothing else.

The queue worker (core/turns/worker.py) calls `TurnRunner.run` for each job it takes; `start` runs one directly,
outside any queue (the queue is down, or a tool). Every attempt is watched (core/turns/watchdog.py) and its final
goes out through the answer record (core/turns/answers.py), so a turn ends in exactly one final message by
`TurnTiming.answer_by_s` whatever a component does: normally from the attempt itself, else from the watchdog's
take-over. A re-run (its first worker died, or handed it back at shutdown) edits the placeholder the first attempt
posted and says it was re-run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

from core.contracts.release import FallbackMessage, Outcome, ReleaseOutcome
from core.contracts.run import Intent, SessionKey
from core.observability.log_context import bind_log_fields
from core.ports import ChatServicePort
from core.queue.job import TurnJob, turn_job_id
from core.run import within
from core.service.chat_service import new_run_id
from core.turns.answers import Answers
from core.turns.surface import Final, FinalKind, Target
from core.turns.timing import TurnTiming
from core.turns.watchdog import JobHooks, TurnState, Watchdog

log = logging.getLogger(__name__)

MAX_TURN_TEXT = 4000
WATCHDOG_REASON = "the run did not finish within its deadline and was stopped"


def target_of(job: TurnJob) -> Target:
    """Where a job's turn answers: its session's thread."""
    return Target(job.session.channel, job.session.thread_ts)


def new_job(session: SessionKey, text: str, user: str, message_ts: str, intent: Intent | None = None) -> TurnJob:
    """The job of one message (its id is the message's identity: a retry or double delivery finds it)."""
    return TurnJob(job_id=turn_job_id(session.channel, message_ts), session=session, text=text[:MAX_TURN_TEXT],
                   user=user, message_ts=message_ts, run_id=new_run_id(), intent=intent)


def watchdog_failure(run_id: str) -> ReleaseOutcome:
    """The FAILURE the watchdog posts when the core could not even say what the stuck run observed."""
    return ReleaseOutcome(run_id=run_id, outcome=Outcome.FAILURE, fallback=FallbackMessage(
        stage="the run did not finish in time", reason=WATCHDOG_REASON,
        next_steps=["Ask again; if it keeps happening, the bot's logs name the stuck run."]))


@dataclass
class Attempt:
    """One attempt at a job: the run id it gets, and the queue's hooks around it (None: outside any queue)."""

    job: TurnJob
    run_id: str
    hooks: JobHooks | None = None
    adopt_placeholder: bool = False
    """An earlier attempt may have posted the placeholder: edit that one instead of posting another."""
    handing_back: bool = False
    """Set before the attempt is cancelled for a hand-back at shutdown: it posts nothing (a re-run answers)."""


class TurnRunner:
    """Runs attempts of turns (the worker's, or background tasks kept referenced) and delivers their finals."""

    def __init__(self, chat: ChatServicePort, answers: Answers, timing: TurnTiming = TurnTiming()) -> None:
        self._chat = chat
        self.answers = answers
        self.timing = timing
        self._tasks: set[asyncio.Task[None]] = set()
        self._stuck: set[asyncio.Task[None]] = set()  # turns the watchdog took over: referenced, no longer counted
        self._busy = 0
        self.watchdog = Watchdog(timing.interval_s, self._take_over, self.spawn)

    @property
    def in_flight(self) -> int:
        """Listeners still deciding plus background work still running."""
        return len(self._tasks) + self._busy

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Mark a listener at work (shutdown waits for it before closing the queue)."""
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1

    def start(self, session: SessionKey, text: str, user: str, message_ts: str,
              intent: Intent | None = None) -> asyncio.Task[None]:
        """Run one turn now as a background task, outside any queue, and return at once."""
        job = new_job(session, text, user, message_ts, intent)
        task = asyncio.create_task(self.run(Attempt(job=job, run_id=job.run_id)), name=f"turn:{job.job_id}")
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """Run other after-ack work (e.g. a cancel confirmation) with a kept reference."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._stuck.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    async def run(self, attempt: Attempt) -> None:
        """Run one attempt to its final message (in the calling task, watched by the watchdog)."""
        job = attempt.job
        bind_log_fields(session=job.session.as_str())  # each attempt runs in its own task: every log line of the turn
        placeholder = await self.answers.placeholder(job.job_id) if attempt.adopt_placeholder else None
        progress = self.answers.surface.progress(target_of(job), user=job.user, team=job.session.team,
                                                 placeholder_ts=placeholder)
        now = time.monotonic()
        state = TurnState(job_id=job.job_id, target=target_of(job), session=job.session, run_id=attempt.run_id,
                          progress=progress, due=now + self.timing.due_s, until=now + self.timing.answer_by_s,
                          task=asyncio.current_task(), hooks=attempt.hooks)
        self.watchdog.watch(state)
        await self._run(attempt, state)

    async def post_final(self, job: TurnJob, owner: str, final: Final) -> None:
        """Post `final` as the turn's one final message without running it (busy, gave up), in its placeholder when
        an earlier attempt posted one."""
        placeholder = await self.answers.placeholder(job.job_id)
        await self.answers.post(job.job_id, owner, target_of(job), placeholder, final,
                                until=time.monotonic() + self.timing.final_margin_s, wait_s=0)

    async def _final(self, state: TurnState, owner: str, final: Final, until: float,
                     wait_s: float | None = None) -> None:
        await self.answers.post(state.job_id, owner, state.target, state.progress.ts, final, until=until,
                                wait_s=wait_s, replaces=state.replaces)

    async def _start_progress(self, state: TurnState) -> None:
        progress = state.progress
        if progress.ts is None:  # not adopted from an earlier attempt
            await progress.start()
            if progress.ts is not None:  # recorded: any later attempt (or process) edits this same message
                await self.answers.keep_placeholder(state.job_id, progress.ts)

    async def _attempt(self, attempt: Attempt, state: TurnState) -> Final:
        """Wait for the queue's go, run the turn and say how it ended."""
        go, restart_of = await attempt.hooks.ready() if attempt.hooks is not None else (True, None)
        state.replaces = restart_of
        if attempt.hooks is not None:  # the run starts now: its deadline counts from here, not from the wait
            now = time.monotonic()  # behind the thread's earlier turns (itself bounded by their deadlines)
            state.due, state.until = now + self.timing.due_s, now + self.timing.answer_by_s
        if not go:
            return Final(FinalKind.CANCELLED_BEFORE_START, attempt.run_id)
        started = time.monotonic()
        try:
            outcome = await self._chat.handle(attempt.job.turn(attempt.run_id, restart_of), state.progress)
            bind_log_fields(run_id=outcome.run_id)  # delivery's log lines belong to the run too
        except Exception:
            log.exception("turn failed in channel %s", attempt.job.session.channel)
            return Final(FinalKind.INTERNAL_ERROR, state.progress.run_id or state.run_id)
        return Final(FinalKind.OUTCOME, outcome.run_id, outcome=outcome, duration_s=time.monotonic() - started,
                     restart_of=restart_of)

    async def _run(self, attempt: Attempt, state: TurnState) -> None:
        progress = state.progress
        try:
            await self._start_progress(state)
            final = await self._attempt(attempt, state)
        except asyncio.CancelledError:  # shutdown after the grace period, or a hand-back: stop, say so if ours
            await progress.close()
            if not state.abandoned and not attempt.handing_back:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    note = Final(FinalKind.SHUTDOWN, progress.run_id or state.run_id)
                    await self._final(state, state.run_id, note, time.monotonic() + self.timing.shutdown_note_s,
                                      wait_s=0)
            self.watchdog.forget(state)
            raise
        finally:  # no progress task may outlive its turn
            await progress.close()
        if state.abandoned:
            log.warning("run %s ended after the watchdog had answered its turn; its result is dropped", state.run_id)
            return
        state.finishing = True
        try:
            await self._final(state, state.run_id, final, state.until)
        finally:
            self.watchdog.forget(state)

    async def _take_over(self, state: TurnState) -> None:
        """Finish a turn past its due time from outside: stop it, free its session, post a FAILURE (guarded)."""
        task, step_s = state.task, self.timing.step_timeout_s
        if task is not None and not task.done():
            task.cancel()
            self._tasks.discard(task)
            self._stuck.add(task)
        try:
            await within(state.progress.close(), step_s)
            outcome = await within(self._chat.abandon(state.session.as_str(), state.run_id), step_s)
            final = Final(FinalKind.OUTCOME, state.progress.run_id or state.run_id,
                          outcome=outcome or watchdog_failure(state.progress.run_id or state.run_id))
            await self._final(state, f"watchdog:{state.run_id}", final, max(state.until, time.monotonic() + 5.0),
                              wait_s=0)
            if state.hooks is not None:
                await within(state.hooks.taken_over(), step_s)
        finally:
            self.watchdog.forget(state)

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Wait briefly for background turns, then cancel the rest (shutdown); never waits on a turn that ignores it."""
        deadline = time.monotonic() + timeout_s
        while self._busy and time.monotonic() < deadline:  # noqa: ASYNC110 - listeners still deciding may start a turn
            await asyncio.sleep(0.01)
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=max(0.0, deadline - time.monotonic()))
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=self.timing.shutdown_note_s + 1.0)
        for task in self._stuck:
            task.cancel()
        await self.watchdog.aclose()
