"""query_mysql on PostgreSQL (asyncpg): a fresh session that is read-only by default with a statement timeout, each
variable-length output column cut on the server, and rows streamed through a server-side cursor into a byte budget,
so neither a huge cell nor a huge result is ever held by this process."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import sqlalchemy.dialects.postgresql.asyncpg  # noqa: F401 - loaded with the driver, off the event loop
from sqlalchemy.engine import URL

from core.errors import ToolFailure
from core.tools.sql.budget import ResultBudget
from core.tools.sql.errors import connect_failure_message
from core.tools.sql.policy import PreparedQuery
from core.tools.sql.server import (
    CONNECT_TIMEOUT_S,
    MAX_COLUMNS,
    PREFETCH_ROWS,
    TIMEOUT_MESSAGE,
    cell_chars,
    connect_args,
    cut_select,
    too_many_columns,
)
from core.tools.sql.values import safe_error_text

ERRORS: tuple[type[BaseException], ...] = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)
# Types whose text is short and bounded; every other column (text, json, bytea, arrays, numeric, ...) is cut to the
# cell budget by the server before it is sent.
_PG_FIXED = frozenset({"bool", "int2", "int4", "int8", "float4", "float8", "date", "time", "timetz", "timestamp",
                       "timestamptz", "interval", "uuid", "oid", "money", "inet", "cidr", "macaddr"})


def _quote_pg(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def wrap_postgres(sql: str, columns: Sequence[tuple[str, str]], chars: int) -> str:
    """The statement as a derived table whose variable-length columns are cut to `chars` characters."""
    names, select = cut_select(
        columns, lambda i, type_name: f"diag_q.c{i}" if type_name in _PG_FIXED else f"LEFT(CAST(diag_q.c{i} AS TEXT), {chars})",
        _quote_pg,
    )
    return f"SELECT {select} FROM ({sql}) AS diag_q({names})"


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
                raise too_many_columns(len(attributes))
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
