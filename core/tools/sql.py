"""query_mysql: one policy-checked read statement against SQLite, MySQL/MariaDB or PostgreSQL, read-only,
with a statement timeout and a row cap. Every expected failure becomes a ToolFailure with a safe message.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from core.contracts.evidence import RawResult, ToolName
from core.errors import ToolFailure
from core.tools.args import SqlArgs
from core.tools.sql_errors import connect_failure_message
from core.tools.sql_policy import Backend, PreparedQuery, prepare
from core.tools.sql_values import safe_error_text, to_json_scalar

_TIMEOUT_MARKERS = ("max_statement_time", "max_execution_time", "statement timeout", "interrupted", "querycancel")
_READONLY_MARKERS = ("read-only transaction", "read only transaction", "readonly database", "read-only database")
_PROGRESS_STEPS = 1000
_TIMEOUT_MESSAGE = "The query was stopped by the statement timeout; narrow it (WHERE, LIMIT)."
Rows = tuple[list[str], list[list[Any]]]


def classify_url(url: str) -> tuple[Backend, URL]:
    """The backend of a SQLAlchemy URL (driver optional) and the URL with the driver this tool uses."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ToolFailure("BACKEND_UNAVAILABLE", "DIAG_SQL_URL is not a valid database URL.") from exc
    name = parsed.get_backend_name()
    if name == "sqlite":
        return "sqlite", parsed
    if name in ("mysql", "mariadb"):
        return "mysql", parsed.set(drivername="mysql+aiomysql")
    if name in ("postgresql", "postgres"):
        return "postgres", parsed.set(drivername="postgresql+asyncpg")
    raise ToolFailure("BACKEND_UNAVAILABLE", f"Database backend '{name}' is not supported (sqlite, mysql/mariadb, postgresql).")


def _classify_error(exc: BaseException, backend: Backend, secrets: tuple[str, ...]) -> ToolFailure:
    text = safe_error_text(exc, secrets)
    lowered = text.lower()
    if any(marker in lowered for marker in _TIMEOUT_MARKERS):
        return ToolFailure("SQL_TIMEOUT", _TIMEOUT_MESSAGE)
    if any(marker in lowered for marker in _READONLY_MARKERS):
        return ToolFailure("SQL_REFUSED", "Refused by the database: the session is read-only.")
    return ToolFailure("SQL_ERROR", f"The {backend} database rejected the query: {text}")


async def _rollback_and_close(conn: AsyncConnection) -> None:
    """Always roll back; a connection that cannot roll back (e.g. cut mid-query) is invalidated instead."""
    try:
        await conn.rollback()
    except (OSError, SQLAlchemyError):
        await conn.invalidate()
    finally:
        await conn.close()


