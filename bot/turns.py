"""Running one attempt of a turn: placeholder, ChatService.handle, final message.

The queue worker (bot/turn_jobs.py) calls `TurnRunner.run` for each job it takes; `start` runs one directly (tests,
tools). Every attempt is watched (bot.watchdog) and its final message goes out through the per-turn answer record
(bot.final_once.post_final_once), so a turn ends in exactly one final message by `TurnTiming.answer_by_s` whatever
a component does: normally from the attempt itself, else from the watchdog's take-over. A re-run (its first worker
died, or handed it back at shutdown) edits the placeholder the first attempt posted and says it was re-run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import DeliveryPolicy
from bot.final_once import keep_placeholder, placeholder_key, post_final_once
from bot.progress import MIN_INTERVAL_S, SlackProgress
from bot.render.message import (
    RenderOptions,
    SlackMessage,
    cancelled_before_start_message,
    internal_error_message,
    render_outcome,
    restart_note,
    shutdown_message,
)
from bot.stream import TurnProgress, progress_for
from bot.watchdog import TurnState, TurnTarget, TurnTiming, Watchdog
from core.contracts.release import FallbackMessage, Outcome, ReleaseOutcome
from core.contracts.run import SessionKey
from core.observability.log_context import bind_log_fields
from core.ports import ChatServicePort, KeyValueStore
from core.queue.job import TurnJob, turn_job_id
from core.service.chat_service import new_run_id
from core.stores.kv import InMemoryKV

T = TypeVar("T")

log = logging.getLogger(__name__)

MAX_TURN_TEXT = 4000
# How long a turn cancelled at shutdown may spend telling its thread.
SHUTDOWN_NOTE_TIMEOUT_S = 5.0
# The watchdog's take-over never waits longer than this for the core (abandon) or the progress display to stop.
TAKE_OVER_STEP_TIMEOUT_S = 15.0
# How long a turn's final waits for another poster's live claim on the same turn (none, in this process's own runs:
# a live claim there is a re-run elsewhere, whose answer then counts).
CLAIM_WAIT_S = 5.0
WATCHDOG_REASON = "the run did not finish within its deadline and was stopped"


async def bounded(work: Awaitable[T], timeout_s: float) -> T | None:
    """`work`'s result, or None if it fails or is not done within `timeout_s` — without awaiting a task that may
    ignore its cancel (the very failure the watchdog exists for)."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        task.cancel()
        return None
    if task.cancelled() or task.exception() is not None:
        return None
    return task.result()


@dataclass(frozen=True)
class Ready:
    """What the queue said just before the run: go or not (cancelled while waiting), and the run re-run."""

    go: bool = True
    restart_of: str | None = None


READY = Ready()


@dataclass
class Attempt:
    """One attempt at a job: the run id it gets, and the queue's hooks around it."""

    job: TurnJob
    run_id: str
    ready: Callable[[], Awaitable[Ready]] | None = None
    """Waits for the thread's earlier turns and records the attempt (the queue); None: go at once."""
    adopt_placeholder: bool = False
    """An earlier attempt may have posted the placeholder: edit that one instead of posting another."""
    on_taken_over: Callable[[], Awaitable[None]] | None = None
    """Called after the watchdog answered the turn from outside (the worker finishes the job)."""
    handing_back: bool = False
    """Set before the attempt is cancelled for a hand-back at shutdown: it posts nothing (a re-run answers)."""


def watchdog_failure(run_id: str) -> ReleaseOutcome:
    """The FAILURE the watchdog posts when the core could not even say what the stuck run observed."""
    return ReleaseOutcome(run_id=run_id, outcome=Outcome.FAILURE, fallback=FallbackMessage(
        stage="the run did not finish in time", reason=WATCHDOG_REASON,
        next_steps=["Ask again; if it keeps happening, the bot's logs name the stuck run."]))


