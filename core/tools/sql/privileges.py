"""Least privilege for query_mysql: detect an SQL account that could write, change schema or administer the server.

The policy and the read-only session are two fences; the third is an account that cannot do harm at all. The SQL
tool checks this on its first connection and refuses a privileged account unless DIAG_SQL_ALLOW_PRIVILEGED=1;
`sql_privilege_problems(url)` gives the same verdict to `diagbot check`. docs/sql-readonly-role.md says how to
create a read-only account.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from core.errors import ToolFailure
from core.tools.sql.server import classify_url

if TYPE_CHECKING:
    import aiomysql
    import asyncpg

DOC = "docs/sql-readonly-role.md"
# Privileges a read-only MySQL/MariaDB account may hold; anything else writes, changes schema or administers.
MYSQL_READ_PRIVILEGES = frozenset({"SELECT", "SHOW VIEW", "USAGE", "SHOW DATABASES", "PROCESS", "REPLICATION CLIENT",
                                   "BINLOG MONITOR", "SLAVE MONITOR", "REPLICA MONITOR"})
_GRANT = re.compile(r"^GRANT\s+(?P<privs>.+?)\s+ON\s+(?P<on>.+?)\s+TO\s", re.IGNORECASE | re.DOTALL)
_COLUMNS = re.compile(r"\([^)]*\)")
PG_ROLE_ATTRIBUTES = (
    ("rolsuper", "is a superuser"), ("rolcreaterole", "can create roles"), ("rolcreatedb", "can create databases"),
    ("rolreplication", "is a replication role"), ("rolbypassrls", "bypasses row-level security"),
)
PG_DANGEROUS_ROLES = ("pg_write_all_data", "pg_signal_backend", "pg_write_server_files", "pg_read_server_files",
                      "pg_execute_server_program", "pg_checkpoint")
_PG_WRITABLE_TABLE = """
SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'm', 'v', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%' AND (has_table_privilege(c.oid, 'INSERT') OR has_table_privilege(c.oid, 'UPDATE')
  OR has_table_privilege(c.oid, 'DELETE') OR has_table_privilege(c.oid, 'TRUNCATE')) LIMIT 1"""
_PG_CREATE_SCHEMA = """
SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'
  AND has_schema_privilege(oid, 'CREATE') LIMIT 1"""


def refusal(user: str, problems: list[str]) -> ToolFailure:
    """The failure the SQL tool gives for a privileged account, naming why."""
    why = "; ".join(problems[:3])
    return ToolFailure(
        "SQL_PRIVILEGED",
        f"Refused: the SQL account '{user[:60]}' {why}. query_mysql needs a read-only account ({DOC}); "
        "an operator who accepts the risk sets DIAG_SQL_ALLOW_PRIVILEGED=1.",
    )


async def postgres_problems(conn: asyncpg.Connection) -> list[str]:
    """Why this PostgreSQL session's role is more than read-only (empty when it is read-only)."""
    problems: list[str] = []
    attributes = await conn.fetchrow(
        "SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = current_user")
    if attributes is not None:
        problems += [text for column, text in PG_ROLE_ATTRIBUTES if attributes[column]]
    if problems and attributes is not None and attributes["rolsuper"]:
        return problems
    granted = await conn.fetch(
        "SELECT rolname FROM pg_roles WHERE rolname = ANY($1::text[]) AND pg_has_role(current_user, oid, 'USAGE')",
        list(PG_DANGEROUS_ROLES))
    problems += [f"is a member of {row['rolname']}" for row in granted]
    table = await conn.fetchval(_PG_WRITABLE_TABLE)
    if table:
        problems.append(f"can write to tables (e.g. {table})")
    schema = await conn.fetchval(_PG_CREATE_SCHEMA)
    if schema:
        problems.append(f"can create objects in schema {schema}")
    if await conn.fetchval("SELECT has_database_privilege(current_database(), 'CREATE')"):
        problems.append("can create schemas in the database")
    return problems


def mysql_grant_problems(grants: list[str]) -> list[str]:
    """Why these SHOW GRANTS lines give more than read-only access (empty when they do not)."""
    problems: list[str] = []
    for line in grants:
        match = _GRANT.match(line.strip())
        if match is None:
            continue
        privileges = {" ".join(p.split()).upper() for p in _COLUMNS.sub("", match["privs"]).split(",")}
        extra = sorted(p for p in privileges if p not in MYSQL_READ_PRIVILEGES)
        if extra:
            where = match["on"].replace("`", "").strip()
            problems.append(f"holds {', '.join(extra)[:80]} on {where[:60]}")
        if "WITH GRANT OPTION" in line.upper():
            problems.append("can grant privileges (WITH GRANT OPTION)")
    return list(dict.fromkeys(problems))


async def mysql_problems(conn: aiomysql.Connection) -> list[str]:
    """Why this MySQL/MariaDB session's account (and active role) is more than read-only."""
    lines: list[str] = []
    async with conn.cursor() as cur:
        await cur.execute("SHOW GRANTS")
        lines += [str(row[0]) for row in await cur.fetchall()]
        try:
            await cur.execute("SELECT CURRENT_ROLE()")
            role = (await cur.fetchone() or [None])[0]
        except Exception:  # MySQL < 8 has no CURRENT_ROLE(); the account's own grants are what counts
            role = None
        if role and str(role).upper() != "NONE":
            await cur.execute("SHOW GRANTS FOR CURRENT_ROLE")
            lines += [str(row[0]) for row in await cur.fetchall()]
    return mysql_grant_problems(lines)


async def sql_privilege_problems(url: str, timeout_s: float = 5.0) -> list[str]:
    """For `diagbot check`: why the account in DIAG_SQL_URL is more than read-only (empty: least privilege holds).

    SQLite files are opened read-only by the tool, so they never have a problem. Raises ToolFailure
    (BACKEND_UNAVAILABLE) when the database cannot be reached.
    """
    backend, parsed = classify_url(url)
    if backend == "sqlite":
        return []
    if backend == "postgres":
        from core.tools.sql.postgres import connect_postgres

        pg = await connect_postgres(parsed, timeout_s)
        try:
            return await postgres_problems(pg)
        finally:
            await pg.close(timeout=2)
    from core.tools.sql.mysql import connect_mysql

    my = await connect_mysql(parsed, timeout_s)
    try:
        return await mysql_problems(my)
    finally:
        my.close()