class SqlTool:
    """The query_mysql tool over one SQL database given by a SQLAlchemy URL."""

    name = ToolName.QUERY_MYSQL
    args_model: type[SqlArgs] = SqlArgs

    def __init__(self, url: str, timeout_s: float, row_cap: int, clock: Callable[[], datetime] | None = None) -> None:
        self._url = url
        self._timeout_s = max(0.05, float(timeout_s))
        self._row_cap = max(1, int(row_cap))
        self._clock = clock
        self._engine: AsyncEngine | None = None

    async def run(self, args: SqlArgs) -> RawResult:
        """Check, transpile and execute one read-only statement."""
        backend, url = classify_url(self._url)
        now = self._clock() if self._clock is not None else None
        prepared = prepare(args.sql, backend, self._row_cap, now)
        if backend == "sqlite":
            columns, rows = await asyncio.to_thread(self._run_sqlite, url, prepared)
        else:
            columns, rows = await self._run_server(backend, url, prepared)
        capped = len(rows) > self._row_cap
        rows = rows[: self._row_cap]
        notes = {
            "backend": backend,
            "executed_sql": prepared.sql,
            "row_cap": self._row_cap,
            "row_cap_hit": capped,
            "timeout_s": self._timeout_s,
        }
        return RawResult(columns=columns, rows=rows, total_count=len(rows), effective_arguments={"sql": args.sql}, notes=notes)

    # ---- SQLite: sync sqlite3 in a thread, opened read-only, interrupted by a progress handler -----------------

    def _run_sqlite(self, url: URL, prepared: PreparedQuery) -> Rows:
        database = url.database or ""
        if database in ("", ":memory:"):
            conn = sqlite3.connect(":memory:")
        else:
            path = Path(database).expanduser().resolve()
            if not path.is_file():
                raise ToolFailure("BACKEND_UNAVAILABLE", f"The SQLite database '{path.name}' does not exist on the server.")
            conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        try:
            deadline = time.monotonic() + self._timeout_s
            conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)
            conn.execute("PRAGMA query_only = ON")
            cursor = conn.execute(prepared.sql)
            columns = [str(d[0]) for d in cursor.description or ()]
            fetched = cursor.fetchmany(self._row_cap + 1)
            return columns, [[to_json_scalar(v) for v in row] for row in fetched]
        except sqlite3.Error as exc:
            if "interrupted" in str(exc).lower():
                raise ToolFailure("SQL_TIMEOUT", _TIMEOUT_MESSAGE) from exc
            raise _classify_error(exc, "sqlite", ()) from exc
        finally:
            conn.close()

    # ---- MySQL/MariaDB and PostgreSQL: SQLAlchemy async, read-only transaction, always rolled back --------------

    def _engine_for(self, url: URL) -> AsyncEngine:
        if self._engine is None:
            # NullPool: one short connection per query, so no session state and no event-loop affinity leaks.
            self._engine = create_async_engine(url, poolclass=NullPool)
        return self._engine

    async def _run_server(self, backend: Backend, url: URL, prepared: PreparedQuery) -> Rows:
        secrets = tuple(s for s in (url.password if isinstance(url.password, str) else None, self._url) if s)
        engine = self._engine_for(url)
        try:
            return await asyncio.wait_for(self._execute(engine, backend, prepared), timeout=self._timeout_s + 5.0)
        except TimeoutError as exc:
            raise ToolFailure("SQL_TIMEOUT", "The query did not finish within the statement timeout.") from exc
        except DBAPIError as exc:
            if exc.connection_invalidated or isinstance(exc.orig, (OSError, ConnectionError)):
                raise ToolFailure("BACKEND_UNAVAILABLE", connect_failure_message(backend, exc)) from exc
            raise _classify_error(exc, backend, secrets) from exc
        except (OSError, SQLAlchemyError) as exc:
            raise ToolFailure("BACKEND_UNAVAILABLE", connect_failure_message(backend, exc)) from exc

    async def _execute(self, engine: AsyncEngine, backend: Backend, prepared: PreparedQuery) -> Rows:
        try:
            conn = await engine.connect()
        except (OSError, SQLAlchemyError) as exc:
            raise ToolFailure("BACKEND_UNAVAILABLE", connect_failure_message(backend, exc)) from exc
        try:
            if backend == "postgres":
                await self._begin_postgres(conn)
            else:
                await self._begin_mysql(conn)
            sql = prepared.sql.replace("%", "%%") if backend == "mysql" else prepared.sql
            result = await conn.exec_driver_sql(sql)
            columns = [str(c) for c in result.keys()]  # noqa: SIM118 - Result is not a mapping
            fetched: Sequence[Any] = result.fetchmany(self._row_cap + 1)
            result.close()
            return columns, [[to_json_scalar(v) for v in row] for row in fetched]
        finally:
            await _rollback_and_close(conn)

    async def _begin_postgres(self, conn: AsyncConnection) -> None:
        await conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        await conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(self._timeout_s * 1000)}")

    async def _begin_mysql(self, conn: AsyncConnection) -> None:
        version = str((await conn.exec_driver_sql("SELECT VERSION()")).scalar() or "")
        await conn.exec_driver_sql("SET SESSION TRANSACTION READ ONLY")
        if "mariadb" in version.lower():
            await conn.exec_driver_sql(f"SET SESSION max_statement_time = {self._timeout_s:.3f}")
        else:
            await conn.exec_driver_sql(f"SET SESSION max_execution_time = {int(self._timeout_s * 1000)}")
        # End the implicit transaction the SETs may have opened, then start an explicitly read-only one.
        await conn.rollback()
        await conn.exec_driver_sql("START TRANSACTION READ ONLY")

    async def aclose(self) -> None:
        """Dispose of the engine (no pooled connections are kept)."""
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None
