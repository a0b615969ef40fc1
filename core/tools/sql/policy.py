"""Read-only policy for query_mysql: parse the MySQL-dialect text with sqlglot and accept it only if every node of
its typed tree is on the allow-lists (core/tools/sql/allow.py) and it reads no system catalog
(core/tools/sql/catalogs.py); then render the checked tree in the backend's dialect with the row cap as its LIMIT.

What runs is always generated from the checked syntax tree, never the user's text, so comments or syntax the
parser ignored cannot smuggle a second statement to the server; the rendered text is parsed once more in the
backend's dialect and checked again, so a rendering quirk cannot introduce a call the allow-list never saw.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, SqlglotError, TokenError

from core.errors import ToolFailure
from core.tools.sql.allow import (
    ALLOWED_FUNCTIONS,
    ALLOWED_NODES,
    ALLOWED_TYPES,
    ANONYMOUS_BY_BACKEND,
    MAX_PAD_LENGTH,
    VAR_PARENTS,
    Backend,
)
from core.tools.sql.catalogs import refused_schema, refused_table
from core.tools.sql.rewrite import cap_rows, cut_projections, rewrite_dates, rewrite_now, uses_now
from core.tools.sql.show import SHOW_KINDS, describe_table, name_of, needs_table, render_show, show_kind

__all__ = ("Backend", "PreparedQuery", "Preparer", "check", "prepare", "refuse")

# sqlglot logs parser fallbacks with the statement text at WARNING; user SQL must not reach the logs.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

_NODE_SET = frozenset(ALLOWED_NODES)
_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Bare words PostgreSQL (and MySQL for some) evaluate as session functions although they parse as column names.
_SESSION_WORDS = frozenset({"current_user", "session_user", "current_role", "current_catalog", "current_schema",
                            "system_user"})
_SESSION_KEYWORDS: Mapping[Backend, frozenset[str]] = MappingProxyType({
    "mysql": _SESSION_WORDS, "sqlite": _SESSION_WORDS, "postgres": _SESSION_WORDS | {"user"},
})
_ROOTS = frozenset({exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Show, exp.Describe})
_INTO_FILE = re.compile(r"\binto\s+(out|dump)file\b", re.IGNORECASE)
_EXPLAIN_PREFIX: Mapping[Backend, str] = MappingProxyType(
    {"sqlite": "EXPLAIN QUERY PLAN", "postgres": "EXPLAIN", "mysql": "EXPLAIN"}
)
_DESCRIBED = MappingProxyType({
    exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE", exp.Into: "SELECT ... INTO",
    exp.Lock: "locking reads (FOR UPDATE / LOCK IN SHARE MODE)", exp.Parameter: "user variables (@var)",
    exp.SessionParameter: "server variables (@@var)", exp.PropertyEQ: "assignments (:=)",
    exp.Placeholder: "placeholders", exp.Command: "this statement",
})


@dataclass(frozen=True)
class PreparedQuery:
    """A statement that passed the policy, rendered for one backend."""

    sql: str
    kind: str
    row_limited: bool
    probe_sql: str | None = None
    """The same statement with LIMIT 0: its result columns without its rows (used to cut cells on the server)."""
    tree: exp.Expression | None = field(default=None, compare=False, repr=False)
    """The checked, capped tree that was rendered (to render it again with cut cells)."""

    def with_cuts(self, wrap: list[bool], chars: int, names: list[str], backend: Backend) -> str | None:
        """The statement with LEFT(..., chars) around the flagged output columns, or None when it cannot be done."""
        if self.tree is None:
            return None
        cut = cut_projections(self.tree, wrap, chars, names)
        return None if cut is None else _render(cut, backend)


def refuse(message: str) -> ToolFailure:
    """A SQL_REFUSED failure with a plain reason."""
    return ToolFailure("SQL_REFUSED", f"Refused: {message} query_mysql runs one read-only SELECT/SHOW/DESCRIBE/EXPLAIN.")


def _parse_one(sql: str) -> exp.Expression:
    if "/*!" in sql or "/*M!" in sql.upper():
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
    tree = cast(exp.Expression, statements[0])
    while type(tree) is exp.Subquery and not tree.alias and tree.args.get("limit") is None:
        tree = tree.this  # (SELECT ...) as a whole statement is that SELECT
    return tree


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).upper()[:64]
    return node.sql_name().upper()


def _describe(node: exp.Expression) -> str:
    for kind, text in _DESCRIBED.items():
        if isinstance(node, kind):
            return text
    return (node.key or type(node).__name__).upper().replace("_", " ")


@dataclass(frozen=True)
class _Scope:
    backend: Backend
    schemas: frozenset[str]
    current_db: str | None


# Functions whose result can be much longer than their input. Nested in one another they grow the value
# exponentially inside one expression, which MariaDB cannot interrupt (it checks its timeout only between rows):
# 8 nested REPLACEs ran for hours after KILL QUERY. One level inside another is plenty for analysis.
GROWING_FUNCTIONS = frozenset({"REPLACE", "REPEAT", "PAD", "LPAD", "RPAD", "CONCAT", "CONCAT_WS", "INSERT", "SPACE",
                               "STUFF", "OVERLAY", "TRANSLATE", "REGEXP_REPLACE"})
MAX_GROWING_NESTING = 2


def _check_growth(node: exp.Func) -> None:
    if _function_name(node) not in GROWING_FUNCTIONS:
        return
    depth, parent = 1, node.parent
    while parent is not None:
        if isinstance(parent, exp.Func) and _function_name(parent) in GROWING_FUNCTIONS:
            depth += 1
        parent = parent.parent
    if depth > MAX_GROWING_NESTING:
        raise refuse(f"{_function_name(node)} nested {depth} deep in string-growing functions (at most "
                     f"{MAX_GROWING_NESTING}): the value could grow beyond any bound inside one expression.")


def _check_function(node: exp.Func, backend: Backend) -> None:
    _check_growth(node)
    if isinstance(node, exp.Anonymous):
        if _function_name(node) not in ANONYMOUS_BY_BACKEND[backend]:
            raise refuse(f"the function {_function_name(node)} is not on the allowed list (pure, bounded functions only).")
        return
    if type(node) not in ALLOWED_FUNCTIONS:
        raise refuse(f"the function {_function_name(node)} is not on the allowed list (pure, bounded functions only).")
    if isinstance(node, exp.Pad):
        length = node.args.get("expression")
        if not (isinstance(length, exp.Literal) and length.is_int and int(length.name) <= MAX_PAD_LENGTH):
            raise refuse(f"LPAD/RPAD need a literal length of at most {MAX_PAD_LENGTH}.")


def _check_table(node: exp.Table, scope: _Scope) -> None:
    if not isinstance(node.this, exp.Identifier):
        inner = node.this
        name = _function_name(inner) if isinstance(inner, exp.Func) else _describe(inner) if inner else "?"
        raise refuse(f"table-valued functions ({name}) are not allowed; read named tables.")
    system = refused_table(node, scope.schemas, scope.current_db)
    if system is not None:
        raise refuse(f"{system} is a system catalog (credentials, sessions or server state); "
                     "an operator can allow it in DIAG_SQL_SCHEMAS.")


def _check_identifier(node: exp.Identifier, scope: _Scope) -> None:
    name = str(node.this)
    if node.quoted:
        return
    if not _PLAIN_IDENTIFIER.fullmatch(name):
        raise refuse(f"the unquoted name {name[:40]!r} is not a plain identifier; quote it with backticks.")
    parent = node.parent
    if isinstance(parent, exp.Column) and not parent.table and name.lower() in _SESSION_KEYWORDS[scope.backend]:
        raise refuse(f"{name.upper()} reads the session's identity, not data.")


def _check_node(node: exp.Expression, scope: _Scope) -> None:
    kind = type(node)
    if kind is exp.Identifier:
        _check_identifier(cast(exp.Identifier, node), scope)
    elif kind is exp.Table:
        _check_table(cast(exp.Table, node), scope)
    elif kind is exp.Var:
        if not isinstance(node.parent, VAR_PARENTS):
            raise refuse(f"the keyword {str(node.name).upper()[:40]} is not allowed here.")
    elif kind is exp.DataType:
        if cast(exp.DataType, node).this not in ALLOWED_TYPES:
            raise refuse(f"CAST to {node.sql('mysql').upper()[:40]} is not allowed.")
    elif kind in _NODE_SET:
        return
    elif isinstance(node, exp.Func):
        _check_function(node, scope.backend)
    else:
        raise refuse(f"{_describe(node)} is not allowed.")


def _check_root(tree: exp.Expression, scope: _Scope) -> None:
    if type(tree) not in _ROOTS:
        raise refuse(f"{_describe(tree)} statements are not allowed.")
    if isinstance(tree, exp.Describe):
        if str(tree.args.get("style") or "").upper() == "ANALYZE" or tree.args.get("expressions"):
            raise refuse("EXPLAIN ANALYZE or EXPLAIN options execute or alter the statement; use EXPLAIN.")
        if type(tree.this) not in (exp.Table, exp.Select, exp.Union, exp.Intersect, exp.Except):
            raise refuse("EXPLAIN is allowed only for SELECT statements and DESCRIBE only for tables.")
    if isinstance(tree, exp.Show):
        kind = show_kind(tree)
        if kind not in SHOW_KINDS:
            raise refuse(f"SHOW {kind[:40]} reads server state or other sessions; "
                         "SHOW TABLES/COLUMNS/INDEX/CREATE TABLE are allowed.")
        if needs_table(kind) and not name_of(tree.args.get("target")):
            raise ToolFailure("SQL_SYNTAX", f"SHOW {kind} needs a table: SHOW {kind} FROM t.")
        system = refused_schema(name_of(tree.args.get("db")) or scope.current_db, scope.schemas)
        if system is not None:
            raise refuse(f"{system} is a system schema; an operator can allow it in DIAG_SQL_SCHEMAS.")


def check(tree: exp.Expression, backend: Backend = "mysql", schemas: frozenset[str] = frozenset(),
          current_db: str | None = None) -> None:
    """Raise SQL_REFUSED unless the tree is one read statement made only of allowed nodes, functions and tables."""
    scope = _Scope(backend, schemas, current_db)
    _check_root(tree, scope)
    for node in tree.walk():
        if node is not tree or type(tree) not in (exp.Show, exp.Describe):
            _check_node(cast(exp.Expression, node), scope)


def _recheck(rendered: str, scope: _Scope) -> None:
    """Parse the rendered text in the backend's dialect and check it again: what runs is what was checked."""
    try:
        again = [s for s in sqlglot.parse(rendered, read=scope.backend, error_level=ErrorLevel.RAISE) if s is not None]
    except SqlglotError as exc:
        raise ToolFailure("SQL_UNSUPPORTED", f"This statement cannot be rendered safely for {scope.backend}.") from exc
    if len(again) != 1:
        raise refuse("the rendered statement is not exactly one statement.")
    tree = cast(exp.Expression, again[0])
    if type(tree) not in (exp.Select, exp.Union, exp.Intersect, exp.Except):
        raise refuse("the rendered statement is not a SELECT.")
    for node in tree.walk():
        if isinstance(node, exp.Anonymous) and _function_name(node) not in ANONYMOUS_BY_BACKEND[scope.backend]:
            raise refuse(f"the function {_function_name(node)} is not on the allowed list (pure, bounded functions only).")
        if isinstance(node, (exp.Command, exp.Into, exp.Lock)):
            raise refuse(f"{_describe(node)} is not allowed.")
        if isinstance(node, exp.Table):
            _check_table(node, scope)


