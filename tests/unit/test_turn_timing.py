"""TurnTiming: every TTL, grace and poll interval of a turn follows from the run budgets and the two queue settings,
and the orderings the lifecycle relies on hold for any of them (hypothesis)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from core.run import release_grace_s
from core.settings import Settings
from core.turns.timing import SLACK_ATTEMPT_S, TurnTiming


def test_the_production_chain_from_the_budgets() -> None:
    timing = TurnTiming.from_settings(Settings(slack_bot_token=SecretStr("x"), diag_run_deadline_s=180,
                                               diag_queue_claim_after_s=30, diag_shutdown_grace_s=20))
    assert timing.backstop_s == 180 + release_grace_s(180)
    assert timing.due_s == timing.backstop_s + 10
    assert timing.answer_by_s == timing.backstop_s + 60
    assert timing.answer_claim_ttl_s == 90  # what bot/final_once.py hard-coded, now derived
    assert timing.stale_run_age_s == 90  # what bot/recovery.py hard-coded
    assert timing.recovery_interval_s == 60
    assert timing.heartbeat_s == 5
    assert timing.shutdown_grace_s == 20


@given(deadline=st.floats(1, 3600), claim_after=st.floats(0.1, 600), grace=st.floats(0.1, 120),
       margin=st.floats(0.1, 600))
def test_the_orderings_hold_for_any_settings(deadline: float, claim_after: float, grace: float, margin: float) -> None:
    t = TurnTiming(run_deadline_s=deadline, claim_after_s=claim_after, watchdog_grace_s=grace, final_margin_s=margin)
    assert t.backstop_s > t.run_deadline_s
    assert t.due_s < t.answer_by_s  # the watchdog's FAILURE still has time to be delivered
    assert t.answer_claim_ttl_s > t.delivery_s + SLACK_ATTEMPT_S  # a live poster never loses its claim
    assert t.heartbeat_s * 3 <= t.claim_after_s or t.heartbeat_s == 0.05  # a late beat never loses a live job
    assert t.stale_run_age_s >= 3 * t.claim_after_s  # recovery only after a take-over had its chance
    assert t.order_poll_s <= t.heartbeat_s
    assert t.take_block_s <= 1.0
