"""Running one turn after the ack: placeholder, ChatService.handle, final message; tasks kept until done."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine, Iterator
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import DeliveryPolicy, deliver_final
from bot.progress import MIN_INTERVAL_S
from bot.render.message import RenderOptions, internal_error_message, render_outcome, shutdown_message
from bot.stream import progress_for
from core.contracts.release import ReleaseOutcome
from core.contracts.run import Budgets, SessionKey, Turn
from core.observability.log_context import bind_log_fields, task_context
from core.ports import ChatServicePort
from core.service.chat_service import release_grace_s

log = logging.getLogger(__name__)

MAX_TURN_TEXT = 4000
# How long a turn cancelled at shutdown may spend telling its thread.
SHUTDOWN_NOTE_TIMEOUT_S = 5.0
# How long past the run's hard backstop (deadline + release grace) its final message may still take to reach Slack:
# a Slack outage shorter than this still ends in the answer.
FINAL_MARGIN_S = 60.0


def answer_by_s(run_deadline_s: float) -> float:
    """Seconds from a turn's acceptance by which its final message is in the thread (or its failure logged)."""
    return run_deadline_s + release_grace_s(run_deadline_s) + FINAL_MARGIN_S


class TurnRunner:
    """Starts turns as background tasks (references kept so they are not garbage-collected) and delivers results."""

    def __init__(self, chat: ChatServicePort, client: AsyncWebClient, progress_interval_s: float = MIN_INTERVAL_S, *,
                 run_deadline_s: float = Budgets().deadline_s, delivery: DeliveryPolicy = DeliveryPolicy(),
                 streaming: bool = False, render: RenderOptions = RenderOptions()) -> None:
        self._chat = chat
        self._render = render
        self._streaming = streaming
        self._client = client
        self._progress_interval_s = progress_interval_s
        self._answer_by_s = answer_by_s(run_deadline_s)
        self._delivery = delivery
        self._tasks: set[asyncio.Task[None]] = set()
        self._busy = 0

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
        turn = Turn(session=session, text=text[:MAX_TURN_TEXT], user=user, message_ts=message_ts)
        task = asyncio.create_task(self._run(turn), name=f"turn:{session.channel}:{message_ts}",
                                   context=task_context(session=session.as_str()))  # every log line of the turn
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
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    async def _run(self, turn: Turn) -> None:
        channel, thread_ts = turn.session.channel, turn.session.thread_ts
        progress = progress_for(self._client, channel, thread_ts, user=turn.user, team=turn.session.team,
                                streaming=self._streaming, edit_interval_s=self._progress_interval_s)
        outcome: ReleaseOutcome | None = None
        until = time.monotonic() + self._answer_by_s
        try:
            await progress.start()
            started = time.monotonic()
            try:
                outcome = await self._chat.handle(turn, progress)
                bind_log_fields(run_id=outcome.run_id)  # delivery's log lines belong to the run too
            except Exception:
                log.exception("turn failed in channel %s", channel)
        except asyncio.CancelledError:  # shutdown after the grace period: say so in the thread, then stop
            await progress.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                async with asyncio.timeout(SHUTDOWN_NOTE_TIMEOUT_S):
                    await deliver_final(self._client, channel, thread_ts, progress.ts, shutdown_message(progress.run_id),
                                        policy=self._delivery)
            raise
        finally:  # no progress task may outlive its turn
            await progress.close()
        msg = (internal_error_message(progress.run_id) if outcome is None
               else render_outcome(outcome, time.monotonic() - started, self._render))
        await deliver_final(self._client, channel, thread_ts, progress.ts, msg, until=until, policy=self._delivery)

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Wait briefly for running turns, then cancel the rest (shutdown)."""
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=timeout_s)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)

