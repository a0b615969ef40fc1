"""System catalogs and schemas query_mysql refuses unless the operator lists them in DIAG_SQL_SCHEMAS.

Credentials (mysql.user, mysql.global_priv, pg_authid, pg_shadow), other sessions' SQL (processlists,
pg_stat_activity, performance_schema) and server internals are not diagnosis data. Table and column metadata is:
information_schema.tables/columns (and the few views next to them) and the pg_catalog relations a `\\d` needs.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from sqlglot import exp

SYSTEM_SCHEMAS = frozenset({"mysql", "performance_schema", "sys", "information_schema", "pg_catalog", "pg_toast"})
INFORMATION_SCHEMA_ALLOWED = frozenset({
    "tables", "columns", "schemata", "views", "key_column_usage", "table_constraints", "referential_constraints",
    "statistics",
})
PG_CATALOG_ALLOWED = frozenset({
    "pg_class", "pg_namespace", "pg_attribute", "pg_index", "pg_indexes", "pg_type", "pg_constraint",
    "pg_description", "pg_attrdef", "pg_tables", "pg_views", "pg_matviews", "pg_inherits", "pg_am",
    "pg_stat_user_tables", "pg_stat_user_indexes", "pg_statio_user_tables", "pg_statio_user_indexes",
})
# SQLite's schema table is metadata; pragma_* and the other eponymous virtual tables are table-valued functions.
SQLITE_ALLOWED = frozenset({"sqlite_master", "sqlite_schema"})
SQLITE_EPONYMOUS = frozenset({"dbstat", "json_each", "json_tree", "generate_series", "fts3tokenize", "carray",
                              "completion", "zipfile", "fsdir", "sqlite_dbpage", "sqlite_stmt", "sqlite_dbdata"})


def normalise_name(name: str) -> str:
    """Case- and compatibility-folded identifier, so look-alike spellings compare equal."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


def parse_schema_setting(value: str | Iterable[str] | None) -> frozenset[str]:
    """DIAG_SQL_SCHEMAS: comma-separated schema or schema.table names the operator allows beyond the defaults."""
    if value is None:
        return frozenset()
    parts = value.split(",") if isinstance(value, str) else list(value)
    return frozenset(normalise_name(p) for p in parts if p.strip())


def _qualifier(table: exp.Table, current_db: str | None) -> str | None:
    """The schema a table reference resolves in, as far as the text tells (None: the connection's default)."""
    db = normalise_name(table.db) if table.db else None
    if db:
        return db
    if normalise_name(table.name).startswith("pg_"):
        return "pg_catalog"  # PostgreSQL searches pg_catalog first whatever the search_path says
    return normalise_name(current_db) if current_db else None


def _sqlite_internal(name: str) -> bool:
    return (name.startswith("sqlite_") and name not in SQLITE_ALLOWED) or name.startswith("pragma_") or name in SQLITE_EPONYMOUS


def refused_table(table: exp.Table, allowed: frozenset[str], current_db: str | None) -> str | None:
    """The qualified name of a system relation this reference reads, or None when it may be read.

    The same names are refused on every backend: a MySQL catalog name means nothing on SQLite, and refusing it
    everywhere keeps the answer to one statement the same whichever database is configured.
    """
    name = normalise_name(table.name)
    schema = _qualifier(table, current_db)
    qualified = f"{schema}.{name}" if schema else name
    if qualified in allowed or (schema is not None and schema in allowed):
        return None
    if schema is None or schema not in SYSTEM_SCHEMAS:
        return qualified if _sqlite_internal(name) else None
    if schema == "information_schema" and name in INFORMATION_SCHEMA_ALLOWED:
        return None
    if schema == "pg_catalog" and name in PG_CATALOG_ALLOWED:
        return None
    return qualified


def refused_schema(schema: str | None, allowed: frozenset[str]) -> str | None:
    """A system schema named by SHOW TABLES FROM / SHOW COLUMNS FROM, or None when it may be listed."""
    if not schema:
        return None
    folded = normalise_name(schema)
    if folded in SYSTEM_SCHEMAS and folded not in allowed and folded != "information_schema":
        return folded
    return None
