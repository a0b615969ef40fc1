"""A submit function's arguments written without its name (a bare DiagnosisDraft object, as a 1.5B model wrote in
the live eval): read as that function's call only when nothing else can be meant."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.llm.model import ModelReply
from core.llm.model_step import read_text_calls
from core.llm.text_calls import implied_submit
from core.steps.schemas import diagnosis_tools, knowledge_tools, repair_tools

DRAFT: dict[str, Any] = {
    "conclusion": {"text": "order-service pool exhausted since 23:00", "based_on_analysis_ids": ["a1"]},
    "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": "40 timeouts", "tool_call_ids": ["call_1"]}],
    "action_plan": [{"action": "raise the pool size", "based_on_analysis_ids": ["a1"]}],
    "recommendations": [],
    "limitations": {"scope": "logs 22:30-23:30", "missing_info": []},
}
QUESTION = [{"role": "user", "content": "why is order-service failing since 23:00?"}]


def test_a_bare_draft_object_is_the_submit_call() -> None:
    found = implied_submit(json.dumps(DRAFT, indent=2), diagnosis_tools())
    assert [c.name for c in found.calls] == ["submit_diagnosis_draft"]
    assert json.loads(found.calls[0].arguments) == DRAFT
    assert found.calls[0].id is None
    assert found.format == "implied_submit"


def test_a_fenced_draft_with_prose_keeps_the_prose_as_remainder() -> None:
    content = "Here is my diagnosis.\n```json\n" + json.dumps(DRAFT) + "\n```\nDone."
    found = implied_submit(content, repair_tools())
    assert [c.name for c in found.calls] == ["submit_diagnosis_draft"]
    assert found.remainder == "Here is my diagnosis.\n\nDone."


def test_only_submit_functions_are_implied() -> None:
    """Arguments that fit query_logs are never run as a query: only a stage's ending function is implied."""
    logs_args = {"service": "order-service", "query": "timeout", "level": "ERROR"}
    found = implied_submit(json.dumps(logs_args), diagnosis_tools())
    assert found.calls == []


def test_keys_outside_the_schema_or_too_few_of_its_keys_are_no_call() -> None:
    extra = {**DRAFT, "verdict": "SUPPORTED"}
    assert implied_submit(json.dumps(extra), diagnosis_tools()).calls == []
    two = {k: DRAFT[k] for k in ("conclusion", "analysis")}
    assert implied_submit(json.dumps(two), diagnosis_tools()).calls == []
    assert implied_submit("{}", diagnosis_tools()).calls == []


def test_a_draft_without_its_empty_lists_is_still_the_call() -> None:
    """The draft model is lenient: a left-out empty list is validated (and guarded) like any draft."""
    short = {k: v for k, v in DRAFT.items() if k not in ("recommendations", "action_plan")}
    assert [c.name for c in implied_submit(json.dumps(short), diagnosis_tools()).calls] == ["submit_diagnosis_draft"]


def test_two_objects_or_one_inside_a_line_are_no_call() -> None:
    two = json.dumps(DRAFT) + "\n" + json.dumps(DRAFT)
    assert implied_submit(two, diagnosis_tools()).calls == []
    inline = "I would submit " + json.dumps(DRAFT) + " but I am not sure."
    assert implied_submit(inline, diagnosis_tools()).calls == []


def test_the_draft_of_the_wrong_stage_is_no_call() -> None:
    """On the knowledge path a draft fits no offered submit function (submit_knowledge_answer has other fields)."""
    assert implied_submit(json.dumps(DRAFT), knowledge_tools()).calls == []


def test_a_draft_echoed_from_the_conversation_is_not_a_call() -> None:
    """A draft-shaped text the model was given (a planted tool result, a pasted report) repeated is data."""
    planted = json.dumps(DRAFT)
    messages = [*QUESTION, {"role": "tool", "tool_call_id": "c1", "content": planted}]
    reply = ModelReply(content=planted, tool_calls=[], finish_reason="stop")
    parsed, notes = read_text_calls(reply, messages, diagnosis_tools())
    assert parsed.tool_calls == []
    assert notes == {"echoed_calls_ignored": 1}


def test_read_text_calls_uses_it_only_when_no_call_is_written() -> None:
    reply = ModelReply(content=json.dumps(DRAFT, indent=2), tool_calls=[], finish_reason="stop")
    parsed, notes = read_text_calls(reply, QUESTION, diagnosis_tools())
    assert [c.name for c in parsed.tool_calls] == ["submit_diagnosis_draft"]
    assert notes == {"tool_calls": 1, "calls_from_text": "implied_submit"}
    assert parsed.content is None
    named = json.dumps({"name": "submit_diagnosis_draft", "arguments": DRAFT})
    parsed, notes = read_text_calls(ModelReply(content=named, tool_calls=[], finish_reason="stop"), QUESTION,
                                    diagnosis_tools())
    assert notes["calls_from_text"] == "json"
    assert read_text_calls(reply, QUESTION, None)[0].tool_calls == []


@given(st.lists(st.sampled_from([*'{}[]"<>:,/ \n`abc_', '"conclusion"', '"analysis"', '"limitations"', "```json\n",
                                 "\n```", "null", "1"]), max_size=60).map("".join))
@settings(max_examples=300, deadline=None)
def test_any_text_is_read_without_error(text: str) -> None:
    found = implied_submit(text, diagnosis_tools())
    for call in found.calls:
        assert call.name == "submit_diagnosis_draft"
        assert isinstance(json.loads(call.arguments), dict)
