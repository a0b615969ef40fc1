"""The guard's plain projection schemas (core/guard/plain_projection.py) accept exactly what the tools' projection
models accept, with the same facts; a refused projection still gets the models' message."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from core.contracts.evidence import ProjectionBase
from core.guard.inputs import parse_projection
from core.guard.plain_projection import PLAIN, plain_fields, plain_validator
from core.tools.registry import REGISTRY
from testkit.release import knowledge_record, logs_record, sql_record

_VALUES: list[Any] = [None, 0, 1, -1, 1.5, True, False, "", "x", "5", [], {}, [1], {"a": 1}, "EVIDENCE_FOUND",
                      "NO_EVIDENCE", "2026-11-29T23:00:00Z"]


def _projections() -> list[dict[str, Any]]:
    records = [
        logs_record("r", "c_logs", [("2026-11-29T23:00:00Z", "ERROR", "pool timed out after 30000ms")], count=3),
        sql_record("r", "c_sql", "SELECT * FROM deploys", ["s", "v"], [["svc", "4.18.0"], ["svc", "4.19.0"]]),
        knowledge_record("r", "c_kb", "pool exhaustion", [("runbook.md", "Pool", "Raise maximumPoolSize to 40.")]),
    ]
    return [r.projection for r in records if r.projection]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


def _mutated(projection: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    copied = copy.deepcopy(projection)
    path = rng.choice(_paths(copied)[1:])
    parent: Any = copied
    for part in path[:-1]:
        parent = parent[part]
    roll = rng.random()
    if roll < 0.6 or not isinstance(parent, dict):
        parent[path[-1]] = rng.choice(_VALUES)
    elif roll < 0.8:
        del parent[path[-1]]
    else:
        parent[f"extra_{rng.randint(0, 2)}"] = rng.choice(_VALUES)
    return copied


def test_every_registered_tool_has_a_plain_schema() -> None:
    assert {spec.projection_model for spec in REGISTRY.specs()} == set(PLAIN)


@pytest.mark.parametrize("index", range(3))
def test_plain_schemas_accept_what_the_models_accept_with_the_same_facts(index: int) -> None:
    rng = random.Random(index)
    base = _projections()[index]
    spec = REGISTRY.spec_for(base["tool_name"])
    for case in range(400):
        projection = base if case == 0 else _mutated(base, rng)
        try:
            parsed: ProjectionBase | None = spec.projection_model.model_validate(projection)
        except ValidationError:
            parsed = None
        fields = plain_fields(spec.projection_model, spec.items_field, projection)
        assert (parsed is None) == (fields is None), projection
        if projection.get("tool_name") != spec.name:
            continue  # parse_projection finds the model by the name the projection gives
        facts, error = parse_projection(projection)
        assert (facts is None) == (parsed is None)
        assert (error is None) == (parsed is not None)
        if parsed is not None and facts is not None:
            items = getattr(parsed, spec.items_field)
            assert (facts.tool_call_id, facts.tool_name, facts.evidence_status, facts.count, facts.items) == (
                parsed.tool_call_id, parsed.tool_name, parsed.evidence_status, parsed.count, len(items))


def test_a_model_that_does_more_than_validate_its_fields_has_no_plain_schema() -> None:
    class Checked(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: str

        @field_validator("name")
        @classmethod
        def _upper(cls, value: str) -> str:
            return value.upper()

    class Stripped(BaseModel):
        model_config = ConfigDict(str_strip_whitespace=True)
        name: str

    assert plain_validator(Checked) is None
    assert plain_validator(Stripped) is None
