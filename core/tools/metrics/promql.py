"""PromQL parsed and bounded before anything is sent (promql-parser, the Rust parser's Python binding).

A query is refused (QueryRefused, the message says why and what to do) when it does not parse, when a vector
selector could match every series (no metric name and no matcher that restricts: Prometheus itself refuses `{}` and
`{job=~".*"}`, but not `{job=~".+"}` or `{__name__!=""}`), when a matrix range, a subquery range or an offset is
longer than MAX_RANGE, when a subquery would evaluate more than MAX_POINTS steps per series, or when the expression is
too large to be a diagnosis query (nodes, selectors).

What the checked query tells the backends: the one plain selector when the whole expression is one (the embedded
backend evaluates only those), every selector's metric name (for metadata), and how far before the window it reads.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Literal

import promql_parser as pp

from core.tools.metrics.args import MAX_POINTS, MAX_RANGE

MAX_NODES = 200
MAX_SELECTORS = 20
DEFAULT_SUBQUERY_STEP_S = 60.0
"""Prometheus evaluates a subquery without a step at the global evaluation interval (1 m by default)."""
NAME = "__name__"
_PROBES = ("x", "order-service", "9090", "Z_z:1", "a b/c.d", "\u00e9t\u00e9", "-" * 40)
"""Label values a regex must fail on at least once to restrict anything (Prometheus anchors regexes fully)."""

Op = Literal["=", "!=", "=~", "!~"]
_OPS: Mapping[str, Op] = MappingProxyType({"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"})


class QueryRefused(ValueError):
    """The query is not sent: it does not parse, matches everything, or breaks a bound."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _regex(pattern: str) -> re.Pattern[str] | None:
    """Python's reading of an RE2 pattern (the common subset; `re` keeps compiled patterns in its own cache); None
    when Python cannot compile it."""
    try:
        return re.compile(pattern, re.DOTALL)
    except (re.error, OverflowError, RecursionError):
        return None


@dataclass(frozen=True)
class LabelMatcher:
    """One label matcher of a selector: `name op "value"`, regexes anchored at both ends as in Prometheus."""

    name: str
    op: Op
    value: str

    def matches(self, labels: dict[str, str]) -> bool:
        """Whether a series with these labels (a missing label is the empty string) passes this matcher."""
        have = labels.get(self.name, "")
        if self.op == "=":
            return have == self.value
        if self.op == "!=":
            return have != self.value
        pattern = _regex(self.value)
        hit = pattern.fullmatch(have) is not None if pattern is not None else False
        return hit if self.op == "=~" else not hit

    @property
    def restricts(self) -> bool:
        """Whether this matcher excludes ordinary series: `="x"`, or a regex failing on some ordinary value."""
        if self.op == "=":
            return self.value != ""
        if self.op != "=~":
            return False  # a negative matcher keeps nearly everything
        pattern = _regex(self.value)
        return pattern is None or any(pattern.fullmatch(probe) is None for probe in _PROBES)

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'{self.name}{self.op}"{escaped}"'


@dataclass(frozen=True)
class Selector:
    """A vector selector: the metric name (when given by name or by `__name__="..."`) and its other matchers."""

    name: str | None
    matchers: tuple[LabelMatcher, ...]
    alternatives: tuple[tuple[LabelMatcher, ...], ...] = ()
    """`{a="1" or b="2"}`: the series matching any one group (the name applies to each)."""
    modified: bool = False
    """Has an offset or an @ modifier."""

    def matches(self, name: str, labels: dict[str, str]) -> bool:
        """Whether the series `name{labels}` is selected."""
        if self.name is not None and name != self.name:
            return False
        full = {**labels, NAME: name}
        groups = self.alternatives or (self.matchers,)
        return any(all(m.matches(full) for m in group) for group in groups)

    @property
    def matches_everything(self) -> bool:
        """No metric name and no restricting matcher in some group: this selector reads every series."""
        if self.name:
            return False
        groups = self.alternatives or (self.matchers,)
        return any(not any(m.restricts for m in group) for group in groups)

    def __str__(self) -> str:
        inner = ",".join(str(m) for m in self.matchers)
        return f"{self.name or ''}{{{inner}}}"


