"""DiagnosisAgent loop logic with the in-process ScriptedChatModel and a scripted tool boundary."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from core.contracts.draft import Analysis, AnalysisKind, DiagnosisDraft
from core.contracts.evidence import EvidenceStatus
from core.contracts.progress import ProgressStage, ProgressUpdate
from core.contracts.release import EvidenceSource, PublishedReport
from core.contracts.run import EventType
from core.llm.model import ModelReply, ModelUnavailable
from core.llm.prompts import PromptLibrary
from core.settings import PROMPTS_DIR
from core.steps.agent import PREVIOUS_REPORT_LABEL, DiagnosisAgent
from testkit.models import ModelRequest, ScriptedChatModel, reply
from testkit.progress import RecordingProgress
from testkit.tool_names import ToolName
from tests.fakes.agent_doubles import FakeBoundary, RecordingAudit, make_ctx

LOG_LINE = {"timestamp": "2026-11-29T23:05:28Z", "service": "order-service", "level": "ERROR",
            "message": "HikariPool-1 - Connection is not available, request timed out after 30000ms", "fields": {}}
LOGS_ARGS = json.dumps({"service": "order-service", "query": "timeout", "level": "ERROR"})
LOGS_ARGS_B = json.dumps({"service": "order-service", "query": "HikariPool", "level": "ERROR"})
LOGS_ARGS_C = json.dumps({"service": "payment-service", "query": "timeout"})


def draft_citing(*ids: str) -> str:
    """Arguments of a valid submit_diagnosis_draft citing the given ids."""
    return json.dumps({
        "conclusion": None,
        "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": "order-service logged pool timeouts",
                      "tool_call_ids": list(ids)}],
        "limitations": {"scope": "order-service logs, last 60 minutes", "missing_info": []},
    })


def tool_ids(request: ModelRequest) -> list[str]:
    """tool_call_ids of every tool message the model has been sent so far."""
    return [m["tool_call_id"] for m in request.messages if m["role"] == "tool"]


def submit_cited(request: ModelRequest) -> ModelReply:
    """A scripted step that cites whatever ids the boundary returned."""
    return reply(calls=[("s1", "submit_diagnosis_draft", draft_citing(*tool_ids(request)))])


@pytest.fixture
def prompts() -> PromptLibrary:
    return PromptLibrary(PROMPTS_DIR)


def agent_with(model: ScriptedChatModel, boundary: FakeBoundary, prompts: PromptLibrary,
               audit: RecordingAudit | None = None) -> DiagnosisAgent:
    return DiagnosisAgent(model, "test-model", boundary, prompts, audit or RecordingAudit())


async def test_tool_call_then_submit_returns_the_validated_draft(prompts: PromptLibrary) -> None:
    """A tool call followed by a submit citing its id ends with stop_reason 'submitted' and the parsed draft."""
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)]), submit_cited])
    boundary = FakeBoundary({"query_logs": {"logs": [LOG_LINE]}})
    ctx, timeline = make_ctx()
    result = await agent_with(model, boundary, prompts).run(ctx, None)
    assert result.stop_reason == "submitted"
    assert result.draft is not None
    assert result.draft.analysis[0].tool_call_ids == ["c1"]
    assert boundary.calls == [("c1", "query_logs", LOGS_ARGS)]
    tool_msg = next(m for m in model.requests[1].messages if m["role"] == "tool")
    assert json.loads(tool_msg["content"])["evidence_status"] == "EVIDENCE_FOUND"
    assert len(timeline.of(EventType.DRAFT_SUBMITTED)) == 1


async def test_system_prompt_tools_and_safe_model_call_events(prompts: PromptLibrary) -> None:
    """The system message is the agent prompt, four functions are offered, and MODEL_CALL events hold no content."""
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)], reasoning="secret chain of thought"),
                               submit_cited])
    ctx, timeline = make_ctx()
    await agent_with(model, FakeBoundary({"query_logs": {"logs": [LOG_LINE]}}), prompts).run(ctx, None)
    first = model.requests[0]
    assert first.messages[0] == {"role": "system", "content": prompts.get("diagnosis_agent")}
    assert first.messages[1] == {"role": "user", "content": ctx.query}
    assert first.tool_names == ["lookup_knowledge", "query_logs", "query_mysql", "query_metrics", "submit_diagnosis_draft"]
    events = timeline.of(EventType.MODEL_CALL)
    assert [e["step"] for e in events] == [1, 2]
    assert events[0]["tool_calls"] == 1
    assert events[0]["finish_reason"] == "tool_calls"
    dumped = json.dumps([s for _, s, _ in timeline.events])
    assert "secret chain of thought" not in dumped
    assert "HikariPool" not in dumped
    assert ctx.query not in dumped


async def test_reasoning_goes_to_audit_and_absent_reasoning_is_unavailable(prompts: PromptLibrary) -> None:
    """Provider reasoning is recorded per step in the audit; a step without it records 'unavailable'."""
    audit = RecordingAudit()
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)], reasoning="think"), submit_cited])
    ctx, _ = make_ctx()
    await agent_with(model, FakeBoundary({"query_logs": {"logs": [LOG_LINE]}}), prompts, audit).run(ctx, None)
    assert audit.reasoning == [(ctx.run_id, "agent", 1, "think"), (ctx.run_id, "agent", 2, "unavailable")]


async def test_parallel_tool_calls_run_concurrently(prompts: PromptLibrary) -> None:
    """Several tool calls in one step go through the boundary at the same time and each gets its tool message."""
    calls = [("p1", "query_logs", LOGS_ARGS), ("p2", "query_mysql", json.dumps({"sql": "SELECT 1"})),
             ("p3", "lookup_knowledge", json.dumps({"query": "hikari"}))]
    model = ScriptedChatModel([reply(calls=calls), submit_cited])
    boundary = FakeBoundary({"query_logs": {"logs": [LOG_LINE]}}, delay_s=0.2)
    ctx, _ = make_ctx()
    started = time.monotonic()
    result = await agent_with(model, boundary, prompts).run(ctx, None)
    assert time.monotonic() - started < 0.5
    assert boundary.max_in_flight == 3
    assert tool_ids(model.requests[1]) == ["p1", "p2", "p3"]
    assert result.tool_calls == 3


async def test_missing_and_duplicate_ids_get_unique_wire_ids_matching_the_boundary(prompts: PromptLibrary) -> None:
    """Calls without ids or reusing an id get the boundary's minted id on the wire; assistant and tool ids match."""
    calls = [(None, "query_logs", LOGS_ARGS), ("dup", "query_logs", LOGS_ARGS_B), ("dup", "query_mysql", '{"sql": "SELECT 1"}')]
    model = ScriptedChatModel([reply(calls=calls), reply(calls=[("dup", "query_logs", LOGS_ARGS_C)]), submit_cited])
    boundary = FakeBoundary({"query_logs": {"logs": [LOG_LINE]}})
    ctx, _ = make_ctx()
    result = await agent_with(model, boundary, prompts).run(ctx, None)
    assert result.stop_reason == "submitted"
    assert [c[0] for c in boundary.calls] == [None, "dup", "dup", "dup"]
    history = model.requests[2].messages
    assistant_ids = [c["id"] for m in history if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert assistant_ids == tool_ids(model.requests[2])
    assert len(set(assistant_ids)) == 4
    assert "dup" in assistant_ids
    stored = {rid for (_, rid) in boundary.canonical.records}
    assert set(assistant_ids) == stored


async def test_identical_calls_in_one_step_cost_one_backend_query(prompts: PromptLibrary) -> None:
    """Two identical calls in one step (same tool, same arguments) run once; the second gets that projection and a note."""
    model = ScriptedChatModel([reply(calls=[("call_0", "query_logs", LOGS_ARGS), ("call_0", "query_logs", LOGS_ARGS)]),
                               submit_cited])
    boundary = FakeBoundary({"query_logs": {"logs": [LOG_LINE]}})
    ctx, _ = make_ctx()
    result = await agent_with(model, boundary, prompts).run(ctx, None)
    assert result.stop_reason == "submitted"
    assert len(boundary.calls) == 1
    assert result.tool_calls == 1
    assert result.repeated_calls == 1
    ids = tool_ids(model.requests[1])
    assert len(ids) == 2
    assert len(set(ids)) == 2
    bodies = [json.loads(m["content"]) for m in model.requests[1].messages if m["role"] == "tool"]
    assert bodies[0]["tool_call_id"] == bodies[1]["tool_call_id"] == ids[0]
    assert "note" not in bodies[0]
    assert "not run again" in bodies[1]["note"]


async def test_a_call_repeated_in_a_later_step_is_answered_from_the_first(prompts: PromptLibrary) -> None:
    """A call identical to one of an earlier step (after normalisation: defaults, spacing) is not run again."""
    same_but_spelled_differently = json.dumps({"level": "ERROR", "query": " timeout ", "service": "order-service",
                                               "limit": 20})
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)]),
                               reply(calls=[("c2", "query_logs", same_but_spelled_differently)]), submit_cited])
    boundary = FakeBoundary({"query_logs": {"logs": [LOG_LINE]}})
    ctx, _ = make_ctx()
    result = await agent_with(model, boundary, prompts).run(ctx, None)
    assert result.stop_reason == "submitted"
    assert len(boundary.calls) == 1
    repeated = json.loads([m for m in model.requests[2].messages if m["role"] == "tool"][-1]["content"])
    assert repeated["tool_call_id"] == "c1"
    assert ctx.tool_calls <= 1  # no budget spent twice


