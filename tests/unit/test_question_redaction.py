"""A secret pasted into a question is redacted before the run record (SQL) keeps it, and so is the stored report."""

from __future__ import annotations

from tests.unit.test_chat_service import make_rig, turn

PASTED = "why does checkout fail with DATABASE_URL=postgres://app:Hunt3r!2@db:5432/shop and sk_live_51H8xYzAbCdEfGhIjKlMn?"


async def test_question_is_stored_redacted() -> None:
    """The RunRecord's query keeps the question's words, without the password or the key."""
    rig = make_rig()
    await rig.service.handle(turn(PASTED))
    (record,) = rig.runs.runs.values()
    assert "Hunt3r!2" not in record.query
    assert "51H8xYzAbCdEfGhIjKlMn" not in record.query
    assert record.query.startswith("why does checkout fail with DATABASE_URL=postgres://app:[redacted]@db:5432/shop")
    assert "sk_live_…[redacted]" in record.query
