"""End to end through ChatService: the real openai client against the local fake server, real ToolBoundary and
tools on the demo data, real guard and release, SQLite (and real Redis in one test)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from core.bootstrap import Services, build_services
from core.contracts.progress import ProgressStage, ProgressUpdate
from core.contracts.release import FallbackType, Outcome, ReleaseOutcome
from core.contracts.run import Budgets, EventType, RunStatus, SessionKey, Turn
from core.guard.rules import load_rules
from core.settings import DEMO_CLOCK, PROMPTS_DIR, Settings
from core.stores.canonical import RedisCanonicalStore
from core.stores.kv import RedisKV
from core.stores.sql.audit import SqlAuditStore
from entrypoints.demo import recorded_reply
from testkit.openai_server import Entry, FakeOpenAIServer
from tests.fakes.cluster import free_port
from tests.waiting import until

QUESTION = "why is order-service failing since 23:00?"
HIKARI = {"service": "order-service", "query": "HikariPool", "level": "ERROR"}
NOTIFY = {"service": "notification-service", "query": "HikariPool", "level": "ERROR"}


# ---- scripted model replies ---------------------------------------------------------------


def route(intent: str) -> dict[str, Any]:
    return {"content": json.dumps({"intent": intent})}


def calls(*specs: tuple[str, dict[str, Any]], reasoning: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"tool_calls": [{"id": f"call_t{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(specs)]}
    if reasoning is not None:
        entry["reasoning_content"] = reasoning
    return entry


def analysis(aid: str, text: str, *cites: str, kind: str = "NORMAL") -> dict[str, Any]:
    return {"analysis_id": aid, "kind": kind, "text": text, "tool_call_ids": list(cites)}


def draft(*items: dict[str, Any], conclusion: str | None = None) -> dict[str, Any]:
    return {
        "conclusion": {"text": conclusion, "based_on_analysis_ids": [items[0]["analysis_id"]]} if conclusion else None,
        "analysis": list(items),
        "action_plan": [],
        "recommendations": [],
        "limitations": {"scope": "order-service ERROR logs in the default window", "missing_info": []},
    }


def submit(body: dict[str, Any], name: str = "submit_diagnosis_draft") -> Entry:
    """The final call; {{call:N}} placeholders bind to this run's N-th tool result."""
    return recorded_reply({"tool_calls": [{"id": "call_submit", "name": name, "arguments": body}]})


def verdict(kind: str, reason: str = "the cited lines show it") -> dict[str, Any]:
    return {"content": json.dumps({"verdict": kind, "reason": reason})}


GROUNDED = draft(analysis("a1", "order-service logged HikariPool connection errors at ERROR level.", "{{call:1}}"),
                 conclusion="order-service is failing on HikariPool connection errors.")


def grounded_script() -> list[Entry]:
    return [route("DIAGNOSIS"), calls(("query_logs", HIKARI)), submit(GROUNDED), verdict("SUPPORTED")]


# ---- rig ----------------------------------------------------------------------------------


