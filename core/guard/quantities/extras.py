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

    def extra(self, readings: Readings | None = None) -> tuple[Shown, ...]:
        """The window bounds (projection and arguments) and the limit, with their origins (`readings`: the check's
        memo of evidence texts read, see leaves.Readings)."""
        if self._extra is None:
            self._extra = tuple(self._window_and_limit({} if readings is None else readings))
        return self._extra

    def candidates(self, claim: Quantity, readings: Readings | None = None) -> Sequence[Shown]:
        """The extra() quantities, in order, that may show the claim's value: for a time of day, those showing a
        time in the claim's slot (match.same_value grounds no other), looked up by slot; all of them otherwise."""
        if claim.kind is not Kind.TIME or not isinstance(claim.value, float):
            return self.extra(readings)
        slots = self._clock_slots.get(claim.tolerance)
        if slots is None:
            slots = self._clock_slots[claim.tolerance] = {}
            for shown in self.extra(readings):
                clock = shown_clock(shown.quantity)
                if clock is not None:
                    slots.setdefault(clock_slot(clock, claim.tolerance), []).append(shown)
        return slots.get(clock_slot(claim.value, claim.tolerance), ())

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
        sources: list[tuple[str, Any]] = [(key, self.projection.get(key)) for key, _ in WINDOW_KEYS]
        sources += [(key, self.arguments.get(key)) for key in WINDOW_ARGUMENTS]
        for key, value in sources:
            if isinstance(value, str):
                for quantity in read_text(value, readings):
                    yield Shown(quantity, Origin.WINDOW, cid, -1, key)
        for key in LIMIT_ARGUMENTS:
            value = self.arguments.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                yield Shown(Quantity(Kind.NUMBER, float(value), str(value), key=key), Origin.LIMIT, cid, -1, key)
