"""OpenAI tool schemas generated from the pydantic contracts, with $defs inlined so weaker servers accept them.

The schema the model is given says what the contract needs (SPEC §4, §12): a submit function's fields are all
required (a draft needs at least one analysis with id, kind, text and citations, and a scope), so a
grammar-constrained server cannot produce a draft that satisfies the schema yet can never pass the guard.
The pydantic models themselves stay lenient, so a missing field becomes a guard violation code, not a crash.
With strict=True the schemas also follow OpenAI's strict function-calling rules (every property required,
optional scalars nullable, additionalProperties false, no unsupported keywords) and carry "strict": true.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from core.contracts.draft import DiagnosisDraft, KnowledgeAnswer
from core.tools.contract import Tool
from core.tools.knowledge.args import NAME as KNOWLEDGE_TOOL
from core.tools.native import described
from core.tools.registry import current_registry

SUBMIT_DIAGNOSIS = "submit_diagnosis_draft"
SUBMIT_KNOWLEDGE = "submit_knowledge_answer"

_SUBMIT_DESCRIPTIONS = MappingProxyType({
    SUBMIT_DIAGNOSIS: "Submit the whole diagnosis draft. Ends the investigation.",
    SUBMIT_KNOWLEDGE: "Submit the knowledge answer with its citations. Ends the lookup.",
})

SUBMIT_MODELS: Mapping[str, type[BaseModel]] = MappingProxyType({
    SUBMIT_DIAGNOSIS: DiagnosisDraft,
    SUBMIT_KNOWLEDGE: KnowledgeAnswer,
})


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


SUBMIT_FUNCTIONS = frozenset({SUBMIT_DIAGNOSIS, SUBMIT_KNOWLEDGE})
NULLABLE_IN_CONTRACT = frozenset({"conclusion"})
AT_LEAST_ONE = frozenset({"analysis", "citations", "tool_call_ids"})
# Keywords OpenAI's strict mode rejects; the pydantic model still enforces them when the answer is parsed.
STRICT_UNSUPPORTED = frozenset({"maxLength", "minLength", "default", "title", "examples"})


def _non_null(node: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an Optional's anyOf (keeping the outer description)."""
    branches = [b for b in node.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) != 1:
        return node
    return {**branches[0], **{k: v for k, v in node.items() if k not in ("anyOf", "default")}}


def require_contract(node: Any) -> Any:
    """Every property of a submit function's objects required; lists the contract needs get minItems 1."""
    if isinstance(node, list):
        return [require_contract(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: require_contract(v) for k, v in node.items()}
    properties = out.get("properties")
    if out.get("type") == "object" and isinstance(properties, dict):
        for key, prop in list(properties.items()):
            prop = {k: v for k, v in prop.items() if k != "default"}
            if key not in NULLABLE_IN_CONTRACT and "anyOf" in prop:
                prop = _non_null(prop)
            if key in AT_LEAST_ONE and prop.get("type") == "array":
                prop["minItems"] = 1
            properties[key] = prop
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


def strict_schema(node: Any) -> Any:
    """OpenAI strict mode: all properties required, optional scalars nullable, no unsupported keywords."""
    if isinstance(node, list):
        return [strict_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    required = set(node.get("required", []))
    out = {k: strict_schema(v) for k, v in node.items() if k not in STRICT_UNSUPPORTED}
    properties = out.get("properties")
    if out.get("type") == "object" and isinstance(properties, dict):
        for key, prop in list(properties.items()):
            optional = key not in required
            nullable = "anyOf" in prop and any(b.get("type") == "null" for b in prop["anyOf"])
            if optional and not nullable and prop.get("type") != "array":
                properties[key] = {"anyOf": [{k: v for k, v in prop.items() if k != "description"}, {"type": "null"}],
                                   **({"description": prop["description"]} if "description" in prop else {})}
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


def function_schema(name: str, model: type[BaseModel], *, strict: bool = False,
                    summary: str | None = None) -> dict[str, Any]:
    """One OpenAI `tools` entry: the model's JSON schema as parameters, its docstring (after `summary`) as description."""
    summary = summary if summary is not None else _SUBMIT_DESCRIPTIONS.get(name, "")
    return entry(name, described(summary, inspect.getdoc(model)) or name, model.model_json_schema(), strict=strict)


def entry(name: str, description: str, schema: dict[str, Any], *, strict: bool = False) -> dict[str, Any]:
    """One OpenAI `tools` entry from a JSON schema: $defs inlined, submit functions' contract required, strict rules."""
    parameters = inline_refs(schema)
    if name in SUBMIT_FUNCTIONS:
        parameters = require_contract(parameters)
    if strict:
        parameters = strict_schema(parameters)
    parameters.pop("description", None)
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    function: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def tool_schemas(tools: Iterable[Tool[Any]] | None = None, *, strict: bool = False) -> list[dict[str, Any]]:
    """Entries for configured tools; None: the registry's native tools, from their argument models (no backend)."""
    # Schema generation costs milliseconds: build each set once where the step is wired (bootstrap), not per run.
    if tools is None:
        return [function_schema(spec.name, spec.args_model, strict=strict, summary=spec.summary)
                for spec in current_registry().specs() if spec.args_model is not None]
    # A tool whose schema has no strict form (an MCP tool taking an open map, oneOf, ...) says so (`strict = False`):
    # it is sent without strict, the others keep it (OpenAI takes a mix).
    return [entry(tool.name, tool.description, tool.parameters(), strict=strict and getattr(tool, "strict", True))
            for tool in tools]


def _submit(name: str, strict: bool) -> dict[str, Any]:
    return function_schema(name, SUBMIT_MODELS[name], strict=strict)


def diagnosis_tools(tools: Iterable[Tool[Any]] | None = None, *, strict: bool = False) -> list[dict[str, Any]]:
    """Schemas offered to the Diagnosis Agent: every configured read-only tool, then submit_diagnosis_draft."""
    return [*tool_schemas(tools, strict=strict), _submit(SUBMIT_DIAGNOSIS, strict)]


def repair_tools(*, strict: bool = False) -> list[dict[str, Any]]:
    """Schemas offered to EvidenceRepair: submit_diagnosis_draft only."""
    return [_submit(SUBMIT_DIAGNOSIS, strict)]


def knowledge_tools(tools: Iterable[Tool[Any]] | None = None, *, strict: bool = False) -> list[dict[str, Any]]:
    """Schemas offered on the knowledge path: lookup_knowledge and submit_knowledge_answer."""
    knowledge = [s for s in tool_schemas(tools, strict=strict) if s["function"]["name"] == KNOWLEDGE_TOOL]
    return [*knowledge, _submit(SUBMIT_KNOWLEDGE, strict)]


def offered_names(schemas: Iterable[dict[str, Any]]) -> frozenset[str]:
    """The read-only tools a schema list offers (its submit functions left out)."""
    return frozenset(s["function"]["name"] for s in schemas) - SUBMIT_FUNCTIONS
