"""Read-only policy for query_mysql: parse the MySQL-dialect text with sqlglot, refuse anything but one read
statement, and render the checked tree in the backend's dialect (SHOW/DESCRIBE translated per backend).

What runs is always generated from the checked syntax tree, never the user's text, so comments or syntax the
parser ignored cannot smuggle a second statement to the server.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, SqlglotError, TokenError

from core.errors import ToolFailure

Backend = Literal["sqlite", "postgres", "mysql"]

# sqlglot logs parser fallbacks with the statement text at WARNING; user SQL must not reach the logs.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

# Functions that sleep, read or write files, take locks, touch other sessions or change server state.
DENIED_FUNCTIONS = frozenset(
    {
        "SLEEP", "BENCHMARK", "LOAD_FILE", "GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS", "IS_FREE_LOCK",
        "IS_USED_LOCK", "MASTER_POS_WAIT", "SOURCE_POS_WAIT", "WAIT_FOR_EXECUTED_GTID_SET", "SYS_EXEC", "SYS_EVAL",
        "PG_SLEEP", "PG_SLEEP_FOR", "PG_SLEEP_UNTIL", "PG_READ_FILE", "PG_READ_BINARY_FILE", "PG_LS_DIR",
        "PG_STAT_FILE", "PG_LS_LOGDIR", "PG_LS_WALDIR", "PG_LS_TMPDIR", "PG_LS_ARCHIVE_STATUSDIR", "LO_IMPORT",
        "LO_EXPORT", "LO_GET", "LO_PUT", "LO_FROM_BYTEA", "LO_CREATE", "LO_UNLINK", "DBLINK", "DBLINK_EXEC",
        "DBLINK_CONNECT", "PG_TERMINATE_BACKEND", "PG_CANCEL_BACKEND", "PG_RELOAD_CONF", "PG_ROTATE_LOGFILE",
        "SET_CONFIG", "PG_ADVISORY_LOCK", "PG_ADVISORY_XACT_LOCK", "PG_ADVISORY_LOCK_SHARED", "PG_TRY_ADVISORY_LOCK",
        "PG_ADVISORY_UNLOCK", "PG_ADVISORY_UNLOCK_ALL", "NEXTVAL", "SETVAL", "PG_NOTIFY", "QUERY_TO_XML",
        "PG_SWITCH_WAL", "PG_CREATE_RESTORE_POINT", "PG_PROMOTE", "TXID_CURRENT", "LOAD_EXTENSION",
        "READFILE", "WRITEFILE", "EDIT", "FTS3_TOKENIZER",
    }
)
# Syntax nodes that write, lock, change session state or control transactions.
DENIED_NODES: tuple[type[exp.Expression], ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command, exp.Set,
    exp.Transaction, exp.Commit, exp.Rollback, exp.Lock, exp.Into, exp.LoadData, exp.Analyze, exp.Use,
    exp.Copy, exp.TruncateTable, exp.Grant, exp.Pragma,
)
ALLOWED_ROOTS: tuple[type[exp.Expression], ...] = (exp.Select, exp.SetOperation, exp.Show, exp.Describe)
NOW_FUNCTIONS = frozenset({"NOW", "SYSDATE", "LOCALTIME", "LOCALTIMESTAMP", "UTC_TIMESTAMP", "CURRENT_TIMESTAMP"})
_INTO_FILE = re.compile(r"\binto\s+(out|dump)file\b", re.IGNORECASE)
_UNITS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 7 * 86400}
_SQLITE_UNITS = {"SECOND": "seconds", "MINUTE": "minutes", "HOUR": "hours", "DAY": "days", "MONTH": "months", "YEAR": "years"}


@dataclass(frozen=True)
class PreparedQuery:
    """A statement that passed the policy, rendered for one backend."""

    sql: str
    kind: str
    row_limited: bool


def refuse(message: str) -> ToolFailure:
    """A SQL_REFUSED failure with a plain reason."""
    return ToolFailure("SQL_REFUSED", f"Refused: {message} query_mysql runs one read-only SELECT/SHOW/DESCRIBE/EXPLAIN.")


def _parse_one(sql: str) -> exp.Expression:
    if "/*!" in sql:
        raise refuse("MySQL executable comments (/*! ... */) are not allowed.")
    if _INTO_FILE.search(sql):
        raise refuse("SELECT ... INTO OUTFILE/DUMPFILE writes files.")
    try:
        statements = [s for s in sqlglot.parse(sql, read="mysql", error_level=ErrorLevel.RAISE) if s is not None]
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else "could not parse"
        raise ToolFailure("SQL_SYNTAX", f"SQL syntax error (MySQL dialect): {first[:200]}") from exc
    if not statements:
        raise ToolFailure("SQL_SYNTAX", "SQL syntax error: no statement found.")
    if len(statements) > 1:
        raise refuse(f"{len(statements)} statements were given; exactly one is allowed.")
    return cast(exp.Expression, statements[0])


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).upper()
    return node.sql_name().upper()


def check(tree: exp.Expression) -> None:
    """Raise SQL_REFUSED unless the tree is one read-only statement."""
    if not isinstance(tree, ALLOWED_ROOTS):
        kind = tree.key.upper() if tree.key else type(tree).__name__
        raise refuse(f"{kind} statements are not allowed.")
    if isinstance(tree, exp.Describe):
        if str(tree.args.get("style") or "").upper() == "ANALYZE":
            raise refuse("EXPLAIN ANALYZE executes the statement; use EXPLAIN.")
        inner = tree.this
        if not isinstance(inner, (exp.Table, exp.Select, exp.SetOperation)):
            raise refuse("EXPLAIN is allowed only for SELECT statements.")
    for node in tree.walk():
        if isinstance(node, DENIED_NODES):
            if isinstance(node, exp.Lock):
                raise refuse("locking reads (FOR UPDATE / LOCK IN SHARE MODE) are not allowed.")
            if isinstance(node, exp.Into):
                raise refuse("SELECT ... INTO is not allowed.")
            raise refuse(f"{node.key.upper()} is not allowed.")
        if isinstance(node, exp.Func):
            name = _function_name(node)
            if name in DENIED_FUNCTIONS:
                raise refuse(f"the function {name} is not allowed.")


def _name(node: exp.Expression | None) -> str | None:
    return None if node is None else str(node.name)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _show(tree: exp.Show, backend: Backend) -> tuple[str, str]:
    what = str(tree.name).upper()
    db = _name(tree.args.get("db"))
    like = tree.args.get("like")
    like_sql = like.sql(dialect=backend) if isinstance(like, exp.Expression) else None
    if what == "TABLES":
        if backend == "sqlite":
            sql = "SELECT name AS table_name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
            if like_sql:
                sql += f" AND name LIKE {like_sql}"
            return sql + " ORDER BY name", "show_tables"
        schema = _literal(db) if db else "current_schema()"
        sql = f"SELECT table_name FROM information_schema.tables WHERE table_schema = {schema}"
        if like_sql:
            sql += f" AND table_name LIKE {like_sql}"
        return sql + " ORDER BY table_name", "show_tables"
    if what == "COLUMNS":
        target = _name(tree.args.get("target"))
        if not target:
            raise ToolFailure("SQL_SYNTAX", "SHOW COLUMNS needs a table: SHOW COLUMNS FROM t.")
        return _describe_table(target, db, backend), "describe"
    if what == "DATABASES" and backend == "postgres":
        return "SELECT schema_name AS database_name FROM information_schema.schemata ORDER BY schema_name", "show_databases"
    raise ToolFailure(
        "SQL_UNSUPPORTED",
        f"SHOW {what} is not available on this {backend} backend; SHOW TABLES, SHOW COLUMNS FROM t and DESCRIBE t are.",
    )


def _describe_table(table: str, schema: str | None, backend: Backend) -> str:
    if backend == "sqlite":
        return (
            'SELECT name AS "Field", type AS "Type", CASE WHEN "notnull" THEN \'NO\' ELSE \'YES\' END AS "Null", '
            'CASE WHEN pk > 0 THEN \'PRI\' ELSE \'\' END AS "Key", dflt_value AS "Default" '
            f"FROM pragma_table_info({_literal(table)}) ORDER BY cid"
        )
    schema_sql = _literal(schema) if schema else "current_schema()"
    return (
        'SELECT column_name AS "Field", data_type AS "Type", is_nullable AS "Null", column_default AS "Default" '
        f"FROM information_schema.columns WHERE table_name = {_literal(table)} AND table_schema = {schema_sql} "
        "ORDER BY ordinal_position"
    )


def _interval_seconds_modifier(amount: exp.Expression, unit: str, sign: int) -> str | None:
    if not isinstance(amount, exp.Literal):
        return None
    try:
        value = float(amount.name) * sign
    except ValueError:
        return None
    unit = unit.upper().rstrip("S")
    if unit == "WEEK":
        value, unit = value * 7, "DAY"
    if unit not in _SQLITE_UNITS:
        return None
    shown = int(value) if value == int(value) else value
    return f"{'+' if shown >= 0 else ''}{shown} {_SQLITE_UNITS[unit]}"


def _sqlite_datetime(this: exp.Expression, modifier: str) -> exp.Expression:
    return exp.Anonymous(this="DATETIME", expressions=[this, exp.Literal.string(modifier)])


def _unit_of(node: exp.Expression) -> str:
    unit = node.args.get("unit")
    return str(unit.name if isinstance(unit, exp.Expression) else unit or "DAY").upper()


def _now_literal(now: datetime, backend: Backend) -> exp.Expression:
    text = exp.Literal.string(now.strftime("%Y-%m-%d %H:%M:%S"))
    return text if backend == "sqlite" else exp.cast(text, exp.DataType.Type.TIMESTAMP)


def _is_now(node: exp.Expression) -> bool:
    return isinstance(node, (exp.CurrentTimestamp, exp.UtcTimestamp)) or (
        isinstance(node, exp.Anonymous) and str(node.name).upper() in NOW_FUNCTIONS
    )


def _rewrite_now(tree: exp.Expression, backend: Backend, now: datetime | None) -> exp.Expression:
    """Render NOW()-like calls for the backend, or pin them to the configured clock."""

    def transform(node: exp.Expression) -> exp.Expression:
        if not _is_now(node):
            return node
        if now is not None:
            return _now_literal(now, backend)
        if backend == "sqlite":
            return exp.Anonymous(this="DATETIME", expressions=[exp.Literal.string("now")])
        return exp.CurrentTimestamp() if isinstance(node, exp.Anonymous) else node

    return tree.transform(transform, copy=True)


def _rewrite_dates(tree: exp.Expression, backend: Backend) -> exp.Expression:
    """Date arithmetic sqlglot does not transpile well: DATE_SUB/DATE_ADD/+-INTERVAL on SQLite, TIMESTAMPDIFF."""

    def transform(node: exp.Expression) -> exp.Expression:
        if backend == "sqlite" and isinstance(node, (exp.DateSub, exp.DateAdd)):
            sign = -1 if isinstance(node, exp.DateSub) else 1
            modifier = _interval_seconds_modifier(node.expression, _unit_of(node), sign)
            if modifier:
                return _sqlite_datetime(node.this, modifier)
        if backend == "sqlite" and isinstance(node, (exp.Sub, exp.Add)) and isinstance(node.expression, exp.Interval):
            sign = -1 if isinstance(node, exp.Sub) else 1
            modifier = _interval_seconds_modifier(node.expression.this, _unit_of(node.expression), sign)
            if modifier:
                return _sqlite_datetime(node.this, modifier)
        if isinstance(node, exp.TimestampDiff) and backend != "mysql":
            seconds = _UNITS.get(_unit_of(node))
            if seconds:
                end, begin = node.this.sql(backend), node.expression.sql(backend)
                if backend == "sqlite":
                    diff = f"(JULIANDAY({end}) - JULIANDAY({begin})) * 86400"
                else:
                    diff = f"EXTRACT(EPOCH FROM ({end} - {begin}))"
                return cast(exp.Expression, sqlglot.parse_one(f"CAST(({diff}) / {seconds} AS INTEGER)", read=backend))
        return node

    return tree.transform(transform, copy=True)


def _cap_rows(tree: exp.Expression, cap: int) -> tuple[exp.Expression, bool]:
    """Make the server stop after cap+1 rows when the statement allows a LIMIT."""
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        return tree, False
    limit = tree.args.get("limit")
    if limit is None:
        if isinstance(tree, exp.Select):
            return tree.limit(cap + 1, copy=True), True
        return exp.select("*").from_(tree.subquery("capped_q")).limit(cap + 1), True
    amount = limit.expression if isinstance(limit, exp.Limit) else None
    if isinstance(amount, exp.Literal) and amount.is_int and int(amount.name) > cap + 1:
        capped = tree.copy()
        capped.args["limit"].set("expression", exp.Literal.number(cap + 1))
        return capped, True
    return tree, False


def prepare(sql: str, backend: Backend, row_cap: int, now: datetime | None = None) -> PreparedQuery:
    """Check one MySQL-dialect statement and render it for the backend; raises ToolFailure when refused."""
    tree = _parse_one(sql)
    check(tree)
    if isinstance(tree, exp.Show):
        if backend == "mysql":
            return PreparedQuery(sql=tree.sql(dialect="mysql", comments=False), kind="show", row_limited=False)
        rendered, kind = _show(tree, backend)
        return PreparedQuery(sql=rendered, kind=kind, row_limited=False)
    if isinstance(tree, exp.Describe) and isinstance(tree.this, exp.Table):
        if backend == "mysql":
            return PreparedQuery(sql=tree.sql(dialect="mysql", comments=False), kind="describe", row_limited=False)
        rendered = _describe_table(str(tree.this.name), tree.this.db or None, backend)
        return PreparedQuery(sql=rendered, kind="describe", row_limited=False)
    tree = _rewrite_dates(_rewrite_now(tree, backend, now), backend)
    if isinstance(tree, exp.Describe):
        inner = tree.this.sql(dialect=backend, unsupported_level=ErrorLevel.RAISE, comments=False)
        prefix = {"sqlite": "EXPLAIN QUERY PLAN", "postgres": "EXPLAIN", "mysql": "EXPLAIN"}[backend]
        return PreparedQuery(sql=f"{prefix} {inner}", kind="explain", row_limited=False)
    tree, limited = _cap_rows(tree, row_cap)
    try:
        rendered = tree.sql(dialect=backend, unsupported_level=ErrorLevel.RAISE, comments=False)
    except SqlglotError as exc:
        raise ToolFailure("SQL_UNSUPPORTED", f"This MySQL syntax cannot run on the {backend} backend: {str(exc)[:200]}") from exc
    return PreparedQuery(sql=rendered, kind="select", row_limited=limited)