class Progress:
    """Records progress updates (a ProgressSink) so a test knows the run id and when a tool has run."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, ProgressStage]] = []
        self.tool_ran = asyncio.Event()

    async def update(self, run_id: str, update: ProgressUpdate) -> None:
        self.updates.append((run_id, update.stage))
        if update.stage is ProgressStage.TOOL_FINISHED:
            self.tool_ran.set()

    async def run_id_after_tool(self) -> str:
        await asyncio.wait_for(self.tool_ran.wait(), 5)
        return self.updates[0][0]


@dataclass
class Rig:
    server: FakeOpenAIServer
    services: Services

    async def ask(self, text: str = QUESTION, thread: str = "t1", progress: Progress | None = None) -> ReleaseOutcome:
        turn = Turn(session=SessionKey(team="T", channel="C", thread_ts=thread), text=text, user="U", message_ts="1.1")
        return await self.services.chat_service.handle(turn, progress)

    async def events(self, outcome: ReleaseOutcome) -> list[EventType]:
        return [e.type for e in await self.services.chat_service.timeline(outcome.run_id)]


def settings_for(server: FakeOpenAIServer, tmp_path: Path, **extra: Any) -> Settings:
    return Settings(openai_base_url=server.base_url, openai_api_key="test", diag_model="test-model",
                    database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db", diag_clock=DEMO_CLOCK, **extra)


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


async def make_rig(server: FakeOpenAIServer, tmp_path: Path, budgets: Budgets | None = None, **extra: Any) -> Rig:
    services = await build_services(settings_for(server, tmp_path, **extra), budgets=budgets)
    return Rig(server, services)


@pytest.fixture
async def rig(server: FakeOpenAIServer, tmp_path: Path) -> AsyncIterator[Rig]:
    made = await make_rig(server, tmp_path)
    yield made
    await made.services.aclose()


# ---- outcomes of SPEC §6 ------------------------------------------------------------------


async def test_grounded_diagnosis_is_published_with_ordered_timeline(rig: Rig) -> None:
    """A draft citing a FOUND call, judged SUPPORTED, is published; the timeline runs in pipeline order."""
    rig.server.push(*grounded_script())
    outcome = await rig.ask()
    assert outcome.outcome is Outcome.SUCCESS, outcome
    assert outcome.report is not None
    assert outcome.report.sources[0].tool_name == "query_logs"
    events = await rig.events(outcome)
    look = events.index(EventType.FIRST_LOOK)  # the first look's calls come before the agent's first step
    assert events[:3] == [EventType.RUN_STARTED, EventType.MODEL_CALL, EventType.INTENT_ROUTED]
    assert set(events[3:look]) == {EventType.TOOL_CALL}
    assert events[look + 1:] == [
        EventType.MODEL_CALL, EventType.TOOL_CALL,
        EventType.MODEL_CALL, EventType.DRAFT_SUBMITTED, EventType.EVIDENCE_GUARD_INITIAL, EventType.MODEL_CALL,
        EventType.SEMANTIC_GUARD, EventType.RELEASE_DECISION, EventType.RUN_FINISHED]  # every model call is on the trace
    run = await rig.services.chat_service.get_run(outcome.run_id)
    assert run is not None
    assert run.status is RunStatus.FINISHED
    assert run.published_report is not None
    assert run.rule_set_version == load_rules().rule_set_version
    expected = {p.stem: hashlib.sha256(p.read_text(encoding="utf-8").encode("utf-8")).hexdigest()
                for p in PROMPTS_DIR.glob("*.md")}
    assert set(run.prompt_hashes) >= {"diagnosis_agent", "semantic_guard", "evidence_repair", "intent_router"}
    for name, digest in run.prompt_hashes.items():
        assert digest == expected[name], f"{name}: the run records the content hash of the prompt it ran under"
    assert run.models["agent"] == "test-model"


async def test_fabricated_citation_that_repair_cannot_fix_is_an_evidence_fallback(rig: Rig) -> None:
    """A made-up call id the repair keeps citing ends SAFE_FALLBACK EVIDENCE_VALIDATION_FAILED with observed facts."""
    fake = draft(analysis("a1", "order-service logged HikariPool connection errors.", "call_made_up"))
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), submit(fake), submit(fake))
    outcome = await rig.ask()
    assert (outcome.outcome, outcome.fallback_type) == (Outcome.SAFE_FALLBACK, FallbackType.EVIDENCE_VALIDATION_FAILED)
    assert "INVOCATION_MISSING" in {v.code for v in outcome.violations}
    assert outcome.fallback is not None
    assert outcome.fallback.observed_facts
    assert EventType.EVIDENCE_GUARD_RECHECK in await rig.events(outcome)


async def test_fabricated_citation_rebound_by_repair_is_published(rig: Rig) -> None:
    """The repair re-binds a made-up id to the real call; the recheck passes and the report is published."""
    fake = draft(analysis("a1", "order-service logged HikariPool connection errors.", "call_made_up"))
    fixed = draft(analysis("a1", "order-service logged HikariPool connection errors.", "{{call:1}}"))
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), submit(fake), submit(fixed), verdict("SUPPORTED"))
    outcome = await rig.ask()
    assert outcome.outcome is Outcome.SUCCESS, outcome


async def test_semantic_unsupported_is_a_fallback(rig: Rig) -> None:
    """A verified draft the SemanticGuard calls UNSUPPORTED ends SAFE_FALLBACK SEMANTIC_UNSUPPORTED."""
    rig.server.push(*grounded_script()[:-1], verdict("UNSUPPORTED", "the conclusion claims a root cause"))
    outcome = await rig.ask()
    assert (outcome.outcome, outcome.fallback_type) == (Outcome.SAFE_FALLBACK, FallbackType.SEMANTIC_UNSUPPORTED)
    run = await rig.services.chat_service.get_run(outcome.run_id)
    assert run is not None
    assert run.published_report is None


async def test_semantic_guard_unavailable_is_a_fallback(rig: Rig) -> None:
    """Malformed guard answers on every attempt end SAFE_FALLBACK SEMANTIC_UNAVAILABLE."""
    rig.server.push(*grounded_script()[:-1], *({"content": "looks fine to me"} for _ in range(5)))
    outcome = await rig.ask()
    assert (outcome.outcome, outcome.fallback_type) == (Outcome.SAFE_FALLBACK, FallbackType.SEMANTIC_UNAVAILABLE)


async def test_model_down_is_failure_with_what_was_observed(rig: Rig) -> None:
    """The model failing after a tool call ends FAILURE, still listing the observation."""
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)),
                    {"status": 400, "body": {"error": {"message": "bad request", "type": "invalid_request_error"}}})
    outcome = await rig.ask()
    assert outcome.outcome is Outcome.FAILURE
    assert outcome.fallback is not None
    assert outcome.fallback.observed_facts
    assert (await rig.events(outcome))[-1] is EventType.RUN_FAILED


# ---- budgets and cancellation -------------------------------------------------------------


async def test_step_budget_without_draft_is_failure(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """An agent that keeps calling tools past max_steps ends FAILURE naming the step budget."""
    rig = await make_rig(server, tmp_path, Budgets(max_steps=2))
    try:
        server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), calls(("query_logs", NOTIFY)))
        outcome = await rig.ask()
        assert outcome.outcome is Outcome.FAILURE
        assert outcome.fallback is not None
        assert "step budget" in outcome.fallback.stage
    finally:
        await rig.services.aclose()


async def test_tool_call_budget_is_enforced(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Calls beyond max_tool_calls are refused; the run ends FAILURE naming the tool-call budget."""
    rig = await make_rig(server, tmp_path, Budgets(max_tool_calls=1))
    try:
        server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI), ("query_logs", NOTIFY)),
                    calls(("query_logs", HIKARI)))
        outcome = await rig.ask()
        assert outcome.outcome is Outcome.FAILURE
        assert outcome.fallback is not None
        assert "tool-call budget" in outcome.fallback.stage
    finally:
        await rig.services.aclose()


