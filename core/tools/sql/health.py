"""query_mysql's checks: DIAG_SQL_URL connects (or why not), and its account is read-only."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from types import MappingProxyType
from urllib.parse import quote

from sqlalchemy import text
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from core.errors import ToolFailure
from core.health.result import CheckResult, Level
from core.settings import Settings
from core.tools.sql.errors import ConnectProblem, connect_problem
from core.tools.sql.privileges import DOC, sql_privilege_problems
from core.tools.sql.tool import classify_url

_FIX_SQL = MappingProxyType({
    ConnectProblem.AUTH: "check the user and password in DIAG_SQL_URL (and that this user may connect from here)",
    ConnectProblem.UNKNOWN_DATABASE: "check the database name at the end of DIAG_SQL_URL",
    ConnectProblem.UNREACHABLE: "check the host and port in DIAG_SQL_URL and that the server is running",
})


def _sqlite_check(url: URL) -> CheckResult:
    database = url.database or ""
    if database in ("", ":memory:"):
        return CheckResult(name="tool.query_mysql", level=Level.WARN, detail="DIAG_SQL_URL is an empty in-memory SQLite",
                           fix="point DIAG_SQL_URL at the database query_mysql should read")
    path = Path(database).expanduser()
    if not path.is_file():
        return CheckResult(name="tool.query_mysql", level=Level.WARN, detail=f"DIAG_SQL_URL: SQLite file {path} is missing",
                           fix="point DIAG_SQL_URL at an existing SQLite file")
    try:  # read-only, as the tool opens it
        with contextlib.closing(sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)) as conn:
            tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    except sqlite3.Error as exc:
        return CheckResult(name="tool.query_mysql", level=Level.WARN,
                           detail=f"DIAG_SQL_URL: {path} is not a readable SQLite database ({type(exc).__name__})",
                           fix="point DIAG_SQL_URL at a SQLite database file")
    return CheckResult(name="tool.query_mysql", level=Level.OK, detail=f"DIAG_SQL_URL: SQLite file {path} ({tables} tables)")


async def check_sql(settings: Settings) -> CheckResult:
    """DIAG_SQL_URL connects, or says why not: authentication failed, unknown database, or unreachable (and how)."""
    try:
        backend, url = classify_url(settings.diag_sql_url)
    except ToolFailure as exc:
        return CheckResult(name="tool.query_mysql", level=Level.WARN, detail=exc.message, fix="fix DIAG_SQL_URL")
    if backend == "sqlite":
        return await asyncio.to_thread(_sqlite_check, url)
    shown = url.render_as_string(hide_password=True)
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:
        problem = connect_problem(exc)
        if problem is None:
            return CheckResult(name="tool.query_mysql", level=Level.WARN,
                               detail=f"DIAG_SQL_URL {shown}: {type(getattr(exc, 'orig', None) or exc).__name__}",
                               fix="check DIAG_SQL_URL and the database server")
        kind, reason = problem
        return CheckResult(name="tool.query_mysql", level=Level.WARN,
                           detail=f"DIAG_SQL_URL {shown}: {kind.value} ({reason})", fix=_FIX_SQL[kind])
    finally:
        await engine.dispose()
    return CheckResult(name="tool.query_mysql", level=Level.OK, detail=f"DIAG_SQL_URL {shown} connects")


async def check_sql_privileges(settings: Settings) -> CheckResult:
    """The DIAG_SQL_URL account is read-only (query_mysql refuses a privileged one unless DIAG_SQL_ALLOW_PRIVILEGED=1)."""
    name = "tool.query_mysql.privileges"
    try:
        backend, url = classify_url(settings.diag_sql_url)
        if backend == "sqlite":
            return CheckResult(name=name, level=Level.OK, detail="SQLite is opened read-only; no account to check")
        problems = await sql_privilege_problems(settings.diag_sql_url)
    except ToolFailure as exc:
        return CheckResult(name=name, level=Level.SKIP, detail=f"not checked: {exc.message}")
    user = url.username or "(default user)"
    if not problems:
        return CheckResult(name=name, level=Level.OK, detail=f"the SQL account {user} is read-only")
    why = "; ".join(problems[:3])
    if settings.diag_sql_allow_privileged:
        return CheckResult(name=name, level=Level.WARN,
                           detail=f"the SQL account {user} {why} (accepted: DIAG_SQL_ALLOW_PRIVILEGED=1)",
                           fix=f"use a read-only account ({DOC}) and unset DIAG_SQL_ALLOW_PRIVILEGED")
    return CheckResult(name=name, level=Level.WARN, detail=f"the SQL account {user} {why}; query_mysql refuses every query",
                       fix=f"use a read-only account ({DOC}), or set DIAG_SQL_ALLOW_PRIVILEGED=1 to accept the risk")
