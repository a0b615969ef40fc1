"""core/evidence/offload.py: the boundary's worker-thread hop answers as asyncio.to_thread does."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time

import pytest

from core.evidence.offload import offload

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("offload_test", default="unset")


async def test_runs_in_another_thread_with_the_callers_context() -> None:
    _VAR.set("caller")
    answer = await offload(lambda a, b: (threading.get_ident(), _VAR.get(), a + b), 2, 3)
    assert answer[0] != threading.get_ident()
    assert answer[1:] == ("caller", 5)


async def test_an_exception_is_raised_in_the_awaiting_task() -> None:
    def fail() -> None:
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        await offload(fail)
    assert await offload(lambda: "still working") == "still working"


async def test_a_cancelled_wait_drops_the_answer_and_the_worker_goes_on() -> None:
    started = threading.Event()

    def slow() -> str:
        started.set()
        time.sleep(0.05)
        return "late"

    task = asyncio.ensure_future(offload(slow))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await offload(lambda: "next") == "next"


def test_a_closed_loop_does_not_stop_the_worker() -> None:
    started, release = threading.Event(), threading.Event()

    def held() -> str:
        started.set()
        release.wait(5)
        return "nobody waits"

    loop = asyncio.new_event_loop()
    task = loop.create_task(offload(held))
    loop.run_until_complete(asyncio.to_thread(started.wait, 5))
    task.cancel()
    loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
    loop.close()
    release.set()  # the answer goes to a closed loop
    assert asyncio.run(offload(lambda: "answered")) == "answered"


async def test_calls_at_once_each_get_their_own_answer() -> None:
    answers = await asyncio.gather(*(offload(lambda n=n: n * n) for n in range(20)))
    assert answers == [n * n for n in range(20)]


def test_a_forked_child_gets_a_worker_of_its_own() -> None:
    assert asyncio.run(offload(lambda: "parent")) == "parent"  # the parent's worker runs
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker thread does not exist here
        code = 1
        try:
            code = 0 if asyncio.run(asyncio.wait_for(offload(lambda: "child"), 5)) == "child" else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
