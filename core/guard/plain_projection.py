"""A projection's validity and facts without building its models: the tool's projection schema with every model
replaced by its fields (pydantic-core `model-fields`, the same validation, answering plain dicts), so a valid
projection costs about a third of `model_validate` (no model instances are made and freed).

It accepts exactly what the models accept: a model validator given anything but an instance of its class validates
it with its fields schema, and only schemas whose models add nothing else are made plain (no custom __init__, no
post-init, no root model, no config but the title and `extra`, no function validators, no references). A projection
it refuses is validated again by the models (core/guard/inputs.py), which give the message; so is anything of a
model it has no plain schema for. Built once per registered tool, at import.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel
from pydantic_core import SchemaValidator, ValidationError

from core.tools.registry import REGISTRY

_PLAIN_TYPES = frozenset({"any", "bool", "default", "dict", "enum", "float", "int", "list", "literal", "model-field",
                          "model-fields", "nullable", "str", "none"})
"""Schema types whose validation never depends on a model instance (a model node is rewritten, see _plain)."""
_MODEL_KEYS = frozenset({"type", "cls", "schema", "config", "custom_init", "root_model", "metadata", "ref"})
_CONFIG_KEYS = frozenset({"title", "extra_fields_behavior"})
_SKIPPED = frozenset({"serialization", "metadata"})


def _plain(schema: Any) -> Any:
    """The schema with each model node replaced by its fields schema; raises ValueError when it holds anything whose
    validation a plain rewrite might change."""
    if isinstance(schema, list):
        return [_plain(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind == "model":
        config = schema.get("config") or {}
        if (set(schema) - _MODEL_KEYS or schema.get("custom_init") or schema.get("root_model")
                or set(config) - _CONFIG_KEYS):
            raise ValueError(f"model {schema.get('cls')!r} does more than validate its fields")
        inner = _plain(schema["schema"])
        if not isinstance(inner, dict) or inner.get("type") != "model-fields":
            raise ValueError("a model without a fields schema")
        inner.setdefault("extra_behavior", config.get("extra_fields_behavior", "ignore"))
        return inner
    if isinstance(kind, str) and kind not in _PLAIN_TYPES:
        raise ValueError(f"schema type {kind!r} is not made plain")
    return {key: value if key in _SKIPPED else _plain(value) for key, value in schema.items()}


def plain_validator(model: type[BaseModel]) -> SchemaValidator | None:
    """A validator of the model's fields (plain dicts), or None when the model's schema cannot be made plain."""
    try:
        schema = _plain(model.__pydantic_core_schema__)
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(schema, dict) or schema.get("type") != "model-fields":
        return None
    return SchemaValidator(schema)


def _build() -> Mapping[type[BaseModel], tuple[SchemaValidator, str]]:
    found: dict[type[BaseModel], tuple[SchemaValidator, str]] = {}
    for spec in REGISTRY.specs():
        model = spec.projection_model
        validator = plain_validator(model) if spec.items_field in model.model_fields else None
        if validator is not None:
            found[model] = (validator, spec.items_field)
    return MappingProxyType(found)


PLAIN: Mapping[type[BaseModel], tuple[SchemaValidator, str]] = _build()
"""Projection model -> (its plain validator, its items field), for the registered tools."""


def plain_fields(model: type[BaseModel], items_field: str, projection: Mapping[str, Any]) -> dict[str, Any] | None:
    """The validated fields of a projection when the model's plain validator accepts it, else None (then validate
    with the model: it refuses it too, or the model has no plain validator)."""
    plain = PLAIN.get(model)
    if plain is None or plain[1] != items_field:
        return None
    try:
        fields, _, _ = plain[0].validate_python(projection)
    except ValidationError:
        return None
    return fields if isinstance(fields, dict) else None