async def test_a_tools_first_call_is_still_found_when_repeated_after_other_calls(prompts: PromptLibrary) -> None:
    """The first call of a tool gets its repeat key only when the tool is called again: repeats are found the same."""
    model = ScriptedChatModel([
        reply(calls=[("c1", "query_logs", LOGS_ARGS), ("c2", "query_mysql", '{"sql": "SELECT 1"}')]),
        reply(calls=[("c3", "query_logs", LOGS_ARGS_B), ("c4", "query_logs", LOGS_ARGS)]),
        reply(calls=[("c5", "query_mysql", '{"sql": "SELECT 1"}'), ("c6", "query_logs", LOGS_ARGS_B)]),
        submit_cited,
    ])
    boundary = FakeBoundary({"query_logs": {"logs": [LOG_LINE]}, "query_mysql": {"rows": [[1]], "columns": ["1"]}})
    ctx, _ = make_ctx()
    result = await agent_with(model, boundary, prompts).run(ctx, None)
    assert result.stop_reason == "submitted"
    assert [c[0] for c in boundary.calls] == ["c1", "c2", "c3"]
    assert result.repeated_calls == 3
    answers = {m["tool_call_id"]: json.loads(m["content"]) for m in model.requests[3].messages if m["role"] == "tool"}
    assert answers["c4"]["tool_call_id"] == "c1"
    assert answers["c5"]["tool_call_id"] == "c2"
    assert answers["c6"]["tool_call_id"] == "c3"


