"""CancelScope / CancelSignal: a run's cancel cancels the awaiting task in place, and only its own cancellation is absorbed.

`asyncio.sleep(5)` inside a scope stands for work that only a cancel ends (each test finishes in milliseconds).
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from core.run import CancelScope, CancelSignal


async def test_signal_during_an_await_cancels_it_and_is_absorbed() -> None:
    signal = CancelSignal()
    asyncio.get_running_loop().call_later(0.01, signal.set)
    with CancelScope(signal) as scope:
        await asyncio.sleep(5)
    assert scope.cancelled_caught
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0
    await asyncio.sleep(0)  # no cancellation left pending


async def test_work_finishing_first_keeps_its_result() -> None:
    signal = CancelSignal()
    with CancelScope(signal) as scope:
        await asyncio.sleep(0)
    signal.set()
    await asyncio.sleep(0.01)  # a late signal does nothing to a closed scope
    assert not scope.cancelled_caught


async def test_a_cancel_from_elsewhere_propagates() -> None:
    signal = CancelSignal()

    entered = asyncio.Event()

    async def guarded() -> bool:
        with CancelScope(signal) as scope:
            entered.set()
            await asyncio.sleep(5)
        return scope.cancelled_caught

    task = asyncio.create_task(guarded())
    await asyncio.wait_for(entered.wait(), 5)  # the task is suspended inside its scope
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_signal_and_outer_cancel_together_propagate() -> None:
    signal = CancelSignal()

    entered = asyncio.Event()

    async def guarded() -> bool:
        with CancelScope(signal) as scope:
            entered.set()
            await asyncio.sleep(5)
        return scope.cancelled_caught

    task = asyncio.create_task(guarded())
    await asyncio.wait_for(entered.wait(), 5)  # the task is suspended inside its scope
    signal.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_nested_scopes_on_one_signal_end_in_the_outer() -> None:
    signal = CancelSignal()
    asyncio.get_running_loop().call_later(0.01, signal.set)
    inner_caught = None
    with CancelScope(signal) as outer:
        with CancelScope(signal) as inner:
            await asyncio.sleep(5)
        inner_caught = inner.cancelled_caught  # not reached: the outer scope's cancel is still pending
    assert outer.cancelled_caught
    assert inner_caught is None


async def test_set_from_inside_the_task_cancels_at_its_next_await() -> None:
    signal = CancelSignal()
    with CancelScope(signal) as scope:
        signal.set()
        await asyncio.sleep(5)
    assert scope.cancelled_caught


async def test_already_set_cancels_at_the_first_suspension_only() -> None:
    signal = CancelSignal()
    signal.set()
    with CancelScope(signal) as done_at_once:
        pass
    assert not done_at_once.cancelled_caught
    with CancelScope(signal) as suspended:
        await asyncio.sleep(5)
    assert suspended.cancelled_caught


async def test_an_earlier_swallowed_cancel_does_not_hide_the_scopes_own() -> None:
    """Cancel requests older than the scope (caught without uncancel) are not mistaken for someone else's."""
    signal = CancelSignal()

    async def guarded() -> bool:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):  # swallowed without uncancel(): cancelling() stays 1
            await asyncio.sleep(1)
        asyncio.get_running_loop().call_later(0.01, signal.set)
        with CancelScope(signal) as scope:
            await asyncio.sleep(5)
        return scope.cancelled_caught

    assert await asyncio.create_task(guarded())
