"""query_mysql on MySQL/MariaDB (aiomysql): a fresh session whose transactions are read-only with a statement
timeout, each variable-length output column cut on the server, and rows streamed through an unbuffered cursor into
a byte budget; the connection is closed (never drained) when the budget is full."""

from __future__ import annotations

from collections.abc import Sequence

import aiomysql
import pymysql
import sqlalchemy.dialects.mysql.aiomysql  # noqa: F401 - loaded with the driver, off the event loop
from pymysql.constants import FIELD_TYPE
from sqlalchemy.engine import URL

from core.errors import ToolFailure
from core.tools.sql.budget import ResultBudget
from core.tools.sql.errors import connect_failure_message
from core.tools.sql.policy import PreparedQuery
from core.tools.sql.server import (
    CONNECT_TIMEOUT_S,
    MAX_COLUMNS,
    TIMEOUT_MESSAGE,
    cell_chars,
    connect_args,
    cut_select,
    too_many_columns,
)
from core.tools.sql.values import safe_error_text

ERRORS: tuple[type[BaseException], ...] = (pymysql.err.MySQLError, OSError)
_MYSQL_VARIABLE = frozenset({FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.BLOB,
                             FIELD_TYPE.TINY_BLOB, FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.JSON,
                             FIELD_TYPE.GEOMETRY, FIELD_TYPE.ENUM, FIELD_TYPE.SET, FIELD_TYPE.NEWDECIMAL})


def _quote_mysql(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def wrap_mysql(prepared: PreparedQuery, columns: Sequence[tuple[str, int]], chars: int) -> str:
    """The statement with its variable-length output columns cut to `chars` characters: LEFT() in the select list
    when it maps one to one onto the result (cheap), else the statement as a CTE (MariaDB then materialises it)."""
    wrap = [type_code in _MYSQL_VARIABLE for _, type_code in columns]
    if not any(wrap):
        return prepared.sql
    direct = prepared.with_cuts(wrap, chars, [name for name, _ in columns], "mysql")
    if direct is not None:
        return direct
    names, select = cut_select(
        columns, lambda i, type_code: f"LEFT(c{i}, {chars})" if type_code in _MYSQL_VARIABLE else f"c{i}", _quote_mysql,
    )
    return f"WITH diag_q ({names}) AS ({prepared.sql}) SELECT {select} FROM diag_q"


def _mysql_failure(exc: BaseException, secrets: tuple[str, ...]) -> ToolFailure:
    text = safe_error_text(exc, secrets)
    lowered = text.lower()
    if any(m in lowered for m in ("max_statement_time", "max_execution_time", "interrupted", "query execution was")):
        return ToolFailure("SQL_TIMEOUT", TIMEOUT_MESSAGE)
    if "read only transaction" in lowered or "read-only" in lowered:
        return ToolFailure("SQL_REFUSED", "Refused by the database: the session is read-only.")
    if isinstance(exc, (pymysql.err.OperationalError, pymysql.err.InterfaceError)) and "gone away" in lowered:
        return ToolFailure("BACKEND_UNAVAILABLE", "The mysql database is unreachable.")
    return ToolFailure("SQL_ERROR", f"The mysql database rejected the query: {text}")


async def connect_mysql(url: URL, timeout_s: float) -> aiomysql.Connection:
    """A session whose transactions are read-only and whose statements stop at the timeout."""
    kwargs = connect_args(url)
    kwargs.setdefault("charset", "utf8mb4")
    try:
        conn: aiomysql.Connection = await aiomysql.connect(**kwargs, connect_timeout=CONNECT_TIMEOUT_S, autocommit=False)
    except (OSError, pymysql.err.MySQLError, TimeoutError) as exc:
        raise ToolFailure("BACKEND_UNAVAILABLE", connect_failure_message("mysql", exc)) from exc
    try:
        async with conn.cursor() as cur:
            await cur.execute("SELECT VERSION()")
            version = str((await cur.fetchone() or [""])[0]).lower()
            await cur.execute("SET SESSION TRANSACTION READ ONLY")
            if "mariadb" in version:
                await cur.execute(f"SET SESSION max_statement_time = {timeout_s:.3f}")
            else:
                await cur.execute(f"SET SESSION max_execution_time = {max(1, int(timeout_s * 1000))}")
            await cur.execute("START TRANSACTION READ ONLY")
    except (OSError, pymysql.err.MySQLError) as exc:
        conn.close()
        raise ToolFailure("BACKEND_UNAVAILABLE", "The mysql database is unreachable.") from exc
    return conn


async def _mysql_columns(conn: aiomysql.Connection, probe_sql: str) -> list[tuple[str, int]]:
    async with conn.cursor() as cur:
        await cur.execute(probe_sql)
        return [(str(d[0]), int(d[1])) for d in cur.description or ()]


async def run_mysql(conn: aiomysql.Connection, prepared: PreparedQuery, budget: ResultBudget,
                    secrets: tuple[str, ...]) -> list[str]:
    """Stream one prepared statement's rows (unbuffered cursor) into the budget; the column names."""
    try:
        sql = prepared.sql
        if prepared.kind == "select" and prepared.probe_sql:
            columns = await _mysql_columns(conn, prepared.probe_sql)
            if len(columns) > MAX_COLUMNS:
                raise too_many_columns(len(columns))
            if columns:
                sql = wrap_mysql(prepared, columns, cell_chars(budget, len(columns)))
        cur = await conn.cursor(aiomysql.SSCursor)
        await cur.execute(sql)
        names = [str(d[0]) for d in cur.description or ()]
        while not budget.full:
            row = await cur.fetchone()
            if row is None or not budget.add(row):
                break
        return names
    except ToolFailure:
        raise
    except (pymysql.err.MySQLError, OSError) as exc:
        raise _mysql_failure(exc, secrets) from exc


async def kill_query(url: URL, thread_id: int) -> None:
    """KILL QUERY a statement of ours that outlived its timeout (best effort, bounded; failures are ignored)."""
    try:
        conn = await aiomysql.connect(**connect_args(url), connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
    except (OSError, pymysql.err.MySQLError, TimeoutError):
        return
    try:
        async with conn.cursor() as cur:
            await cur.execute(f"KILL QUERY {int(thread_id)}")
    except (OSError, pymysql.err.MySQLError):
        pass
    finally:
        conn.close()
