"""What the values of a tool's fields are, for the EvidenceGuard (part of the toolset contract, core/tools/contract.py):
field kinds with units (fixed or from another field of the item), by path from the item, and which arguments ground
what."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from types import MappingProxyType
from typing import Any


class FieldKind(StrEnum):
    """What the values of one projection field are (SPEC §5 kinds, plus how to read text)."""

    GUESS = "guess"
    """Typed by the field's name where the value is bare (`latency_ms: 38` is 38 ms); text is read for quantities."""
    WORDS = "words"
    """Prose: read like GUESS, and numbers in words count too ("three retries" in a runbook)."""
    IGNORED = "ignored"
    """Never grounds anything (retrieval scores, internal ids)."""
    TIMESTAMP = "timestamp"
    COUNT = "count"
    NUMBER = "number"
    DURATION = "duration"
    SIZE = "size"
    PERCENT = "percent"
    RATIO = "ratio"
    """A fraction: 0.14 grounds "14 %"."""
    RATE = "rate"
    IDENTIFIER = "identifier"
    """Digits that are not a quantity (HTTP status, port, error code)."""
    VERSION = "version"


@dataclass(frozen=True)
class FieldQuantity:
    """The kind of one field and, for durations, sizes and rates, its unit.

    `unit` is fixed ("ms", "s", "bytes", "KiB"); `unit_field` names a field of the same item whose value is the unit
    (a path from the item: "unit", "metadata.unit"), for values whose unit is known only per item."""

    kind: FieldKind
    unit: str | None = None
    unit_field: str | None = None


GUESS = FieldQuantity(FieldKind.GUESS)


@dataclass(frozen=True)
class QuantityKinds:
    """The quantity kind of each item field, by path from the item ("timestamp", "first.value", "points.*.1": `*`
    stands for any list index); fields not named get `default`."""

    fields: Mapping[str, FieldQuantity] = field(default_factory=lambda: MappingProxyType({}))
    default: FieldQuantity = GUESS

    def of(self, path: str) -> FieldQuantity:
        """The declared kind of the field at `path` (numeric segments match `*`)."""
        found = self.fields.get(path)
        if found is None and self._wildcards is not None:
            if path.isascii() and "*" not in path:
                match = self._wildcards.fullmatch(path)
                found = self.fields[self._wildcard_names[int(match.lastgroup[1:])]] \
                    if match is not None and match.lastgroup is not None else None
            elif any(part.isdigit() for part in path.split(".")):  # other digits, a literal `*`: the plain scan
                parts = path.split(".")
                found = next((self.fields[name] for name in self._wildcard_names
                              if _path_matches(name.split("."), parts)), None)
        return found or self.default

    @cached_property
    def _wildcard_names(self) -> tuple[str, ...]:
        """The paths with a `*` segment, in declaration order (a path without one matches only itself)."""
        return tuple(name for name in self.fields if "*" in name.split("."))

    @cached_property
    def _wildcards(self) -> re.Pattern[str] | None:
        """The `*` paths as one alternation in declaration order, so the first that matches wins as in a scan
        (`*` is ASCII digits here; `of` scans the rare path with other digits). Compiled once per QuantityKinds."""
        if not self._wildcard_names:
            return None
        return re.compile("|".join(f"(?P<p{i}>{_path_pattern(name)})" for i, name in enumerate(self._wildcard_names)))


def _path_pattern(pattern: str) -> str:
    return r"\.".join("[0-9]+" if part == "*" else re.escape(part) for part in pattern.split("."))


def _path_matches(pattern: list[str], parts: list[str]) -> bool:
    return len(pattern) == len(parts) and all(p == q or (p == "*" and q.isdigit()) for p, q in zip(pattern, parts, strict=True))


@dataclass(frozen=True)
class ArgumentRoles:
    """Which arguments (and projection envelope fields) ground what (SPEC §5): a window grounds times, dates and its
    length; a limit only statements about the limit; query text only NEGATIVE_OBSERVATION analyses restating it."""

    window: tuple[str, ...] = ()
    """Arguments that are the window's bounds, e.g. ("start", "end")."""
    projection_window: tuple[str, ...] = ()
    """Envelope fields holding the effective window, e.g. ("window_start", "window_end"); read before `window`."""
    limit: tuple[str, ...] = ()
    query: tuple[str, ...] = ()


@dataclass(frozen=True)
class Leaf:
    """One scalar an item shows: its item index, its path from the item, the name that types it, its value."""

    item: int
    path: str
    key: str
    value: Any
