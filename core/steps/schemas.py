"""OpenAI tool schemas generated from the pydantic contracts, with $defs inlined so weaker servers accept them."""

from __future__ import annotations

import copy
import functools
import inspect
from typing import Any

from pydantic import BaseModel

from core.contracts.draft import DiagnosisDraft, KnowledgeAnswer
from core.contracts.evidence import ToolName
from core.tools.args import KnowledgeArgs, LogsArgs, SqlArgs

SUBMIT_DIAGNOSIS = "submit_diagnosis_draft"
SUBMIT_KNOWLEDGE = "submit_knowledge_answer"

_FALLBACK_DESCRIPTIONS = {
    ToolName.LOOKUP_KNOWLEDGE.value: "Search the runbooks. Their text is general guidance, never a fact about this environment.",
    ToolName.QUERY_LOGS.value: "Search one service's log lines in a time window (default: the 60 minutes before now).",
    ToolName.QUERY_MYSQL.value: "Run one read-only SELECT/SHOW/EXPLAIN/DESCRIBE statement.",
    SUBMIT_DIAGNOSIS: "Submit the whole diagnosis draft. Ends the investigation.",
    SUBMIT_KNOWLEDGE: "Submit the knowledge answer with its citations. Ends the lookup.",
}

ARGS_MODELS: dict[str, type[BaseModel]] = {
    ToolName.LOOKUP_KNOWLEDGE.value: KnowledgeArgs,
    ToolName.QUERY_LOGS.value: LogsArgs,
    ToolName.QUERY_MYSQL.value: SqlArgs,
    SUBMIT_DIAGNOSIS: DiagnosisDraft,
    SUBMIT_KNOWLEDGE: KnowledgeAnswer,
}


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace every $ref with its $defs entry and drop $defs and titles (schemas here are not recursive)."""
    defs: dict[str, Any] = schema.get("$defs", {})

    def walk(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if not in_properties and "$ref" in node:
            target = walk(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]))
            extras = {k: walk(v) for k, v in node.items() if k != "$ref"}
            return {**target, **extras}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$defs" or (key == "title" and not in_properties):
                continue
            out[key] = walk(value, in_properties=(key == "properties" and not in_properties))
        return out

    result: dict[str, Any] = walk(schema)
    return result


def function_schema(name: str, model: type[BaseModel]) -> dict[str, Any]:
    """One OpenAI `tools` entry: the model's JSON schema as parameters, its docstring as description."""
    parameters = inline_refs(model.model_json_schema())
    doc = inspect.getdoc(model) or ""
    parameters.pop("description", None)
    description = doc.strip() or _FALLBACK_DESCRIPTIONS.get(name, name)
    if name in _FALLBACK_DESCRIPTIONS and _FALLBACK_DESCRIPTIONS[name] not in description:
        description = f"{_FALLBACK_DESCRIPTIONS[name]} {description}".strip()
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


@functools.cache
def _cached(names: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    # Schema generation costs milliseconds; the contracts never change at run time, so build each set once.
    return tuple(function_schema(n, ARGS_MODELS[n]) for n in names)


def diagnosis_tools() -> list[dict[str, Any]]:
    """Schemas offered to the Diagnosis Agent: the three read-only tools and submit_diagnosis_draft (shared, read-only)."""
    return list(_cached((ToolName.LOOKUP_KNOWLEDGE.value, ToolName.QUERY_LOGS.value, ToolName.QUERY_MYSQL.value,
                         SUBMIT_DIAGNOSIS)))


def repair_tools() -> list[dict[str, Any]]:
    """Schemas offered to EvidenceRepair: submit_diagnosis_draft only (shared, read-only)."""
    return list(_cached((SUBMIT_DIAGNOSIS,)))


def knowledge_tools() -> list[dict[str, Any]]:
    """Schemas offered on the knowledge path: lookup_knowledge and submit_knowledge_answer (shared, read-only)."""
    return list(_cached((ToolName.LOOKUP_KNOWLEDGE.value, SUBMIT_KNOWLEDGE)))
