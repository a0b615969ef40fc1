"""DiagnosisRelease: every path from a submitted draft to SUCCESS, SAFE_FALLBACK or FAILURE, with its timeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import EvidenceStatus
from core.contracts.progress import ProgressStage
from core.contracts.release import (
    FailureCause,
    FallbackStage,
    FallbackType,
    Outcome,
    ReleaseOutcome,
    SemanticVerdict,
    SemanticVerdictKind,
)
from core.contracts.run import EventType, TimelineEvent
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.release.fallback import STAGE_TEXT
from core.release.release import DiagnosisRelease
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryTimelineStore
from testkit.progress import RecordingProgress
from testkit.release import CountingCanonicalStore, FixedJudge, ScriptedRepairer
from tests.unit.test_guard_codes import E1, K1, L0, L1, RUN, S1, run_records, valid_draft

QUERY = "why is order-service throwing errors?"
MARKER = "ZZ-DRAFT-PROSE-MARKER"


@dataclass
class Harness:
    release: DiagnosisRelease
    ctx: RunContext
    store: CountingCanonicalStore
    timeline: InMemoryTimelineStore
    repairer: ScriptedRepairer
    judge: FixedJudge
    progress: RecordingProgress

    async def events(self) -> list[TimelineEvent]:
        return await self.timeline.list(RUN)

    async def types(self) -> list[EventType]:
        return [e.type for e in await self.events()]


async def harness(
    repairer: ScriptedRepairer | None = None, judge: FixedJudge | None = None, progress: RecordingProgress | None = None
) -> Harness:
    store = CountingCanonicalStore(InMemoryCanonicalStore())
    for record in run_records():
        await store.put(record)
    timeline_store = InMemoryTimelineStore()
    repairer = repairer or ScriptedRepairer()
    judge = judge or FixedJudge()
    progress = progress or RecordingProgress()
    ctx = RunContext(run_id=RUN, session_key="T:C:1", query=QUERY, timeline=RunTimeline(RUN, timeline_store), progress=progress)
    guard = EvidenceGuard(store, load_rules())
    return Harness(DiagnosisRelease(guard, repairer, judge, store), ctx, store, timeline_store, repairer, judge, progress)


def draft(edit: dict[str, Any] | None = None, marked: bool = False) -> DiagnosisDraft:
    """The valid draft, optionally with analysis a1 replaced, optionally with a marker in every piece of prose."""
    data = valid_draft()
    if edit:
        data["analysis"][0].update(edit)
    if marked:
        for item in data["analysis"]:
            item["text"] += f" {MARKER}"
        data["conclusion"]["text"] += f" {MARKER}"
        data["action_plan"][0]["action"] += f" {MARKER}"
        data["recommendations"][0]["text"] += f" {MARKER}"
        data["limitations"]["scope"] += f" {MARKER}"
        data["limitations"]["missing_info"].append(MARKER)
    return DiagnosisDraft.model_validate(data)


BROKEN = {"tool_call_ids": ["call_fabricated"]}
UNSUPPORTED = SemanticVerdict(verdict=SemanticVerdictKind.UNSUPPORTED, reason="the conclusion goes beyond the analyses")
UNAVAILABLE = SemanticVerdict(verdict=SemanticVerdictKind.UNAVAILABLE, reason="no well-formed verdict after retries")


async def test_supported_valid_draft_is_published_with_sources() -> None:
    """A valid draft the judge supports is SUCCESS: the draft plus one labelled source per cited call."""
    h = await harness()
    outcome = await h.release.release(h.ctx, draft())
    assert outcome.outcome is Outcome.SUCCESS
    assert outcome.fallback_type is None
    assert outcome.report is not None
    assert outcome.report.draft == draft()
    assert [s.tool_call_id for s in outcome.report.sources] == [L1, L0, S1]
    assert [s.evidence_status for s in outcome.report.sources] == [
        EvidenceStatus.EVIDENCE_FOUND,
        EvidenceStatus.NO_EVIDENCE,
        EvidenceStatus.EVIDENCE_FOUND,
    ]
    assert outcome.report.sources[0].label.startswith('query_logs order-service "HikariPool" ERROR')
    assert "(37 matches)" in outcome.report.sources[0].label
    assert outcome.verdict is not None
    assert outcome.verdict.verdict is SemanticVerdictKind.SUPPORTED
    assert await h.types() == [EventType.EVIDENCE_GUARD_INITIAL, EventType.SEMANTIC_GUARD, EventType.RELEASE_DECISION]
    assert h.repairer.calls == []
    assert h.progress.stages == [ProgressStage.EVIDENCE_CHECK, ProgressStage.REVIEW, ProgressStage.RELEASE]


async def test_judge_receives_exactly_the_snapshot_of_cited_calls() -> None:
    """The SemanticGuard sees the query, the draft and only the cited calls' projections (not K1, not E1)."""
    h = await harness()
    await h.release.release(h.ctx, draft())
    [call] = h.judge.calls
    assert call.query == QUERY
    assert call.draft == draft()
    assert set(call.snapshot.projections) == {L1, L0, S1}
    assert K1 not in call.snapshot.projections
    assert E1 not in call.snapshot.projections
    assert call.snapshot.rule_set_version == "2026-12-01.3"


