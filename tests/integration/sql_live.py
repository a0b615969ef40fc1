"""Live SQL test databases for query_mysql: a uniquely named database per test on SQLite, MariaDB and PostgreSQL,
seeded with the same orders/customers data, with a canary session and a snapshot of everything a hostile
statement could change (rows, objects, slots, locks, roles, statistics, settings)."""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomysql
import asyncpg

ORDERS = 200
_STATUSES = ("PAID", "FAILED", "PENDING", "PAID", "REFUNDED")
_REASONS = ("gateway timeout", "card declined", None, "db pool timeout", None)
_TIERS = ("gold", "silver", "bronze")


def seed_statements(ts_type: str) -> list[str]:
    """DDL and rows every backend shares (created_at between 2026-11-29 20:00 and 23:19)."""
    customers = ", ".join(f"({i}, 'customer{i}', 'c{i}@example.com', '{_TIERS[i % 3]}')" for i in range(1, 21))
    orders = []
    for i in range(1, ORDERS + 1):
        reason = _REASONS[i % 5]
        minute = i
        ts = f"2026-11-29 {20 + minute // 60:02d}:{minute % 60:02d}:00"
        orders.append(f"({i}, {1 + i % 20}, '{_STATUSES[i % 5]}', {i * 1.25:.2f}, "
                      f"{'NULL' if reason is None else repr(reason)}, CAST('{ts}' AS {ts_type}))")
    return [
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40), email VARCHAR(80), tier VARCHAR(10))",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, status VARCHAR(12), amount DECIMAL(10, 2), "
        f"failure_reason VARCHAR(40), created_at {ts_type})",
        f"INSERT INTO customers VALUES {customers}",
        f"INSERT INTO orders VALUES {', '.join(orders)}",
    ]


@dataclass
class Live:
    """One live database: the tool's URL, a canary session id, and a snapshot function."""

    name: str
    url: str
    canary_pid: int
    tmp: Path
    conn: Any = None
    canary: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


# ---- SQLite ------------------------------------------------------------------------------------------------------

@asynccontextmanager
async def sqlite_live(tmp_path: Path) -> AsyncIterator[Live]:
    path = tmp_path / "shop.db"
    conn = sqlite3.connect(path)
    for sql in seed_statements("TEXT"):
        conn.execute(sql)
    conn.commit()
    conn.close()
    yield Live("sqlite", f"sqlite:///{path}", 1, tmp_path, extra={"path": path})


def sqlite_snapshot(live: Live) -> dict[str, Any]:
    path: Path = live.extra["path"]
    return {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "files": sorted(p.name for p in live.tmp.iterdir())}


# ---- MariaDB -----------------------------------------------------------------------------------------------------

@asynccontextmanager
async def mariadb_live(tmp_path: Path, host: str = "127.0.0.1", port: int = 3306, user: str = "root") -> AsyncIterator[Live]:
    db = f"diag_sqlsec_{uuid.uuid4().hex[:10]}"
    admin = await aiomysql.connect(host=host, port=port, user=user, autocommit=True)
    async with admin.cursor() as cur:
        await cur.execute(f"CREATE DATABASE {db}")
        await cur.execute(f"USE {db}")
        for sql in seed_statements("DATETIME"):
            await cur.execute(sql)
    canary = await aiomysql.connect(host=host, port=port, user=user, db=db, autocommit=True)
    async with canary.cursor() as cur:
        await cur.execute("SELECT CONNECTION_ID()")
        pid = int((await cur.fetchone())[0])
    try:
        yield Live("mariadb", f"mysql://{user}@{host}:{port}/{db}", pid, tmp_path, conn=admin, canary=canary,
                   extra={"db": db})
    finally:
        canary.close()
        async with admin.cursor() as cur:
            await cur.execute(f"DROP DATABASE IF EXISTS {db}")
        admin.close()


async def _mysql_rows(conn: aiomysql.Connection, sql: str) -> list[tuple[Any, ...]]:
    async with conn.cursor() as cur:
        await cur.execute(sql)
        return [tuple(r) for r in await cur.fetchall()]


