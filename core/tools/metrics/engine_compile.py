"""The embedded backend's PromQL compiler: a checked expression (promql_parser's tree) into the evaluable nodes of
core/tools/metrics/engine.py, the folder's series each selector picks looked up once. One node per distinct
range-function call (by its PromQL text), so a query repeating a subexpression evaluates it once per time; what the
subset lacks is Unsupported, naming the part."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import promql_parser as pp

from core.errors import ToolFailure
from core.tools.metrics.engine import (
    AGGREGATIONS,
    DEFAULT_SUBQUERY_STEP_S,
    Aggregate,
    Call,
    LabelReplace,
    Node,
    Number,
    RangeCall,
    RangeNode,
    Select,
    SelectRange,
    Shared,
    Subquery,
    Unsupported,
)
from core.tools.metrics.engine_binary import ARITHMETIC, COMPARISONS, SET_OPS, Binary
from core.tools.metrics.engine_functions import INSTANT_ARITY, INSTANT_FUNCTIONS, RANGE_FUNCTIONS
from core.tools.metrics.promql import Selector, selector_of
from core.tools.metrics.series import Series

__all__ = ("Lookup", "Unsupported", "compile_query")


Lookup = Callable[[Selector], tuple[Series, ...]]


def compile_query(expr: pp.Expr, lookup: Lookup) -> Node:
    """Our evaluable form of a checked expression; Unsupported names the first part the subset lacks."""
    return _Compiler(lookup).node(expr)


def _seconds(delta: object) -> float:
    return float(delta.total_seconds()) if delta is not None else 0.0  # type: ignore[attr-defined]


class _Compiler:
    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup
        self.range_calls: dict[str, RangeCall] = {}
        """One node per distinct range-function call (by its PromQL text), so a repeated one is evaluated once."""
        self.shared: dict[str, Shared] = {}
        """One node per distinct operation, function call or aggregation (by its PromQL text), likewise."""

    def node(self, expr: pp.Expr) -> Node:
        if isinstance(expr, pp.ParenExpr):
            return self.node(expr.expr)
        if isinstance(expr, pp.Call | pp.AggregateExpr | pp.BinaryExpr | pp.UnaryExpr) and not (
                isinstance(expr, pp.Call) and expr.func.name in RANGE_FUNCTIONS):
            key = str(expr)
            known = self.shared.get(key)
            if known is None:
                known = self.shared[key] = Shared(self._composite(expr))
            return known
        return self._composite(expr)

    def _composite(self, expr: pp.Expr) -> Node:
        if isinstance(expr, pp.NumberLiteral):
            return Number(float(expr.val))
        if isinstance(expr, pp.UnaryExpr):
            return Binary("-", Number(0.0), self.node(expr.expr))
        if isinstance(expr, pp.VectorSelector):
            if expr.at is not None:
                raise Unsupported("the @ modifier")
            return Select(self.lookup(selector_of(expr)), _seconds(expr.offset))
        if isinstance(expr, pp.Call):
            return self._call(expr)
        if isinstance(expr, pp.AggregateExpr):
            return self._aggregate(expr)
        if isinstance(expr, pp.BinaryExpr):
            return self._binary(expr)
        if isinstance(expr, pp.MatrixSelector | pp.SubqueryExpr):
            raise Unsupported("a range vector as the result (give it to a function such as rate or avg_over_time)")
        raise Unsupported(f"{type(expr).__name__}")

    def range_node(self, expr: pp.Expr) -> RangeNode:
        if isinstance(expr, pp.MatrixSelector):
            vs = expr.vector_selector
            if vs.at is not None:
                raise Unsupported("the @ modifier")
            return SelectRange(_seconds(expr.range), _seconds(vs.offset), self.lookup(selector_of(vs)))
        if isinstance(expr, pp.SubqueryExpr):
            if expr.at is not None:
                raise Unsupported("the @ modifier")
            step = _seconds(expr.step) or DEFAULT_SUBQUERY_STEP_S
            return Subquery(_seconds(expr.range), _seconds(expr.offset), self.node(expr.expr), step)
        if isinstance(expr, pp.ParenExpr):
            return self.range_node(expr.expr)
        raise Unsupported("a function expecting a range vector given something else")

    def _call(self, expr: pp.Call) -> Node:
        name = expr.func.name
        args = list(expr.args)
        if name in RANGE_FUNCTIONS and len(args) == 1:
            key = str(expr)
            known = self.range_calls.get(key)
            if known is None:
                known = self.range_calls[key] = RangeCall(name, self.range_node(args[0]))
            return known
        if name in INSTANT_FUNCTIONS and len(args) == 1 + INSTANT_ARITY.get(name, 0):
            scalars = tuple(self._number(a, name) for a in args[1:])
            return Call(name, self.node(args[0]), scalars)
        if name == "label_replace" and len(args) == 5:
            texts = tuple(self._text(a) for a in args[1:])
            try:
                re.compile(texts[3])
            except re.error as exc:
                raise ToolFailure("METRICS_BAD_QUERY", f"invalid regular expression in label_replace(): "
                                  f"{texts[3][:80]}") from exc
            return LabelReplace(self.node(args[0]), (texts[0], texts[1], texts[2], texts[3]))
        raise Unsupported(f"the function {name}()")

    @staticmethod
    def _number(arg: object, where: str) -> float:
        while isinstance(arg, pp.ParenExpr):
            arg = arg.expr
        if isinstance(arg, pp.NumberLiteral):
            return float(arg.val)
        raise Unsupported(f"{where}() with a parameter that is not a number literal")

    @staticmethod
    def _text(arg: object) -> str:
        if isinstance(arg, pp.StringLiteral):
            return str(arg.val)
        raise Unsupported("label_replace() with a parameter that is not a string literal")

    def _aggregate(self, expr: pp.AggregateExpr) -> Node:
        op = str(expr.op)
        if op not in (*AGGREGATIONS, "topk", "bottomk"):
            raise Unsupported(f"the aggregation {op}")
        modifier = expr.modifier
        grouping, without = (_named(str(modifier.type).endswith("By"), modifier.labels) if modifier is not None
                             else ((), ()))
        param = self.node(expr.param) if op in ("topk", "bottomk") and expr.param is not None else None
        return Aggregate(op, self.node(expr.expr), grouping, without, param)

    def _binary(self, expr: pp.BinaryExpr) -> Node:
        op = str(expr.op).strip()
        if op not in (*ARITHMETIC, *COMPARISONS, *SET_OPS):
            raise Unsupported(f"the operator {op}")
        modifier = expr.modifier
        on: tuple[str, ...] | None = None
        ignoring: tuple[str, ...] = ()
        return_bool = False
        if modifier is not None:
            card = str(modifier.card).rsplit(".", 1)[-1]
            if card in ("ManyToOne", "OneToMany"):
                raise Unsupported("group_left / group_right")
            return_bool = bool(modifier.return_bool)
            matching = modifier.matching
            if matching is not None:
                on, ignoring = _named(str(matching.type).endswith("Include"), matching.labels)
        return Binary(op, self.node(expr.lhs), self.node(expr.rhs), on, ignoring, return_bool)


def _named(include: bool, labels: Sequence[str]) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """PromQL's two ways of naming labels (`by` / `on` keep them, `without` / `ignoring` drop them) as the nodes take
    them: (kept or None, dropped)."""
    return (tuple(labels), ()) if include else (None, tuple(labels))
