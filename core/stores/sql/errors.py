"""What went wrong when the bot's own database (DATABASE_URL) failed at start-up, in words an operator can act on.

Drivers say it in different ways (asyncpg exceptions with SQLSTATEs, pymysql error numbers, sqlite3 messages,
socket errors underneath); this names the cause and the fix, never the URL's password.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from types import MappingProxyType

from core import netdiag
from core.stores.sql.migrate import MigrationError

_MYSQL_AUTH = frozenset({1045, 1698})
_MYSQL_DB_DENIED = 1044
_MYSQL_UNKNOWN_DB = 1049
_MYSQL_DENIED = frozenset({1142, 1143, 1227})  # command / column denied, needs a privilege
_MYSQL_UNREACHABLE = frozenset({2002, 2003, 2005, 2006, 2013})


@dataclass(frozen=True)
class DatabaseProblem:
    """The cause of a database failure and what to do about it."""

    cause: str
    fix: str


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, the driver error SQLAlchemy wraps (.orig) and its causes; bounded."""
    return netdiag.exception_chain(exc, ("orig", "__cause__", "__context__"), limit=12)


def _server_problem(err: BaseException) -> DatabaseProblem | None:
    sqlstate = str(getattr(err, "sqlstate", "") or "")
    args = getattr(err, "args", ())
    code = args[0] if args and isinstance(args[0], int) else None
    if sqlstate.startswith("28") or code in _MYSQL_AUTH:
        return DatabaseProblem("authentication failed: the server refused the user or password",
                               "fix the user and password in DATABASE_URL")
    if sqlstate == "3D000" or code == _MYSQL_UNKNOWN_DB:
        return DatabaseProblem("the database named in DATABASE_URL does not exist on the server",
                               "create it (CREATE DATABASE ...) or fix its name in DATABASE_URL")
    if code == _MYSQL_DB_DENIED:
        return DatabaseProblem("the user may not use the database named in DATABASE_URL",
                               "GRANT the user access to that database, or use another user")
    if sqlstate == "42501" or code in _MYSQL_DENIED:
        return DatabaseProblem("the user lacks a privilege the schema migration needs (e.g. CREATE)",
                               "run `diagbot migrate` once as the schema owner, or grant the privilege")
    return None


_NETWORK_FIXES = MappingProxyType({
    netdiag.DNS: "fix the host name in DATABASE_URL",
    netdiag.REFUSED: "start the database server, or fix the host/port in DATABASE_URL",
    netdiag.TIMED_OUT: "check that the host is reachable from here (firewall, network) and the port is right",
    netdiag.TLS: "check the server's TLS settings and the URL's ssl options",
    netdiag.RESET: "check the server's log: it closed the connection",
})


def _network_problem(err: BaseException) -> DatabaseProblem | None:
    cause = netdiag.network_cause(err)
    if cause is not None:
        return DatabaseProblem(cause, _NETWORK_FIXES.get(cause, "check the host and port in DATABASE_URL"))
    for inner in _chain(err):
        args = getattr(inner, "args", ())
        if args and isinstance(args[0], int) and args[0] in _MYSQL_UNREACHABLE:
            return DatabaseProblem("could not connect to the server",
                                   "start the database server, or fix the host/port in DATABASE_URL")
    return None


def _sqlite_problem(err: BaseException) -> DatabaseProblem | None:
    if not isinstance(err, sqlite3.Error):
        return None
    text = str(err).lower()
    if "unable to open" in text:
        return DatabaseProblem("the SQLite file cannot be opened or created",
                               "make sure its folder exists and is writable, or point DATABASE_URL elsewhere")
    if "locked" in text or "busy" in text:
        return DatabaseProblem("the SQLite file stayed locked by another process",
                               "stop the other process holding it, or use PostgreSQL/MariaDB for several processes")
    if "readonly" in text or "read-only" in text:
        return DatabaseProblem("the SQLite file is read-only", "make the file and its folder writable")
    return None


def describe_database_error(exc: BaseException) -> DatabaseProblem:
    """The most specific known cause in the exception chain; else the driver's error type (never its message)."""
    for err in _chain(exc):
        if isinstance(err, MigrationError):  # its message already says what to do
            return DatabaseProblem(f"schema migration failed: {err}", "")
    for err in _chain(exc):
        problem = _server_problem(err) or _sqlite_problem(err)
        if problem is not None:
            return problem
    problem = _network_problem(exc)  # network_cause walks the chain itself
    if problem is not None:
        return problem
    driver_error = getattr(exc, "orig", None) or exc
    return DatabaseProblem(f"{type(driver_error).__name__} from the database driver",
                           "check DATABASE_URL and the server's log for that error")