async def test_observation_byte_budget_is_enforced(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Once the observation bytes are used up further calls are refused and the run ends FAILURE within budget."""
    rig = await make_rig(server, tmp_path, Budgets(max_observation_bytes=1500))
    try:
        server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), calls(("query_logs", HIKARI)),
                    calls(("query_logs", HIKARI)))
        outcome = await rig.ask()
        assert outcome.outcome is Outcome.FAILURE
        assert outcome.fallback is not None
        assert "budget for tool results ran out" in outcome.fallback.stage
        tool_events = [e.summary for e in await rig.services.chat_service.timeline(outcome.run_id)
                       if e.type is EventType.TOOL_CALL]
        assert tool_events[-1]["error_code"] == "BUDGET_EXHAUSTED"
    finally:
        await rig.services.aclose()


async def test_deadline_ends_a_slow_run_as_failure(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """A model slower than the run deadline ends FAILURE quickly, with RUN_FAILED."""
    rig = await make_rig(server, tmp_path, Budgets(deadline_s=1.0))
    try:
        server.push(route("DIAGNOSIS"), {**calls(("query_logs", HIKARI)), "delay_s": 3})
        outcome = await asyncio.wait_for(rig.ask(), 2.5)
        assert outcome.outcome is Outcome.FAILURE
        assert outcome.fallback is not None
        assert "time limit passed" in outcome.fallback.stage
        assert (await rig.events(outcome))[-1] is EventType.RUN_FAILED
    finally:
        await rig.services.aclose()


async def test_cancel_run_stops_a_running_diagnosis(rig: Rig) -> None:
    """cancel_run during a slow model call ends FAILURE (cancelled) with observed facts and RUN_CANCELLED."""
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), {"content": "late", "delay_s": 10})
    progress = Progress()
    task = asyncio.create_task(rig.ask(progress=progress))
    run_id = await progress.run_id_after_tool()
    assert await rig.services.chat_service.cancel_run(run_id) is True
    outcome = await asyncio.wait_for(task, 3)
    assert outcome.outcome is Outcome.FAILURE
    assert outcome.fallback is not None
    assert outcome.fallback.observed_facts
    assert (await rig.events(outcome))[-1] is EventType.RUN_CANCELLED
    run = await rig.services.chat_service.get_run(run_id)
    assert run is not None
    assert run.status is RunStatus.CANCELLED
    assert await rig.services.chat_service.cancel_run(run_id) is False


async def test_cancel_session_stops_the_thread_run(rig: Rig) -> None:
    """A 'stop' in the thread (cancel_session) cancels the session's running run."""
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), {"content": "late", "delay_s": 10})
    progress = Progress()
    task = asyncio.create_task(rig.ask(progress=progress))
    await progress.run_id_after_tool()
    assert await rig.services.chat_service.cancel_session("T:C:t1") is True
    assert (await asyncio.wait_for(task, 3)).outcome is Outcome.FAILURE