async def test_repair_that_fixes_the_draft_leads_to_success() -> None:
    """An invalid draft repaired once into a valid one goes on to the judge and is published as repaired."""
    h = await harness(repairer=ScriptedRepairer(result=draft()))
    outcome = await h.release.release(h.ctx, draft(BROKEN))
    assert outcome.outcome is Outcome.SUCCESS
    assert outcome.report is not None
    assert outcome.report.draft == draft()
    assert await h.types() == [
        EventType.EVIDENCE_GUARD_INITIAL,
        EventType.EVIDENCE_REPAIR,
        EventType.EVIDENCE_GUARD_RECHECK,
        EventType.SEMANTIC_GUARD,
        EventType.RELEASE_DECISION,
    ]
    [call] = h.repairer.calls
    assert call.query == QUERY
    assert {v.code for v in call.violations} == {"INVOCATION_MISSING"}
    assert {s.tool_call_id for s in call.referencable} == {L1, L0, S1, K1}, "ERROR calls are not offered for re-binding"
    assert h.progress.stages == [ProgressStage.EVIDENCE_CHECK, ProgressStage.REPAIR, ProgressStage.REVIEW, ProgressStage.RELEASE]
    assert h.judge.calls[0].draft == draft()
    assert len(h.store.get_many_calls) == 2, "one batched read per guarded draft: the original and the repair"


async def test_repair_that_gives_nothing_ends_in_evidence_fallback() -> None:
    """No repaired draft means SAFE_FALLBACK EVIDENCE_VALIDATION_FAILED without asking the judge."""
    h = await harness(repairer=ScriptedRepairer(result=None))
    outcome = await h.release.release(h.ctx, draft(BROKEN))
    assert outcome.outcome is Outcome.SAFE_FALLBACK
    assert outcome.fallback_type is FallbackType.EVIDENCE_VALIDATION_FAILED
    assert outcome.fallback is not None
    assert outcome.fallback.stage == STAGE_TEXT[FallbackStage.EVIDENCE_CHECK]
    assert outcome.fallback.reason == "The draft cited a tool call that never happened in this run."
    assert "INVOCATION_MISSING" not in outcome.fallback.reason
    assert {v.code for v in outcome.violations} == {"INVOCATION_MISSING"}
    assert await h.types() == [EventType.EVIDENCE_GUARD_INITIAL, EventType.EVIDENCE_REPAIR, EventType.RELEASE_DECISION]
    assert h.judge.calls == []


