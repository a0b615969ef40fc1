"""What the embedded backend derives from one snapshot of the metrics folder and reuses while no file changes: the
series each selector picks, each query's compiled form (its selectors' series looked up, its label memos) and the
unit of each query's result. A new snapshot (a file changed) starts afresh; the evaluation itself is never kept (the
window and the clock differ between calls)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from core.errors import ToolFailure
from core.tools.metrics.backend import MAX_SERIES_READ
from core.tools.metrics.engine import Node
from core.tools.metrics.openmetrics import Snapshot
from core.tools.metrics.promql import CheckedQuery, Selector
from core.tools.metrics.series import Series
from core.tools.metrics.units import SeriesUnit, expression_unit

K = TypeVar("K")
V = TypeVar("V")
MAX_KEPT = 256
"""Selectors and queries kept per snapshot (past it the memo starts again)."""


class SnapshotIndex:
    """One snapshot's selections and result units (thread-safe enough: a race computes one twice, alike)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._selections: dict[Selector, tuple[Series, ...]] = {}
        self._units: dict[str, SeriesUnit] = {}
        self._compiled: dict[str, Node] = {}
        self._types = {name: (meta.type, meta.unit) for name, meta in snapshot.meta.items()}

    def selected(self, selector: Selector) -> tuple[Series, ...]:
        """The folder's series a selector picks, in folder order (at most MAX_SERIES_READ)."""
        known = self._selections.get(selector)
        if known is not None:
            return known
        picked = tuple(s for s in self.snapshot.series if selector.matches(s.name, s.labels))
        if len(picked) > MAX_SERIES_READ:
            raise ToolFailure("METRICS_TOO_MANY_SERIES",
                              f"The selector {selector} matches {len(picked):,} series (at most {MAX_SERIES_READ:,}); "
                              "add label matchers.")
        _keep(self._selections, selector, picked)
        return picked

    def compiled(self, query: CheckedQuery, compile_query: Callable[[], Node]) -> Node:
        """The query's compiled form over this snapshot, compiled once per text (compile_query raises for what the
        engine does not evaluate: nothing is kept then). A compiled query holds no evaluation's state (engine.Budget
        does), so calls in several threads may share it; compiling costs ~0.3 ms on the first look's ranking, and
        the label memos it carries save as much again."""
        known = self._compiled.get(query.text)
        if known is None:
            known = compile_query()
            _keep(self._compiled, query.text, known)
        return known

    def unit(self, query: CheckedQuery) -> SeriesUnit:
        """The unit and kind of the query's result, from its structure and the folder's metadata."""
        known = self._units.get(query.text)
        if known is None:
            known = expression_unit(query.expr, self._types)
            _keep(self._units, query.text, known)
        return known


def _keep(memo: dict[K, V], key: K, value: V) -> None:
    if len(memo) >= MAX_KEPT:
        memo.clear()
    memo[key] = value