async def test_a_repeat_of_an_error_call_runs_again(prompts: PromptLibrary) -> None:
    """Only results are reused: a call that ended in ERROR (a timeout, say) may be tried again."""
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)]), reply(calls=[("c2", "query_logs", LOGS_ARGS)]),
                               submit_cited])
    boundary = FakeBoundary({"query_logs": {"error": {"code": "TIMEOUT", "message": "timed out"}}})
    ctx, _ = make_ctx()
    await agent_with(model, boundary, prompts).run(ctx, None)
    assert len(boundary.calls) == 2


async def test_prose_gets_one_corrective_turn_then_a_submit_is_accepted(prompts: PromptLibrary) -> None:
    """Prose instead of a call gets one corrective user message; the following submit is accepted."""
    model = ScriptedChatModel([reply("The database is down."), reply(calls=[("c1", "query_logs", LOGS_ARGS)]), submit_cited])
    ctx, _ = make_ctx()
    result = await agent_with(model, FakeBoundary({"query_logs": {"logs": [LOG_LINE]}}), prompts).run(ctx, None)
    assert result.stop_reason == "submitted"
    correction = model.requests[1].messages[-1]
    assert correction["role"] == "user"
    assert "submit_diagnosis_draft" in correction["content"]


async def test_prose_twice_fails_with_wire_format(prompts: PromptLibrary) -> None:
    """A second wire-format mistake after the corrective turn ends the loop with 'wire_format' and no draft."""
    model = ScriptedChatModel([reply("prose"), reply("more prose"), submit_cited])
    ctx, _ = make_ctx()
    result = await agent_with(model, FakeBoundary(), prompts).run(ctx, None)
    assert (result.stop_reason, result.draft) == ("wire_format", None)
    assert model.remaining == 1