async def test_repair_that_is_still_invalid_ends_in_evidence_fallback() -> None:
    """A repaired draft that fails the recheck is not given a second repair: EVIDENCE_VALIDATION_FAILED."""
    still_bad = draft({"text": "OOM 3 times.", "tool_call_ids": [L1]})
    h = await harness(repairer=ScriptedRepairer(result=still_bad))
    outcome = await h.release.release(h.ctx, draft(BROKEN))
    assert outcome.fallback_type is FallbackType.EVIDENCE_VALIDATION_FAILED
    assert {v.code for v in outcome.violations} == {"NUMBER_NOT_IN_EVIDENCE"}
    assert len(h.repairer.calls) == 1
    assert await h.types() == [
        EventType.EVIDENCE_GUARD_INITIAL,
        EventType.EVIDENCE_REPAIR,
        EventType.EVIDENCE_GUARD_RECHECK,
        EventType.RELEASE_DECISION,
    ]


async def test_repair_that_raises_is_treated_as_no_repair() -> None:
    """A repairer exception never escapes: the run falls back with EVIDENCE_VALIDATION_FAILED."""
    h = await harness(repairer=ScriptedRepairer(error=RuntimeError("model down")))
    outcome = await h.release.release(h.ctx, draft(BROKEN))
    assert outcome.fallback_type is FallbackType.EVIDENCE_VALIDATION_FAILED
    repair_event = (await h.events())[1]
    assert repair_event.type is EventType.EVIDENCE_REPAIR
    assert repair_event.summary["repaired"] is False
    assert repair_event.summary["error"] == "RuntimeError"


@pytest.mark.parametrize(
    ("judge", "kind", "stage", "verdict"),
    [
        (FixedJudge(verdict=UNSUPPORTED), FallbackType.SEMANTIC_UNSUPPORTED, FallbackStage.REVIEW_UNSUPPORTED,
         SemanticVerdictKind.UNSUPPORTED),
        (FixedJudge(verdict=UNAVAILABLE), FallbackType.SEMANTIC_UNAVAILABLE, FallbackStage.REVIEW_UNAVAILABLE,
         SemanticVerdictKind.UNAVAILABLE),
        (FixedJudge(error=TimeoutError()), FallbackType.SEMANTIC_UNAVAILABLE, FallbackStage.REVIEW_UNAVAILABLE,
         SemanticVerdictKind.UNAVAILABLE),
    ],
    ids=["unsupported", "unavailable", "judge-raises"],
)
async def test_semantic_guard_outcomes_other_than_supported_fall_back(
    judge: FixedJudge, kind: FallbackType, stage: FallbackStage, verdict: SemanticVerdictKind
) -> None:
    """UNSUPPORTED, UNAVAILABLE and a judge exception each end in their SAFE_FALLBACK type, recorded in order."""
    h = await harness(judge=judge)
    outcome = await h.release.release(h.ctx, draft())
    assert outcome.outcome is Outcome.SAFE_FALLBACK
    assert outcome.fallback_type is kind
    assert outcome.report is None
    assert outcome.fallback is not None
    assert outcome.fallback.kind is stage
    assert outcome.fallback.stage == STAGE_TEXT[stage]
    events = await h.events()
    assert [e.type for e in events] == [EventType.EVIDENCE_GUARD_INITIAL, EventType.SEMANTIC_GUARD, EventType.RELEASE_DECISION]
    assert events[1].summary["verdict"] == verdict.value
    assert events[2].summary == {"outcome": "SAFE_FALLBACK", "fallback_type": kind.value}


