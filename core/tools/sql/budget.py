"""Byte budgets for query_mysql results: rows are taken one at a time, each cell cut at a byte bound with a visible
marker, and the result stops at a row cap and a total byte bound, whatever the database sends."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from core.tools.sql.values import to_json_scalar

DEFAULT_CELL_MAX_BYTES = 64 * 1024
DEFAULT_RESULT_MAX_BYTES = 1024 * 1024
CELL_MARKER = "…[truncated]"
_SCALAR_BYTES = 24  # what a number, bool, null or short date costs in the JSON record, roughly


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of text that fits max_bytes of UTF-8 (never splits a character)."""
    if len(text) * 4 <= max_bytes:
        return text
    return text.encode()[:max_bytes].decode(errors="ignore")


@dataclass
class ResultBudget:
    """Accumulates converted rows until the row cap or the byte budget is reached."""

    row_cap: int
    cell_max_bytes: int = DEFAULT_CELL_MAX_BYTES
    result_max_bytes: int = DEFAULT_RESULT_MAX_BYTES
    rows: list[list[Any]] = field(default_factory=list)
    used_bytes: int = 0
    cells_truncated: int = 0
    row_cap_hit: bool = False
    byte_cap_hit: bool = False

    @property
    def full(self) -> bool:
        """No further row will be kept."""
        return self.row_cap_hit or self.byte_cap_hit

    def _cell(self, value: Any) -> tuple[Any, int]:
        scalar = to_json_scalar(value)
        if not isinstance(scalar, str):
            return scalar, _SCALAR_BYTES
        if len(scalar) * 4 <= self.cell_max_bytes:
            return scalar, len(scalar.encode()) + 2
        encoded = len(scalar.encode())
        if encoded <= self.cell_max_bytes:
            return scalar, encoded + 2
        self.cells_truncated += 1
        kept = cut_utf8(scalar, max(0, self.cell_max_bytes - len(CELL_MARKER.encode())))
        return kept + CELL_MARKER, self.cell_max_bytes + 2

    def add(self, row: Iterable[Any]) -> bool:
        """Keep one database row; False once the result is full (the caller stops fetching)."""
        if self.full:
            return False
        if len(self.rows) >= self.row_cap:
            self.row_cap_hit = True
            return False
        converted: list[Any] = []
        size = 2
        for value in row:
            cell, cost = self._cell(value)
            converted.append(cell)
            size += cost + 1
        if self.used_bytes + size > self.result_max_bytes:
            self.byte_cap_hit = True
            return False
        self.rows.append(converted)
        self.used_bytes += size
        return True

    def notes(self) -> dict[str, Any]:
        """What the budget did, for RawResult.notes."""
        return {
            "row_cap": self.row_cap,
            "row_cap_hit": self.row_cap_hit,
            "byte_cap_hit": self.byte_cap_hit,
            "cells_truncated": self.cells_truncated,
            "result_bytes": self.used_bytes,
            "cell_max_bytes": self.cell_max_bytes,
            "result_max_bytes": self.result_max_bytes,
        }