# ---- sessions and the previous-turn rule --------------------------------------------------


async def test_follow_up_sees_previous_published_report_labelled_not_evidence(rig: Rig) -> None:
    """The second turn's agent request carries the first SUCCESS report, labelled as not evidence."""
    rig.server.push(*grounded_script())
    first = await rig.ask()
    assert first.outcome is Outcome.SUCCESS
    before = len(rig.server.requests)
    rig.server.push(*grounded_script())
    second = await rig.ask("is it still happening?")
    assert second.outcome is Outcome.SUCCESS
    user_part = json.dumps(rig.server.requests[before + 1]["messages"][1:])
    assert "Previous published report, not evidence for this run" in user_part
    assert first.run_id in user_part


async def test_previous_fallback_never_carries_forward(rig: Rig) -> None:
    """After a fallback-only history the next turn's agent sees no previous report."""
    rejected = draft(analysis("a1", "REJECTED-DRAFT-MARKER order-service logged HikariPool errors.", "{{call:1}}"))
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), submit(rejected),
                    verdict("UNSUPPORTED", "JUDGE-REASON-MARKER no"))
    fallback = await rig.ask()
    assert fallback.outcome is Outcome.SAFE_FALLBACK
    assert fallback.fallback is not None
    fact_texts = [f.text for f in fallback.fallback.observed_facts]
    assert fact_texts
    before = len(rig.server.requests)
    rig.server.push(*grounded_script())
    await rig.ask("and now?")
    user_part = _agent_user_part(rig, before)
    assert "Previous published report" not in user_part
    for absent in (fallback.run_id, "REJECTED-DRAFT-MARKER", "JUDGE-REASON-MARKER", *fact_texts):
        assert absent not in user_part, absent


def _agent_user_part(rig: Rig, since: int) -> str:
    """Everything but the system prompt of the first Diagnosis Agent request sent after request number `since`."""
    agent = [r for r in rig.server.requests[since:] if r["messages"][0]["content"].startswith("# Diagnosis Agent")]
    assert agent, "the turn reached the agent"
    return json.dumps(agent[0]["messages"][1:])


async def test_only_the_latest_diagnosis_success_carries_forward(rig: Rig) -> None:
    """SPEC §7: of SUCCESS A, SUCCESS B, a KNOWLEDGE success and an UNSUPPORTED fallback, the next turn sees B only.

    Neither the older report, nor the knowledge answer, nor anything of the fallback (its draft prose, the
    judge's reason, its run id) reaches the agent; B is labelled as not evidence.
    """
    older = draft(analysis("a1", "OLDER-REPORT-MARKER order-service logged HikariPool errors.", "{{call:1}}"))
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), submit(older), verdict("SUPPORTED"))
    first = await rig.ask()
    newer = draft(analysis("a1", "NEWER-REPORT-MARKER order-service logged HikariPool errors.", "{{call:1}}"))
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), submit(newer), verdict("SUPPORTED"))
    second = await rig.ask("again?")
    citation = {"tool_call_id": "{{call:1}}", "doc": "{{doc:1}}"}
    answer = {"answer": "KNOWLEDGE-ANSWER-MARKER check the pool size.", "citations": [citation]}
    rig.server.push(route("KNOWLEDGE"), calls(("lookup_knowledge", {"query": "HikariCP pool exhaustion"})),
                    submit(answer, "submit_knowledge_answer"))
    knowledge = await rig.ask("what does the runbook say about HikariCP pool exhaustion?")
    unsupported = draft(analysis("a1", "FALLBACK-DRAFT-MARKER order-service logged HikariPool errors.", "{{call:1}}"))
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), submit(unsupported),
                    verdict("UNSUPPORTED", "JUDGE-REASON-MARKER goes beyond the evidence"))
    fallback = await rig.ask("and now?")
    assert [o.outcome for o in (first, second, knowledge, fallback)] == [
        Outcome.SUCCESS, Outcome.SUCCESS, Outcome.SUCCESS, Outcome.SAFE_FALLBACK]
    before = len(rig.server.requests)
    rig.server.push(*grounded_script())
    await rig.ask("still?")
    user_part = _agent_user_part(rig, before)
    assert "Previous published report, not evidence for this run" in user_part
    assert second.run_id in user_part
    assert "NEWER-REPORT-MARKER" in user_part
    for absent in (first.run_id, "OLDER-REPORT-MARKER", knowledge.run_id, "KNOWLEDGE-ANSWER-MARKER",
                   fallback.run_id, "FALLBACK-DRAFT-MARKER", "JUDGE-REASON-MARKER"):
        assert absent not in user_part, absent
    judge = [r for r in rig.server.requests[before:] if r["messages"][0]["content"].startswith("# Semantic Guard")]
    assert len(judge) == 1
    assert "NEWER-REPORT-MARKER" not in json.dumps(judge), "the SemanticGuard never sees previous turns"
    assert "Previous published report" not in json.dumps(judge)