async def test_canonical_store_down_falls_back_without_crashing() -> None:
    """If the canonical store cannot be read, the release says so plainly, lists nothing invented, and records why."""
    h = await harness()
    h.store.down = True
    outcome = await h.release.release(h.ctx, draft())
    assert outcome.outcome is Outcome.SAFE_FALLBACK
    assert outcome.fallback_type is FallbackType.EVIDENCE_VALIDATION_FAILED
    assert outcome.fallback is not None
    assert outcome.fallback.stage == STAGE_TEXT[FallbackStage.EVIDENCE_STORE]
    assert outcome.fallback.observed_facts == []
    events = await h.events()
    assert [e.type for e in events] == [EventType.EVIDENCE_GUARD_INITIAL, EventType.RELEASE_DECISION]
    assert events[0].summary["error"] == "CANONICAL_UNAVAILABLE"
    assert h.judge.calls == []


async def test_guard_event_carries_codes_counts_and_version() -> None:
    """EVIDENCE_GUARD_INITIAL records validity, violation codes, counts, the rule set version and a duration."""
    h = await harness(repairer=ScriptedRepairer(result=None))
    await h.release.release(h.ctx, draft(BROKEN))
    initial = (await h.events())[0]
    assert initial.summary["valid"] is False
    assert initial.summary["violation_codes"] == ["INVOCATION_MISSING"]
    assert initial.summary["violations"] == 1
    assert initial.summary["warning_codes"] == []
    assert initial.summary["rule_set_version"] == "2026-12-01.3"
    assert initial.duration_ms >= 0


def _fallback_paths() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("evidence", {"repairer": ScriptedRepairer(result=None), "broken": True}),
        ("repair-raises", {"repairer": ScriptedRepairer(error=ValueError(MARKER)), "broken": True}),
        ("unsupported", {"judge": FixedJudge(verdict=SemanticVerdict(verdict=SemanticVerdictKind.UNSUPPORTED, reason="no"))}),
        ("unavailable", {"judge": FixedJudge(error=RuntimeError(MARKER))}),
    ]


@pytest.mark.parametrize(("label", "setup"), _fallback_paths(), ids=[n for n, _ in _fallback_paths()])
async def test_fallbacks_never_contain_draft_prose(label: str, setup: dict[str, Any]) -> None:
    """Whatever the failure, neither the fallback nor the timeline repeats any text the draft wrote."""
    broken = setup.pop("broken", False)
    h = await harness(**setup)
    outcome = await h.release.release(h.ctx, draft(BROKEN if broken else None, marked=True))
    assert outcome.outcome is Outcome.SAFE_FALLBACK, label
    assert outcome.fallback is not None
    assert outcome.fallback.observed_facts, "observed facts come from the run's projections"
    assert MARKER not in outcome.fallback.model_dump_json()
    assert MARKER not in "".join(e.model_dump_json() for e in await h.events())


async def test_failure_lists_observed_facts_and_says_why() -> None:
    """FAILURE (no draft) says why in plain words, lists what the run observed, and records the decision."""
    h = await harness()
    outcome = await h.release.failure(h.ctx, "budget_steps")
    assert outcome.outcome is Outcome.FAILURE
    assert outcome.fallback is not None
    assert outcome.fallback.stage == "the diagnosis could not be finished: the step budget ran out before a report was written"
    assert outcome.fallback.cause is FailureCause.BUDGET_STEPS
    assert outcome.fallback.next_steps[0].startswith("Ask a narrower question")
    assert outcome.fallback.observed_facts[0].tool_call_id == L1
    assert f"/diag trace {RUN}" in " ".join(outcome.fallback.next_steps)
    assert await h.types() == [EventType.RELEASE_DECISION]
    assert (await h.events())[0].summary == {"outcome": "FAILURE", "fallback_type": None}


async def test_failure_with_store_down_still_answers() -> None:
    """FAILURE while the canonical store is down has no facts but is still a clear message."""
    h = await harness()
    h.store.down = True
    outcome: ReleaseOutcome = await h.release.failure(h.ctx, "cancelled")
    assert outcome.fallback is not None
    assert outcome.fallback.stage.endswith("the run was cancelled")
    assert outcome.fallback.observed_facts == []


