"""Rewrites of a checked MySQL-dialect tree before it is rendered for a backend.

sqlglot transpiles most MySQL syntax; these cover what it renders into functions the backend lacks (HOUR() on
SQLite/PostgreSQL, DATE_SUB on SQLite, TIMESTAMPDIFF), what PostgreSQL types more strictly ('literal' - INTERVAL,
SUM(a > 1)), NOW() pinned to the configured clock, and the row cap that replaces whatever LIMIT/FETCH was given.
Every rewrite builds from allowed nodes only, so the rendered statement stays inside the allow-list.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import cast

import sqlglot
from sqlglot import exp

from core.tools.sql.allow import Backend

NOW_FUNCTIONS = frozenset({"NOW", "SYSDATE", "LOCALTIME", "LOCALTIMESTAMP", "UTC_TIMESTAMP", "CURRENT_TIMESTAMP"})
_UNITS = MappingProxyType({"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 7 * 86400})
_SQLITE_UNITS = MappingProxyType(
    {"SECOND": "seconds", "MINUTE": "minutes", "HOUR": "hours", "DAY": "days", "MONTH": "months", "YEAR": "years"}
)
# MySQL date-part functions: (strftime format on SQLite, EXTRACT field on PostgreSQL, offset added to the result).
_DATE_PARTS: Mapping[type[exp.Expression], tuple[str, str, int]] = MappingProxyType({
    exp.Year: ("%Y", "YEAR", 0), exp.Month: ("%m", "MONTH", 0), exp.Day: ("%d", "DAY", 0),
    exp.DayOfMonth: ("%d", "DAY", 0), exp.Hour: ("%H", "HOUR", 0), exp.Minute: ("%M", "MINUTE", 0),
    exp.Second: ("%S", "SECOND", 0), exp.DayOfWeek: ("%w", "DOW", 1), exp.DayOfYear: ("%j", "DOY", 0),
})
_PREDICATES: tuple[type[exp.Expression], ...] = (
    exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.And, exp.Or, exp.Not, exp.Is, exp.In,
    exp.Between, exp.Like, exp.ILike, exp.Exists, exp.Boolean, exp.RegexpLike,
)


def _unit_of(node: exp.Expression) -> str:
    unit = node.args.get("unit")
    return str(unit.name if isinstance(unit, exp.Expression) else unit or "DAY").upper()


def _interval_modifier(amount: exp.Expression, unit: str, sign: int) -> str | None:
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


def _is_now(node: exp.Expression) -> bool:
    return isinstance(node, (exp.CurrentTimestamp, exp.UtcTimestamp)) or (
        isinstance(node, exp.Anonymous) and str(node.name).upper() in NOW_FUNCTIONS
    )


def uses_now(tree: exp.Expression) -> bool:
    """True when the tree holds a NOW()-like call: the only nodes rewrite_now renders from its `now`."""
    return any(_is_now(cast(exp.Expression, node)) for node in tree.walk())


def rewrite_now(tree: exp.Expression, backend: Backend, now: datetime | None) -> exp.Expression:
    """Render NOW()-like calls for the backend, or pin them to the configured clock."""

    def transform(node: exp.Expression) -> exp.Expression:
        if not _is_now(node):
            return node
        if now is not None:
            text = exp.Literal.string(now.strftime("%Y-%m-%d %H:%M:%S"))
            return text if backend == "sqlite" else exp.cast(text, exp.DataType.Type.TIMESTAMP)
        if backend == "sqlite":
            return exp.Anonymous(this="DATETIME", expressions=[exp.Literal.string("now")])
        return exp.CurrentTimestamp() if isinstance(node, exp.Anonymous) else node

    return tree.transform(transform, copy=True)


def _timestamp(node: exp.Expression) -> exp.Expression:
    """A string literal used as a point in time, typed for PostgreSQL (which cannot subtract an interval from 'text')."""
    if isinstance(node, exp.Literal) and node.is_string:
        return exp.cast(node, exp.DataType.Type.TIMESTAMP)
    return node


def _date_part(node: exp.Expression, backend: Backend) -> exp.Expression | None:
    spec = _DATE_PARTS.get(type(node))
    if spec is None or backend == "mysql":
        return None
    fmt, field, offset = spec
    this = node.this.this if isinstance(node.this, exp.TsOrDsToDate) else node.this
    if backend == "sqlite":
        part: exp.Expression = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(fmt), this])
    else:
        part = exp.Extract(this=exp.var(field), expression=exp.cast(this.copy(), exp.DataType.Type.TIMESTAMP))
    value: exp.Expression = exp.cast(part, exp.DataType.Type.INT)
    return exp.Paren(this=exp.Add(this=value, expression=exp.Literal.number(offset))) if offset else value


def _timestamp_diff(node: exp.TimestampDiff, backend: Backend) -> exp.Expression | None:
    seconds = _UNITS.get(_unit_of(node))
    if not seconds:
        return None
    end, begin = node.this.sql(backend), node.expression.sql(backend)
    if backend == "sqlite":
        diff = f"(JULIANDAY({end}) - JULIANDAY({begin})) * 86400"
    else:
        diff = f"EXTRACT(EPOCH FROM (CAST({end} AS TIMESTAMP) - CAST({begin} AS TIMESTAMP)))"
    return cast(exp.Expression, sqlglot.parse_one(f"CAST(({diff}) / {seconds} AS INTEGER)", read=backend))


def _sqlite_interval(node: exp.Expression) -> exp.Expression | None:
    if isinstance(node, (exp.DateSub, exp.DateAdd)):
        sign = -1 if isinstance(node, exp.DateSub) else 1
        modifier = _interval_modifier(node.expression, _unit_of(node), sign)
        return _sqlite_datetime(node.this, modifier) if modifier else None
    if isinstance(node, (exp.Sub, exp.Add)) and isinstance(node.expression, exp.Interval):
        sign = -1 if isinstance(node, exp.Sub) else 1
        modifier = _interval_modifier(node.expression.this, _unit_of(node.expression), sign)
        return _sqlite_datetime(node.this, modifier) if modifier else None
    return None


def _postgres_types(node: exp.Expression) -> exp.Expression | None:
    shifted = isinstance(node, (exp.DateSub, exp.DateAdd)) or (
        isinstance(node, (exp.Sub, exp.Add)) and isinstance(node.expression, exp.Interval))
    if shifted and isinstance(node.this, exp.Literal) and node.this.is_string:
        rewritten = node.copy()
        rewritten.set("this", _timestamp(node.this))
        return rewritten
    if isinstance(node, (exp.Sum, exp.Avg)) and isinstance(node.this, _PREDICATES):
        # PostgreSQL has no SUM(boolean); MySQL and SQLite count true as 1.
        as_number = exp.Case(ifs=[exp.If(this=node.this.copy(), true=exp.Literal.number(1))], default=exp.Literal.number(0))
        return type(node)(this=as_number)
    return None


def rewrite_dates(tree: exp.Expression, backend: Backend) -> exp.Expression:
    """Date arithmetic and date parts sqlglot does not transpile well, and PostgreSQL's stricter typing."""

    def transform(node: exp.Expression) -> exp.Expression:
        replaced: exp.Expression | None = None
        if backend == "sqlite":
            replaced = _sqlite_interval(node)
        elif backend == "postgres":
            replaced = _postgres_types(node)
        if replaced is None:
            replaced = _date_part(node, backend)
        if replaced is None and isinstance(node, exp.TimestampDiff) and backend != "mysql":
            replaced = _timestamp_diff(node, backend)
        return node if replaced is None else replaced

    return tree.transform(transform, copy=True)


