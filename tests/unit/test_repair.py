"""LlmEvidenceRepairer: one call with submit_diagnosis_draft only, one corrective turn, and no added facts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CallSummary, EvidenceStatus
from core.contracts.release import Violation
from core.llm.model import ModelUnavailable
from core.llm.prompts import PromptLibrary
from core.settings import PROMPTS_DIR
from core.steps.repair import LlmEvidenceRepairer, added_facts
from core.stores.memory import InMemoryAuditStore
from testkit.models import ScriptedChatModel, reply
from testkit.tool_names import ToolName

ORIGINAL: dict[str, Any] = {
    "conclusion": {"text": "order-service fails on HikariCP pool timeouts after the 4.18.0 deploy",
                   "based_on_analysis_ids": ["a1", "a2"]},
    "analysis": [
        {"analysis_id": "a1", "kind": "NORMAL", "text": "order-service logged pool timeouts after 30000ms",
         "tool_call_ids": ["fabricated_9"]},
        {"analysis_id": "a2", "kind": "NORMAL", "text": "deploy 4.18.0 happened at 23:01", "tool_call_ids": ["c2"]},
    ],
    "action_plan": [{"action": "restart order-service pods", "based_on_analysis_ids": ["a1"],
                     "requires_human_confirmation": True}],
    "recommendations": [{"text": "raise the pool size after review", "based_on_analysis_ids": ["a1"]}],
    "limitations": {"scope": "order-service logs and deploys, last 60 minutes", "missing_info": []},
}
VIOLATIONS = [Violation(code="INVOCATION_MISSING", path="analysis[0].tool_call_ids[0]", message="not a call of this run")]
REFERENCABLE = [
    CallSummary(tool_call_id="c1", tool_name=ToolName.QUERY_LOGS, evidence_status=EvidenceStatus.EVIDENCE_FOUND,
                summary="query_logs service=order-service query=timeout: 12 lines"),
    CallSummary(tool_call_id="c2", tool_name=ToolName.QUERY_MYSQL, evidence_status=EvidenceStatus.EVIDENCE_FOUND,
                summary="query_mysql deploys: 1 row"),
]


def edited(**changes: Any) -> dict[str, Any]:
    """A deep copy of ORIGINAL with top-level keys replaced."""
    copy: dict[str, Any] = json.loads(json.dumps(ORIGINAL))
    copy.update(changes)
    return copy


def rebound() -> dict[str, Any]:
    """The honest repair: a1 re-bound from the fabricated id to c1."""
    fixed = edited()
    fixed["analysis"][0]["tool_call_ids"] = ["c1"]
    return fixed


@pytest.fixture
def prompts() -> PromptLibrary:
    return PromptLibrary(PROMPTS_DIR)


async def run_repair(prompts: PromptLibrary, *steps: Any, audit: InMemoryAuditStore | None = None) -> tuple[
        DiagnosisDraft | None, ScriptedChatModel]:
    model = ScriptedChatModel(list(steps))
    repairer = LlmEvidenceRepairer(model, "m", prompts, audit, run_id="run_r")
    result = await repairer.repair("why?", DiagnosisDraft.model_validate(ORIGINAL), VIOLATIONS, REFERENCABLE)
    return result, model


def submit(draft: dict[str, Any], call_id: str | None = "r1") -> Any:
    return reply(calls=[(call_id, "submit_diagnosis_draft", json.dumps(draft))])


async def test_rebinding_a_citation_is_accepted(prompts: PromptLibrary) -> None:
    """Re-binding a fabricated id to a referencable call returns the repaired draft."""
    result, model = await run_repair(prompts, submit(rebound()))
    assert result is not None
    assert result.analysis[0].tool_call_ids == ["c1"]
    (request,) = model.requests
    assert request.tool_names == ["submit_diagnosis_draft"]
    assert request.messages[0]["content"] == prompts.get("evidence_repair")
    body = json.loads(request.messages[1]["content"])
    assert body["query"] == "why?"
    assert body["violations"][0]["code"] == "INVOCATION_MISSING"
    assert [c["tool_call_id"] for c in body["referencable_calls"]] == ["c1", "c2"]


async def test_dropping_items_and_shortening_texts_is_accepted(prompts: PromptLibrary) -> None:
    """Dropping an analysis, the conclusion and actions, and cutting a number out of a text, is a valid repair."""
    fixed = edited(conclusion=None, action_plan=[], recommendations=[],
                   limitations={"scope": "order-service logs", "missing_info": ["no evidence for the pool timeouts"]})
    fixed["analysis"] = [{"analysis_id": "a2", "kind": "NORMAL", "text": "deploy 4.18.0 happened", "tool_call_ids": ["c2"]}]
    result, _ = await run_repair(prompts, submit(fixed))
    assert result is not None
    assert [a.analysis_id for a in result.analysis] == ["a2"]


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda d: d["analysis"].append({"analysis_id": "a3", "kind": "NORMAL", "text": "db CPU at 99%",
                                         "tool_call_ids": ["c1"]}), "new analysis id"),
        (lambda d: d["analysis"][0].update(text="order-service logged 37 pool timeouts after 30000ms"), "text adds words"),
        (lambda d: d["analysis"][0].update(tool_call_ids=["invented_1"]), "cites an id"),
        (lambda d: d["conclusion"].update(text="the database crashed"), "conclusion"),
        (lambda d: d["action_plan"].append({"action": "drop the orders table", "based_on_analysis_ids": ["a1"]}),
         "new action"),
        (lambda d: d["action_plan"][0].update(requires_human_confirmation=False), "human confirmation removed"),
        (lambda d: d["recommendations"].append({"text": "migrate to postgres", "based_on_analysis_ids": []}),
         "new recommendation"),
        (lambda d: d["limitations"].update(missing_info=["the last 500 errors"]), "limitations: new numbers"),
    ],
)
async def test_repair_that_adds_facts_is_rejected(prompts: PromptLibrary, mutate: Any, problem: str) -> None:
    """New analyses, words, ids, conclusions, actions, recommendations or numbers make the repair return None."""
    fixed = rebound()
    mutate(fixed)
    original = DiagnosisDraft.model_validate(ORIGINAL)
    problems = added_facts(original, DiagnosisDraft.model_validate(fixed), ["c1", "c2"])
    assert any(problem in p for p in problems), problems
    result, _ = await run_repair(prompts, submit(fixed))
    assert result is None


async def test_adding_a_conclusion_where_there_was_none_is_rejected() -> None:
    """A repair may remove the conclusion but never create one."""
    original = DiagnosisDraft.model_validate(edited(conclusion=None))
    repaired = DiagnosisDraft.model_validate(rebound())
    assert "conclusion: new or extended" in added_facts(original, repaired, ["c1"])


async def test_prose_gets_one_corrective_turn(prompts: PromptLibrary) -> None:
    """Prose instead of the call gets one corrective user message, then the submitted repair is used."""
    result, model = await run_repair(prompts, reply("I fixed it"), submit(rebound()))
    assert result is not None
    assert model.requests[1].messages[-1]["role"] == "user"


async def test_two_wire_format_mistakes_give_none(prompts: PromptLibrary) -> None:
    """Invalid JSON, then a schema violation: no third call, None."""
    over_caps = edited(analysis=[dict(ORIGINAL["analysis"][0], analysis_id=f"a{i}") for i in range(21)])
    result, model = await run_repair(
        prompts, reply(calls=[("r1", "submit_diagnosis_draft", "{not json")]), submit(over_caps), submit(rebound())
    )
    assert result is None
    assert model.remaining == 1
    assert model.requests[1].messages[-1] == {
        "role": "tool", "tool_call_id": "r1",
        "content": "Wire-format error: the arguments of submit_diagnosis_draft must be one JSON object.",
    }


async def test_schema_violation_then_valid_submit_is_accepted(prompts: PromptLibrary) -> None:
    """A draft over caps is answered with the schema errors; the corrected submit is accepted."""
    over_caps = edited(analysis=[dict(ORIGINAL["analysis"][0], analysis_id=f"a{i}") for i in range(21)])
    result, model = await run_repair(prompts, submit(over_caps, None), submit(rebound()))
    assert result is not None
    correction = model.requests[1].messages[-1]
    assert correction["role"] == "tool"
    assert "schema" in correction["content"]
    assert model.requests[1].messages[-2]["tool_calls"][0]["id"] == correction["tool_call_id"]


async def test_model_unavailable_gives_none(prompts: PromptLibrary) -> None:
    """A transport failure ends the repair with None."""
    result, _ = await run_repair(prompts, ModelUnavailable("down"))
    assert result is None


async def test_reasoning_recorded_when_bound_to_a_run(prompts: PromptLibrary) -> None:
    """The repair call's reasoning (or 'unavailable') is stored in the audit under the bound run id."""
    audit = InMemoryAuditStore()
    await run_repair(prompts, submit(rebound()), audit=audit)
    assert await audit.reasoning("run_r") == [("evidence_repair", 1, "unavailable")]
