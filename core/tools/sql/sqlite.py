"""query_mysql on SQLite: the file opened read-only in a worker thread, with hard limits on string/blob and SQL
length (so no single function can build a huge value), a progress handler that stops the statement at the deadline
or on cancellation, and rows streamed into a byte budget.

A connection that finished its statement cleanly is kept for the next call on the same file (opening one and reading
the schema cost ~150 us, most of a first-look statement): kept per path and file identity (device, inode, size,
mtime), so a replaced or changed file gets a fresh connection, as every call did before; its statement is closed
first (no read lock is held while it waits), its progress handler cleared, and the limits and `query_only` are set
again on every call. A failed call's connection is closed. Each kept connection serves one call at a time."""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
import time
from pathlib import Path
from stat import S_ISREG
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


KEPT_PER_FILE = 4
"""Idle connections kept per database file (calls beyond it open their own and close them)."""

_Key = tuple[str, int, int, int, int]


class KeptConnections:
    """Idle read-only connections by file (path and identity); connections of a file that changed are closed. One
    per SqlTool (closed with it)."""

    def __init__(self) -> None:
        self._idle: dict[str, tuple[_Key, list[sqlite3.Connection]]] = {}
        self._lock = threading.Lock()

    def take(self, key: _Key) -> sqlite3.Connection | None:
        with self._lock:
            entry = self._idle.get(key[0])
            if entry is None:
                return None
            if entry[0] != key:  # the file changed (or was replaced): its old connections go
                del self._idle[key[0]]
                stale = entry[1]
            else:
                return entry[1].pop() if entry[1] else None
        for conn in stale:
            conn.close()
        return None

    def give(self, key: _Key, conn: sqlite3.Connection) -> None:
        with self._lock:
            entry = self._idle.get(key[0])
            if entry is None or entry[0] != key:
                stale = entry[1] if entry is not None else []
                self._idle[key[0]] = (key, [conn])
            elif len(entry[1]) < KEPT_PER_FILE:
                entry[1].append(conn)
                return
            else:
                stale = [conn]
        for old in stale:
            old.close()

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for _, conns in idle.values():
            for conn in conns:
                conn.close()


def file_key(url: URL) -> _Key | None:
    """The URL's database file as connections are kept by it: path, device, inode, size, mtime (None: an in-memory
    database, never kept); BACKEND_UNAVAILABLE when there is no such file."""
    database = url.database or ""
    if database in ("", ":memory:"):
        return None
    # Path(database).expanduser().resolve() without its Path objects and its second stat (which only turns a
    # symlink loop into RuntimeError: kept below): called on every statement.
    path = os.path.realpath(str(Path(database).expanduser()) if database.startswith("~") else database)
    try:
        stat = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RuntimeError(f"Symlink loop from {exc.filename!r}") from exc
        stat = None
    except ValueError:
        stat = None
    if stat is None or not S_ISREG(stat.st_mode):
        name = os.path.basename(path)
        raise ToolFailure("BACKEND_UNAVAILABLE", f"The SQLite database '{name}' does not exist on the server.")
    return path, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def _open(url: URL, kept: KeptConnections | None) -> tuple[sqlite3.Connection, _Key | None]:
    """A read-only connection to the URL's file (a kept one when the file is unchanged) and the key to keep it
    under afterwards."""
    key = file_key(url)
    if key is None:
        return sqlite3.connect(":memory:"), None
    idle = kept.take(key) if kept is not None else None
    if idle is not None:
        return idle, key
    return sqlite3.connect(f"file:{quote(key[0])}?mode=ro", uri=True, check_same_thread=False), key


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
               cancelled: threading.Event, kept: KeptConnections | None = None) -> list[str]:
    """Run one prepared statement; fills `budget` with rows and returns the column names. Blocking: call in a thread.
    `kept`: idle connections to take one from and to leave this one in after a clean finish (else it is closed)."""
    conn, key = _open(url, kept)
    stopped: list[str] = []
    clean = False

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
        cursor.close()  # the statement is reset: a kept connection holds no read lock while idle
        clean = not stopped
        return columns
    except sqlite3.Error as exc:
        raise _classify(exc, stopped[0] if stopped else None) from exc
    finally:
        if clean and kept is not None and key is not None and not conn.in_transaction:
            conn.set_progress_handler(None, 0)
            kept.give(key, conn)
        else:
            conn.close()
