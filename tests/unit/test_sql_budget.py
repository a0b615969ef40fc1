"""query_mysql byte budgets: each cell is cut at a byte bound with a visible marker (never inside a character), and a
result stops at the row cap or the byte budget, whichever comes first."""

from __future__ import annotations

from decimal import Decimal

from core.tools.sql.budget import CELL_MARKER, ResultBudget, cut_utf8


def test_a_long_cell_is_cut_with_a_marker() -> None:
    budget = ResultBudget(row_cap=10, cell_max_bytes=1000, result_max_bytes=100_000)
    assert budget.add(["x" * 5000, 7])
    cell = budget.rows[0][0]
    assert cell.endswith(CELL_MARKER)
    assert len(cell.encode()) <= 1000
    assert budget.rows[0][1] == 7
    assert budget.cells_truncated == 1


def test_cuts_never_split_a_character() -> None:
    text = "é" * 1000
    cut = cut_utf8(text, 101)
    assert cut == "é" * 50
    budget = ResultBudget(row_cap=1, cell_max_bytes=300, result_max_bytes=10_000)
    budget.add(["€" * 1000])
    assert budget.rows[0][0].encode().decode() == budget.rows[0][0]


def test_the_result_stops_at_the_byte_budget() -> None:
    budget = ResultBudget(row_cap=1000, cell_max_bytes=1000, result_max_bytes=10_000)
    kept = 0
    while budget.add(["y" * 900]):
        kept += 1
    assert 5 <= kept <= 11
    assert budget.byte_cap_hit
    assert not budget.row_cap_hit
    assert budget.used_bytes <= 10_000
    assert budget.notes()["byte_cap_hit"] is True


def test_the_result_stops_at_the_row_cap() -> None:
    budget = ResultBudget(row_cap=3)
    for i in range(10):
        if not budget.add([i, Decimal("1.50")]):
            break
    assert budget.rows == [[0, "1.50"], [1, "1.50"], [2, "1.50"]]
    assert budget.row_cap_hit
    assert not budget.byte_cap_hit
