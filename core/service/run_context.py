"""Per-run runtime state shared by the agent loop, the ToolBoundary and release: ids, budgets, counters, cancel."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from core.contracts.run import Budgets
from core.ports import ProgressSink, Timeline


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