def _literal_count(limit: exp.Expression | None) -> int | None:
    """A LIMIT/FETCH count given as a plain non-negative integer literal, else None (ALL, NULL, -1, 1e9, subquery)."""
    amount = None
    if isinstance(limit, exp.Limit):
        amount = limit.expression
    elif isinstance(limit, exp.Fetch):
        amount = limit.args.get("count")
    if isinstance(amount, exp.Literal) and amount.is_int:
        return int(amount.name)
    return None


def cap_rows(tree: exp.Expression, cap: int, keep: int | None = None) -> exp.Expression:
    """Replace the statement's own LIMIT/FETCH by a literal LIMIT of at most cap+1 rows, whatever it carried
    (`keep` forces the count, e.g. 0 for a probe of the result's columns)."""
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        return tree
    if keep is None:
        asked = _literal_count(tree.args.get("limit"))
        keep = asked if asked is not None and 0 <= asked <= cap + 1 else cap + 1
    capped = tree.copy()
    capped.set("limit", exp.Limit(expression=exp.Literal.number(keep)))
    return capped


def cut_projections(tree: exp.Expression, wrap: list[bool], chars: int, names: list[str]) -> exp.Expression | None:
    """The SELECT with LEFT(expr, chars) around the output columns flagged in `wrap`, keeping their names; None when
    the select list cannot be matched to the result columns (a `*`, a set operation)."""
    if not isinstance(tree, exp.Select) or len(tree.expressions) != len(wrap) or len(names) != len(wrap):
        return None
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)) for e in tree.expressions):
        return None
    cut = tree.copy()
    projections = []
    for expression, flag, name in zip(cut.expressions, wrap, names, strict=True):
        if not flag:
            projections.append(expression)
            continue
        inner = expression.this if isinstance(expression, exp.Alias) else expression
        left = exp.Left(this=inner.copy(), expression=exp.Literal.number(chars))
        projections.append(exp.Alias(this=left, alias=exp.Identifier(this=name, quoted=True)))
    cut.set("expressions", projections)
    return cut
