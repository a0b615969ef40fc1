"""Every fallback type and failure cause, produced by the real release pipeline and rendered for Slack, reads as
plain words: no violation or tool error codes, no Python reprs, no `call_…` ids, no unescaped mrkdwn."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable

import pytest

from bot.render.message import render_outcome
from core.contracts.release import FailureCause, ReleaseOutcome, SemanticVerdict, SemanticVerdictKind
from core.guard.rules import RULE_CODES
from core.release.wording import TOOL_ERROR_WORDS
from testkit.release import FixedJudge, ScriptedRepairer
from tests.fakes.slack_server import validate_blocks
from tests.unit.test_release import BROKEN, UNAVAILABLE, draft, harness

CODES = {c for codes in RULE_CODES.values() for c in codes} | set(TOOL_ERROR_WORDS) | {"CANONICAL_UNAVAILABLE"}
CODES |= {c.value for c in FailureCause if "_" in c.value}  # plain words like "cancelled" are fine
REPR = re.compile(r"\[\s*'|'\s*\]|\(\s*'|\{\s*'|\bNone\b|<[A-Z][A-Za-z]+[.:]|\b(?:FallbackType|EvidenceStatus|ToolName)\.")
CALL_ID = re.compile(r"\bcall_[A-Za-z0-9]")
QUOTING = SemanticVerdict(verdict=SemanticVerdictKind.UNSUPPORTED, reason='the draft says "OOM 12 times" but no line shows it')


async def _evidence_failed() -> ReleaseOutcome:
    h = await harness(repairer=ScriptedRepairer(result=None))
    return await h.release.release(h.ctx, draft(BROKEN))


async def _store_down() -> ReleaseOutcome:
    h = await harness()
    h.store.down = True
    return await h.release.release(h.ctx, draft())


async def _unsupported() -> ReleaseOutcome:
    h = await harness(judge=FixedJudge(verdict=QUOTING))
    return await h.release.release(h.ctx, draft())


async def _unavailable() -> ReleaseOutcome:
    h = await harness(judge=FixedJudge(verdict=UNAVAILABLE))
    return await h.release.release(h.ctx, draft())


def _failure(cause: FailureCause) -> Callable[[], Awaitable[ReleaseOutcome]]:
    async def run() -> ReleaseOutcome:
        h = await harness()
        return await h.release.failure(h.ctx, cause.value)
    return run


SCENARIOS: dict[str, Callable[[], Awaitable[ReleaseOutcome]]] = {
    "evidence-validation-failed": _evidence_failed,
    "evidence-store-down": _store_down,
    "semantic-unsupported": _unsupported,
    "semantic-unavailable": _unavailable,
    **{f"failure-{c.value}": _failure(c) for c in FailureCause},
}


def _visible_text(outcome: ReleaseOutcome) -> str:
    msg = render_outcome(outcome, 1.0)
    assert validate_blocks(msg.blocks) is None
    return msg.text + "\n" + json.dumps(msg.blocks, ensure_ascii=False)


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=list(SCENARIOS))
async def test_rendered_fallback_has_no_codes_reprs_or_call_ids(scenario: str) -> None:
    """The whole Slack payload of each fallback type is free of codes, reprs and internal call ids."""
    outcome = await SCENARIOS[scenario]()
    text = _visible_text(outcome)
    for code in CODES:
        assert not re.search(rf"(?<![A-Za-z_]){re.escape(code)}(?![A-Za-z_])", text.replace("`/diag trace", "")), code
    assert not REPR.search(text), REPR.search(text)
    assert not CALL_ID.search(text), CALL_ID.search(text)
    assert "OOM 12 times" not in text, "a reviewer reason quoting the draft is summarised, not shown"


async def test_sql_rows_render_as_a_table_with_column_names() -> None:
    """The deploy row of the run shows as an aligned monospace table under its column names."""
    text = _visible_text(await _evidence_failed())
    assert "service" in text
    assert "version" in text
    assert "deployed_at" in text
    assert " | " in text
    assert "-+-" in text
