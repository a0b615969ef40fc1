"""The README pictures' source: the preview incident verifies, and each message kind renders to a page."""

from __future__ import annotations

from core.contracts.release import Outcome
from entrypoints.preview import outcome_with, pages


async def test_preview_draft_is_published_by_the_real_release_pipeline() -> None:
    """The recorded draft passes the real EvidenceGuard (so the report picture shows a real report)."""
    assert (await outcome_with(None)).outcome is Outcome.SUCCESS


async def test_every_message_kind_renders_to_a_page() -> None:
    """report, fallback, failure, progress and evidence: each a page with its defining content."""
    rendered = await pages()
    assert set(rendered) == {"report", "fallback", "failure", "progress", "evidence"}
    assert "Show evidence" in rendered["report"]
    assert "The reviewer said" in rendered["fallback"]
    assert "model endpoint" in rendered["failure"]
    assert "Independent review of the evidence" in rendered["progress"]
    assert "<table>" in rendered["evidence"]
