"""query_mysql on PostgreSQL (asyncpg) and MySQL/MariaDB (aiomysql): a fresh read-only session per call with a
statement timeout, each variable-length output column cut on the server, and rows streamed through a server-side
cursor into a byte budget, so neither a huge cell nor a huge result is ever held by this process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiomysql
import asyncpg
import pymysql
from pymysql.constants import FIELD_TYPE
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from core.errors import ToolFailure
from core.tools.sql_allow import Backend
from core.tools.sql_budget import ResultBudget
from core.tools.sql_errors import connect_failure_message
from core.tools.sql_policy import PreparedQuery
from core.tools.sql_values import safe_error_text

TIMEOUT_MESSAGE = "The query was stopped by the statement timeout; narrow it (WHERE, LIMIT)."
CONNECT_TIMEOUT_S = 5.0
PREFETCH_ROWS = 8
MAX_COLUMNS = 200
# PostgreSQL types whose text is short and bounded; every other column (text, json, bytea, arrays, numeric, ...)
# is cut to the cell budget by the server before it is sent.
_PG_FIXED = frozenset({"bool", "int2", "int4", "int8", "float4", "float8", "date", "time", "timetz", "timestamp",
                       "timestamptz", "interval", "uuid", "oid", "money", "inet", "cidr", "macaddr"})
_MYSQL_VARIABLE = frozenset({FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.BLOB,
                             FIELD_TYPE.TINY_BLOB, FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.JSON,
                             FIELD_TYPE.GEOMETRY, FIELD_TYPE.ENUM, FIELD_TYPE.SET, FIELD_TYPE.NEWDECIMAL})
_PG_ADAPTER_ONLY = ("prepared_statement_cache_size", "prepared_statement_name_func", "async_fallback")


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


def connect_args(url: URL) -> dict[str, Any]:
    """The driver's keyword arguments for this SQLAlchemy URL (host, port, user, password, database, options)."""
    _, kwargs = url.get_dialect()().create_connect_args(url)
    for key in _PG_ADAPTER_ONLY:
        kwargs.pop(key, None)
    return dict(kwargs)


def cell_chars(budget: ResultBudget, columns: int) -> int:
    """Characters each variable-length cell may carry on the wire, so one row stays within the result budget."""
    return max(16, min(budget.cell_max_bytes, budget.result_max_bytes // (4 * max(1, columns))))


def _too_many_columns(count: int) -> ToolFailure:
    return ToolFailure("SQL_TOO_LARGE", f"The query returns {count} columns; at most {MAX_COLUMNS} are allowed.")


def _quote_pg(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_mysql(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def wrap_postgres(sql: str, columns: Sequence[tuple[str, str]], chars: int) -> str:
    """The statement as a derived table whose variable-length columns are cut to `chars` characters."""
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    select = []
    for i, (name, type_name) in enumerate(columns):
        value = f"diag_q.c{i}" if type_name in _PG_FIXED else f"LEFT(CAST(diag_q.c{i} AS TEXT), {chars})"
        select.append(f"{value} AS {_quote_pg(name)}")
    return f"SELECT {', '.join(select)} FROM ({sql}) AS diag_q({names})"


def wrap_mysql(prepared: PreparedQuery, columns: Sequence[tuple[str, int]], chars: int) -> str:
    """The statement with its variable-length output columns cut to `chars` characters: LEFT() in the select list
    when it maps one to one onto the result (cheap), else the statement as a CTE (MariaDB then materialises it)."""
    wrap = [type_code in _MYSQL_VARIABLE for _, type_code in columns]
    if not any(wrap):
        return prepared.sql
    direct = prepared.with_cuts(wrap, chars, [name for name, _ in columns], "mysql")
    if direct is not None:
        return direct
    sql = prepared.sql
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    select = []
    for i, (name, type_code) in enumerate(columns):
        value = f"LEFT(c{i}, {chars})" if type_code in _MYSQL_VARIABLE else f"c{i}"
        select.append(f"{value} AS {_quote_mysql(name)}")
    return f"WITH diag_q ({names}) AS ({sql}) SELECT {', '.join(select)} FROM diag_q"


# ---- PostgreSQL --------------------------------------------------------------------------------------------------

def _pg_failure(exc: BaseException, secrets: tuple[str, ...]) -> ToolFailure:
    if isinstance(exc, asyncpg.QueryCanceledError):
        return ToolFailure("SQL_TIMEOUT", TIMEOUT_MESSAGE)
    if isinstance(exc, asyncpg.ReadOnlySQLTransactionError):
        return ToolFailure("SQL_REFUSED", "Refused by the database: the session is read-only.")
    if isinstance(exc, asyncpg.PostgresError):
        return ToolFailure("SQL_ERROR", f"The postgres database rejected the query: {safe_error_text(exc, secrets)}")
    return ToolFailure("BACKEND_UNAVAILABLE", "The postgres database is unreachable.")


async def connect_postgres(url: URL, timeout_s: float) -> asyncpg.Connection:
    """A session that is read-only by default and stops any statement at the timeout."""
    settings = {
        "default_transaction_read_only": "on",
        "statement_timeout": str(max(1, int(timeout_s * 1000))),
        "idle_in_transaction_session_timeout": str(max(1000, int(timeout_s * 2000))),
        "application_name": "diagbot-query_mysql",
    }
    try:
        conn: asyncpg.Connection = await asyncpg.connect(
            **connect_args(url), timeout=CONNECT_TIMEOUT_S, server_settings=settings)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
        raise ToolFailure("BACKEND_UNAVAILABLE", connect_failure_message("postgres", exc)) from exc
    return conn


async def run_postgres(conn: asyncpg.Connection, prepared: PreparedQuery, budget: ResultBudget,
                       secrets: tuple[str, ...]) -> list[str]:
    """Stream one prepared statement's rows into the budget inside a read-only transaction; the column names."""
    try:
        async with conn.transaction(readonly=True):
            statement = await conn.prepare(prepared.sql)
            attributes = [(a.name, a.type.name) for a in statement.get_attributes()]
            if len(attributes) > MAX_COLUMNS:
                raise _too_many_columns(len(attributes))
            sql = prepared.sql
            if prepared.kind == "select" and attributes:
                sql = wrap_postgres(prepared.sql, attributes, cell_chars(budget, len(attributes)))
            async for record in conn.cursor(sql, prefetch=PREFETCH_ROWS):
                if not budget.add(record.values()):
                    break
            return [name for name, _ in attributes]
    except ToolFailure:
        raise
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
        raise _pg_failure(exc, secrets) from exc


# ---- MySQL / MariaDB ---------------------------------------------------------------------------------------------

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
                raise _too_many_columns(len(columns))
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
