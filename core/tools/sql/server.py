"""What query_mysql's server backends share: URL classification, the driver's connect arguments, and the per-cell
character budget that keeps one row within the result budget. The drivers themselves (asyncpg in sql_postgres.py,
aiomysql in sql_mysql.py) are imported only when a server backend is used, so start-up does not pay for them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from core.errors import ToolFailure
from core.tools.sql.allow import Backend
from core.tools.sql.budget import ResultBudget

T = TypeVar("T")

TIMEOUT_MESSAGE = "The query was stopped by the statement timeout; narrow it (WHERE, LIMIT)."
CONNECT_TIMEOUT_S = 5.0
PREFETCH_ROWS = 8
MAX_COLUMNS = 200
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


def too_many_columns(count: int) -> ToolFailure:
    """The failure for a result wider than MAX_COLUMNS."""
    return ToolFailure("SQL_TOO_LARGE", f"The query returns {count} columns; at most {MAX_COLUMNS} are allowed.")


def cut_select(
    columns: Sequence[tuple[str, T]], value: Callable[[int, T], str], quote: Callable[[str], str],
) -> tuple[str, str]:
    """For a statement wrapped as `diag_q` with columns c0, c1, ...: those names, and the select list giving each
    column `value(i, type)` (the column, or the column cut) under its original, quoted name."""
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    select = ", ".join(f"{value(i, kind)} AS {quote(name)}" for i, (name, kind) in enumerate(columns))
    return names, select
