"""The run a log line belongs to: `log_fields(run_id=..., session=...)` binds it for the current task and the tasks
it starts; `RunFieldsFilter` copies it onto every log record (text and JSON formats alike).

A ContextVar is per-task state, not shared mutable state: concurrent runs on one loop each see their own fields
(the same mechanism as structlog.contextvars).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import Context, ContextVar, copy_context
from types import MappingProxyType

FIELDS = ("run_id", "session")
_EMPTY: Mapping[str, str] = MappingProxyType({})
_current: ContextVar[Mapping[str, str]] = ContextVar("diagbot_log_fields", default=_EMPTY)


@contextmanager
def log_fields(**fields: str) -> Iterator[None]:
    """Bind fields (e.g. run_id, session) to every log record emitted inside the block, awaits included."""
    token = _current.set(MappingProxyType({**_current.get(), **fields}))
    try:
        yield
    finally:
        _current.reset(token)


def bind_log_fields(**fields: str) -> None:
    """Bind fields for the rest of the current task (use in a task started with `task_context`, whose context is its
    own, so nothing leaks to other tasks)."""
    _current.set(MappingProxyType({**_current.get(), **fields}))


def task_context(**fields: str) -> Context:
    """A copy of the current context with fields bound: `asyncio.create_task(coro, context=task_context(...))`."""
    context = copy_context()
    context.run(bind_log_fields, **fields)
    return context


def current_fields() -> Mapping[str, str]:
    """The fields bound in the current context."""
    return _current.get()


class RunFieldsFilter(logging.Filter):
    """Adds run_id and session (None outside a run) to each record, without overriding explicit `extra=` values."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Annotate the record; never drops it."""
        bound = _current.get()
        for name in FIELDS:
            if not hasattr(record, name):
                setattr(record, name, bound.get(name))
        return True