async def test_citing_previous_runs_call_ids_is_blocked(rig: Rig) -> None:
    """A follow-up draft citing the previous run's call id is rejected as INVOCATION_MISSING."""
    rig.server.push(*grounded_script())
    first = await rig.ask()
    assert first.report is not None
    old_id = first.report.sources[0].tool_call_id
    stale = draft(analysis("a1", "order-service logged HikariPool connection errors.", old_id))
    rig.server.push(route("DIAGNOSIS"), submit(stale), submit(stale))
    outcome = await rig.ask("still?")
    assert (outcome.outcome, outcome.fallback_type) == (Outcome.SAFE_FALLBACK, FallbackType.EVIDENCE_VALIDATION_FAILED)
    assert "INVOCATION_MISSING" in {v.code for v in outcome.violations}


async def test_concurrent_turns_of_one_session_are_serialised(rig: Rig) -> None:
    """Three turns sent at once to one thread run one after another, never overlapping."""
    rig.server.push(*(grounded_script() * 3))
    outcomes = await asyncio.gather(*(rig.ask(f"q{i}") for i in range(3)))
    assert all(o.outcome is Outcome.SUCCESS for o in outcomes)
    runs = [await rig.services.chat_service.get_run(o.run_id) for o in outcomes]
    spans = sorted((r.started_at, r.finished_at) for r in runs if r is not None and r.finished_at is not None)
    assert len(spans) == 3
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(2))


# ---- knowledge, chat, routing -------------------------------------------------------------


async def test_knowledge_question_with_verified_citation_succeeds(rig: Rig) -> None:
    """A knowledge answer citing a FOUND lookup and its document ends SUCCESS."""
    citation = {"tool_call_id": "{{call:1}}", "doc": "{{doc:1}}"}
    answer = {"answer": "The runbook says to check the pool size.", "citations": [citation]}
    rig.server.push(route("KNOWLEDGE"), calls(("lookup_knowledge", {"query": "HikariCP pool exhaustion"})),
                    submit(answer, "submit_knowledge_answer"))
    outcome = await rig.ask("what does the runbook say about HikariCP pool exhaustion?")
    assert (outcome.intent, outcome.outcome) == ("KNOWLEDGE", Outcome.SUCCESS), outcome
    assert outcome.knowledge is not None
    assert outcome.knowledge.answer is not None
    assert (await rig.events(outcome))[-2:] == [EventType.RELEASE_DECISION, EventType.RUN_FINISHED]


async def test_knowledge_answer_with_unverifiable_citation_is_unverified(rig: Rig) -> None:
    """A citation of a document the lookup did not return ends SAFE_FALLBACK KNOWLEDGE_UNVERIFIED."""
    answer = {"answer": "The runbook says so.", "citations": [{"tool_call_id": "{{call:1}}", "doc": "made/up.md"}]}
    rig.server.push(route("KNOWLEDGE"), calls(("lookup_knowledge", {"query": "HikariCP pool exhaustion"})),
                    submit(answer, "submit_knowledge_answer"), submit(answer, "submit_knowledge_answer"))
    outcome = await rig.ask("what does the runbook say about HikariCP pool exhaustion?")
    assert (outcome.outcome, outcome.fallback_type) == (Outcome.SAFE_FALLBACK, FallbackType.KNOWLEDGE_UNVERIFIED)
    run = await rig.services.chat_service.get_run(outcome.run_id)
    assert run is not None
    assert run.published_report is None


