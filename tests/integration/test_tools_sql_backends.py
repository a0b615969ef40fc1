"""query_mysql against real SQLite, MariaDB and PostgreSQL: hostile statements change nothing, timeouts cut heavy
queries, the row cap holds and MySQL syntax runs after transpiling. Each test owns a uniquely named table/schema."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from core.errors import ToolFailure
from core.tools.sql.args import SqlArgs
from core.tools.sql.policy import PreparedQuery
from core.tools.sql.tool import SqlTool, classify_url
from tests.conftest import MARIADB_URL, POSTGRES_URL

ROWS = 40


@dataclass
class Backend:
    """A live database with one test table `table` (qualified as needed) and an admin URL to inspect it."""

    name: str
    url: str
    table: str
    admin_url: str


def _tool_url(url: str) -> str:
    # The tool is configured without a driver, as an operator would write DIAG_SQL_URL.
    return url.replace("+aiomysql", "").replace("+asyncpg", "").replace("+aiosqlite", "")


async def _admin(url: str, statements: list[str]) -> list[Any]:
    engine = create_async_engine(url)
    results: list[Any] = []
    try:
        async with engine.begin() as conn:
            for sql in statements:
                result = await conn.exec_driver_sql(sql)
                results.append(result.fetchall() if result.returns_rows else None)
    finally:
        await engine.dispose()
    return results


def _seed(table: str, ts_type: str) -> list[str]:
    values = ", ".join(
        f"({i}, 'item{i}', {'NULL' if i % 5 == 0 else i * 2}, CAST('2020-01-01 22:{i % 60:02d}:00' AS {ts_type}))"
        for i in range(1, ROWS + 1)
    )
    return [
        f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name VARCHAR(40), qty INTEGER, created_at {ts_type})",
        f"INSERT INTO {table} (id, name, qty, created_at) VALUES {values}",
    ]


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb),
                        pytest.param("postgres", marks=pytest.mark.postgres)])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    suffix = uuid.uuid4().hex[:10]
    if request.param == "sqlite":
        admin = f"sqlite+aiosqlite:///{tmp_path / 'shop.db'}"
        await _admin(admin, _seed("items", "TEXT"))
        yield Backend("sqlite", _tool_url(admin), "items", admin)
        return
    if request.param == "mariadb":
        table = f"diag_items_{suffix}"
        await _admin(MARIADB_URL, _seed(table, "DATETIME"))
        try:
            yield Backend("mariadb", _tool_url(MARIADB_URL), table, MARIADB_URL)
        finally:
            await _admin(MARIADB_URL, [f"DROP TABLE IF EXISTS {table}"])
        return
    schema = f"diag_{suffix}"
    await _admin(POSTGRES_URL, [f"CREATE SCHEMA {schema}", *_seed(f"{schema}.items", "TIMESTAMP")])
    try:
        yield Backend("postgres", _tool_url(POSTGRES_URL), f"{schema}.items", POSTGRES_URL)
    finally:
        await _admin(POSTGRES_URL, [f"DROP SCHEMA IF EXISTS {schema} CASCADE"])


async def _checksum(backend: Backend) -> list[Any]:
    rows = await _admin(backend.admin_url, [
        f"SELECT COUNT(*), SUM(id), SUM(COALESCE(qty, 0)), MIN(name), MAX(name) FROM {backend.table}"
    ])
    return [tuple(r) for r in rows[0]]


def _hostile(table: str) -> list[str]:
    return [
        f"INSERT INTO {table} (id, name) VALUES (999, 'x')",
        f"UPDATE {table} SET qty = 0",
        f"DELETE FROM {table}",
        f"DROP TABLE {table}",
        "CREATE TABLE diag_evil (a INT)",
        f"SELECT 1; DELETE FROM {table}",
        f"SELECT * FROM {table}; DROP TABLE {table}",
        f"SELECT * FROM {table} FOR UPDATE",
        f"SELECT * FROM {table} LOCK IN SHARE MODE",
        f"SELECT * INTO OUTFILE '/tmp/diag_evil.txt' FROM {table}",
        "SELECT LOAD_FILE('/etc/passwd')",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT SLEEP(10)",
        "SELECT pg_sleep(10)",
        f"SELECT 1 /*!50000 ; DELETE FROM {table} */",
        f"TRUNCATE TABLE {table}",
        "SET @x = 1",
    ]


async def test_hostile_statements_are_refused_and_data_is_unchanged(backend: Backend) -> None:
    """Every write, DDL, lock, file access, sleep or stacked statement is refused; a checksum is unchanged."""
    before = await _checksum(backend)
    tool = SqlTool(backend.url, timeout_s=2, row_cap=50, allow_privileged=True)
    try:
        for sql in _hostile(backend.table):
            with pytest.raises(ToolFailure) as info:
                await tool.run(SqlArgs(sql=sql))
            assert info.value.code == "SQL_REFUSED", sql
            assert info.value.message, sql
    finally:
        await tool.aclose()
    assert await _checksum(backend) == before


async def test_session_is_read_only_even_if_a_write_passed_the_policy(backend: Backend) -> None:
    """Defence in depth: a write sent past the policy fails in the read-only transaction and changes nothing."""
    before = await _checksum(backend)
    tool = SqlTool(backend.url, timeout_s=2, row_cap=50, allow_privileged=True)
    kind, url = classify_url(backend.url)
    write = PreparedQuery(sql=f"DELETE FROM {backend.table}", kind="select", row_limited=False)

    async def send_write() -> None:
        if kind == "sqlite":
            tool._run_sqlite(url, write)
        else:
            await tool._run_server(kind, url, write)

    try:
        with pytest.raises(ToolFailure) as info:
            await send_write()
    finally:
        await tool.aclose()
    assert info.value.code == "SQL_REFUSED", info.value.message
    assert "read-only" in info.value.message
    assert await _checksum(backend) == before


async def test_heavy_query_is_cut_off_by_the_statement_timeout(backend: Backend) -> None:
    """A billion-row recursive CTE cross join stops at the timeout with SQL_TIMEOUT."""
    tool = SqlTool(backend.url, timeout_s=0.5, row_cap=10, allow_privileged=True)
    heavy = ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) "
             "SELECT COUNT(*) FROM c AS a, c AS b, c AS d")
    try:
        with pytest.raises(ToolFailure) as info:
            await tool.run(SqlArgs(sql=heavy))
    finally:
        await tool.aclose()
    assert info.value.code == "SQL_TIMEOUT"


async def test_row_cap_limits_the_rows_returned(backend: Backend) -> None:
    """40 rows with a cap of 7: 7 rows, row_cap_hit, total_count 7."""
    tool = SqlTool(backend.url, timeout_s=2, row_cap=7, allow_privileged=True)
    try:
        result = await tool.run(SqlArgs(sql=f"SELECT id, name FROM {backend.table} ORDER BY id"))
    finally:
        await tool.aclose()
    assert [row[0] for row in result.rows] == list(range(1, 8))
    assert result.notes["row_cap_hit"] is True
    assert result.total_count == 7


async def test_mysql_syntax_runs_on_every_backend(backend: Backend) -> None:
    """Backticks, LIMIT offset,count, IFNULL and DATE_SUB(NOW(), INTERVAL ...) run and give the same rows."""
    quoted = ".".join(f"`{part}`" for part in backend.table.split("."))
    tool = SqlTool(backend.url, timeout_s=2, row_cap=50, allow_privileged=True)
    try:
        result = await tool.run(SqlArgs(sql=(
            f"SELECT `id`, IFNULL(`qty`, -1) AS qty FROM {quoted} "
            "WHERE created_at < DATE_SUB(NOW(), INTERVAL 1 HOUR) ORDER BY `id` LIMIT 2, 3")))
        like = await tool.run(SqlArgs(sql=f"SELECT COUNT(*) AS n FROM {backend.table} WHERE name LIKE 'item1%'"))
    finally:
        await tool.aclose()
    assert result.columns == ["id", "qty"]
    assert result.rows == [[3, 6], [4, 8], [5, -1]]
    assert int(like.rows[0][0]) == 11


async def test_show_tables_and_describe_on_every_backend(backend: Backend) -> None:
    """SHOW TABLES [FROM schema] lists the test table; DESCRIBE lists its columns."""
    schema, _, table = backend.table.rpartition(".")
    tool = SqlTool(backend.url, timeout_s=2, row_cap=500, allow_privileged=True)
    try:
        shown = await tool.run(SqlArgs(sql=f"SHOW TABLES FROM {schema}" if schema else "SHOW TABLES"))
        described = await tool.run(SqlArgs(sql=f"DESCRIBE {backend.table}"))
    finally:
        await tool.aclose()
    assert [table] in shown.rows
    assert [row[0] for row in described.rows] == ["id", "name", "qty", "created_at"]


async def test_unknown_table_is_a_clear_error_without_credentials(backend: Backend) -> None:
    """A missing table fails with SQL_ERROR; the message never contains the URL."""
    tool = SqlTool(backend.url, timeout_s=2, row_cap=5, allow_privileged=True)
    try:
        with pytest.raises(ToolFailure) as info:
            await tool.run(SqlArgs(sql="SELECT * FROM diag_no_such_table"))
    finally:
        await tool.aclose()
    assert info.value.code == "SQL_ERROR"
    assert "127.0.0.1" not in info.value.message
    assert "diag_no_such_table" in info.value.message


@pytest.mark.parametrize("url", ["mysql://root:s3cret@127.0.0.1:1/test", "postgresql://u:s3cret@127.0.0.1:1/test"])
async def test_unreachable_server_is_backend_unavailable_without_password(url: str) -> None:
    """A server that refuses connections gives BACKEND_UNAVAILABLE and never echoes the password."""
    tool = SqlTool(url, timeout_s=2, row_cap=5)
    try:
        with pytest.raises(ToolFailure) as info:
            await tool.run(SqlArgs(sql="SELECT 1"))
    finally:
        await tool.aclose()
    assert info.value.code == "BACKEND_UNAVAILABLE"
    assert "s3cret" not in info.value.message
