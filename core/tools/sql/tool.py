"""query_mysql: one allow-listed read statement against SQLite, MySQL/MariaDB or PostgreSQL, in a read-only session
with a statement timeout, a row cap and byte budgets, from an account checked for least privilege on first use.
Every expected failure becomes a ToolFailure with a safe message.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

from sqlalchemy.engine import URL

from core.contracts.evidence import RawResult
from core.errors import ToolFailure
from core.tools.sql.args import NAME, SqlArgs
from core.tools.sql.budget import DEFAULT_CELL_MAX_BYTES, DEFAULT_RESULT_MAX_BYTES, ResultBudget
from core.tools.sql.catalogs import parse_schema_setting
from core.tools.sql.policy import Backend, PreparedQuery, Preparer
from core.tools.sql.privileges import mysql_problems, postgres_problems, refusal
from core.tools.sql.server import classify_url
from core.tools.sql.sqlite import KeptConnections, run_sqlite

__all__ = ("SqlTool", "classify_url")
logger = logging.getLogger(__name__)
_GRACE_S = 0.5  # the server should stop at the timeout; this is the guard for one that does not


_DRIVERS: Mapping[Backend, str] = MappingProxyType({"postgres": "core.tools.sql.postgres", "mysql": "core.tools.sql.mysql"})


async def _driver(module: str) -> Any:
    """A driver module (normally already loaded by SqlTool's constructor; else imported in a worker thread)."""
    loaded = sys.modules.get(module)
    return loaded if loaded is not None else await asyncio.to_thread(importlib.import_module, module)


def _preload_driver(url: str) -> None:
    """Import the configured server backend's driver at construction (start-up), not during the first query:
    asyncpg/aiomysql and their SQLAlchemy dialects cost ~0.3 s, which would stall the event loop mid-serve."""
    try:
        backend, _ = classify_url(url)
    except ToolFailure:
        return  # reported by the first call
    if backend in _DRIVERS:
        importlib.import_module(_DRIVERS[backend])


class SqlTool:
    """The query_mysql tool over one SQL database given by a SQLAlchemy URL."""

    name = NAME
    args_model: type[SqlArgs] = SqlArgs

    def __init__(
        self,
        url: str,
        timeout_s: float,
        row_cap: int,
        clock: Callable[[], datetime] | None = None,
        *,
        schemas: str | Iterable[str] | None = None,
        allow_privileged: bool = False,
        cell_max_bytes: int = DEFAULT_CELL_MAX_BYTES,
        result_max_bytes: int = DEFAULT_RESULT_MAX_BYTES,
    ) -> None:
        self._url = url
        self._timeout_s = max(0.05, float(timeout_s))
        self._row_cap = max(1, int(row_cap))
        self._clock = clock
        self._schemas = parse_schema_setting(schemas)
        self._allow_privileged = allow_privileged
        self._cell_max_bytes = max(256, int(cell_max_bytes))
        self._result_max_bytes = max(self._cell_max_bytes, int(result_max_bytes))
        self._privileges_ok = False
        self._kills: set[asyncio.Task[None]] = set()
        self._prepare = Preparer()
        self._classified: tuple[Backend, URL] | None = None
        self._connections = KeptConnections()
        """SQLite: connections that finished cleanly, for the next calls on the unchanged file."""
        _preload_driver(url)

    def _classify(self) -> tuple[Backend, URL]:
        """classify_url of the tool's URL, kept once it succeeds (a pure function of the string: SQLAlchemy's URL
        parse cost ~15 us a call); a URL that fails is reported by every call, as before."""
        classified = self._classified = classify_url(self._url)
        return classified

    def _budget(self) -> ResultBudget:
        return ResultBudget(self._row_cap, self._cell_max_bytes, self._result_max_bytes)

    async def run(self, args: SqlArgs) -> RawResult:
        """Check, transpile and execute one read-only statement."""
        backend, url = self._classified or self._classify()
        now = self._clock() if self._clock is not None else None
        current_db = url.database if backend == "mysql" else None
        # Parsing, checking and rendering is pure-Python CPU work (and builds sqlglot's dialect tables on first use):
        # in a worker thread, so the event loop keeps acknowledging Slack meanwhile; a statement prepared before is
        # remembered (a dict look-up here, no thread hop).
        prepared = self._prepare.known(args.sql, backend, self._row_cap, now, schemas=self._schemas,
                                       current_db=current_db)
        if prepared is None:
            prepared = await asyncio.to_thread(
                self._prepare, args.sql, backend, self._row_cap, now, schemas=self._schemas, current_db=current_db)
        budget = self._budget()
        if backend == "sqlite":
            columns = await self._run_thread(url, prepared, budget)
        else:
            columns = await self._run_server(backend, url, prepared, budget)
        notes: dict[str, Any] = {"backend": backend, "executed_sql": prepared.sql, "timeout_s": self._timeout_s,
                                 **budget.notes()}
        return RawResult(columns=columns, rows=budget.rows, total_count=len(budget.rows),
                         effective_arguments={"sql": args.sql}, notes=notes)

    # ---- SQLite: sync sqlite3 in a worker thread that stops when the call is cancelled ------------------------

    async def _run_thread(self, url: URL, prepared: PreparedQuery, budget: ResultBudget) -> list[str]:
        cancelled = threading.Event()
        try:
            return await asyncio.to_thread(run_sqlite, url, prepared, self._timeout_s, budget, cancelled,
                                           self._connections)
        finally:
            cancelled.set()  # a cancelled or timed-out await must not leave the statement running

    def _run_sqlite(self, url: URL, prepared: PreparedQuery) -> tuple[list[str], list[list[Any]]]:
        """Blocking SQLite execution (tests call it directly to bypass the policy)."""
        budget = self._budget()
        return run_sqlite(url, prepared, self._timeout_s, budget, threading.Event(), self._connections), budget.rows

    # ---- MySQL/MariaDB and PostgreSQL: a fresh read-only session per call, closed (never drained) afterwards ----

    def _secrets(self, url: URL) -> tuple[str, ...]:
        return tuple(s for s in (url.password if isinstance(url.password, str) else None, self._url) if s)

    async def _run_server(self, backend: Backend, url: URL, prepared: PreparedQuery,
                          budget: ResultBudget | None = None) -> list[str]:
        budget = budget if budget is not None else self._budget()
        try:
            async with asyncio.timeout(self._timeout_s + _GRACE_S):
                if backend == "postgres":
                    return await self._postgres(url, prepared, budget)
                return await self._mysql(url, prepared, budget)
        except TimeoutError as exc:
            raise ToolFailure("SQL_TIMEOUT", "The query did not finish within the statement timeout.") from exc

    async def _postgres(self, url: URL, prepared: PreparedQuery, budget: ResultBudget) -> list[str]:
        driver = await _driver(_DRIVERS["postgres"])
        conn = await driver.connect_postgres(url, self._timeout_s)
        try:
            if not self._privileges_ok:
                await self._check_privileges(url, postgres_problems(conn), driver.ERRORS)
            columns: list[str] = await driver.run_postgres(conn, prepared, budget, self._secrets(url))
            return columns
        finally:
            conn.terminate()  # nothing to drain or commit; never wait on a server still sending a big result

    async def _mysql(self, url: URL, prepared: PreparedQuery, budget: ResultBudget) -> list[str]:
        driver = await _driver(_DRIVERS["mysql"])
        conn = await driver.connect_mysql(url, self._timeout_s)
        try:
            if not self._privileges_ok:
                await self._check_privileges(url, mysql_problems(conn), driver.ERRORS)
            columns: list[str] = await driver.run_mysql(conn, prepared, budget, self._secrets(url))
            return columns
        except asyncio.CancelledError:
            # MariaDB checks max_statement_time only between rows: one expensive expression runs on after the
            # socket closes. Kill it from a fresh session (an account may always kill its own queries).
            self._kill_later(driver.kill_query(url, conn.thread_id()))
            raise
        finally:
            conn.close()  # closes the socket: an unread unbuffered result is abandoned, not drained

    def _kill_later(self, kill: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(kill)
        self._kills.add(task)
        task.add_done_callback(self._kills.discard)

    async def _check_privileges(self, url: URL, check: Awaitable[list[str]], errors: tuple[type[BaseException], ...]) -> None:
        """Refuse a privileged account once per tool (first connection) unless the operator allowed it."""
        try:
            problems = await check
        except errors as exc:
            raise ToolFailure("BACKEND_UNAVAILABLE", "The SQL account's privileges could not be checked.") from exc
        if problems and not self._allow_privileged:
            raise refusal(str(url.username or "(default)"), problems)
        if problems:
            logger.warning("query_mysql uses a privileged SQL account (DIAG_SQL_ALLOW_PRIVILEGED=1): %s", "; ".join(problems))
        self._privileges_ok = True

    async def aclose(self) -> None:
        """Close the SQLite connections kept idle (server sessions are not pooled: each call opens and closes its
        own)."""
        self._connections.close()
