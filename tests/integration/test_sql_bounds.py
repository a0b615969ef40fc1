"""query_mysql bounds that do not depend on the policy: SQLite's setlimit caps and cancellable progress handler stop
single-function bombs; PostgreSQL and MariaDB cut variable-length cells on the server and stream rows into the byte
budget; a privileged account is refused unless allowed, and a read-only one passes (also for `diagbot check`)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
import sqlglot
from sqlglot import exp

from core.errors import ToolFailure
from core.health.result import Level
from core.settings import Settings
from core.tools.sql.args import SqlArgs
from core.tools.sql.budget import ResultBudget
from core.tools.sql.health import check_sql_privileges
from core.tools.sql.policy import PreparedQuery
from core.tools.sql.privileges import mysql_grant_problems, sql_privilege_problems
from core.tools.sql.tool import SqlTool, classify_url
from tests.integration import sql_live
from tests.integration.sql_live import Live


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


@pytest.fixture
async def lite(tmp_path: Path) -> AsyncIterator[Live]:
    async with sql_live.sqlite_live(tmp_path) as db:
        yield db


@pytest.mark.parametrize("sql", [
    "SELECT hex(randomblob(400000000))",
    "SELECT id, printf('%.*c', 2500000, 'x') FROM orders",
    "SELECT length(zeroblob(2000000000))",
    "SELECT replace(replace(replace(replace(replace(replace(replace('xxxxxxxxxx', 'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), "
    "'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx')",
])
async def test_sqlite_single_function_bombs_fail_fast_past_the_policy(lite: Live, sql: str) -> None:
    """Sent straight to SQLite (no policy): the length limit stops the value at once (an error, or NULL where the
    function itself gives up, as printf does), not after gigabytes."""
    tool = SqlTool(lite.url, timeout_s=2, row_cap=50)
    _reset_peak()
    before = _rss()
    t0 = time.monotonic()
    code, rows = "FOUND", list[list[Any]]()
    try:
        _, rows = tool._run_sqlite(classify_url(lite.url)[1], PreparedQuery(sql=sql, kind="select", row_limited=False))
    except ToolFailure as exc:
        code = exc.code
    assert code in ("SQL_TOO_LARGE", "SQL_TIMEOUT", "FOUND")
    assert all(row[-1] is None for row in rows), "a bomb value came back"
    assert time.monotonic() - t0 < 2.5
    assert _rss() - before < 64 * 2**20


async def test_sqlite_statement_stops_when_the_call_is_cancelled(lite: Live) -> None:
    """A cancelled await stops the worker thread's statement (the progress handler sees the flag)."""
    tool = SqlTool(lite.url, timeout_s=30, row_cap=5)
    endless = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT COUNT(*) FROM c"
    task = asyncio.create_task(tool.run(SqlArgs(sql=endless)))
    await asyncio.sleep(0.3)  # let the statement run a while (sqlite3 gives no signal that it has started)
    t0 = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # the thread has stopped when a new statement can finish promptly on the default executor
    await tool.run(SqlArgs(sql="SELECT 1"))
    assert time.monotonic() - t0 < 2.0


@pytest.fixture(params=[pytest.param("mariadb", marks=pytest.mark.mariadb), pytest.param("postgres", marks=pytest.mark.postgres)])
async def server(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Live]:
    factory = sql_live.mariadb_live if request.param == "mariadb" else sql_live.postgres_live
    async with factory(tmp_path) as db:
        yield db


@pytest.mark.parametrize(("select", "size"), [("id, {big} AS big", 300_000), ("*", 100_000)])
async def test_server_cuts_huge_cells_before_sending_them(server: Live, select: str, size: int) -> None:
    """Multi-megabyte cells (50 rows of them, sent past the policy) arrive cut to the cell budget; the process barely
    grows. A plain select list is cut in place; `SELECT *` goes through a wrapping CTE/derived table."""
    tool = SqlTool(server.url, timeout_s=10, row_cap=50, allow_privileged=True, cell_max_bytes=4096, result_max_bytes=64 * 1024)
    backend, url = classify_url(server.url)
    big = f"REPEAT('x', {size})"
    source = f"(SELECT id, {big} AS big FROM orders) AS o" if select == "*" else "orders"
    sql = f"SELECT {select.format(big=big)} FROM {source} ORDER BY id LIMIT 51"
    dialect = "mysql" if backend == "mysql" else "postgres"
    tree = cast(exp.Expression, sqlglot.parse_one(sql, read=dialect))
    prepared = PreparedQuery(sql=tree.sql(dialect), kind="select", row_limited=True, tree=tree,
                             probe_sql=tree.sql(dialect).replace("LIMIT 51", "LIMIT 0"))
    budget = ResultBudget(50, 4096, 64 * 1024)
    _reset_peak()
    before = _rss()
    columns = await tool._run_server(backend, url, prepared, budget)
    assert columns == ["id", "big"]
    assert budget.rows[0][0] == 1
    assert all(len(str(row[1]).encode()) <= 4096 for row in budget.rows)
    assert budget.byte_cap_hit
    assert 5 <= len(budget.rows) < 50
    assert _rss() - before < 64 * 2**20


async def test_privileged_account_is_refused_with_the_reason(server: Live) -> None:
    """root / postgres: SQL_PRIVILEGED naming why and the doc, unless DIAG_SQL_ALLOW_PRIVILEGED."""
    with pytest.raises(ToolFailure) as info:
        await SqlTool(server.url, timeout_s=2, row_cap=5).run(SqlArgs(sql="SELECT COUNT(*) FROM orders"))
    assert info.value.code == "SQL_PRIVILEGED"
    assert "docs/sql-readonly-role.md" in info.value.message
    assert "DIAG_SQL_ALLOW_PRIVILEGED" in info.value.message
    assert await sql_privilege_problems(server.url)
    allowed = await SqlTool(server.url, timeout_s=2, row_cap=5, allow_privileged=True).run(
        SqlArgs(sql="SELECT COUNT(*) FROM orders"))
    assert int(allowed.rows[0][0]) == 200


