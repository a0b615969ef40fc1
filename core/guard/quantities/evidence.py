"""One call's evidence as typed quantities with origins, searched lazily.

Every value of a projection is a leaf with a key (a log field, a column, `count`), read as quantities by
core/guard/quantities/leaves.py. The window, the limit and the query text are separate origins that ground only
what they say (core/guard/quantities/extras.py).

Searching: a claim is first looked for where its written forms occur in the call's JSON text, reading only the leaf
at each occurrence (core/guard/quantities/result_text.py). When that finds nothing, the call is indexed (`index`,
read only as far as a search needs: `search_index`), which answers every claim exactly, including rounding; the
lazy search only ever says yes when the full index would, so the answer never depends on which path ran.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from core.contracts.evidence import CanonicalRecord
from core.guard.quantities.declared import declared_quantity, row_units
from core.guard.quantities.exact import Check
from core.guard.quantities.extras import CallExtras, WindowSlots
from core.guard.quantities.forms import search_forms as search_forms  # named here by callers and tests
from core.guard.quantities.kinds import spec_quantities, typed_fields
from core.guard.quantities.leaves import ITEM_LISTS, SERIES_VALUES, Readings, projection_leaves, series_leaves
from core.guard.quantities.leaves import leaf_quantities as leaf_quantities  # named here by callers and tests
from core.guard.quantities.model import Kind, Origin, Quantity, Shown
from core.guard.quantities.result_text import Accept, ResultText
from core.guard.quantities.unit_values import typed_quantities, unit_typing
from core.tools.contract import FieldKind, QuantityKinds
from core.tools.registry import current_registry


class CallEvidence:
    """The evidence of one referencable call, for one guard (kept in its caches: everything here is exact)."""

    def __init__(self, record: CanonicalRecord, readings: Readings | None = None) -> None:
        self.tool_call_id = record.tool_call_id
        self.readings: Readings = {} if readings is None else readings
        """The current check's memo of evidence texts read (leaves.Readings; the grounder hands each check's own)."""
        self.window_slots: WindowSlots | None = None
        """The current check's slots of window times by window values (extras.WindowSlots), when the grounder
        hands one."""
        self.projection: Mapping[str, Any] = record.projection or {}
        self.arguments: Mapping[str, Any] = record.effective_arguments
        self._columns: Sequence[Any] = self.projection.get("columns") or []
        self._index: tuple[Shown, ...] | None = None
        self._head: tuple[Shown, ...] | None = None
        self._head_seen: list[Shown] = []
        """The head as far as a search has read it (`_head_rest` yields the rest, in the same order)."""
        self._head_rest: Iterator[Shown] | None = None
        self._points: tuple[Shown, ...] | None = None
        self._spec = current_registry().find(record.tool_name)
        self._items_field = (self._spec.items_field if self._spec is not None
                             and self._spec.items_field not in ITEM_LISTS else None)
        """A tool listing its items under a field of its own (MCP's `content`): read through its spec's leaves."""
        self._kinds = self._spec.quantities if self._spec is not None else QuantityKinds()
        self._typed = typed_fields(self._kinds)
        """The tool declares kinds the lazy search cannot read by key alone (core/guard/quantities/kinds.py): those
        fields are typed in the index, and every claim about this call is answered there."""
        self._results = ResultText(self.tool_call_id, self.projection, self._items_field, self._columns, self._kinds)
        self._extras = CallExtras(self.tool_call_id, self.projection, self.arguments)

    @property
    def has_series(self) -> bool:
        """Whether the call lists metric series (query_metrics)."""
        return bool(self.projection.get("series"))

    @property
    def text(self) -> str:
        """The results as indented JSON (one value per line), built on first use."""
        return self._results.text

    # ---- searches ---------------------------------------------------------------------------------------------

    def find(self, forms: Sequence[str], accept: Accept, standalone: bool = False) -> Shown | None:
        """A result quantity accepted by `accept` at an occurrence of one of the written forms, else None (then ask
        search_extra and search_index). None at once for a tool with declared kinds (its index types them)."""
        if self._typed:
            return None
        return self._results.find(forms, accept, standalone, lambda: self.search_index(accept))

    def find_exact(self, forms: Sequence[str], check: Check) -> bool:
        """Whether a result value writes one of the tokens (see core/guard/quantities/exact.py)."""
        return self._results.find_exact(forms, check)

    def search(self, forms: Sequence[str], accept: Accept, standalone: bool = False, query: bool = False) -> Shown | None:
        """find(), then the window and limit (and query), then the full index: the complete answer for this call."""
        found = self.find(forms, accept, standalone)
        if found is None:
            found = self.search_extra(accept, query)
        return found if found is not None else self.search_index(accept)

    def search_extra(self, accept: Accept, query: bool, claim: Quantity | None = None) -> Shown | None:
        """The window, limit and (when `query`) query quantities accepted by `accept`; given the claim `accept`
        grounds, only those that may show its value are tried (the same answer, see CallExtras.candidates)."""
        extra = self.extra() if claim is None else self._extras.candidates(claim, self.readings, self.window_slots)
        found = next((s for s in extra if accept(s)), None)
        if found is None and query:
            found = next((s for s in self.query() if accept(s)), None)
        return found

    def search_index(self, accept: Accept) -> Shown | None:
        """A result quantity of the full index accepted by `accept` (a series' points are indexed only when its
        summary and everything else did not answer)."""
        found = self._first_in_head(accept)
        if found is None and self.has_series:
            found = next((s for s in self.points() if accept(s)), None)
        return found

    # ---- the full index -------------------------------------------------------------------------------------

    def index(self) -> tuple[Shown, ...]:
        """Every result quantity of the call, with item and field (built once)."""
        if self._index is None:
            self._index = self.head() + self.points()
        return self._index

    def head(self) -> tuple[Shown, ...]:
        """The index without metric series' points (count, items, series labels and summaries)."""
        if self._head is None:
            self._head = (*self._head_seen, *self._rest_of_head())
            self._head_seen, self._head_rest = [], None
        return self._head

    def _rest_of_head(self) -> Iterator[Shown]:
        if self._head_rest is None:
            self._head_rest = self._walk()
        return self._head_rest

    def _first_in_head(self, accept: Accept) -> Shown | None:
        """The first head quantity accepted, reading the head only as far as needed (the rest is built when a later
        search goes past it): the same answer as scanning the whole head, without typing every point of a series
        whose summary already answered."""
        if self._head is not None:
            return next((s for s in self._head if accept(s)), None)
        found = next((s for s in self._head_seen if accept(s)), None)
        if found is not None:
            return found
        seen = self._head_seen
        for shown in self._rest_of_head():
            seen.append(shown)
            if accept(shown):
                return shown
        self._head = tuple(seen)
        self._head_seen, self._head_rest = [], None
        return None

    def points(self) -> tuple[Shown, ...]:
        """The quantities of metric series' points (values and times)."""
        if self._points is None:
            self._points = tuple(self._series(points=True))
        return self._points

    def _walk(self) -> Iterator[Shown]:
        cid, projection = self.tool_call_id, self.projection
        count = projection.get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            yield Shown(Quantity(Kind.COUNT, float(count), str(count), key="count"), Origin.RESULT, cid, -1, "count")
        readings = self.readings
        for i, key, value in self.leaves():
            words = self._kinds.of(key).kind is FieldKind.WORDS
            for quantity in leaf_quantities(value, key, words, readings):
                yield Shown(quantity, Origin.RESULT, cid, i, key)
        yield from self._declared()
        yield from self._series()
        if self._spec is not None and self._typed:
            yield from spec_quantities(cid, self._spec, projection)

    def _series(self, points: bool = False) -> Iterator[Shown]:
        """Metric series (query_metrics): values typed by their series' unit and kind, times as date-times; the
        labels and summaries, or (points=True) the points."""
        cid, readings = self.tool_call_id, self.readings
        for i, item in enumerate(self.projection.get("series") or []):
            if not isinstance(item, dict):
                continue
            typed = unit_typing(str(item.get("unit") or ""), str(item.get("kind") or ""))
            for path, key, value in series_leaves(item, points):
                if path in SERIES_VALUES and isinstance(value, int | float) and not isinstance(value, bool):
                    text = repr(value) if isinstance(value, float) else str(value)
                    found = typed_quantities(float(value), text, typed)
                else:
                    found = leaf_quantities(value, key, readings=readings)
                for quantity in found:
                    yield Shown(quantity, Origin.RESULT, cid, i, path)

    def _declared(self) -> Iterator[Shown]:
        """Numbers whose unit a sibling field or the row's metric name declares, typed in that unit (besides their
        plain reading above): `value=92.0, unit="Percent"` is also 92 %."""
        cid, projection = self.tool_call_id, self.projection
        columns = [str(c) for c in self._columns]
        rows: list[tuple[int, Mapping[str, Any]]] = [
            (i, dict(zip(columns, row, strict=False))) for i, row in enumerate(projection.get("rows") or [])
            if isinstance(row, list)
        ]
        rows += [(i, log["fields"]) for i, log in enumerate(projection.get("logs") or [])
                 if isinstance(log, dict) and isinstance(log.get("fields"), dict)]
        for i, row in rows:
            for key, unit in row_units(row).items():
                value = row[key]
                quantity = declared_quantity(float(value), unit, repr(value) if isinstance(value, float) else str(value), key)
                if quantity is not None and math.isfinite(quantity.number):
                    yield Shown(quantity, Origin.RESULT, cid, i, key)

    def leaves(self) -> Iterator[tuple[int, str, Any]]:
        """(item index, field or column, value) of every listed item's scalar values."""
        return projection_leaves(self.projection, self._columns, self._items_field, self._spec)

    def items(self) -> int:
        """How many items the projection lists."""
        own = len(self.projection.get(self._items_field) or []) if self._items_field is not None else 0
        return own + sum(len(self.projection.get(name) or []) for name in ITEM_LISTS)

    # ---- window, limit, query (core/guard/quantities/extras.py) -------------------------------------------

    def extra(self) -> tuple[Shown, ...]:
        """The window bounds (projection and arguments) and the limit, with their origins."""
        return self._extras.extra(self.readings)

    def query(self) -> tuple[Shown, ...]:
        """The quantities of the query, SQL, service and level arguments (origin QUERY)."""
        return self._extras.query()

    def window(self) -> list[Quantity]:
        """The searched window's bounds as date-times (projection first, then the start/end arguments)."""
        return self._extras.window(self.readings)
