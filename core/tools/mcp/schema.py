"""An MCP tool's input schema as the model API takes it, and the check of the model's arguments against it.

The server's JSON Schema is the truth: arguments are validated against it (jsonschema, the draft it names) before
anything is sent. What the agent is offered is derived from it: local $refs inlined, then, when every node can be
expressed in OpenAI's strict function-calling subset, the strict form (every property required, optional ones
nullable, additionalProperties false); otherwise the schema is sent without `strict` (as the model client does for
endpoints that refuse strict). A schema no model API can take (not an object, not valid JSON Schema, unresolvable
or recursive $ref, too large) is a problem: that tool is not offered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator

MAX_SCHEMA_BYTES = 16 * 1024
MAX_DESCRIPTION_CHARS = 1024
_MAX_DEPTH = 24
STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "const", "description",
    "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems",
})
# Dropped from the offered schema only (the validator still enforces them on the server's own schema).
_DROPPED_FOR_MODEL = frozenset({"title", "default", "examples", "$schema", "$id", "$comment", "minLength", "maxLength",
                                "readOnly", "writeOnly", "deprecated"})
STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})


class SchemaProblem(ValueError):
    """Why the model API cannot take this input schema (one sentence)."""


@dataclass(frozen=True)
class OfferedSchema:
    """What the agent is offered for one tool, and how its arguments are checked."""

    parameters: dict[str, Any]
    """What the agent is offered: the strict form when `strict`, else the plain (inlined, cleaned) schema."""
    plain: dict[str, Any]
    """The inlined, cleaned schema before any strict rewriting."""
    strict: bool
    validator: Validator
    original: Mapping[str, Any]

    def problems(self, arguments: Mapping[str, Any]) -> list[str]:
        """Plain words for each way the arguments break the server's schema (values never echoed)."""
        out = []
        for error in sorted(self.validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))[:8]:
            where = ".".join(str(p) for p in error.absolute_path) or "arguments"
            out.append(f"{where}: {_rule(error.validator, error.validator_value)}")
        return out

    def prepared(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The model's arguments as the server expects them: a null for an optional property means "absent"
        (strict schemas make the model send every property)."""
        pruned = _drop_nulls(dict(arguments), self.original)
        return pruned if isinstance(pruned, dict) else {}


def _rule(keyword: Any, value: Any) -> str:
    if keyword == "required":
        return "a required property is missing"
    if keyword == "additionalProperties":
        return "has properties the tool does not take"
    if keyword in ("type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                   "minLength", "maxLength", "minItems", "maxItems", "multipleOf", "format"):
        shown = json.dumps(value)[:120]
        return f"must satisfy {keyword} {shown}"
    return f"does not satisfy {keyword}"


def _drop_nulls(value: Any, schema: Any) -> Any:
    if not isinstance(value, dict) or not isinstance(schema, Mapping):
        return value
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return value
    required = set(schema.get("required", []))
    out: dict[str, Any] = {}
    for key, item in value.items():
        if item is None and key not in required:
            continue
        out[key] = _drop_nulls(item, properties.get(key))
    return out


def _inline(node: Any, defs: Mapping[str, Any], depth: int, trail: tuple[str, ...]) -> Any:
    """Local $refs (#/$defs/X, #/definitions/X) replaced by their target; recursion is a problem."""
    if depth > _MAX_DEPTH:
        raise SchemaProblem(f"nested deeper than {_MAX_DEPTH} levels")
    if isinstance(node, list):
        return [_inline(item, defs, depth + 1, trail) for item in node]
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix("#/$defs/").removeprefix("#/definitions/")
        if name == ref or name not in defs:
            raise SchemaProblem(f"$ref {ref[:80]!r} does not point into the schema's own $defs")
        if name in trail:
            raise SchemaProblem(f"$ref {ref[:80]!r} is recursive; a function schema cannot express it")
        target = _inline(defs[name], defs, depth + 1, (*trail, name))
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return {**target, **_inline(siblings, defs, depth + 1, trail)}
    return {k: _inline(v, defs, depth + 1, trail) for k, v in node.items() if k not in ("$defs", "definitions")}


def _for_model(node: Any, in_properties: bool = False) -> Any:
    """Keywords that only describe or that model APIs refuse dropped (property names are kept whatever they are)."""
    if isinstance(node, list):
        return [_for_model(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    if in_properties:
        return {k: _for_model(v) for k, v in node.items()}
    out = {k: _for_model(v, in_properties=(k == "properties")) for k, v in node.items() if k not in _DROPPED_FOR_MODEL}
    if isinstance(out.get("description"), str):
        out["description"] = out["description"][:MAX_DESCRIPTION_CHARS]
    return out


def _strict(node: Any) -> Any:
    """OpenAI strict form, or None when some node cannot be expressed in it."""
    if isinstance(node, list):
        items = [_strict(item) for item in node]
        return None if any(item is None for item in items) else items
    if not isinstance(node, Mapping):
        return node
    if any(k not in STRICT_KEYWORDS for k in node) or (node.get("format") not in (None, *STRICT_FORMATS)):
        return None
    if not any(k in node for k in ("type", "anyOf", "enum", "const", "properties")):
        return None  # "any value" has no strict form
    out = dict(node)
    if node.get("type") == "object" or "properties" in node:
        extra = node.get("additionalProperties", False)
        if extra not in (False, None) and not (isinstance(extra, Mapping) and not extra):
            return None  # an open map (additionalProperties true or a schema) has no strict form
        properties = node.get("properties", {})
        required = set(node.get("required", []))
        strict_props: dict[str, Any] = {}
        for key, prop in properties.items():
            converted = _strict(prop)
            if converted is None:
                return None
            if key not in required and not _allows_null(converted):
                converted = {"anyOf": [converted, {"type": "null"}]}
            strict_props[key] = converted
        out.update(type="object", properties=strict_props, required=list(strict_props), additionalProperties=False)
        return out
    for key in ("items", "anyOf"):
        if key in node:
            converted = _strict(node[key])
            if converted is None:
                return None
            out[key] = converted
    return out


def _allows_null(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(b, Mapping) and b.get("type") == "null" for b in node.get("anyOf", []))


def offer(input_schema: Mapping[str, Any], *, strict: bool = True) -> OfferedSchema:
    """The schema to offer and its validator; SchemaProblem when the model API could not take it."""
    if not isinstance(input_schema, Mapping):
        raise SchemaProblem("the input schema is not a JSON object")
    if input_schema.get("type", "object") != "object":
        raise SchemaProblem(f"the input schema's type is {input_schema.get('type')!r}; function arguments are an object")
    try:
        size = len(json.dumps(input_schema, separators=(",", ":")).encode())
    except (TypeError, ValueError):
        raise SchemaProblem("the input schema is not JSON") from None
    if size > MAX_SCHEMA_BYTES:
        raise SchemaProblem(f"the input schema is {size // 1024} KiB; at most {MAX_SCHEMA_BYTES // 1024} KiB is offered")
    cls = validators.validator_for(input_schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(input_schema)
    except SchemaError as exc:
        raise SchemaProblem(f"the input schema is not valid JSON Schema ({exc.message[:160]})") from None
    defs = {**input_schema.get("definitions", {}), **input_schema.get("$defs", {})}
    inlined = _inline(input_schema, defs, 0, ())
    model_view = _for_model(inlined)
    model_view.setdefault("type", "object")
    model_view.setdefault("properties", {})
    strict_view = _strict(model_view) if strict else None
    parameters = strict_view if strict_view is not None else model_view
    return OfferedSchema(parameters=parameters, plain=model_view, strict=strict_view is not None,
                         validator=cls(input_schema), original=inlined)
