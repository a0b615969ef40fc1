"""query_mysql on SQLite: the demo database, read-only opening, timeout, row cap, value conversion, failures."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.errors import ToolFailure
from core.settings import DEMO_DATA
from core.tools.sql import sqlite as sqlite_backend
from core.tools.sql.args import SqlArgs
from core.tools.sql.policy import PreparedQuery
from core.tools.sql.tool import SqlTool, classify_url

DEMO_URL = f"sqlite:///{DEMO_DATA / 'shop.db'}"
DEMO_NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    path = tmp_path / "t.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price NUMERIC, blob BLOB, big BLOB, note TEXT)")
    conn.executemany(
        "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)",
        [(i, f"item{i}", i * 1.5, b"\x01\x02", b"x" * 100, None) for i in range(1, 31)],
    )
    conn.commit()
    conn.close()
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_demo_database_shows_failed_orders_after_the_deploy() -> None:
    """On the bundled shop.db with the pinned demo clock, FAILED orders dominate the last 30 minutes."""
    tool = SqlTool(DEMO_URL, timeout_s=5, row_cap=200, clock=lambda: DEMO_NOW)
    result = await tool.run(SqlArgs(sql=(
        "SELECT status, COUNT(*) AS n FROM orders WHERE created_at >= DATE_SUB(NOW(), INTERVAL 30 MINUTE) "
        "GROUP BY status ORDER BY n DESC")))
    assert result.columns == ["status", "n"]
    assert result.rows[0][0] == "FAILED"
    deploy = await tool.run(SqlArgs(sql="SELECT version, deployed_at FROM deployments WHERE service = 'order-service' "
                                        "ORDER BY deployed_at DESC LIMIT 1"))
    assert deploy.rows == [["4.18.0", "2026-11-29 22:55:00"]]
    await tool.aclose()


async def test_show_tables_and_describe_work_on_sqlite(db_path: Path) -> None:
    """SHOW TABLES lists tables; DESCRIBE/SHOW COLUMNS list columns with the primary key marked."""
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=5, row_cap=50)
    assert (await tool.run(SqlArgs(sql="SHOW TABLES"))).rows == [["items"]]
    described = await tool.run(SqlArgs(sql="DESCRIBE items"))
    assert described.columns[:2] == ["Field", "Type"]
    assert described.rows[0][0] == "id"
    assert described.rows[0][3] == "PRI"
    assert (await tool.run(SqlArgs(sql="SHOW COLUMNS FROM items"))).rows == described.rows


async def test_row_cap_limits_rows_and_is_reported(db_path: Path) -> None:
    """More rows than the cap: exactly cap rows, row_cap_hit in notes, total_count equals rows returned."""
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=5, row_cap=10)
    result = await tool.run(SqlArgs(sql="SELECT id FROM items ORDER BY id"))
    assert [r[0] for r in result.rows] == list(range(1, 11))
    assert result.total_count == 10
    assert result.notes["row_cap_hit"] is True
    small = await tool.run(SqlArgs(sql="SELECT id FROM items WHERE id <= 3"))
    assert small.notes["row_cap_hit"] is False
    assert small.total_count == 3


async def test_values_become_json_scalars(db_path: Path) -> None:
    """Blobs become hex (or a size marker when long), NULL stays null, numbers stay numbers."""
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=5, row_cap=10)
    result = await tool.run(SqlArgs(sql="SELECT id, price, blob, big, note FROM items WHERE id = 2"))
    assert result.rows == [[2, 3.0, "0102", "<binary 100 bytes>", None]]
    assert result.effective_arguments == {"sql": "SELECT id, price, blob, big, note FROM items WHERE id = 2"}


async def test_heavy_query_is_cut_off_by_the_timeout(db_path: Path) -> None:
    """An endless recursive CTE stops at the statement timeout with SQL_TIMEOUT."""
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=0.3, row_cap=10)
    with pytest.raises(ToolFailure) as info:
        await tool.run(SqlArgs(sql="WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT COUNT(*) FROM c"))
    assert info.value.code == "SQL_TIMEOUT"


async def test_database_file_is_opened_read_only_even_past_the_policy(db_path: Path) -> None:
    """Defence in depth: a write that somehow passed the policy is refused by the read-only connection."""
    before = _digest(db_path)
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=5, row_cap=10)
    url = classify_url(f"sqlite:///{db_path}")[1]
    with pytest.raises(ToolFailure) as info:
        tool._run_sqlite(url, PreparedQuery(sql="DELETE FROM items", kind="select", row_limited=False))
    assert info.value.code == "SQL_REFUSED"
    assert _digest(db_path) == before


async def test_hostile_statements_change_nothing(db_path: Path) -> None:
    """Writes, DDL and multi-statements are refused and the file's bytes are unchanged."""
    before = _digest(db_path)
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=1, row_cap=10)
    for sql in ["DELETE FROM items", "DROP TABLE items", "SELECT 1; DELETE FROM items", "UPDATE items SET name = 'x'",
                "CREATE TABLE z (a INT)", "INSERT INTO items (id) VALUES (999)"]:
        with pytest.raises(ToolFailure):
            await tool.run(SqlArgs(sql=sql))
    assert _digest(db_path) == before


