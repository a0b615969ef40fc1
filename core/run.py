"""The run kernel: a run's context (ids, budgets, counters), its cancel signal and scope, the deadline arithmetic,
and `bounded`, the one way to await work under the run's cancel flag and deadline.

It sits at the base of core/ (it imports only core.contracts), so every layer may use it: the chat service, the
model steps, the ToolBoundary, the turn runner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, TypeVar

from core.contracts.progress import ProgressUpdate
from core.contracts.run import Budgets, EventType

T = TypeVar("T")
MIN_CALL_S = 0.001
MAX_RELEASE_GRACE_S = 30.0


class Timeline(Protocol):
    """What components use to record a timeline event for the current run."""

    async def record(
        self, type: EventType, summary: dict[str, Any] | None = None, duration_ms: float = 0.0
    ) -> None: ...


class ProgressSink(Protocol):
    """Receives safe progress updates while a run works (the Slack adapter throttles and renders them)."""

    async def update(self, run_id: str, update: ProgressUpdate) -> None:
        """One typed update (stage + detail): what the tools did and which stage runs, never draft text."""
        ...


class RunCancelled(Exception):
    """The run's cancel signal fired while `bounded` awaited."""


class DeadlinePassed(TimeoutError):
    """`bounded`'s time ran out (a TimeoutError, so code that catches those keeps working)."""


class CancelSignal(asyncio.Event):
    """A run's cancel event: an asyncio.Event that also calls its subscribers when it is set.

    Subscribers let a CancelScope react to the cancel without a task blocked in wait() for every await it guards.
    """

    def __init__(self) -> None:
        super().__init__()
        self._subscribers: list[Callable[[], None]] = []

    def set(self) -> None:
        if self.is_set():
            return
        super().set()
        for callback in tuple(self._subscribers):
            callback()

    def subscribe(self, callback: Callable[[], None]) -> None:
        self._subscribers.append(callback)

    def unsubscribe(self, callback: Callable[[], None]) -> None:
        self._subscribers.remove(callback)


class CancelScope:
    """`with CancelScope(signal) as scope:` cancels the current task if `signal` is set while the block awaits.

    The block's own awaits run in the current task (no helper tasks). When the signal fires, the task is cancelled
    (task.cancel(), delivered at its current await) and the CancelledError this causes is absorbed on leaving the
    block, which then sets `cancelled_caught`; the caller maps that to its own stop. As with a task dropped on
    cancel, whatever the block returned or raised after the cancel is discarded. A cancellation requested by
    anyone else (an enclosing scope, a timeout, the caller) still propagates: the scope only takes back its own
    request (Task.uncancel, as asyncio.timeout does). A signal already set on entry cancels the block at its first
    suspension; a block that finishes without suspending keeps its result, as a raced task finishing at once did.
    """

    __slots__ = ("_cancelling", "_fired", "_handle", "_open", "_signal", "_task", "cancelled_caught")

    def __init__(self, signal: CancelSignal) -> None:
        self._signal = signal
        self._task: asyncio.Task[object] | None = None
        self._handle: asyncio.Handle | None = None
        self._open = False
        self._fired = False
        self._cancelling = 0
        self.cancelled_caught = False

    def __enter__(self) -> CancelScope:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("CancelScope must be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()  # requests older than the scope are not its own (as asyncio.timeout)
        self._open = True
        self._signal.subscribe(self._on_signal)
        if self._signal.is_set():
            self._on_signal()
        return self

    def _on_signal(self) -> None:
        # Deferred one loop step: set() may be called from inside this very task, which must not cancel itself
        # while running; a callback runs only while the task is suspended.
        if self._open and self._handle is None and self._task is not None:
            self._handle = self._task.get_loop().call_soon(self._fire)

    def _fire(self) -> None:
        if self._open and self._task is not None:
            self._fired = True
            self._task.cancel()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        self._open = False
        self._signal.unsubscribe(self._on_signal)
        if self._handle is not None:
            self._handle.cancel()
        if not self._fired or self._task is None:
            return False
        if self._task.uncancel() > self._cancelling:
            return False  # someone else cancelled the task too: let their cancellation through
        if exc_type is None or issubclass(exc_type, (Exception, asyncio.CancelledError)):
            self.cancelled_caught = True
            return True
        return False


@dataclass
class RunContext:
    """Everything a component needs to know about the run it works for. Created by the chat service."""

    run_id: str
    session_key: str
    query: str
    timeline: Timeline
    budgets: Budgets = field(default_factory=Budgets)
    progress: ProgressSink | None = None
    cancelled: CancelSignal = field(default_factory=CancelSignal)
    started_monotonic: float = field(default_factory=time.monotonic)
    tool_calls: int = 0
    observation_bytes: int = 0
    steps: int = 0
    untrusted_spans: list[str] = field(default_factory=list)
    """Instruction-like spans of tool output the agent was shown (any call, cited or not), for the EvidenceGuard's
    TOOL_TEXT_AS_INSTRUCTION; bounded by the boundary (MAX_UNTRUSTED_SPANS)."""

    @property
    def deadline_monotonic(self) -> float:
        return self.started_monotonic + self.budgets.deadline_s

    def seconds_left(self) -> float:
        return max(0.0, self.deadline_monotonic - time.monotonic())


async def bounded(work: Awaitable[T], cancel: CancelSignal, timeout_s: float) -> T:
    """Await `work` in the current task, stopping it at once when `cancel` fires (RunCancelled) or when
    `timeout_s` passes (DeadlinePassed). A TimeoutError the work raises itself propagates as it is; a cancel of the
    task by anyone else propagates too (see CancelScope)."""
    with CancelScope(cancel) as scope:
        limit = asyncio.timeout(timeout_s)
        try:
            async with limit:
                result = await work
        except TimeoutError:
            if limit.expired():
                raise DeadlinePassed from None
            raise
    if scope.cancelled_caught:
        raise RunCancelled
    return result


async def within(work: Awaitable[T], timeout_s: float) -> T | None:
    """`work`'s result, or None if it fails or is not done within `timeout_s`, without awaiting a task that may
    ignore its cancel (what a watchdog needs: it must not hang on the very work it gives up on)."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        task.cancel()
        return None
    if task.cancelled() or task.exception() is not None:
        return None
    return task.result()


def release_grace_s(deadline_s: float) -> float:
    """Time past the deadline the hard backstop allows, so a draft submitted just in time can still be released.

    The agent stops itself at the deadline; the backstop only catches a stage that hangs past it."""
    return min(MAX_RELEASE_GRACE_S, max(1.0, 0.2 * deadline_s))


def shared_allowance(time_left_s: float | None) -> Callable[[], float | None]:
    """For attempts that share one allowance: a function giving what is left of `time_left_s` now (None: no limit)."""
    if time_left_s is None:
        return lambda: None
    ends = time.monotonic() + time_left_s
    return lambda: ends - time.monotonic()


def call_timeout(setting_s: float, time_left_s: float | None, reserve_s: float = 0.0) -> float:
    """The timeout of one call: its setting, capped by what is left of the run after the later stages' reserve."""
    if time_left_s is None:
        return max(MIN_CALL_S, setting_s)
    return max(MIN_CALL_S, min(setting_s, time_left_s - reserve_s))