class TurnRunner:
    """Runs attempts of turns (the worker's, or background tasks kept referenced) and delivers their results."""

    def __init__(self, chat: ChatServicePort, client: AsyncWebClient, progress_interval_s: float = MIN_INTERVAL_S, *,
                 timing: TurnTiming = TurnTiming(), delivery: DeliveryPolicy = DeliveryPolicy(),
                 kv: KeyValueStore | None = None, streaming: bool = False,
                 render: RenderOptions = RenderOptions()) -> None:
        self._chat = chat
        self._render = render
        self._streaming = streaming
        self._client = client
        self._progress_interval_s = progress_interval_s
        self._timing = timing
        self._delivery = delivery
        self._kv = kv or InMemoryKV()  # the per-turn answer records (shared with every process through Redis)
        self._tasks: set[asyncio.Task[None]] = set()
        self._stuck: set[asyncio.Task[None]] = set()  # turns the watchdog took over: referenced, no longer counted
        self._busy = 0
        self.watchdog = Watchdog(timing.interval_s, self._take_over, self.spawn)

    @property
    def in_flight(self) -> int:
        """Listeners still deciding plus background work still running."""
        return len(self._tasks) + self._busy

    @property
    def kv(self) -> KeyValueStore:
        """The store holding the per-turn answer records."""
        return self._kv

    @property
    def client(self) -> AsyncWebClient:
        """The Web API client the turns post with."""
        return self._client

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Mark a listener at work (shutdown waits for it before closing the queue)."""
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1

    def start(self, session: SessionKey, text: str, user: str, message_ts: str) -> asyncio.Task[None]:
        """Run one turn now as a background task, outside any queue, and return at once."""
        job = TurnJob(job_id=turn_job_id(session.channel, message_ts), session=session, text=text[:MAX_TURN_TEXT],
                      user=user, message_ts=message_ts, run_id=new_run_id())
        task = asyncio.create_task(self.run(Attempt(job=job, run_id=job.run_id)),
                                   name=f"turn:{session.channel}:{message_ts}")
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
        session = job.session
        bind_log_fields(session=session.as_str())  # each attempt runs in its own task: every log line of the turn
        now = time.monotonic()
        progress = await self._progress(attempt)
        state = TurnState(target=TurnTarget(session.channel, session.thread_ts, job.message_ts), session=session,
                          run_id=attempt.run_id, progress=progress, due=now + self._timing.due_s,
                          until=now + self._timing.answer_by_s, task=asyncio.current_task(),
                          on_taken_over=attempt.on_taken_over)
        self.watchdog.watch(state)
        await self._run(attempt, state)

    async def _progress(self, attempt: Attempt) -> TurnProgress:
        """A re-run edits the placeholder its first attempt posted; otherwise a new one (edits or a stream)."""
        job = attempt.job
        channel, thread_ts = job.session.channel, job.session.thread_ts
        if attempt.adopt_placeholder:
            try:
                earlier = await self._kv.get(placeholder_key(job.job_id))
            except Exception as exc:  # without the record a new placeholder is posted; the final still goes once
                log.warning("placeholder record of turn %s unavailable: %s", job.job_id, type(exc).__name__)
                earlier = None
            if earlier is not None:
                adopted = SlackProgress(self._client, channel, thread_ts, self._progress_interval_s)
                adopted.ts = earlier
                return adopted
        return progress_for(self._client, channel, thread_ts, user=job.user, team=job.session.team,
                            streaming=self._streaming, edit_interval_s=self._progress_interval_s)

    async def post_final(self, job: TurnJob, owner: str, msg: SlackMessage) -> None:
        """Post `msg` as the turn's one final message without running it (a turn the queue gives up on), in its
        placeholder when an earlier attempt posted one."""
        try:
            placeholder = await self._kv.get(placeholder_key(job.job_id))
        except Exception as exc:  # posted in the thread instead; still once
            log.warning("placeholder record of turn %s unavailable: %s", job.job_id, type(exc).__name__)
            placeholder = None
        await post_final_once(self._client, self._kv, job.job_id, owner, job.session.channel, job.session.thread_ts,
                              placeholder, msg, until=time.monotonic() + self._timing.final_margin_s,
                              policy=self._delivery, wait_s=0)

    async def _final(self, state: TurnState, owner: str, msg: SlackMessage, until: float,
                     wait_s: float = CLAIM_WAIT_S) -> None:
        target = state.target
        await post_final_once(self._client, self._kv, target.key, owner, target.channel, target.thread_ts,
                              state.progress.ts, msg, until=until, policy=self._delivery, wait_s=wait_s,
                              replaces=state.replaces)

    async def _keep_placeholder(self, state: TurnState) -> None:
        """Record the placeholder as the turn's, so any later attempt (or process) edits this same message."""
        assert state.progress.ts is not None
        try:
            await keep_placeholder(self._kv, state.target.key, state.progress.ts)
        except Exception as exc:  # this attempt still knows its ts; only a re-run elsewhere would miss it
            log.warning("placeholder of turn %s not recorded: %s", state.target.key, type(exc).__name__)

    async def _start_progress(self, state: TurnState) -> None:
        progress = state.progress
        if progress.ts is None:  # not adopted from an earlier attempt
            await progress.start()
            if progress.ts is not None:
                await self._keep_placeholder(state)

    async def _attempt(self, attempt: Attempt, state: TurnState) -> tuple[SlackMessage, Ready] | None:
        """Wait for the queue's go, run the turn and render its final message (None: nothing may be posted)."""
        ready = await attempt.ready() if attempt.ready is not None else READY
        state.replaces = ready.restart_of
        if attempt.ready is not None:  # the run starts now: its deadline counts from here, not from the wait
            now = time.monotonic()   # behind the thread's earlier turns (itself bounded by their deadlines)
            state.due, state.until = now + self._timing.due_s, now + self._timing.answer_by_s
        if not ready.go:
            return cancelled_before_start_message(attempt.run_id), ready
        started = time.monotonic()
        try:
            outcome = await self._chat.handle(attempt.job.turn(attempt.run_id, ready.restart_of), state.progress)
            bind_log_fields(run_id=outcome.run_id)  # delivery's log lines belong to the run too
        except Exception:
            log.exception("turn failed in channel %s", attempt.job.session.channel)
            return internal_error_message(state.progress.run_id or state.run_id), ready
        note = restart_note(ready.restart_of) if ready.restart_of else None
        return render_outcome(outcome, time.monotonic() - started, self._render, note=note), ready

    async def _run(self, attempt: Attempt, state: TurnState) -> None:
        progress = state.progress
        try:
            await self._start_progress(state)
            result = await self._attempt(attempt, state)
        except asyncio.CancelledError:  # shutdown after the grace period, or a hand-back: stop, say so if ours
            await progress.close()
            if not state.abandoned and not attempt.handing_back:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    note = shutdown_message(progress.run_id or state.run_id)
                    await self._final(state, state.run_id, note, time.monotonic() + SHUTDOWN_NOTE_TIMEOUT_S, wait_s=0)
            self.watchdog.forget(state)
            raise
        finally:  # no progress task may outlive its turn
            await progress.close()
        if state.abandoned:
            log.warning("run %s ended after the watchdog had answered its turn; its result is dropped", state.run_id)
            return
        state.finishing = True
        try:
            if result is not None:
                await self._final(state, state.run_id, result[0], state.until)
        finally:
            self.watchdog.forget(state)

    async def _take_over(self, state: TurnState) -> None:
        """Finish a turn past its due time from outside: stop it, free its session, post a FAILURE (guarded)."""
        task = state.task
        if task is not None and not task.done():
            task.cancel()
            self._tasks.discard(task)
            self._stuck.add(task)
        try:
            await bounded(state.progress.close(), TAKE_OVER_STEP_TIMEOUT_S)
            outcome = await bounded(self._chat.abandon(state.session.as_str(), state.run_id), TAKE_OVER_STEP_TIMEOUT_S)
            msg = render_outcome(outcome or watchdog_failure(state.progress.run_id or state.run_id), None, self._render)
            await self._final(state, f"watchdog:{state.run_id}", msg, max(state.until, time.monotonic() + 5.0), wait_s=0)
            if state.on_taken_over is not None:
                await bounded(state.on_taken_over(), TAKE_OVER_STEP_TIMEOUT_S)
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
                await asyncio.wait(pending, timeout=SHUTDOWN_NOTE_TIMEOUT_S + 1.0)
        for task in self._stuck:
            task.cancel()
        await self.watchdog.aclose()
