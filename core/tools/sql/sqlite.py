"""query_mysql on SQLite: the file opened read-only in a worker thread, with hard limits on string/blob and SQL
length (so no single function can build a huge value), a progress handler that stops the statement at the deadline
or on cancellation, and rows streamed into a byte budget."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from types import MappingProxyType
from urllib.parse import quote

from sqlalchemy.engine import URL

from core.errors import ToolFailure
from core.tools.sql.budget import ResultBudget
from core.tools.sql.policy import PreparedQuery

PROGRESS_STEPS = 100
SQL_MAX_LENGTH = 100_000
TIMEOUT_MESSAGE = "The query was stopped by the statement timeout; narrow it (WHERE, LIMIT)."
_LIMITS = MappingProxyType({
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: SQL_MAX_LENGTH,
    sqlite3.SQLITE_LIMIT_COLUMN: 1000,
    sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 200,
    sqlite3.SQLITE_LIMIT_COMPOUND_SELECT: 50,
    sqlite3.SQLITE_LIMIT_FUNCTION_ARG: 50,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 1000,
})


def _open(url: URL) -> sqlite3.Connection:
    database = url.database or ""
    if database in ("", ":memory:"):
        return sqlite3.connect(":memory:")
    path = Path(database).expanduser().resolve()
    if not path.is_file():
        raise ToolFailure("BACKEND_UNAVAILABLE", f"The SQLite database '{path.name}' does not exist on the server.")
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)


def _classify(exc: sqlite3.Error, stopped: str | None) -> ToolFailure:
    text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    lowered = text.lower()
    if stopped == "cancelled":
        return ToolFailure("CANCELLED", "The query was cancelled.")
    if "interrupted" in lowered:
        return ToolFailure("SQL_TIMEOUT", TIMEOUT_MESSAGE)
    if "too big" in lowered or "too long" in lowered:
        return ToolFailure("SQL_TOO_LARGE", f"The query builds a value or statement over the size limit: {text}")
    if "readonly" in lowered or "read-only" in lowered:
        return ToolFailure("SQL_REFUSED", "Refused by the database: the session is read-only.")
    return ToolFailure("SQL_ERROR", f"The sqlite database rejected the query: {text}")


def run_sqlite(url: URL, prepared: PreparedQuery, timeout_s: float, budget: ResultBudget,
               cancelled: threading.Event) -> list[str]:
    """Run one prepared statement; fills `budget` with rows and returns the column names. Blocking: call in a thread."""
    conn = _open(url)
    stopped: list[str] = []

    def progress() -> int:
        if cancelled.is_set():
            stopped.append("cancelled")
            return 1
        if time.monotonic() > deadline:
            stopped.append("timeout")
            return 1
        return 0

    try:
        for limit, value in _LIMITS.items():
            conn.setlimit(limit, value)
        # No string or blob may exceed what one cell of the result may hold: randomblob(4e8), zeroblob or a
        # doubling replace() fail at once instead of allocating gigabytes between two progress callbacks.
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(budget.cell_max_bytes * 4, 1 << 20))
        deadline = time.monotonic() + timeout_s
        conn.set_progress_handler(progress, PROGRESS_STEPS)
        conn.execute("PRAGMA query_only = ON")
        cursor = conn.execute(prepared.sql)
        columns = [str(d[0]) for d in cursor.description or ()]
        while not budget.full:
            row = cursor.fetchone()
            if row is None or not budget.add(row):
                break
        return columns
    except sqlite3.Error as exc:
        raise _classify(exc, stopped[0] if stopped else None) from exc
    finally:
        conn.close()