async def test_invalid_json_draft_gets_a_corrective_tool_message(prompts: PromptLibrary) -> None:
    """A submit whose arguments are not JSON is answered with a corrective tool message carrying the same id."""
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)]),
                               reply(calls=[("s0", "submit_diagnosis_draft", '{"analysis": [')]), submit_cited])
    ctx, _ = make_ctx()
    result = await agent_with(model, FakeBoundary({"query_logs": {"logs": [LOG_LINE]}}), prompts).run(ctx, None)
    assert result.stop_reason == "submitted"
    last = model.requests[2].messages[-1]
    assert last["role"] == "tool"
    assert last["tool_call_id"] == "s0"
    assert "JSON object" in last["content"]


async def test_invalid_json_tool_arguments_count_as_a_wire_format_mistake(prompts: PromptLibrary) -> None:
    """Undecodable tool arguments still reach the boundary (ERROR projection) and use up the corrective turn."""
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", "{service: order")]),
                               reply(calls=[("c2", "query_logs", "not json")]), submit_cited])
    boundary = FakeBoundary()
    ctx, _ = make_ctx()
    result = await agent_with(model, boundary, prompts).run(ctx, None)
    assert result.stop_reason == "wire_format"
    assert len(boundary.calls) == 2
    assert json.loads(model.requests[1].messages[-1]["content"])["error"]["code"] == "INVALID_ARGUMENTS"


async def test_unknown_function_is_a_wire_format_mistake(prompts: PromptLibrary) -> None:
    """A call of a function that does not exist is not sent to the boundary and gets a corrective message."""
    model = ScriptedChatModel([reply(calls=[("x1", "restart_service", "{}")]), reply(calls=[("x2", "rm_rf", "{}")])])
    boundary = FakeBoundary()
    ctx, _ = make_ctx()
    result = await agent_with(model, boundary, prompts).run(ctx, None)
    assert result.stop_reason == "wire_format"
    assert boundary.calls == []
    assert "unknown function 'restart_service'" in model.requests[1].messages[-1]["content"]


async def test_draft_over_caps_gets_a_corrective_turn_naming_the_violation(prompts: PromptLibrary) -> None:
    """A draft with 21 analyses violates the caps; the model is told why and may resubmit once."""
    too_many = {"analysis": [{"analysis_id": f"a{i}", "kind": "NORMAL", "text": "x", "tool_call_ids": ["c1"]}
                             for i in range(21)], "limitations": {"scope": "s"}}
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)]),
                               reply(calls=[("s0", "submit_diagnosis_draft", json.dumps(too_many))]), submit_cited])
    ctx, _ = make_ctx()
    result = await agent_with(model, FakeBoundary({"query_logs": {"logs": [LOG_LINE]}}), prompts).run(ctx, None)
    assert result.stop_reason == "submitted"
    assert result.draft is not None
    assert len(result.draft.analysis) == 1
    correction = model.requests[2].messages[-1]["content"]
    assert "schema" in correction
    assert "analysis" in correction


