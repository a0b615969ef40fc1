"""SHOW / DESCRIBE for query_mysql: the allowed kinds, and their rendering as catalog queries on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlglot import exp

from core.errors import ToolFailure
from core.tools.sql.allow import Backend

# SHOW kinds that list names or one named table's structure; everything else (PROCESSLIST, GRANTS, VARIABLES,
# STATUS, ENGINE ..., SLAVE/REPLICA ..., BINLOG ...) reads server state or other sessions and is refused.
SHOW_KINDS = frozenset({"TABLES", "COLUMNS", "DATABASES", "SCHEMAS", "INDEX", "INDEXES", "KEYS", "CREATE TABLE"})
_TABLE_KINDS = frozenset({"COLUMNS", "INDEX", "INDEXES", "KEYS", "CREATE TABLE"})


def name_of(node: object) -> str | None:
    """The plain name of an identifier-like node (None when absent)."""
    return str(node.name) if isinstance(node, exp.Expression) else None


def literal(text: str) -> str:
    """A single-quoted SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def show_kind(tree: exp.Show) -> str:
    """The SHOW kind in upper case, e.g. TABLES or CREATE TABLE."""
    return " ".join(str(tree.name).upper().split())


def needs_table(kind: str) -> bool:
    """Whether this SHOW kind is about one named table."""
    return kind in _TABLE_KINDS


def render_show(tree: exp.Show, backend: Backend) -> tuple[str, str]:
    """SQL for an allowed SHOW on SQLite/PostgreSQL (MySQL runs the regenerated SHOW itself) and its kind label."""
    kind = show_kind(tree)
    db = name_of(tree.args.get("db"))
    like = tree.args.get("like")
    like_sql = like.sql(dialect=backend) if isinstance(like, exp.Expression) else None
    if kind == "TABLES":
        if backend == "sqlite":
            sql = "SELECT name AS table_name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
            if like_sql:
                sql += f" AND name LIKE {like_sql}"
            return sql + " ORDER BY name", "show_tables"
        schema = literal(db) if db else "current_schema()"
        sql = f"SELECT table_name FROM information_schema.tables WHERE table_schema = {schema}"
        if like_sql:
            sql += f" AND table_name LIKE {like_sql}"
        return sql + " ORDER BY table_name", "show_tables"
    if kind == "COLUMNS":
        target = name_of(tree.args.get("target"))
        if not target:
            raise ToolFailure("SQL_SYNTAX", "SHOW COLUMNS needs a table: SHOW COLUMNS FROM t.")
        return describe_table(target, db, backend), "describe"
    if kind in ("DATABASES", "SCHEMAS") and backend == "postgres":
        return "SELECT schema_name AS database_name FROM information_schema.schemata ORDER BY schema_name", "show_databases"
    raise ToolFailure(
        "SQL_UNSUPPORTED",
        f"SHOW {kind} is not available on this {backend} backend; SHOW TABLES, SHOW COLUMNS FROM t and DESCRIBE t are.",
    )


def describe_table(table: str, schema: str | None, backend: Backend) -> str:
    """A catalog query listing a table's columns in MySQL's DESCRIBE shape (Field, Type, Null, Key/Default)."""
    if backend == "sqlite":
        return (
            'SELECT name AS "Field", type AS "Type", CASE WHEN "notnull" THEN \'NO\' ELSE \'YES\' END AS "Null", '
            'CASE WHEN pk > 0 THEN \'PRI\' ELSE \'\' END AS "Key", dflt_value AS "Default" '
            f"FROM pragma_table_info({literal(table)}) ORDER BY cid"
        )
    schema_sql = literal(schema) if schema else "current_schema()"
    return (
        'SELECT column_name AS "Field", data_type AS "Type", is_nullable AS "Null", column_default AS "Default" '
        f"FROM information_schema.columns WHERE table_name = {literal(table)} AND table_schema = {schema_sql} "
        "ORDER BY ordinal_position"
    )
