"""Why a SQL connection failed, by kind: authentication, unknown database, or the host not reachable (and how)."""

from __future__ import annotations

from enum import StrEnum

from core.netdiag import network_cause

_MYSQL_AUTH_CODES = frozenset({1044, 1045, 1698})  # access denied (to the database), access denied (user/password)
_MYSQL_UNKNOWN_DB = 1049
_MYSQL_UNREACHABLE = frozenset({2002, 2003, 2005, 2006, 2013})  # can't connect / unknown host / gone away / lost


class ConnectProblem(StrEnum):
    """The kind of a connection failure."""

    AUTH = "authentication failed"
    UNKNOWN_DATABASE = "unknown database"
    UNREACHABLE = "unreachable"


def connect_problem(exc: BaseException) -> tuple[ConnectProblem, str] | None:
    """(kind, short reason) when `exc` is a connection failure of asyncpg, aiomysql or the network, else None."""
    orig = getattr(exc, "orig", None) or exc
    sqlstate = str(getattr(orig, "sqlstate", "") or "")
    args = getattr(orig, "args", ())
    code = args[0] if args and isinstance(args[0], int) else None
    if sqlstate.startswith("28") or code in _MYSQL_AUTH_CODES:
        return ConnectProblem.AUTH, "the server refused the user or password"
    if sqlstate == "3D000" or code == _MYSQL_UNKNOWN_DB:
        return ConnectProblem.UNKNOWN_DATABASE, "the server has no database of that name"
    cause = network_cause(exc)
    if cause is not None:
        return ConnectProblem.UNREACHABLE, cause
    if isinstance(orig, OSError) or code in _MYSQL_UNREACHABLE:
        return ConnectProblem.UNREACHABLE, "could not connect"
    return None


def connect_failure_message(backend: str, exc: BaseException) -> str:
    """The query_mysql error for a failed connection: which kind, without host, user or password."""
    problem = connect_problem(exc)
    if problem is None:
        return f"The {backend} database is unreachable."
    kind, reason = problem
    if kind is ConnectProblem.AUTH:
        return f"The {backend} database refused the configured credentials (authentication failed)."
    if kind is ConnectProblem.UNKNOWN_DATABASE:
        return f"The {backend} server has no database of the configured name."
    return f"The {backend} database is unreachable: {reason}."
