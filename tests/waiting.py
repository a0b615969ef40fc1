"""Waiting on a condition instead of sleeping a fixed time: fast when it holds early, a clear failure when it never does."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

__all__ = ["until"]


async def until(predicate: Callable[[], bool | Awaitable[bool]], timeout_s: float = 5.0, interval_s: float = 0.01,
                message: str | Callable[[], str] = "the condition") -> None:
    """Poll `predicate` (plain or async) every `interval_s` until it is true; AssertionError after `timeout_s`.

    `message` says what was awaited (a callable is evaluated at the timeout, to show the state then).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if loop.time() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout_s} s waiting for {text}")
        await asyncio.sleep(interval_s)