def _render(tree: exp.Expression, backend: Backend) -> str:
    try:
        return tree.sql(dialect=backend, unsupported_level=ErrorLevel.RAISE, comments=False)
    except SqlglotError as exc:
        raise ToolFailure("SQL_UNSUPPORTED", f"This MySQL syntax cannot run on the {backend} backend: {str(exc)[:200]}") from exc


def _prepare_catalog(tree: exp.Expression, backend: Backend) -> PreparedQuery | None:
    if isinstance(tree, exp.Show):
        if backend == "mysql":
            return PreparedQuery(sql=tree.sql(dialect="mysql", comments=False), kind="show", row_limited=False)
        rendered, kind = render_show(tree, backend)
        return PreparedQuery(sql=rendered, kind=kind, row_limited=False)
    if isinstance(tree, exp.Describe) and isinstance(tree.this, exp.Table):
        if backend == "mysql":
            return PreparedQuery(sql=tree.sql(dialect="mysql", comments=False), kind="describe", row_limited=False)
        rendered = describe_table(str(tree.this.name), tree.this.db or None, backend)
        return PreparedQuery(sql=rendered, kind="describe", row_limited=False)
    return None


_ANY_TIME = object()
"""The key's last part for a statement without NOW()-like calls: what it renders to does not depend on `now`."""


