"""A tool's blocking work (file scans, SQLite, the embedded metrics engine) in a worker thread, with the
ToolBoundary's own step for the result (capping it for the canonical record, projecting it) in the same thread when
the boundary offers one: one thread hop per call where there were two (each 70-90 us, with a wake-up of the event
loop). The boundary offers its step for the call it is running (`finishing`); a tool's `run_blocking` hands the result
to it; the boundary uses what the step made only for the very result the tool returned, else it makes it itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar

from core.contracts.evidence import RawResult

FinishStep = Callable[[RawResult], None]
_FINISH: ContextVar[FinishStep | None] = ContextVar("tool_finish_step", default=None)


@contextmanager
def finishing(step: FinishStep) -> Iterator[None]:
    """Offer `step` to the blocking work of the tool call awaited inside (the current task's context only)."""
    token = _FINISH.set(step)
    try:
        yield
    finally:
        _FINISH.reset(token)


async def run_blocking(work: Callable[[], RawResult]) -> RawResult:
    """`work()` in a worker thread, then the offered step on its result in the same thread. The step never fails the
    tool: if it raises, the boundary makes the step again itself (and sees the error where it always did)."""
    step = _FINISH.get()
    if step is None:
        return await asyncio.to_thread(work)

    def both() -> RawResult:
        raw = work()
        with suppress(Exception):  # the boundary redoes the step in its own hop and meets the error there
            step(raw)
        return raw

    return await asyncio.to_thread(both)
