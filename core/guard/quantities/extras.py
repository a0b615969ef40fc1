"""What a call says besides its results: the searched window (projection window or start/end arguments), the limit
and the query text. Each is a separate origin that grounds only what it says (see model.Origin and match.Context).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from core.guard.quantities.extract import extract
from core.guard.quantities.leaves import Readings, read_text
from core.guard.quantities.match import clock_slot, shown_clock
from core.guard.quantities.model import Kind, Origin, Quantity, Shown

WINDOW_KEYS = (("window_start", "projection"), ("window_end", "projection"))
WINDOW_ARGUMENTS = ("start", "end")
LIMIT_ARGUMENTS = ("limit", "top_k")
QUERY_ARGUMENTS = ("query", "sql", "service", "level")
WindowSlots = dict[tuple[tuple[str | None, ...], float], dict[int, tuple[tuple[Quantity, str], ...]]]
"""(the window values of a call, a precision) -> clock slot -> the (quantity, key) of its window bounds showing a time
in it, for one check: the calls of a run mostly search one window, so its times are slotted once, not per call (a
pure function of those values)."""


class CallExtras:
    """One call's window bounds, limit and query quantities, built on first use."""

    def __init__(self, tool_call_id: str, projection: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        self.tool_call_id = tool_call_id
        self.projection = projection
        self.arguments = arguments
        self._extra: tuple[Shown, ...] | None = None
        self._clock_slots: dict[float, dict[int, list[Shown]]] = {}
        """Precision -> clock slot -> the extra() quantities showing a time in it (candidates)."""
        self._query: tuple[Shown, ...] | None = None
        self._window_values: tuple[str | None, ...] | None = None
        """The window bounds' values (None for any that is not text), the key of this call's WindowSlots."""

    def extra(self, readings: Readings | None = None) -> tuple[Shown, ...]:
        """The window bounds (projection and arguments) and the limit, with their origins (`readings`: the check's
        memo of evidence texts read, see leaves.Readings)."""
        if self._extra is None:
            self._extra = tuple(self._window_and_limit({} if readings is None else readings))
        return self._extra

    def candidates(self, claim: Quantity, readings: Readings | None = None,
                   shared: WindowSlots | None = None) -> Sequence[Shown]:
        """The extra() quantities, in order, that may show the claim's value: for a time of day, those showing a
        time in the claim's slot (match.same_value grounds no other), looked up by slot; all of them otherwise.
        `shared`: the check's slots by window values (WindowSlots), used while this call's extra() is not built."""
        if claim.kind is not Kind.TIME or not isinstance(claim.value, float):
            return self.extra(readings)
        if shared is not None and self._extra is None and claim.tolerance not in self._clock_slots:
            return self._shared_candidates(claim, {} if readings is None else readings, shared)
        slots = self._clock_slots.get(claim.tolerance)
        if slots is None:
            slots = self._clock_slots[claim.tolerance] = {}
            for shown in self.extra(readings):
                clock = shown_clock(shown.quantity)
                if clock is not None:
                    slots.setdefault(clock_slot(clock, claim.tolerance), []).append(shown)
        return slots.get(clock_slot(claim.value, claim.tolerance), ())

    def _window_sources(self) -> list[tuple[str, Any]]:
        sources: list[tuple[str, Any]] = [(key, self.projection.get(key)) for key, _ in WINDOW_KEYS]
        return sources + [(key, self.arguments.get(key)) for key in WINDOW_ARGUMENTS]

    def _shared_candidates(self, claim: Quantity, readings: Readings, shared: WindowSlots) -> list[Shown]:
        """candidates() for a time of day from the check's slots of the same window values: the window bounds of
        extra() showing a time in the claim's slot, in order (the limit never shows one), as this call's."""
        assert isinstance(claim.value, float)
        if self._window_values is None:
            self._window_values = tuple(value if isinstance(value, str) else None for _, value in self._window_sources())
        signature = (self._window_values, claim.tolerance)
        table = shared.get(signature)
        if table is None:
            built: dict[int, list[tuple[Quantity, str]]] = {}
            for key, value in self._window_sources():
                if isinstance(value, str):
                    for quantity in read_text(value, readings):
                        clock = shown_clock(quantity)
                        if clock is not None:
                            built.setdefault(clock_slot(clock, claim.tolerance), []).append((quantity, key))
            table = shared[signature] = {slot: tuple(found) for slot, found in built.items()}
        hits = table.get(clock_slot(claim.value, claim.tolerance), ())
        return [Shown(quantity, Origin.WINDOW, self.tool_call_id, -1, key) for quantity, key in hits]

    def query(self) -> tuple[Shown, ...]:
        """The quantities of the query, SQL, service and level arguments (origin QUERY)."""
        if self._query is None:
            self._query = tuple(
                Shown(quantity, Origin.QUERY, self.tool_call_id, -1, key)
                for key in QUERY_ARGUMENTS
                if isinstance(value := self.arguments.get(key), str)
                for quantity in extract(value, words=False)
            )
        return self._query

    def window(self, readings: Readings | None = None) -> list[Quantity]:
        """The searched window's bounds as date-times (projection first, then the start/end arguments)."""
        return [s.quantity for s in self.extra(readings) if s.origin is Origin.WINDOW and s.quantity.kind is Kind.DATETIME]

    def _window_and_limit(self, readings: Readings) -> Iterator[Shown]:
        cid = self.tool_call_id
        for key, value in self._window_sources():
            if isinstance(value, str):
                for quantity in read_text(value, readings):
                    yield Shown(quantity, Origin.WINDOW, cid, -1, key)
        for key in LIMIT_ARGUMENTS:
            value = self.arguments.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                yield Shown(Quantity(Kind.NUMBER, float(value), str(value), key=key), Origin.LIMIT, cid, -1, key)