async def test_text_over_cap_twice_fails_with_wire_format(prompts: PromptLibrary) -> None:
    """A text over 1,000 characters, submitted twice, ends with 'wire_format'."""
    bad = json.dumps({"analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": "x" * 1001, "tool_call_ids": ["c"]}]})
    model = ScriptedChatModel([reply(calls=[("s1", "submit_diagnosis_draft", bad)]),
                               reply(calls=[("s2", "submit_diagnosis_draft", bad)])])
    ctx, _ = make_ctx()
    result = await agent_with(model, FakeBoundary(), prompts).run(ctx, None)
    assert (result.stop_reason, result.draft) == ("wire_format", None)


async def test_submit_together_with_tool_calls_runs_the_tools_first(prompts: PromptLibrary) -> None:
    """A step with tool calls and a submit runs the tools, then accepts the draft in the same step."""
    both = [("c1", "query_logs", LOGS_ARGS), ("s1", "submit_diagnosis_draft", draft_citing("c1"))]
    model = ScriptedChatModel([reply(calls=both)])
    boundary = FakeBoundary({"query_logs": {"logs": [LOG_LINE]}})
    ctx, _ = make_ctx()
    result = await agent_with(model, boundary, prompts).run(ctx, None)
    assert result.stop_reason == "submitted"
    assert len(boundary.calls) == 1
    assert result.steps == 1


async def test_previous_report_is_labelled_context_not_evidence(prompts: PromptLibrary) -> None:
    """The previous published report follows the query in the user message, under its not-evidence label."""
    previous = PublishedReport(
        run_id="old-run",
        draft=DiagnosisDraft(analysis=[Analysis(analysis_id="a1", kind=AnalysisKind.NORMAL, text="pool timeouts",
                                                tool_call_ids=["old_call_7"])]),
        sources=[EvidenceSource(tool_call_id="old_call_7", tool_name=ToolName.QUERY_LOGS,
                                evidence_status=EvidenceStatus.EVIDENCE_FOUND, label="query_logs order-service")],
    )
    model = ScriptedChatModel([submit_cited])
    ctx, _ = make_ctx("is it still happening?")
    await agent_with(model, FakeBoundary(), prompts).run(ctx, previous)
    user = model.requests[0].messages[1]["content"]
    assert user.startswith("is it still happening?")
    assert PREVIOUS_REPORT_LABEL in user
    assert user.index(PREVIOUS_REPORT_LABEL) < user.index("old_call_7")


async def test_step_budget_stops_the_loop(prompts: PromptLibrary) -> None:
    """With max_steps=3 a model that never submits is asked three times, then 'budget_steps'."""
    model = ScriptedChatModel([reply(calls=[(f"c{i}", "query_logs", LOGS_ARGS)]) for i in range(5)])
    ctx, _ = make_ctx(max_steps=3)
    result = await agent_with(model, FakeBoundary(), prompts).run(ctx, None)
    assert (result.stop_reason, result.draft, len(model.requests)) == ("budget_steps", None, 3)


async def test_tool_call_budget_exhaustion_stops_the_loop(prompts: PromptLibrary) -> None:
    """When the boundary answers BUDGET_EXHAUSTED for a tool call, the loop ends with 'budget_tool_calls'."""
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)]), reply(calls=[("c2", "query_logs", LOGS_ARGS_B)]),
                               submit_cited])
    ctx, _ = make_ctx(max_tool_calls=1)
    result = await agent_with(model, FakeBoundary({"query_logs": {"logs": [LOG_LINE]}}), prompts).run(ctx, None)
    assert (result.stop_reason, result.draft, len(model.requests)) == ("budget_tool_calls", None, 2)