async def test_chat_gets_help_without_tools(rig: Rig) -> None:
    """A CHAT turn is one router call and a help text; no tool runs."""
    rig.server.push(route("CHAT"))
    outcome = await rig.ask("hello bot")
    assert (outcome.intent, outcome.outcome) == ("CHAT", Outcome.SUCCESS)
    assert outcome.chat_text
    assert len(rig.server.requests) == 1
    assert EventType.TOOL_CALL not in await rig.events(outcome)
    assert (await rig.events(outcome))[-2:] == [EventType.RELEASE_DECISION, EventType.RUN_FINISHED]


async def test_router_failure_keeps_the_question_as_a_diagnosis(rig: Rig) -> None:
    """When the router answers garbage the turn is diagnosed, and the agent gets the user's question."""
    rig.server.push({"content": "no idea"}, *grounded_script()[1:])
    outcome = await rig.ask()
    assert outcome.intent == "DIAGNOSIS"
    agent_requests = [r for r in rig.server.requests if r["messages"][0]["content"].startswith("# Diagnosis Agent")]
    assert QUESTION in json.dumps(agent_requests[0]["messages"])
    routed = [e for e in await rig.services.chat_service.timeline(outcome.run_id) if e.type is EventType.INTENT_ROUTED]
    assert routed[0].summary["by"] == "fallback"


async def test_timeline_holds_no_payload_prompt_or_reasoning(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Markers planted in tool output (message and extra fields), every prompt file, the user's question, the
    draft's prose and the provider's reasoning never reach any timeline event (whole events, not just summaries)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    line = {"timestamp": "2026-11-29T23:10:00Z", "service": "order-service", "level": "ERROR",
            "message": "HikariPool-1 timeout PAYLOAD-MARKER-93b1", "trace_id": "FIELD-MARKER-77aa"}
    (logs / "app.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    for source in PROMPTS_DIR.glob("*.md"):
        (prompts / source.name).write_text(source.read_text(encoding="utf-8") + "\nPROMPT-MARKER-4f0d\n", encoding="utf-8")
    rig = await make_rig(server, tmp_path, diag_logs_path=logs, diag_prompts_dir=prompts)
    marked = draft(analysis("a1", "order-service logged HikariPool connection errors DRAFT-MARKER-efab.", "{{call:1}}"),
                   conclusion="order-service is failing on HikariPool errors DRAFT-MARKER-efab.")
    try:
        server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI), reasoning="REASONING-MARKER-5c2e"),
                    submit(marked), verdict("SUPPORTED"))
        outcome = await rig.ask(f"{QUESTION} QUESTION-MARKER-0b9c")
        assert outcome.outcome is Outcome.SUCCESS
        sent = json.dumps(server.requests)
        assert "PROMPT-MARKER-4f0d" in sent, "the planted prompts were really used"
        assert "PAYLOAD-MARKER-93b1" in sent, "the planted log line was really returned to the agent"
        events = await rig.services.chat_service.timeline(outcome.run_id)
        dumped = "".join(e.model_dump_json() for e in events)
        for marker in ("PAYLOAD-MARKER", "FIELD-MARKER", "PROMPT-MARKER", "QUESTION-MARKER", "DRAFT-MARKER",
                       "REASONING-MARKER", "# Diagnosis Agent", "# Semantic Guard", "# Intent Router"):
            assert marker not in dumped, marker
        assert "REASONING-MARKER" not in outcome.model_dump_json()
        judge = [r for r in server.requests if r["messages"][0]["content"].startswith("# Semantic Guard")]
        assert judge, "the semantic guard was asked"
        assert "REASONING-MARKER" not in json.dumps(judge), "reasoning never reaches the snapshot or the judge"
        assert "PROMPT-MARKER-4f0d" not in json.dumps(judge[0]["messages"][1:]), "the judge's input holds no prompt"
    finally:
        await rig.services.aclose()


