"""The boundary's CPU work off the event loop in fewer steps than `asyncio.to_thread`: one worker thread per process
takes jobs from a C queue and hands each answer back with one `call_soon_threadsafe`.

`to_thread` goes through the default ThreadPoolExecutor: a work item, a concurrent Future with its Condition, and a
chain of callbacks between that future and the asyncio one; callgrind counts about 170 K instructions for one hop of
a trivial function, against about 65 K here. The boundary makes one hop per tool call (capping and projecting the
result), so this is per-call overhead. The work itself is the same Python, holding the GIL as it did in an executor
thread, and runs in the caller's context (a copy of its contextvars), as with to_thread.

One thread for the process: the projections it runs are Python that holds the GIL, so more threads would take turns
rather than run together. A job's answer is dropped when its awaiting task was cancelled meanwhile, or its loop is
closed; an exception is raised in the awaiting task. After a fork the child starts a thread of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context, Callable[..., Any], tuple[Any, ...]]


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    """On the loop: the job's answer into its future (nothing when the awaiting task gave up on it)."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def _work(jobs: queue.SimpleQueue[_Job]) -> None:
    while True:
        loop, future, context, func, args = jobs.get()
        try:
            value, ok = context.run(func, *args), True
        except BaseException as exc:  # handed to the awaiting task, as to_thread does
            value, ok = exc, False
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits for this answer any more
            loop.call_soon_threadsafe(_settle, future, ok, value)
        del loop, future, context, func, args, value  # nothing of a finished job is kept while waiting for the next


class Offloader:
    """The worker thread (started at the first job) and its queue."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def forget_worker(self) -> None:
        """In a forked child the parent's worker does not run: jobs go to a fresh queue and thread."""
        self._jobs, self._worker, self._start_lock = queue.SimpleQueue(), None, threading.Lock()

    def _start(self) -> None:
        with self._start_lock:
            if self._worker is None:
                worker = threading.Thread(target=_work, args=(self._jobs,), name="diagbot-offload", daemon=True)
                worker.start()
                self._worker = worker

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """func(*args) in the worker thread, in a copy of the caller's context; its answer (or its exception)."""
        if self._worker is None:
            self._start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, contextvars.copy_context(), func, args))
        return await future


_OFFLOADER = Offloader()
"""One for the process (see the module's docstring)."""
os.register_at_fork(after_in_child=_OFFLOADER.forget_worker)
offload = _OFFLOADER.run
