"""A percentage derived from two values of one listed row (PERCENT_OF) rests on a plausible (part, whole) pair.

The demo's `s_pool` rows show max_size=20 active=20 idle=0 waiting=60/64/52 timeouts=26/18/26. Any ratio of two of
those cells used to ground a percentage ('33 %' as max_size=20 of waiting=60, '90 %' as timeouts=18 of max_size=20),
so 'The pool was at N % of its capacity' passed for ten values of N where only 100 is true. The whole must be a
capacity-like field (max, size, capacity, limit, total) or named by the text, the part named by the text (or, when the
text names no field, a usage-like one: active, used, busy), and never larger than the whole.
"""

from __future__ import annotations

import pytest

from core.contracts.evidence import CanonicalRecord
from core.guard.corpus import Case, run_case
from core.guard.rules import RuleSet, load_rules
from eval.paraphrase.generate import STATS, Fact, _draft, shared_records


@pytest.fixture(scope="module")
def shared() -> dict[str, CanonicalRecord]:
    return shared_records()


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return load_rules()


async def _passes(text: str, shared: dict[str, CanonicalRecord], rules: RuleSet, field: str = "analysis") -> bool:
    fact = Fact(STATS, (text,), (), ())
    case = Case(id="pct", category="x", calls=list(STATS), draft=_draft(fact, field, text), expect={"valid": True})
    return (await run_case(case, shared, rules)).valid


@pytest.mark.parametrize("template", ["The pool was at {n} % of its capacity.", "{n} % of the pool's connections were active."])
async def test_only_the_true_percentage_of_the_pool_passes(template: str, shared: dict[str, CanonicalRecord],
                                                           rules: RuleSet) -> None:
    """N % for N = 0..200 against s_pool: 100 is active=20 of max_size=20; every other N is invented."""
    passed = [n for n in range(201) if await _passes(template.format(n=n), shared, rules)]
    assert passed == [100]


@pytest.mark.parametrize("text", [
    "The pool was at 33 % of its capacity.",  # max_size=20 of waiting=60
    "The pool was at 28 % of its capacity.",  # timeouts=18 of waiting=64
    "The pool was at 90 % of its capacity.",  # timeouts=18 of max_size=20: timeouts are not a use of the pool
    "The pool was at 0 % of its capacity.",  # idle=0 of anything
    "100 % of the pool's connections were idle.",  # the text names idle: active=20 is not its part
    "20 % of the pool was idle.",
    "The pool was 75% busy.",
])
async def test_a_ratio_of_unrelated_cells_is_not_a_percentage(text: str, shared: dict[str, CanonicalRecord],
                                                              rules: RuleSet) -> None:
    assert not await _passes(text, shared, rules)


@pytest.mark.parametrize("text", [
    "The pool was at 100 % of its capacity.",
    "The pool was 100% busy.",
    "100% of the pool was in use.",
    "0 % of the pool's connections were idle.",  # idle=0 of max_size=20, the text names idle
    "20 of 20 connections were active (100 %).",  # both numbers stated
    "The pool was at 100% of its size: active=20 of max_size=20.",
])
async def test_honest_percentages_of_the_pool_pass(text: str, shared: dict[str, CanonicalRecord], rules: RuleSet) -> None:
    for field in ("analysis", "conclusion"):
        assert await _passes(text, shared, rules, field), field


async def test_a_field_named_in_another_cited_row_is_not_replaced_by_this_rows_usage(
        shared: dict[str, CanonicalRecord], rules: RuleSet) -> None:
    """'The batch held N % of the pool' (s_pool + s_batch) names db_connections_held of the batch's row: the pool's
    active=20 of max_size=20 does not make it 100 %."""
    fact = Fact(("s_pool", "s_batch"), ("",), (), ())
    passed = []
    for n in range(201):
        text = f"The batch held {n} % of the pool."
        case = Case(id="pct", category="x", calls=list(fact.calls), draft=_draft(fact, "analysis", text),
                    expect={"valid": True})
        if (await run_case(case, shared, rules)).valid:
            passed.append(n)
    assert passed in ([], [80])
