"""`diagbot feedback --format csv` is spreadsheet-safe (OWASP CSV injection): no cell starts a formula."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest

from core.contracts.feedback import Feedback, Vote
from entrypoints.feedback_export import export, spreadsheet_safe

AT = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
                                  "\t=1+1", "\r=1+1"])
def test_a_cell_a_spreadsheet_would_evaluate_is_made_text(cell: str) -> None:
    votes = [Feedback(run_id="run_1", user=cell, team=cell, vote=Vote.UP, at=AT)]
    [row] = list(csv.DictReader(io.StringIO(export(votes, "csv"), newline="")))
    assert row["user"] == row["team"] == "'" + cell
    assert row["run_id"] == "run_1"


def test_ordinary_cells_are_unchanged() -> None:
    assert spreadsheet_safe("U0123ABC") == "U0123ABC"
    assert spreadsheet_safe("2026-12-01T00:00:00+00:00") == "2026-12-01T00:00:00+00:00"
    assert spreadsheet_safe("") == ""