async def test_failing_progress_updates_do_not_stop_the_release() -> None:
    """A progress sink that raises is cosmetic: the release still reaches its decision."""
    h = await harness(repairer=ScriptedRepairer(result=draft()), progress=RecordingProgress(fail=True))
    outcome = await h.release.release(h.ctx, draft(BROKEN))
    assert outcome.outcome is Outcome.SUCCESS
    assert h.progress.stages == [ProgressStage.EVIDENCE_CHECK, ProgressStage.REPAIR, ProgressStage.REVIEW, ProgressStage.RELEASE]


async def test_judge_reason_quoting_the_draft_never_reaches_the_fallback() -> None:
    """SPEC §6: a fallback carries no internal draft text. The judge's free-text reason typically quotes the claim it
    rejects ("the draft says OOM 3 times..."), so it may go to the timeline (SPEC §9) but not into the fallback."""
    quoting = SemanticVerdict(verdict=SemanticVerdictKind.UNSUPPORTED, reason=f"the conclusion claims {MARKER} 3 times")
    h = await harness(judge=FixedJudge(verdict=quoting))
    outcome = await h.release.release(h.ctx, draft(marked=True))
    assert outcome.fallback_type is FallbackType.SEMANTIC_UNSUPPORTED
    assert outcome.fallback is not None
    assert outcome.fallback.stage == STAGE_TEXT[FallbackStage.REVIEW_UNSUPPORTED]
    assert outcome.fallback.reason
    assert MARKER not in outcome.fallback.model_dump_json()
    judged = [e for e in await h.events() if e.type is EventType.SEMANTIC_GUARD]
    assert judged[0].summary["reason"] == quoting.reason, "the reason stays available to /diag trace"


async def test_judge_reason_quoting_only_verified_evidence_is_shown() -> None:
    """A reviewer reason whose quotes and numbers all appear in the verified evidence is shown in its own words."""
    reason = 'the cited lines only show "Connection is not available", not a database outage'
    h = await harness(judge=FixedJudge(verdict=SemanticVerdict(verdict=SemanticVerdictKind.UNSUPPORTED, reason=reason)))
    outcome = await h.release.release(h.ctx, draft())
    assert outcome.fallback is not None
    assert outcome.fallback.reason == f"The reviewer said: {reason}"


async def test_model_unavailable_failure_points_at_the_model_endpoint() -> None:
    """A FAILURE because the model was down advises checking the model endpoint, not rephrasing the question."""
    h = await harness()
    outcome = await h.release.failure(h.ctx, "model_unavailable")
    assert outcome.fallback is not None
    assert "model endpoint" in outcome.fallback.next_steps[0]
    assert not any("naming the service" in s for s in outcome.fallback.next_steps)


@pytest.mark.parametrize("kind", ["NORMAL", "NEGATIVE_OBSERVATION"])
async def test_draft_citing_an_error_call_alongside_real_evidence_is_never_published(kind: str) -> None:
    """ERROR is never evidence: an analysis citing a good call *and* an ERROR call is rejected, and the repair
    that keeps the ERROR citation is rejected again; the judge never sees the ERROR projection."""
    good = L1 if kind == "NORMAL" else L0
    text = "HikariPool-1 requests timed out." if kind == "NORMAL" else "No OutOfMemoryError lines matched."
    citing_error = draft({"kind": kind, "text": text, "tool_call_ids": [good, E1]})
    h = await harness(repairer=ScriptedRepairer(result=citing_error))
    outcome = await h.release.release(h.ctx, citing_error)
    assert outcome.outcome is Outcome.SAFE_FALLBACK
    assert outcome.fallback_type is FallbackType.EVIDENCE_VALIDATION_FAILED
    assert {v.code for v in outcome.violations} == {"INVOCATION_NOT_REFERENCABLE"}
    assert [v.path for v in outcome.violations] == ["analysis[0].tool_call_ids[1]"]
    assert h.judge.calls == []
    assert outcome.report is None
