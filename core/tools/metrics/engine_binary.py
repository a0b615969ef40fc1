"""Binary operators of the embedded PromQL subset (core/tools/metrics/engine.py): arithmetic and comparisons between
scalars and vectors with one-to-one `on` / `ignoring` matching, comparisons as filters or with `bool`, and the set
operators and / or / unless, with Prometheus' semantics and errors."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from core.errors import ToolFailure
from core.tools.metrics.engine import Budget, Labels, Node, Vector, as_vector, drop_name, put_unique
from core.tools.metrics.promql import NAME

ARITHMETIC: Mapping[str, Callable[[float, float], float]] = MappingProxyType({
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: _divide(a, b),
})
COMPARISONS: Mapping[str, Callable[[float, float], bool]] = MappingProxyType({
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, ">": lambda a, b: a > b, "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b,
})
SET_OPS = ("and", "or", "unless")


def _divide(a: float, b: float) -> float:
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
    return a / b


@dataclass(frozen=True, eq=False)
class Binary(Node):
    op: str
    lhs: Node
    rhs: Node
    on: tuple[str, ...] | None = None
    ignoring: tuple[str, ...] = ()
    return_bool: bool = False
    signatures: dict[Labels, Labels] = field(default_factory=dict, compare=False, repr=False)
    """Each label set's matching signature, computed once (not at each step; the compiled query is kept with its
    snapshot, so across calls too: a pure function of the label set)."""

    def instant(self, t: float, budget: Budget) -> Vector | float:
        left, right = self.lhs.instant(t, budget), self.rhs.instant(t, budget)
        if self.op in SET_OPS:
            return self._set(as_vector(left, self.op), as_vector(right, self.op))
        if not isinstance(left, dict) and not isinstance(right, dict):
            return self._scalar(left, right)
        if isinstance(left, dict) and isinstance(right, dict):
            return self._vectors(left, right)
        out: Vector = {}
        vector, scalar = (left, right) if isinstance(left, dict) else (right, left)
        for labels, v in vector.items():  # type: ignore[union-attr]
            a, b = (v, float(scalar)) if isinstance(left, dict) else (float(scalar), v)  # type: ignore[arg-type]
            kept = self._apply(labels, a, b, v)
            if kept is not None:
                put_unique(out, kept[0], kept[1])
        return out

    def _scalar(self, a: float, b: float) -> float:
        if self.op in ARITHMETIC:
            return ARITHMETIC[self.op](a, b)
        if not self.return_bool:
            raise ToolFailure("METRICS_BAD_QUERY", "comparisons between scalars must use the bool modifier.")
        return float(COMPARISONS[self.op](a, b))

    def _apply(self, labels: Labels, a: float, b: float, shown: float) -> tuple[Labels, float] | None:
        """One element's result: (labels, value), or None when a filtering comparison drops it."""
        if self.op in ARITHMETIC:
            return drop_name(labels), ARITHMETIC[self.op](a, b)
        hit = COMPARISONS[self.op](a, b)
        if self.return_bool:
            return drop_name(labels), float(hit)
        return (labels, shown) if hit else None

    def _signature(self, labels: Labels) -> Labels:
        known = self.signatures.get(labels)
        if known is not None:
            return known
        if self.on is not None:
            known = tuple(p for p in labels if p[0] in self.on)
        else:
            dropped = {NAME, *self.ignoring}
            known = tuple(p for p in labels if p[0] not in dropped)
        self.signatures[labels] = known
        return known

    def _vectors(self, left: Vector, right: Vector) -> Vector:
        by_signature: dict[Labels, float] = {}
        for labels, v in right.items():
            signature = self._signature(labels)
            if signature in by_signature:
                raise ToolFailure("METRICS_BAD_QUERY", "found duplicate series for the match group on the right "
                                  "side of the operation: many-to-many matching not allowed (use on(...) or "
                                  "aggregate).")
            by_signature[signature] = v
        out: Vector = {}
        seen: set[Labels] = set()
        for labels, a in left.items():
            signature = self._signature(labels)
            if signature not in by_signature:
                continue
            if signature in seen:
                raise ToolFailure("METRICS_BAD_QUERY", "multiple matches for labels: many-to-one matching must be "
                                  "explicit (group_left/group_right needs Prometheus).")
            seen.add(signature)
            kept = self._apply(labels, a, by_signature[signature], a)
            if kept is not None:
                put_unique(out, self._result_labels(kept[0]), kept[1])
        return out

    def _result_labels(self, labels: Labels) -> Labels:
        """Prometheus' result labels of one-to-one matching: only the `on` labels, or without the ignored ones."""
        if self.on is not None:
            return tuple(p for p in labels if p[0] in self.on)
        return tuple(p for p in labels if p[0] not in self.ignoring)

    def _set(self, left: Vector, right: Vector) -> Vector:
        right_signatures = {self._signature(labels) for labels in right}
        if self.op == "and":
            return {k: v for k, v in left.items() if self._signature(k) in right_signatures}
        if self.op == "unless":
            return {k: v for k, v in left.items() if self._signature(k) not in right_signatures}
        left_signatures = {self._signature(labels) for labels in left}
        return {**left, **{k: v for k, v in right.items() if self._signature(k) not in left_signatures}}