async def _readonly_account(server: Live) -> tuple[str, list[str]]:
    """A read-only account for the test database, created as the docs say; returns its URL and the cleanup."""
    name = f"diag_ro_{uuid.uuid4().hex[:8]}"
    db = server.extra["db"]
    if server.name == "postgres":
        await server.conn.execute(f"CREATE ROLE {name} LOGIN")
        await server.conn.execute(f"GRANT CONNECT ON DATABASE {db} TO {name}")
        await server.conn.execute(f"GRANT pg_read_all_data TO {name}")
        await server.conn.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC; REVOKE CREATE ON DATABASE {db} FROM PUBLIC")
        return f"postgresql://{name}@127.0.0.1:5432/{db}", [f"DROP OWNED BY {name}", f"DROP ROLE {name}"]
    async with server.conn.cursor() as cur:
        await cur.execute(f"CREATE USER '{name}'@'%'")
        await cur.execute(f"GRANT SELECT, SHOW VIEW ON {db}.* TO '{name}'@'%'")
    return f"mysql://{name}@127.0.0.1:3306/{db}", [f"DROP USER '{name}'@'%'"]


async def test_read_only_account_passes_the_check(server: Live) -> None:
    """An account made as docs/sql-readonly-role.md says has no problems and runs without the override."""
    url, cleanup = await _readonly_account(server)
    try:
        assert await sql_privilege_problems(url) == []
        result = await SqlTool(url, timeout_s=2, row_cap=5).run(SqlArgs(sql="SELECT COUNT(*) FROM orders"))
        assert int(result.rows[0][0]) == 200
        line = (await check_sql_privileges(Settings(diag_sql_url=url))).line()
        assert "is read-only" in line, line
    finally:
        for sql in cleanup:
            if server.name == "postgres":
                await server.conn.execute(sql)
            else:
                async with server.conn.cursor() as cur:
                    await cur.execute(sql)


def test_mysql_grants_are_read_by_privilege() -> None:
    """SHOW GRANTS lines: SELECT/SHOW VIEW pass; writes, DDL, FILE, ALL and GRANT OPTION are named."""
    assert mysql_grant_problems(["GRANT USAGE ON *.* TO `ro`@`%`", "GRANT SELECT, SHOW VIEW ON `shop`.* TO `ro`@`%`",
                                 "GRANT SELECT (a, b) ON `shop`.`t` TO `ro`@`%`"]) == []
    problems = mysql_grant_problems(
        ["GRANT SELECT, INSERT, FILE ON *.* TO `x`@`%` WITH GRANT OPTION", "GRANT `role1` TO `x`@`%`"])
    assert problems == ["holds FILE, INSERT on *.*", "can grant privileges (WITH GRANT OPTION)"]




async def test_diagbot_check_names_a_privileged_account(server: Live) -> None:
    """`diagbot check`: a privileged DIAG_SQL_URL is a warning naming why and the fix, also when it is accepted."""
    refused = await check_sql_privileges(Settings(diag_sql_url=server.url))
    assert refused.level is Level.WARN
    assert "refuses every query" in refused.line()
    assert "docs/sql-readonly-role.md" in refused.line()
    accepted = await check_sql_privileges(Settings(diag_sql_url=server.url, diag_sql_allow_privileged=True))
    assert accepted.level is Level.WARN
    assert "accepted: DIAG_SQL_ALLOW_PRIVILEGED=1" in accepted.line()


async def test_diagbot_check_accepts_sqlite_and_skips_an_unreachable_server(lite: Live) -> None:
    """SQLite is opened read-only (OK); a server that cannot be reached is left to the connection check (SKIP)."""
    assert (await check_sql_privileges(Settings(diag_sql_url=lite.url))).level is Level.OK
    skipped = await check_sql_privileges(Settings(diag_sql_url="postgresql://u:pw@127.0.0.1:9/x"))
    assert skipped.level is Level.SKIP
    assert "pw" not in skipped.line()


@pytest.mark.mariadb
async def test_a_nested_growth_bomb_never_reaches_mariadb(tmp_path: Path) -> None:
    """Nested REPLACEs grow a value exponentially inside one expression, which MariaDB cannot interrupt (KILL QUERY
    waits for the next row: such statements ran on for hours): the policy refuses them before the server sees them."""
    async with sql_live.mariadb_live(tmp_path) as db:
        tool = SqlTool(db.url, timeout_s=0.5, row_cap=5, allow_privileged=True)
        marker = uuid.uuid4().hex[:8]
        bomb = ("SELECT LENGTH(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE('xxxxxxxxxx', 'x', "
                "'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), 'x', "
                f"'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx'), 'x', 'xxxxxxxxxx')) AS m_{marker}")
        t0 = time.monotonic()
        with pytest.raises(ToolFailure) as info:
            await tool.run(SqlArgs(sql=bomb))
        assert info.value.code == "SQL_REFUSED"
        assert "nested" in info.value.message
        assert time.monotonic() - t0 < 1.5
        async with db.conn.cursor() as cur:
            await cur.execute("SELECT id FROM information_schema.processlist "
                              f"WHERE info LIKE '%m\\_{marker}%' AND info NOT LIKE '%processlist%'")
            running: list[tuple[Any, ...]] = list(await cur.fetchall())
        assert running == []