async def test_observation_budget_stops_before_the_next_model_call(prompts: PromptLibrary) -> None:
    """Once the projections seen exceed max_observation_bytes the loop ends with 'budget_observation'."""
    big = {"logs": [dict(LOG_LINE, message="x" * 600)]}
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)]), submit_cited])
    ctx, _ = make_ctx(max_observation_bytes=500)
    result = await agent_with(model, FakeBoundary({"query_logs": big}), prompts).run(ctx, None)
    assert (result.stop_reason, len(model.requests)) == ("budget_observation", 1)


async def test_deadline_interrupts_a_slow_model(prompts: PromptLibrary) -> None:
    """A model slower than the run's deadline is interrupted at the deadline: 'deadline', no draft."""
    model = ScriptedChatModel([submit_cited], delay_s=5.0)
    ctx, _timeline = make_ctx(deadline_s=0.2)
    started = time.monotonic()
    result = await agent_with(model, FakeBoundary(), prompts).run(ctx, None)
    assert time.monotonic() - started < 1.5
    assert (result.stop_reason, result.draft) == ("deadline", None)
    assert model.requests[0].timeout_s <= 0.2


async def test_cancel_during_a_model_call_is_prompt(prompts: PromptLibrary) -> None:
    """Setting the cancel event while the model is thinking ends the run at once with 'cancelled'."""
    model = ScriptedChatModel([submit_cited], delay_s=5.0)
    ctx, _ = make_ctx()
    asyncio.get_running_loop().call_later(0.1, ctx.cancelled.set)
    started = time.monotonic()
    result = await agent_with(model, FakeBoundary(), prompts).run(ctx, None)
    assert time.monotonic() - started < 1.0
    assert (result.stop_reason, result.draft) == ("cancelled", None)


async def test_cancel_during_tool_calls_is_prompt(prompts: PromptLibrary) -> None:
    """Cancelling while tools run stops the loop without waiting for them."""
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)]), submit_cited])
    ctx, _ = make_ctx()
    asyncio.get_running_loop().call_later(0.1, ctx.cancelled.set)
    started = time.monotonic()
    result = await agent_with(model, FakeBoundary(delay_s=5.0), prompts).run(ctx, None)
    assert time.monotonic() - started < 1.0
    assert result.stop_reason == "cancelled"


async def test_cancelled_before_start_calls_no_model(prompts: PromptLibrary) -> None:
    """A run cancelled before the first step never calls the model."""
    model = ScriptedChatModel([submit_cited])
    ctx, _ = make_ctx()
    ctx.cancelled.set()
    result = await agent_with(model, FakeBoundary(), prompts).run(ctx, None)
    assert (result.stop_reason, model.requests) == ("cancelled", [])


async def test_model_unavailable_ends_with_model_unavailable(prompts: PromptLibrary) -> None:
    """A ModelUnavailable from the model port ends the loop with 'model_unavailable' and a MODEL_CALL error event."""
    model = ScriptedChatModel([ModelUnavailable("down", status_code=503)])
    ctx, timeline = make_ctx()
    result = await agent_with(model, FakeBoundary(), prompts).run(ctx, None)
    assert (result.stop_reason, result.draft) == ("model_unavailable", None)
    assert timeline.of(EventType.MODEL_CALL)[0]["error"] == "model_unavailable"


async def test_progress_reports_planning_steps_never_drafting(prompts: PromptLibrary) -> None:
    """Each model step is reported as PLANNING with its number and the tool calls so far (never 'writing')."""
    progress = RecordingProgress()
    model = ScriptedChatModel([reply(calls=[("c1", "query_logs", LOGS_ARGS)]), submit_cited])
    ctx, _ = make_ctx()
    ctx.progress = progress
    await agent_with(model, FakeBoundary({"query_logs": {"logs": [LOG_LINE]}}), prompts).run(ctx, None)
    assert progress.updates == [
        (ctx.run_id, ProgressUpdate(stage=ProgressStage.PLANNING, step=1, tool_calls=0)),
        (ctx.run_id, ProgressUpdate(stage=ProgressStage.PLANNING, step=2, tool_calls=1)),
    ]