async def test_pipeline_on_real_redis_stores(
    server: FakeOpenAIServer, tmp_path: Path, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    """With Redis canonical and KV stores the grounded run succeeds and its records live under the prefix."""
    services = await build_services(
        settings_for(server, tmp_path), canonical=RedisCanonicalStore(redis_client, key_prefix, 600),
        kv=RedisKV(redis_client, key_prefix),
    )
    rig = Rig(server, services)
    try:
        server.push(*grounded_script())
        outcome = await rig.ask()
        assert outcome.outcome is Outcome.SUCCESS
        keys = [k async for k in redis_client.scan_iter(match=f"{key_prefix}*")]
        assert any(b"inv:" in k for k in keys)
        assert any(b"session-seen:" in k for k in keys)
        assert not any(b"session-lock:" in k for k in keys)
        assert await services.chat_service.has_session("T:C:t1")
    finally:
        await services.aclose()


async def test_two_processes_sharing_redis_cancel_and_serialise(
    server: FakeOpenAIServer, tmp_path: Path, redis_client: aioredis.Redis, key_prefix: str
) -> None:
    """Two ChatServices on one Redis: a turn waits for the other's run in its session, and a cancel from the
    service that does not host the run stops it through the shared cancel flag."""
    def shared() -> dict[str, Any]:
        return {"canonical": RedisCanonicalStore(redis_client, key_prefix, 600), "kv": RedisKV(redis_client, key_prefix)}

    host = Rig(server, await build_services(settings_for(server, tmp_path), **shared()))
    other = Rig(server, await build_services(settings_for(server, tmp_path), **shared()))
    try:
        server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI)), {"content": "late", "delay_s": 10},
                    route("CHAT"))
        progress = Progress()
        hosted = asyncio.create_task(host.ask(progress=progress))
        run_id = await progress.run_id_after_tool()
        # The host's next model call (the slow answer) must be in flight before the other turn asks: else a cancel
        # landing between the tool and that call leaves the slow answer in the script for the other turn's router.
        await until(lambda: server.remaining == 1, timeout_s=5)
        waiting = asyncio.create_task(other.ask("and the database?"))
        done, _ = await asyncio.wait({waiting}, timeout=0.3)  # a negative: 300 ms later it is still waiting
        assert not done, "the second process must wait for the session's running turn"
        assert await other.services.chat_service.cancel_run(run_id) is True
        outcome = await asyncio.wait_for(hosted, 5)
        assert outcome.outcome is Outcome.FAILURE
        assert (await host.events(outcome))[-1] is EventType.RUN_CANCELLED
        assert (await asyncio.wait_for(waiting, 5)).intent == "CHAT"
    finally:
        await host.services.aclose()
        await other.services.aclose()


async def test_redis_down_ends_the_turn_in_a_clear_outcome_quickly(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """With REDIS_URL pointing at nothing, a turn still ends in an outcome (no exception) within seconds."""
    # A port just released by the OS, not a fixed one: another process on the machine may listen on any fixed port.
    made = await make_rig(server, tmp_path, redis_url=f"redis://127.0.0.1:{free_port()}/0")
    try:
        server.push(*grounded_script())
        loop = asyncio.get_running_loop()
        started = loop.time()
        outcome = await made.ask()
        assert outcome.outcome is not Outcome.SUCCESS, outcome
        assert outcome.fallback is not None
        assert loop.time() - started < 10
    finally:
        await made.services.aclose()


async def test_every_model_stage_records_its_reasoning_only_in_the_audit(rig: Rig) -> None:
    """Agent, repair and semantic guard each leave a reasoning-audit row ('unavailable' when the provider sent none)."""
    fake = draft(analysis("a1", "order-service logged HikariPool connection errors.", "call_made_up"))
    fixed = draft(analysis("a1", "order-service logged HikariPool connection errors.", "{{call:1}}"))
    rig.server.push(route("DIAGNOSIS"), calls(("query_logs", HIKARI), reasoning="thinking about pools"), submit(fake),
                    submit(fixed), verdict("SUPPORTED"))
    outcome = await rig.ask()
    assert outcome.outcome is Outcome.SUCCESS, outcome
    audit = rig.services.audit
    assert isinstance(audit, SqlAuditStore)
    rows = await audit.reasoning(outcome.run_id)
    stages = {stage for stage, _, _ in rows}
    assert {"agent", "evidence_repair", "semantic_guard"} <= stages
    assert ("agent", 1, "thinking about pools") in rows
    assert all(content == "unavailable" for stage, _, content in rows if stage != "agent")
