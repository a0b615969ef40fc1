"""Process-wide runtime tuning shared by the server and the benchmarks (so a benchmark measures what production runs)."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

T = TypeVar("T")
EventLoopChoice = Literal["auto", "asyncio", "uvloop"]

# A young generation this size is collected in well under a millisecond; the default (700) collects so often
# under event bursts that collections pile into the ack path.
GC_GEN0_THRESHOLD = 50_000


def tune_gc() -> None:
    """Freeze the startup heap and collect the young generation less often. Call once, after start-up.

    Modules, settings, compiled schemas and clients built at startup live for the whole process; left in the
    collected generations, every full collection rescans them, which bench/bench_ack.py measured as ~40 ms
    stalls in the ack path with hundreds of runs in flight. Frozen, collections only see request garbage.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 20, 20)


class EventLoopUnavailable(ValueError):
    """DIAG_EVENT_LOOP=uvloop on a machine without uvloop (a ValueError: the CLI reports it as a setting)."""


def event_loop(choice: EventLoopChoice) -> str:
    """The loop DIAG_EVENT_LOOP names, `uvloop` or `asyncio`: `auto` is uvloop when it is installed (a dependency
    on Linux and macOS), else asyncio's own.

    bench/bench_pipeline.py measured uvloop on this 2-core machine, quiet, 500 queued first-look runs on two worker
    processes in A B A B order: 7.3 / 7.5 ms CPU per run on asyncio's loop against 7.0 / 7.0 ms on uvloop (the same
    wall ratio); under load 2-5 an earlier session could not tell them apart. `asyncio` is the way back should a
    library ever misbehave on uvloop."""
    installed = importlib.util.find_spec("uvloop") is not None
    if choice == "uvloop" and not installed:
        raise EventLoopUnavailable("DIAG_EVENT_LOOP=uvloop, but uvloop is not installed; pip install uvloop, or "
                                   "set DIAG_EVENT_LOOP=asyncio")
    if choice == "auto":
        return "uvloop" if installed else "asyncio"
    return choice


def running_loop_kind() -> str:
    """`uvloop` or `asyncio`: what the running loop is (a thread started from it runs the same kind)."""
    return "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"


def run_loop(main: Coroutine[Any, Any, T], loop: str = "asyncio") -> T:
    """asyncio.run on `loop` (event_loop's answer): uvloop's or asyncio's own."""
    if loop == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
