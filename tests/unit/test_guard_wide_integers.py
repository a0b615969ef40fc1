"""Integers beyond 64 bits in a call's results (a SQL NUMERIC, an MCP result, a JSON log field): orjson refuses
them, so the guard's result text and the tools' size bounds fall back to json instead of failing the check."""

from __future__ import annotations

from typing import Any

from core.tools.item_bounds import json_size
from testkit.release import sql_record
from tests.unit.test_guard_codes import RUN, check, run_records, valid_draft

WIDE = 2**70  # 1180591620717411303424
LEDGER = "call_sql_ledger"


def wide_records() -> list[Any]:
    records = run_records()
    records.append(sql_record(RUN, LEDGER, "SELECT id, total FROM ledger LIMIT 5", ["id", "total"],
                              [[1, WIDE], [2, 7]]))
    return records


def draft_citing_sql(text: str) -> dict[str, Any]:
    draft = valid_draft()
    draft["analysis"].append({"analysis_id": "a9", "kind": "NORMAL", "text": text, "tool_call_ids": [LEDGER]})
    return draft


async def test_a_wide_integer_in_the_results_gives_a_verdict_and_grounds_itself() -> None:
    result = await check(draft_citing_sql(f"A ledger row holds a total of {WIDE}."), wide_records())
    assert result.valid, [(v.code, v.message) for v in result.violations]


async def test_an_invented_number_beside_a_wide_integer_is_still_refused() -> None:
    result = await check(draft_citing_sql("A ledger row holds a total of 4242."), wide_records())
    assert not result.valid
    assert {v.code for v in result.violations} == {"NUMBER_NOT_IN_EVIDENCE"}


def test_json_size_of_a_wide_integer_is_json_s_length() -> None:
    assert json_size({"n": WIDE}) == len('{"n":1180591620717411303424}')
    assert json_size({"n": 5, "s": "é"}) == len('{"n":5,"s":"é"}'.encode())
