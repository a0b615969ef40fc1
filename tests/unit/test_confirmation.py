"""Human confirmation is decided in core, not by the model: only evidence collection is exempt, changes never are."""

from __future__ import annotations

import pytest

from bot.render.report import CONFIRM_MARKER, report_blocks
from core.contracts.draft import Action, DiagnosisDraft
from core.contracts.release import Outcome
from core.release.confirmation import changes_system, collects_evidence_only, needs_confirmation, with_confirmations
from tests.unit.test_guard_codes import valid_draft
from tests.unit.test_release import harness

CHANGES = [
    "DROP TABLE orders", "Restart order-service", "Roll back order-service to 4.17.2", "Scale order-service to 6 pods",
    "Deploy 4.18.1 with the pool fix", "DELETE FROM sessions WHERE expired", "UPDATE payments SET status='retry'",
    "kubectl rollout undo deployment/order-service", "Raise maximumPoolSize to 50", "Flush the Redis cache",
    "Check the pool size, then restart the pods", "Kill the long-running query 4711", "ALTER TABLE orders ADD INDEX",
    "Truncate the outbox table",
]
EVIDENCE = [
    "Check the HikariPool metrics of order-service for the same window",
    "Query the deployments table for changes after 22:00",
    "Compare the pool settings of 4.18.0 with 4.17.2",
    "Look at payment-service ERROR logs between 23:00 and 23:30",
    "Run a read-only SELECT on db_connection_pool_stats",
]


@pytest.mark.parametrize("text", CHANGES)
def test_changes_always_need_confirmation_whatever_the_flag(text: str) -> None:
    """Deploys, rollbacks, restarts, scaling, DDL/DML, deletions, config: confirmation even with the flag off."""
    assert changes_system(text)
    assert needs_confirmation(Action(action=text, based_on_analysis_ids=["a1"], requires_human_confirmation=False))


@pytest.mark.parametrize("text", EVIDENCE)
def test_collecting_evidence_needs_no_confirmation(text: str) -> None:
    """Actions that only collect more evidence are shown without the marker (unless the model asked for one)."""
    assert collects_evidence_only(text)
    assert not needs_confirmation(Action(action=text, based_on_analysis_ids=["a1"], requires_human_confirmation=False))
    assert needs_confirmation(Action(action=text, based_on_analysis_ids=["a1"], requires_human_confirmation=True))


@pytest.mark.parametrize("text", ["Tell the payments team", "Wait for the next batch run", "Escalate to the DBA on call"])
def test_anything_else_needs_confirmation(text: str) -> None:
    """An allow-list: an action that is not recognisably evidence collection is shown as needing confirmation."""
    assert needs_confirmation(Action(action=text, based_on_analysis_ids=["a1"], requires_human_confirmation=False))


async def test_release_publishes_actions_with_the_decided_flags_and_the_report_shows_the_marker() -> None:
    """A supported draft whose DROP TABLE action says 'no confirmation' is published with the marker on it, while
    its evidence-only action stays unmarked."""
    data = valid_draft()
    data["action_plan"] = [
        {"action": "DROP TABLE orders", "based_on_analysis_ids": ["a1"], "requires_human_confirmation": False},
        {"action": "Check the pool metrics of order-service", "based_on_analysis_ids": ["a1"],
         "requires_human_confirmation": False},
    ]
    h = await harness()
    outcome = await h.release.release(h.ctx, DiagnosisDraft.model_validate(data))
    assert outcome.outcome is Outcome.SUCCESS
    assert outcome.report is not None
    assert [a.requires_human_confirmation for a in outcome.report.draft.action_plan] == [True, False]
    rendered = [line for b in report_blocks(outcome.report) if b.get("type") == "section"
                for line in b["text"]["text"].splitlines()]  # one action per line
    assert any(CONFIRM_MARKER in t and "DROP TABLE orders" in t for t in rendered)
    assert any("Check the pool metrics" in t and CONFIRM_MARKER not in t for t in rendered)


def test_with_confirmations_keeps_everything_else() -> None:
    """Only the flags change; the rest of the draft is as the guard verified it."""
    draft = DiagnosisDraft.model_validate(valid_draft())
    out = with_confirmations(draft)
    assert out.model_dump(exclude={"action_plan"}) == draft.model_dump(exclude={"action_plan"})
    assert [a.action for a in out.action_plan] == [a.action for a in draft.action_plan]
