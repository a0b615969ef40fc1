"""OpenAI strict function-calling rules as a checker, and a grammar-following "model" that fills only what a schema requires.

`strict_mode_problems` is what the fake OpenAI-compatible server applies to `strict: true` functions (as OpenAI
does: a schema breaking the rules is a 400). `minimal_arguments` is what a grammar-constrained weak model
produces: every required property and nothing else, arrays at their minItems, the first enum value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "const", "description",
    "$ref", "$defs", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems",
})


def strict_mode_problems(schema: Any, path: str = "$") -> list[str]:
    """Why a function's parameters break OpenAI's strict-mode rules (empty when they follow them)."""
    if isinstance(schema, list):
        return [p for i, item in enumerate(schema) for p in strict_mode_problems(item, f"{path}[{i}]")]
    if not isinstance(schema, dict):
        return []
    problems = [f"{path}: keyword {k!r} is not supported in strict mode" for k in schema if k not in STRICT_KEYWORDS]
    properties = schema.get("properties")
    if schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        if isinstance(properties, dict) and sorted(schema.get("required", [])) != sorted(properties):
            problems.append(f"{path}: every property must be required")
    for key, value in (properties or {}).items():
        problems += strict_mode_problems(value, f"{path}.{key}")
    for key in ("items", "anyOf"):
        if key in schema:
            problems += strict_mode_problems(schema[key], f"{path}.{key}")
    return problems


def minimal_arguments(schema: dict[str, Any], text_for: Callable[[str], Any]) -> Any:
    """The smallest instance a grammar allows: required properties only, minItems items, nulls where allowed.

    text_for(path) supplies a string (or list) for a leaf (a real weak model writes some text there)."""
    return _fill(schema, "", text_for)


def _fill(node: dict[str, Any], path: str, text_for: Callable[[str], Any]) -> Any:
    if "anyOf" in node:
        branches = node["anyOf"]
        if any(b.get("type") == "null" for b in branches):
            return None
        return _fill(branches[0], path, text_for)
    kind = node.get("type")
    if "enum" in node:
        return node["enum"][0]
    if kind == "object":
        props = node.get("properties", {})
        return {k: _fill(props[k], f"{path}.{k}".lstrip("."), text_for) for k in node.get("required", [])}
    if kind == "array":
        override = text_for(path)
        if isinstance(override, list):
            return override
        return [_fill(node.get("items", {}), f"{path}[]", text_for) for _ in range(node.get("minItems", 0))]
    if kind == "boolean":
        return True
    if kind == "integer":
        return node.get("minimum", 1)
    return text_for(path)
