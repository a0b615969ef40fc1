"""A count whose noun names the table a query lists ('5 alerts' of FROM alerts) rests on the call's count, a cell
its noun names, or a derivation; not on a number inside a cell's free text.

The demo's alerts table has five rows, one with the summary 'HikariPool-1 active=20 idle=0 waiting=57 for 1m':
'N alerts fired' passed for N = 0, 5, 20 and 57. Counts whose noun names something else stay loose.
"""

from __future__ import annotations

import pytest

from core.contracts.evidence import CanonicalRecord
from core.guard.corpus import Case, run_case
from core.guard.rules import RuleSet, load_rules
from eval.paraphrase.generate import ALERTS, Fact, _draft, shared_records
from testkit.release import sql_record


@pytest.fixture(scope="module")
def shared() -> dict[str, CanonicalRecord]:
    return shared_records()


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return load_rules()


async def _passes(text: str, shared: dict[str, CanonicalRecord], rules: RuleSet, calls: tuple[str, ...] = ALERTS,
                  records: list[CanonicalRecord] | None = None) -> bool:
    fact = Fact(calls, (text,), (), ())
    case = Case(id="cnt", category="x", calls=[c for c in calls if c in shared], records=records or [],
                draft=_draft(fact, "analysis", text), expect={"valid": True})
    return (await run_case(case, shared, rules)).valid


async def test_only_the_number_of_listed_alerts_counts_alerts(shared: dict[str, CanonicalRecord], rules: RuleSet) -> None:
    passed = [n for n in range(101) if await _passes(f"{n} alerts fired during the incident.", shared, rules)]
    assert passed == [5]


@pytest.mark.parametrize("text", [
    "five alerts fired during the incident.",
    "The HikariPoolExhausted alert showed 57 waiting requests and 20 active connections.",
    "HikariPool-1 had 0 idle connections when the alert fired.",
])
async def test_honest_counts_of_the_alerts_table_pass(text: str, shared: dict[str, CanonicalRecord], rules: RuleSet) -> None:
    assert await _passes(text, shared, rules)


async def test_a_column_the_noun_names_grounds_the_count(shared: dict[str, CanonicalRecord], rules: RuleSet) -> None:
    record = sql_record("eval-cnt", "c_by_service", "SELECT service, count(*) AS alerts FROM alerts GROUP BY service",
                        ["service", "alerts"], [["order-service", 3], ["checkout-api", 2]])
    assert await _passes("order-service raised 3 alerts.", shared, rules, ("c_by_service",), [record])
    assert not await _passes("order-service raised 4 alerts.", shared, rules, ("c_by_service",), [record])