def prepare(sql: str, backend: Backend, row_cap: int, now: datetime | None = None, *,
            schemas: frozenset[str] = frozenset(), current_db: str | None = None) -> PreparedQuery:
    """Check one MySQL-dialect statement and render it for the backend; raises ToolFailure when refused.

    `schemas` are the system schemas/relations the operator allowed (DIAG_SQL_SCHEMAS); `current_db` is the
    database the connection reads unqualified names from (a system one is treated as such)."""
    return _prepare(sql, backend, row_cap, now, schemas, current_db)[0]


class Preparer:
    """`prepare` with a bounded memo owned by this instance (one per SQL tool): a statement that passed is
    remembered (a pure function of the arguments, and of `now` only when the statement calls NOW() or the like), so
    the first look's statements and an agent's repeats skip sqlglot's parse, check and renders (~0.5 ms each). A
    PreparedQuery is immutable (with_cuts renders a copy of its tree). Refusals are not remembered."""

    def __init__(self, entries: int = 512) -> None:
        self._memo: dict[tuple[object, ...], PreparedQuery] = {}
        self._entries = entries

    def known(self, sql: str, backend: Backend, row_cap: int, now: datetime | None = None, *,
              schemas: frozenset[str] = frozenset(), current_db: str | None = None) -> PreparedQuery | None:
        """The remembered preparation of these arguments, or None: a dict look-up, so a caller on the event loop
        asks here first and prepares a new statement in a worker thread (one hop fewer for a repeat)."""
        key = (sql, backend, row_cap, schemas, current_db)
        return self._memo.get((*key, _ANY_TIME)) or self._memo.get((*key, now))

    def __call__(self, sql: str, backend: Backend, row_cap: int, now: datetime | None = None, *,
                 schemas: frozenset[str] = frozenset(), current_db: str | None = None) -> PreparedQuery:
        found = self.known(sql, backend, row_cap, now, schemas=schemas, current_db=current_db)
        if found is not None:
            return found
        key = (sql, backend, row_cap, schemas, current_db)
        prepared, timed = _prepare(sql, backend, row_cap, now, schemas, current_db)
        if len(self._memo) >= self._entries:
            self._memo.clear()  # atomic: tool calls prepare in worker threads
        self._memo[(*key, now if timed else _ANY_TIME)] = prepared
        return prepared


def _prepare(sql: str, backend: Backend, row_cap: int, now: datetime | None, schemas: frozenset[str],
             current_db: str | None) -> tuple[PreparedQuery, bool]:
    """prepare's work, and whether its result depends on `now`."""
    tree = _parse_one(sql)
    timed = uses_now(tree)
    scope = _Scope(backend, schemas, current_db)
    check(tree, backend, schemas, current_db)
    catalog = _prepare_catalog(tree, backend)
    if catalog is not None:
        return catalog, timed
    tree = rewrite_dates(rewrite_now(tree, backend, now), backend)
    if isinstance(tree, exp.Describe):
        inner = _render(tree.this, backend)
        _recheck(inner, scope)
        return PreparedQuery(sql=f"{_EXPLAIN_PREFIX[backend]} {inner}", kind="explain", row_limited=False), timed
    capped = cap_rows(tree, row_cap)
    rendered = _render(capped, backend)
    _recheck(rendered, scope)
    probe = _render(cap_rows(tree, row_cap, keep=0), backend)
    return PreparedQuery(sql=rendered, kind="select", row_limited=True, probe_sql=probe, tree=capped), timed