async def test_unknown_table_is_a_clear_sql_error(db_path: Path) -> None:
    """A query on a missing table fails with SQL_ERROR naming the table."""
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=1, row_cap=10)
    with pytest.raises(ToolFailure) as info:
        await tool.run(SqlArgs(sql="SELECT * FROM nope"))
    assert info.value.code == "SQL_ERROR"
    assert "nope" in info.value.message


async def test_missing_file_and_unsupported_urls_are_backend_failures(tmp_path: Path) -> None:
    """A missing SQLite file, an unknown scheme or a malformed URL fail with BACKEND_UNAVAILABLE."""
    for url in [f"sqlite:///{tmp_path / 'absent.db'}", "oracle://u:p@h/db", "::not a url::"]:
        with pytest.raises(ToolFailure) as info:
            await SqlTool(url, timeout_s=1, row_cap=10).run(SqlArgs(sql="SELECT 1"))
        assert info.value.code == "BACKEND_UNAVAILABLE"
        assert "p@h" not in info.value.message


def test_urls_with_or_without_driver_pick_our_drivers() -> None:
    """mysql://, mariadb:// and postgresql:// URLs map to aiomysql and asyncpg; sqlite stays sqlite."""
    assert classify_url("mysql://root@h/db")[1].drivername == "mysql+aiomysql"
    assert classify_url("mariadb+pymysql://root@h/db")[1].drivername == "mysql+aiomysql"
    assert classify_url("postgresql://u@h/db")[1].drivername == "postgresql+asyncpg"
    assert classify_url("postgres://u@h/db")[0] == "postgres"
    assert classify_url("sqlite+aiosqlite:///x.db")[0] == "sqlite"


async def test_a_kept_connection_serves_the_next_call_and_holds_no_lock(db_path: Path) -> None:
    """A call that finished cleanly leaves its connection for the next call on the unchanged file; the statement is
    closed first, so a writer is not blocked by the idle connection even when rows were left unread."""
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=5, row_cap=3)
    assert len((await tool.run(SqlArgs(sql="SELECT id FROM items"))).rows) == 3  # 27 rows left unread
    key = sqlite_backend.file_key(classify_url(f"sqlite:///{db_path}")[1])
    assert key is not None
    writer = sqlite3.connect(db_path, timeout=0)
    writer.execute("BEGIN EXCLUSIVE")  # would raise "database is locked" if the kept connection held a read lock
    writer.rollback()
    writer.close()
    first = tool._connections.take(key)
    assert first is not None
    tool._connections.give(key, first)
    await tool.run(SqlArgs(sql="SELECT id FROM items"))
    assert tool._connections.take(key) is first


async def test_a_changed_or_replaced_file_is_read_afresh(db_path: Path, tmp_path: Path) -> None:
    """Rows written after a call, and a file replaced by another at the same path, are what the next call sees."""
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=5, row_cap=100)
    assert (await tool.run(SqlArgs(sql="SELECT COUNT(*) FROM items"))).rows == [[30]]
    conn = sqlite3.connect(db_path)
    conn.execute("DELETE FROM items WHERE id > 10")
    conn.commit()
    conn.close()
    assert (await tool.run(SqlArgs(sql="SELECT COUNT(*) FROM items"))).rows == [[10]]
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO items VALUES (1)")
    conn.commit()
    conn.close()
    other.replace(db_path)  # a new inode at the same path
    assert (await tool.run(SqlArgs(sql="SELECT COUNT(*) FROM items"))).rows == [[1]]


async def test_a_failed_call_does_not_keep_its_connection(db_path: Path) -> None:
    """A statement stopped by the timeout or refused by SQLite closes its connection: nothing of it is kept."""
    url = f"sqlite:///{db_path}"
    key = sqlite_backend.file_key(classify_url(url)[1])
    assert key is not None
    tool = SqlTool(url, timeout_s=0.2, row_cap=10)
    with pytest.raises(ToolFailure):
        await tool.run(SqlArgs(sql="WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT COUNT(*) FROM c"))
    with pytest.raises(ToolFailure):
        await tool.run(SqlArgs(sql="SELECT * FROM nope"))
    assert tool._connections.take(key) is None


async def test_closing_the_tool_closes_its_kept_connections(db_path: Path) -> None:
    tool = SqlTool(f"sqlite:///{db_path}", timeout_s=5, row_cap=3)
    await tool.run(SqlArgs(sql="SELECT id FROM items"))
    key = sqlite_backend.file_key(classify_url(f"sqlite:///{db_path}")[1])
    assert key is not None
    kept = tool._connections.take(key)
    assert kept is not None
    tool._connections.give(key, kept)
    await tool.aclose()
    assert tool._connections.take(key) is None
    with pytest.raises(sqlite3.ProgrammingError):
        kept.execute("SELECT 1")