@dataclass(frozen=True)
class CheckedQuery:
    """A query that parsed and is within every bound."""

    text: str
    expr: pp.Expr = field(repr=False, compare=False)
    selectors: tuple[Selector, ...]
    plain: Selector | None
    """The whole expression is this one selector, without offset or @ (what the embedded backend can answer)."""
    lookback_s: float
    """The longest matrix or subquery range (plus offset) the query reads before each evaluation time."""

    @property
    def metric_names(self) -> tuple[str, ...]:
        """Every metric named by a selector, in order of appearance, once each."""
        return tuple(dict.fromkeys(s.name for s in self.selectors if s.name))


def _op(match_op: object) -> Op:
    name = str(match_op).rsplit(".", 1)[-1]
    return _OPS.get(name, "=")


def _matchers(raw: list[pp.Matcher]) -> tuple[LabelMatcher, ...]:
    return tuple(LabelMatcher(m.name, _op(m.op), m.value) for m in raw)


def selector_of(node: pp.VectorSelector) -> Selector:
    """Our view of a parsed vector selector (a `__name__="x"` matcher becomes the name)."""
    matchers = _matchers(node.matchers.matchers)
    name = node.name
    if name is None:
        exact = [m for m in matchers if m.name == NAME and m.op == "="]
        if exact:
            name = exact[0].value
            matchers = tuple(m for m in matchers if m is not exact[0])
    alternatives = tuple(matchers + _matchers(group) for group in node.matchers.or_matchers)
    modified = node.offset is not None or node.at is not None
    return Selector(name, matchers, alternatives, modified)


def _seconds(delta: timedelta | None) -> float:
    return abs(delta.total_seconds()) if delta is not None else 0.0


def _too_long(what: str, seconds: float) -> QueryRefused:
    days = MAX_RANGE.days
    return QueryRefused("METRICS_RANGE_TOO_LONG",
                        f"the query's {what} is {seconds / 86400:.1f} days; query_metrics reads at most {days} days.")


@dataclass
class _Walk:
    nodes: int = 0
    selectors: list[Selector] = field(default_factory=list)
    lookback_s: float = 0.0
    problem: QueryRefused | None = None

    def visit(self, node: pp.Expr) -> bool:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.problem = QueryRefused("METRICS_QUERY_TOO_COMPLEX",
                                        f"the query has more than {MAX_NODES} parts; ask one question per query.")
            return False
        limit = MAX_RANGE.total_seconds()
        if isinstance(node, pp.MatrixSelector):
            reach = node.range.total_seconds() + _seconds(node.vector_selector.offset)
            if node.range.total_seconds() > limit:
                self.problem = _too_long("range selector", node.range.total_seconds())
            self.lookback_s = max(self.lookback_s, reach)
        elif isinstance(node, pp.SubqueryExpr):
            self.problem = self._subquery(node, limit) or self.problem
        elif isinstance(node, pp.VectorSelector):
            self.problem = self._selector(node, limit) or self.problem
        return self.problem is None

    def _subquery(self, node: pp.SubqueryExpr, limit: float) -> QueryRefused | None:
        span = _seconds(node.range)
        step = _seconds(node.step) or DEFAULT_SUBQUERY_STEP_S
        self.lookback_s = max(self.lookback_s, span + _seconds(node.offset))
        if span > limit:
            return _too_long("subquery range", span)
        if span / step > MAX_POINTS:
            return QueryRefused("METRICS_TOO_MANY_POINTS",
                                f"the subquery evaluates {span / step:.0f} steps per series; at most {MAX_POINTS}: "
                                "use a larger subquery step.")
        return None

    def _selector(self, node: pp.VectorSelector, limit: float) -> QueryRefused | None:
        selector = selector_of(node)
        self.selectors.append(selector)
        if _seconds(node.offset) > limit:
            return _too_long("offset", _seconds(node.offset))
        if selector.matches_everything:
            return QueryRefused("METRICS_MATCHES_EVERYTHING",
                                f"the selector {selector} matches every series; name the metric "
                                '(e.g. http_server_requests_total{service="checkout-api"}).')
        if len(self.selectors) > MAX_SELECTORS:
            return QueryRefused("METRICS_QUERY_TOO_COMPLEX",
                                f"the query has more than {MAX_SELECTORS} selectors; ask one question per query.")
        return None


