"""Tool schemas offered to the model: generated from the pydantic contracts, inlined, capped and documented."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from core.steps.schemas import (
    SUBMIT_FUNCTIONS,
    diagnosis_tools,
    function_schema,
    inline_refs,
    knowledge_tools,
    repair_tools,
)
from core.tools.registry import REGISTRY


def walk(node: Any) -> list[dict[str, Any]]:
    """Every dict in a JSON tree."""
    if isinstance(node, dict):
        return [node, *(d for v in node.values() for d in walk(v))]
    if isinstance(node, list):
        return [d for v in node for d in walk(v)]
    return []


def params(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(t["function"]["parameters"] for t in tools if t["function"]["name"] == name)


def test_tool_sets_per_stage() -> None:
    """The agent sees the four native tools + submit_diagnosis_draft; repair only the submit; knowledge only lookup + its
    submit."""
    assert [t["function"]["name"] for t in diagnosis_tools()] == [
        "lookup_knowledge", "query_logs", "query_mysql", "query_metrics", "submit_diagnosis_draft"]
    assert [t["function"]["name"] for t in repair_tools()] == ["submit_diagnosis_draft"]
    assert [t["function"]["name"] for t in knowledge_tools()] == ["lookup_knowledge", "submit_knowledge_answer"]


@pytest.mark.parametrize("tools", [diagnosis_tools(), knowledge_tools(), repair_tools()])
def test_schemas_have_no_refs_and_are_plain_json(tools: list[dict[str, Any]]) -> None:
    """No $ref or $defs remain anywhere, and every schema survives a JSON round trip."""
    for node in walk(tools):
        assert "$ref" not in node
        assert "$defs" not in node
    assert json.loads(json.dumps(tools)) == tools


def test_tool_arguments_match_the_spec() -> None:
    """Required arguments and bounds of SPEC §3 are in the schemas."""
    tools = diagnosis_tools()
    logs = params(tools, "query_logs")
    assert logs["required"] == ["service", "query"]
    assert set(logs["properties"]) == {"service", "query", "level", "start", "end", "limit"}
    assert (logs["properties"]["limit"]["minimum"], logs["properties"]["limit"]["maximum"]) == (1, 50)
    knowledge = params(tools, "lookup_knowledge")
    assert knowledge["required"] == ["query"]
    assert (knowledge["properties"]["top_k"]["minimum"], knowledge["properties"]["top_k"]["maximum"]) == (1, 10)
    assert params(tools, "query_mysql")["required"] == ["sql"]


def test_draft_schema_carries_the_caps_and_inlined_enum() -> None:
    """The draft schema holds the §4 caps, and the analysis kind enum is inlined."""
    draft = params(diagnosis_tools(), "submit_diagnosis_draft")
    assert draft["properties"]["analysis"]["maxItems"] == 20
    assert draft["properties"]["action_plan"]["maxItems"] == 10
    assert draft["properties"]["recommendations"]["maxItems"] == 10
    analysis = draft["properties"]["analysis"]["items"]
    assert analysis["properties"]["tool_call_ids"]["maxItems"] == 10
    assert analysis["properties"]["text"]["maxLength"] == 1000
    enums = [n["enum"] for n in walk(analysis["properties"]["kind"]) if "enum" in n]
    assert enums == [["NORMAL", "NEGATIVE_OBSERVATION"]]
    assert draft["additionalProperties"] is False


def test_descriptions_come_from_docstrings_and_field_docs() -> None:
    """Function descriptions include the model docstring; field descriptions are kept."""
    tools = {t["function"]["name"]: t["function"] for t in diagnosis_tools() + knowledge_tools()}
    assert "submit_diagnosis_draft" in tools["submit_diagnosis_draft"]["description"]
    assert "never a fact about this environment" in tools["lookup_knowledge"]["description"]
    citation = params(knowledge_tools(), "submit_knowledge_answer")["properties"]["citations"]["items"]
    assert "evidence_blocks" in citation["properties"]["doc"]["description"]
    assert {s.name for s in REGISTRY.specs() if s.args_model is not None} | SUBMIT_FUNCTIONS == set(tools)


def test_inline_refs_keeps_properties_named_like_keywords() -> None:
    """A property called 'title' is a field, not a schema keyword, and survives inlining."""

    class Inner(BaseModel):
        """Inner doc."""

        title: str

    class Outer(BaseModel):
        """Outer doc."""

        inner: Inner
        title: str = "x"

    schema = function_schema("outer", Outer)["function"]["parameters"]
    assert set(schema["properties"]) == {"inner", "title"}
    assert set(schema["properties"]["inner"]["properties"]) == {"title"}
    assert "title" not in schema["properties"]["inner"]
    assert inline_refs({"type": "object"}) == {"type": "object"}