async def mariadb_snapshot(live: Live) -> dict[str, Any]:
    conn, db = live.conn, live.extra["db"]
    return {
        "checksum": await _mysql_rows(conn, f"CHECKSUM TABLE {db}.orders, {db}.customers EXTENDED"),
        "objects": await _mysql_rows(conn, "SELECT table_name, table_type FROM information_schema.tables "
                                           f"WHERE table_schema = '{db}' ORDER BY table_name"),
        "routines": await _mysql_rows(
            conn, f"SELECT routine_name FROM information_schema.routines WHERE routine_schema = '{db}'"),
        "triggers": await _mysql_rows(
            conn, f"SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = '{db}'"),
        "events": await _mysql_rows(conn, f"SELECT event_name FROM information_schema.events WHERE event_schema = '{db}'"),
        "evil": await _mysql_rows(conn, "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'diag_evil%' "
                                        "UNION ALL SELECT user FROM mysql.user WHERE user LIKE 'diag_evil%'"),
        "globals": await _mysql_rows(conn, "SELECT @@global.max_connections, @@global.general_log, @@global.read_only, "
                                           "@@global.max_statement_time, IS_USED_LOCK('diag_evil')"),
    }


async def mariadb_canary_alive(live: Live) -> bool:
    try:
        return await _mysql_rows(live.canary, "SELECT CONNECTION_ID()") == [(live.canary_pid,)]
    except Exception:
        return False


# ---- PostgreSQL --------------------------------------------------------------------------------------------------

@asynccontextmanager
async def postgres_live(tmp_path: Path, host: str = "127.0.0.1", port: int = 5432, user: str = "postgres") -> AsyncIterator[Live]:
    db = f"diag_sqlsec_{uuid.uuid4().hex[:10]}"
    root = await asyncpg.connect(host=host, port=port, user=user, database="test")
    await root.execute(f"CREATE DATABASE {db}")
    admin = await asyncpg.connect(host=host, port=port, user=user, database=db)
    for sql in seed_statements("TIMESTAMP"):
        await admin.execute(sql)
    canary = await asyncpg.connect(host=host, port=port, user=user, database=db)
    pid = int(await canary.fetchval("SELECT pg_backend_pid()"))
    try:
        yield Live("postgres", f"postgresql://{user}@{host}:{port}/{db}", pid, tmp_path, conn=admin, canary=canary,
                   extra={"db": db})
    finally:
        await canary.close()
        await admin.close()
        await root.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        await root.close()


async def postgres_snapshot(live: Live) -> dict[str, Any]:
    conn = live.conn
    rows = await conn.fetchrow(
        "SELECT (SELECT count(*) || ':' || md5(string_agg(o::text, ',' ORDER BY id)) FROM orders o) AS orders, "
        "(SELECT count(*) || ':' || md5(string_agg(c::text, ',' ORDER BY id)) FROM customers c) AS customers")
    return {
        "rows": dict(rows),
        "objects": [tuple(r) for r in await conn.fetch(
            "SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%' ORDER BY 1, 2")],
        "schemas": [r[0] for r in await conn.fetch("SELECT nspname FROM pg_namespace ORDER BY 1")],
        "slots": [r[0] for r in await conn.fetch("SELECT slot_name FROM pg_replication_slots ORDER BY 1")],
        "evil": [r[0] for r in await conn.fetch("SELECT rolname FROM pg_roles WHERE rolname LIKE 'diag_evil%' "
                                                 "UNION ALL SELECT datname FROM pg_database WHERE datname LIKE 'diag_evil%'")],
        "largeobjects": await conn.fetchval("SELECT count(*) FROM pg_largeobject_metadata"),
        "prepared": [r[0] for r in await conn.fetch("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'diag_evil%'")],
        "stats_reset": [tuple(r) for r in await conn.fetch(
            "SELECT (SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()), "
            "(SELECT stats_reset FROM pg_stat_bgwriter)")],
        "extensions": [r[0] for r in await conn.fetch("SELECT extname FROM pg_extension ORDER BY 1")],
        "advisory": await conn.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
                                        "(SELECT oid FROM pg_database WHERE datname = current_database())"),
        "seq_scans": await conn.fetchval("SELECT seq_scan IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'orders'"),
    }


async def postgres_canary_alive(live: Live) -> bool:
    try:
        return int(await live.canary.fetchval("SELECT pg_backend_pid()")) == live.canary_pid
    except Exception:
        return False