def _children(node: pp.Expr) -> tuple[pp.Expr, ...]:
    if isinstance(node, pp.BinaryExpr):
        return node.lhs, node.rhs
    if isinstance(node, pp.AggregateExpr):
        return (node.expr,) if node.param is None else (node.param, node.expr)
    if isinstance(node, pp.Call):
        return tuple(node.args)
    if isinstance(node, pp.ParenExpr | pp.SubqueryExpr | pp.UnaryExpr):
        return (node.expr,)
    if isinstance(node, pp.MatrixSelector):
        return (node.vector_selector,)
    return ()


def nodes(expr: pp.Expr) -> Iterator[pp.Expr]:
    """Every node of the expression, parents first, in the order `promql_parser.walk` visits them (which builds each
    node's Python object anew at each callback: ~6 ms on the first look's ranking query, this 0.06 ms)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_children(node)))


CHECKED_MEMO = 512
"""Query texts whose check is kept (the check is a pure function of the text: the first look sends the same ranking
query every run of a window length; parse + walk cost ~1.5 ms of CPU on it, ~10 ms before nodes())."""


class _CheckMemo:
    """The last CHECKED_MEMO checks by text, a refusal kept as well (thread-safe: checks run on the loop and in
    worker threads)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: OrderedDict[str, CheckedQuery | QueryRefused] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> CheckedQuery | QueryRefused | None:
        with self._lock:
            known = self._kept.get(text)
            if known is not None:
                self._kept.move_to_end(text)
            return known

    def put(self, text: str, checked: CheckedQuery | QueryRefused) -> None:
        with self._lock:
            self._kept[text] = checked
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)


_MEMO = _CheckMemo(CHECKED_MEMO)


def known_check(text: str) -> CheckedQuery | None:
    """The query's check when it is kept (a refusal raises QueryRefused), else None: a caller on the event loop
    checks a new text in a worker thread."""
    known = _MEMO.get(text.strip())
    if isinstance(known, QueryRefused):
        raise QueryRefused(known.code, known.message) from known.__cause__
    return known


def check_query(text: str) -> CheckedQuery:
    """Parse and bound a PromQL expression; QueryRefused says why it will not be sent."""
    known = known_check(text)
    if known is not None:
        return known
    text = text.strip()
    try:
        checked = _check(text)
    except QueryRefused as exc:
        if exc.__cause__ is not None:
            exc.__cause__.with_traceback(None)
        _MEMO.put(text, exc.with_traceback(None))  # no frames kept alive by the memo
        raise QueryRefused(exc.code, exc.message) from exc.__cause__
    _MEMO.put(text, checked)
    return checked


def _check(text: str) -> CheckedQuery:
    try:
        expr = pp.parse(text)
    except (ValueError, OverflowError, RecursionError) as exc:
        reason = " ".join(str(exc).split())[:200] or "syntax error"
        raise QueryRefused("METRICS_BAD_QUERY", f"the query is not valid PromQL: {reason}.") from exc
    walk = _Walk()
    for node in nodes(expr):
        walk.visit(node)
    if walk.problem is not None:
        raise walk.problem
    if isinstance(expr, pp.StringLiteral | pp.NumberLiteral) or not walk.selectors:
        raise QueryRefused("METRICS_BAD_QUERY", "the query selects no series; name a metric.")
    plain = None
    if isinstance(expr, pp.VectorSelector) and not walk.selectors[0].modified:
        plain = walk.selectors[0]
    return CheckedQuery(text, expr, tuple(walk.selectors), plain, walk.lookback_s)
