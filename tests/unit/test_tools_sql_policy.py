"""query_mysql read-only policy: what is refused, what is allowed, and how MySQL syntax is rendered per backend."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import core.tools.sql.mysql as sql_mysql
import core.tools.sql.postgres as sql_postgres
from core.errors import ToolFailure
from core.tools.sql.args import SqlArgs
from core.tools.sql.policy import Backend, Preparer, prepare
from core.tools.sql.tool import SqlTool

BACKENDS: list[Backend] = ["sqlite", "postgres", "mysql"]

REFUSED = [
    "INSERT INTO orders VALUES (1)",
    "UPDATE orders SET status = 'PAID'",
    "DELETE FROM orders",
    "DROP TABLE orders",
    "CREATE TABLE x (a INT)",
    "ALTER TABLE orders ADD COLUMN x INT",
    "TRUNCATE TABLE orders",
    "REPLACE INTO orders VALUES (1)",
    "SELECT 1; DROP TABLE orders",
    "SELECT 1; SELECT 2",
    "SELECT * FROM orders FOR UPDATE",
    "SELECT * FROM orders LOCK IN SHARE MODE",
    "SELECT a FROM t WHERE x IN (SELECT y FROM u FOR UPDATE)",
    "SELECT * INTO OUTFILE '/tmp/x' FROM orders",
    "SELECT status INTO DUMPFILE '/tmp/x' FROM orders",
    "SELECT LOAD_FILE('/etc/passwd')",
    "SELECT SLEEP(10)",
    "SELECT BENCHMARK(100000000, MD5('a'))",
    "SELECT pg_sleep(10)",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT * FROM orders WHERE id = (SELECT sleep(5))",
    "SET @a = 1",
    "SET SESSION TRANSACTION READ WRITE",
    "CALL refresh_stats()",
    "START TRANSACTION",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "LOCK TABLES orders READ",
    "GRANT ALL ON *.* TO 'x'",
    "SELECT 1 /*!50000 ; DROP TABLE orders */",
    "EXPLAIN DELETE FROM orders",
    "EXPLAIN ANALYZE SELECT * FROM orders",
    "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d",
    "USE mysql",
    "VALUES (1)",
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sql", REFUSED)
def test_writes_locks_files_sleeps_and_multiple_statements_are_refused(sql: str, backend: Backend) -> None:
    """Anything but one read statement fails with SQL_REFUSED and a clear reason (SPEC §3)."""
    with pytest.raises(ToolFailure) as info:
        prepare(sql, backend, 100)
    assert info.value.code == "SQL_REFUSED"
    assert 10 <= len(info.value.message) < 300
    assert info.value.message


@pytest.mark.parametrize("sql", ["", "   ", ";", "SELEC 1", "SELECT FROM WHERE", "SELECT 'unterminated"])
def test_empty_or_broken_text_is_a_syntax_error(sql: str) -> None:
    """Empty text and broken syntax fail with SQL_SYNTAX and a short message."""
    with pytest.raises(ToolFailure) as info:
        prepare(sql, "sqlite", 100)
    assert info.value.code == "SQL_SYNTAX"
    assert len(info.value.message) < 300


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "select count(*) from orders where status = 'FAILED'",
        "WITH x AS (SELECT 1 AS a) SELECT * FROM x",
        "SELECT 1 UNION SELECT 2",
        "SELECT 'a;b' AS s",
        "SELECT * FROM orders -- trailing comment",
        "SHOW TABLES",
        "DESCRIBE orders",
        "DESC orders",
        "SHOW COLUMNS FROM orders",
        "EXPLAIN SELECT * FROM orders",
    ],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_read_statements_are_allowed(sql: str, backend: Backend) -> None:
    """SELECT, WITH...SELECT, UNION, SHOW TABLES/COLUMNS, DESCRIBE and EXPLAIN pass the policy."""
    assert prepare(sql, backend, 100).sql


def test_comments_are_dropped_from_what_runs() -> None:
    """A comment cannot carry text to the server: the executed SQL is rendered without comments."""
    prepared = prepare("SELECT 1 -- */ ; DROP TABLE t", "mysql", 10)
    assert "DROP" not in prepared.sql
    assert "/*" not in prepared.sql


def test_mysql_syntax_is_transpiled_for_sqlite_and_postgres() -> None:
    """Backticks, LIMIT x,y, IFNULL and DATE_SUB(NOW(), INTERVAL ...) become valid SQLite/PostgreSQL."""
    sql = ("SELECT `status`, IFNULL(failure_reason, 'none') FROM `orders` "
           "WHERE created_at > DATE_SUB(NOW(), INTERVAL 1 HOUR) LIMIT 5, 10")
    lite = prepare(sql, "sqlite", 100).sql
    assert '"status"' in lite
    assert "LIMIT 10 OFFSET 5" in lite
    assert "DATETIME(DATETIME('now'), '-1 hours')" in lite
    pg = prepare(sql, "postgres", 100).sql
    assert "INTERVAL '1 HOUR'" in pg
    assert "COALESCE" in pg


def test_pinned_clock_replaces_now() -> None:
    """With a configured clock, NOW() is that instant on every backend (demo and replay runs)."""
    now = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
    for backend in BACKENDS:
        assert "2026-11-29 23:30:00" in prepare("SELECT NOW()", backend, 10, now).sql


def test_remembered_statements_follow_the_clock_and_the_arguments() -> None:
    """A Preparer (each SQL tool's) remembers what passed, but a NOW() statement is rendered for each clock, and
    every other argument (cap, backend, allowed schemas) keys its own entry; a refusal is raised every time."""
    first, later = datetime(2026, 11, 29, 23, 30, tzinfo=UTC), datetime(2026, 11, 30, 1, 0, tzinfo=UTC)
    prepare = Preparer()
    for backend in BACKENDS:
        assert "2026-11-29 23:30:00" in prepare("SELECT NOW() AS t", backend, 10, first).sql
        assert "2026-11-30 01:00:00" in prepare("SELECT NOW() AS t", backend, 10, later).sql
        assert "2026-11-29" not in prepare("SELECT NOW() AS t", backend, 10, None).sql
        assert prepare("SELECT id FROM t", backend, 10, first) is prepare("SELECT id FROM t", backend, 10, later)
    assert prepare("SELECT id FROM t", "sqlite", 10).sql.endswith("LIMIT 11")
    assert prepare("SELECT id FROM t", "sqlite", 20).sql.endswith("LIMIT 21")
    for _ in range(2):
        with pytest.raises(ToolFailure):
            prepare("DELETE FROM t", "sqlite", 10)


def test_row_cap_is_pushed_into_the_statement() -> None:
    """SELECTs without a LIMIT, or with a larger one, are limited to cap+1 rows on the server."""
    assert prepare("SELECT * FROM t", "sqlite", 50).sql.endswith("LIMIT 51")
    assert prepare("SELECT * FROM t LIMIT 1000", "sqlite", 50).sql.endswith("LIMIT 51")
    assert prepare("SELECT * FROM t LIMIT 3", "sqlite", 50).sql.endswith("LIMIT 3")
    assert prepare("SELECT 1 UNION SELECT 2", "sqlite", 50).sql.endswith("LIMIT 51")


def test_show_variants_unsupported_on_a_backend_say_so() -> None:
    """SHOW INDEX on SQLite is SQL_UNSUPPORTED with the supported forms named; SHOW PROCESSLIST is refused everywhere."""
    with pytest.raises(ToolFailure) as info:
        prepare("SHOW INDEX FROM orders", "sqlite", 10)
    assert info.value.code == "SQL_UNSUPPORTED"
    assert "SHOW TABLES" in info.value.message
    assert prepare("SHOW INDEX FROM orders", "mysql", 10).sql == "SHOW INDEX FROM orders"
    for backend in BACKENDS:
        with pytest.raises(ToolFailure) as refused:
            prepare("SHOW PROCESSLIST", backend, 10)
        assert refused.value.code == "SQL_REFUSED"
        assert "PROCESSLIST" in refused.value.message


SERVER_URLS = {
    "sqlite": "sqlite:///{path}",
    "mysql": "mysql://diag:pw@127.0.0.1:9/shop",
    "postgres": "postgresql://diag:pw@127.0.0.1:9/shop",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sql", REFUSED)
async def test_refused_statement_never_reaches_a_database(
    sql: str, backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC §3: when the policy refuses, nothing executes — no SQLite connection, no server engine, no statement.

    The read-only connection would also stop a write; this proves the refusal happens before any connection.
    """
    db = tmp_path / "x.db"
    sqlite3.connect(db).close()
    opened: list[str] = []

    def no_sqlite(*args: Any, **kwargs: Any) -> Any:
        opened.append("sqlite3.connect")
        raise AssertionError("a refused statement opened a SQLite connection")

    async def no_server(*args: Any, **kwargs: Any) -> Any:
        opened.append("server connection")
        raise AssertionError("a refused statement opened a server connection")

    monkeypatch.setattr(sqlite3, "connect", no_sqlite)  # the module sql_sqlite.py calls
    monkeypatch.setattr(sql_postgres, "connect_postgres", no_server)
    monkeypatch.setattr(sql_mysql, "connect_mysql", no_server)
    tool = SqlTool(SERVER_URLS[backend].format(path=db), timeout_s=1, row_cap=10)
    with pytest.raises(ToolFailure) as info:
        await tool.run(SqlArgs(sql=sql))
    assert info.value.code == "SQL_REFUSED"
    assert opened == []
    await tool.aclose()


def test_string_growing_functions_nest_at_most_two_deep() -> None:
    """REPLACE(REPLACE(col…)) is analysis; a third level of string-growing functions is refused (exponential growth)."""
    from core.tools.sql.policy import prepare

    assert prepare("SELECT REPLACE(REPLACE(service, 'a', 'b'), 'c', 'd') FROM deployments", "mysql", 10).sql
    with pytest.raises(ToolFailure, match="nested 3 deep"):
        prepare("SELECT CONCAT(REPLACE(REPLACE('x', 'x', 'xx'), 'x', 'xx'), 'y')", "mysql", 10)
