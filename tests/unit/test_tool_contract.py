"""The toolset contract and the registry's lookups: unknown names are explicit errors, kinds resolve by path."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest
from pydantic import BaseModel, Field

from core.contracts.evidence import ProjectionBase, RawResult
from core.health.result import Check
from core.settings import Settings
from core.tools.contract import (
    FieldKind,
    FieldQuantity,
    InvalidArguments,
    Nouns,
    PlannedCall,
    QuantityKinds,
    Tool,
    ToolEnv,
    ToolSpec,
    UnknownTool,
)
from core.tools.native import NativeToolAdapter
from core.tools.registry import REGISTRY, ToolRegistry, current_registry, spec_for, using_registry


class _Projection(ProjectionBase):
    items: list[dict[str, Any]] = Field(default_factory=list)


class _Spec(ToolSpec):
    name = "probe_things"
    projection_model = _Projection
    nouns = Nouns(kind="Probes", what="probe")
    quantities = QuantityKinds({"latency": FieldQuantity(FieldKind.DURATION, unit="ms"),
                                "points.*.1": FieldQuantity(FieldKind.NUMBER, unit_field="unit")})


class _Family(ToolSpec):
    name = "fam"
    projection_model = _Projection
    nouns = Nouns(kind="Family", what="family call")

    def matches(self, name: str) -> bool:
        return name.startswith("fam_")


class _Set:
    name = "probe"
    specs: Sequence[ToolSpec] = (_Spec(), _Family())

    async def build(self, settings: Settings, env: ToolEnv) -> Sequence[Tool[Any]]:
        return ()

    def checks(self, settings: Settings, *, readiness: bool) -> Sequence[Check]:
        return ()

    def first_look(self, service: str | None, start: datetime, end: datetime) -> Sequence[PlannedCall]:
        return (PlannedCall("probe_things", {"service": service}),)


def test_kinds_resolve_by_path_with_list_indices_as_stars() -> None:
    kinds = _Spec.quantities
    assert kinds.of("latency") == FieldQuantity(FieldKind.DURATION, unit="ms")
    assert kinds.of("points.3.1").unit_field == "unit"
    assert kinds.of("other").kind is FieldKind.GUESS


def test_unknown_names_are_explicit_errors_and_families_match() -> None:
    registry = ToolRegistry((_Set(),))
    assert registry.spec_for("fam_x_y").name == "fam"
    with pytest.raises(UnknownTool, match="nope"):
        registry.spec_for("nope")
    with pytest.raises(ValueError, match="same tool"):
        ToolRegistry((_Set(), _Set()))
    assert registry.first_look("svc", datetime(2026, 1, 1), datetime(2026, 1, 2))[0].tool == "probe_things"


def test_a_scoped_registry_is_seen_only_inside_its_scope() -> None:
    extra = REGISTRY.with_toolsets(_Set())
    with using_registry(extra):
        assert current_registry() is extra
        assert spec_for("probe_things").nouns.kind == "Probes"
    assert current_registry() is REGISTRY
    with pytest.raises(UnknownTool):
        spec_for("probe_things")


class _Args(BaseModel):
    """Probe one thing."""

    n: int = Field(ge=1)


class _Backend:
    name = "probe_things"
    args_model = _Args

    async def run(self, args: _Args) -> RawResult:
        return RawResult(items=[{"n": args.n}], total_count=1)


async def test_native_adapter_validates_with_the_model_and_describes_it() -> None:
    tool = NativeToolAdapter(_Backend(), "Probes things.")
    assert tool.description == "Probes things. Probe one thing."
    assert tool.parameters()["properties"]["n"]["minimum"] == 1
    with pytest.raises(InvalidArguments, match="n: input should be greater than or equal to 1") as caught:
        tool.validate({"n": 0})
    assert "0" not in caught.value.message.split(":", 1)[1].replace("1", "")
    args = tool.validate({"n": 2})
    assert tool.effective(args) == {"n": 2}
    assert (await tool.run(args)).items == [{"n": 2}]
