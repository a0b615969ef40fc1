"""Running one turn after the ack: placeholder, ChatService.handle, final message; tasks kept until done.

Every accepted turn is watched (bot.watchdog) and its final message goes out through the per-turn answer record
(bot.final_once.post_final_once), so a turn ends in exactly one final message by `TurnTiming.answer_by_s` whatever
a component does: normally from the turn itself, else from the watchdog's take-over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Coroutine, Iterator
from typing import Any, TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import DeliveryPolicy
from bot.final_once import keep_placeholder, post_final_once
from bot.progress import MIN_INTERVAL_S
from bot.render.message import RenderOptions, SlackMessage, internal_error_message, render_outcome, shutdown_message
from bot.stream import progress_for
from bot.watchdog import TurnState, TurnTarget, TurnTiming, Watchdog
from core.contracts.release import FallbackMessage, Outcome, ReleaseOutcome
from core.contracts.run import SessionKey, Turn
from core.observability.log_context import bind_log_fields, task_context
from core.ports import ChatServicePort, KeyValueStore
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


def watchdog_failure(run_id: str) -> ReleaseOutcome:
    """The FAILURE the watchdog posts when the core could not even say what the stuck run observed."""
    return ReleaseOutcome(run_id=run_id, outcome=Outcome.FAILURE, fallback=FallbackMessage(
        stage="the run did not finish in time", reason=WATCHDOG_REASON,
        next_steps=["Ask again; if it keeps happening, the bot's logs name the stuck run."]))


class TurnRunner:
    """Starts turns as background tasks (references kept so they are not garbage-collected) and delivers results."""

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
        """Listeners still deciding plus background turns still running."""
        return len(self._tasks) + self._busy

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Mark a listener at work (so shutdown and tests can wait for it)."""
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1

    def start(self, session: SessionKey, text: str, user: str, message_ts: str) -> asyncio.Task[None]:
        """Schedule a turn and return at once."""
        run_id = new_run_id()
        turn = Turn(session=session, text=text[:MAX_TURN_TEXT], user=user, message_ts=message_ts, run_id=run_id)
        now = time.monotonic()
        state = TurnState(target=TurnTarget(session.channel, session.thread_ts, message_ts), session=session,
                          run_id=run_id, progress=progress_for(self._client, session.channel, session.thread_ts,
                                                               user=user, team=session.team, streaming=self._streaming,
                                                               edit_interval_s=self._progress_interval_s),
                          due=now + self._timing.due_s, until=now + self._timing.answer_by_s)
        task = asyncio.create_task(self._run(turn, state), name=f"turn:{session.channel}:{message_ts}",
                                   context=task_context(session=session.as_str()))  # every log line of the turn
        state.task = task
        self._tasks.add(task)
        task.add_done_callback(self._done)
        self.watchdog.watch(state)
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

    async def _final(self, state: TurnState, owner: str, msg: SlackMessage, until: float,
                     wait_s: float = CLAIM_WAIT_S) -> None:
        target = state.target
        await post_final_once(self._client, self._kv, target.key, owner, target.channel, target.thread_ts,
                              state.progress.ts, msg, until=until, policy=self._delivery, wait_s=wait_s)

    async def _keep_placeholder(self, state: TurnState) -> None:
        """Record the placeholder as the turn's, so any later attempt (or process) edits this same message."""
        assert state.progress.ts is not None
        try:
            await keep_placeholder(self._kv, state.target.key, state.progress.ts)
        except Exception as exc:  # this attempt still knows its ts; only a re-run elsewhere would miss it
            log.warning("placeholder of turn %s not recorded: %s", state.target.key, type(exc).__name__)

    async def _run(self, turn: Turn, state: TurnState) -> None:
        progress = state.progress
        outcome: ReleaseOutcome | None = None
        try:
            await progress.start()
            if progress.ts is not None:
                await self._keep_placeholder(state)
            started = time.monotonic()
            try:
                outcome = await self._chat.handle(turn, progress)
                bind_log_fields(run_id=outcome.run_id)  # delivery's log lines belong to the run too
            except Exception:
                log.exception("turn failed in channel %s", turn.session.channel)
        except asyncio.CancelledError:  # shutdown after the grace period: say so in the thread, then stop
            await progress.close()
            if not state.abandoned:
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
            msg = (internal_error_message(progress.run_id or state.run_id) if outcome is None
                   else render_outcome(outcome, time.monotonic() - started, self._render))
            await self._final(state, state.run_id, msg, state.until)
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
        finally:
            self.watchdog.forget(state)

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Wait briefly for running turns, then cancel the rest (shutdown); never waits on a turn that ignores it."""
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
