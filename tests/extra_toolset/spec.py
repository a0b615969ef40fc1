"""list_deploys' static description: projection, quantity kinds, words, Show-evidence view."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.contracts.evidence import EvidenceStatus, ProjectionBase, RawResult
from core.contracts.release import FactTable
from core.tools.contract import (
    ArgumentRoles,
    Cleaner,
    EvidenceView,
    Fact,
    FieldKind,
    FieldQuantity,
    Nouns,
    QuantityKinds,
    TableView,
    ToolSpec,
)

NAME: Final = "list_deploys"
COLUMNS = ("version", "started_at", "took", "pods")


class DeploysArgs(BaseModel):
    """List the deploys of one service, newest first."""

    model_config = ConfigDict(extra="forbid")

    service: str = Field(min_length=1, max_length=100, description="Exact service name, e.g. 'order-service'.")
    limit: int = Field(default=5, ge=1, le=20, description="How many deploys (1-20).")


class Deploy(BaseModel):
    version: str
    started_at: str
    took: float
    pods: int


class DeploysProjection(ProjectionBase):
    tool_name: Literal["list_deploys"] = NAME
    service: str | None = None
    deploys: list[Deploy] = Field(default_factory=list)


def _row(deploy: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(deploy.get(c, "")) for c in COLUMNS)


class DeploysSpec(ToolSpec):
    name = NAME
    args_model = DeploysArgs
    summary = "List one service's recent deploys."
    projection_model = DeploysProjection
    items_field = "deploys"
    nouns = Nouns(kind="Deploys", what="deploy listing", found="deploy", label="deploy")
    # `took` is a bare number of seconds: only the declaration says so (its name carries no unit).
    quantities = QuantityKinds(MappingProxyType({
        "took": FieldQuantity(FieldKind.DURATION, unit="s"),
        "pods": FieldQuantity(FieldKind.COUNT),
        "version": FieldQuantity(FieldKind.VERSION),
        "started_at": FieldQuantity(FieldKind.TIMESTAMP),
    }))
    arguments = ArgumentRoles(limit=("limit",), query=("service",))

    def envelope(self, raw: RawResult | None, clean: Cleaner) -> dict[str, Any]:
        service = raw.effective_arguments.get("service") if raw is not None else None
        return {"service": clean.text(service, 100) if service else None}

    def project_items(self, raw: RawResult, limit: int, clean: Cleaner) -> list[Any]:
        return [Deploy(version=clean.text(i["version"], 40), started_at=clean.text(i["started_at"], 40),
                       took=float(i["took"]), pods=int(i["pods"])) for i in raw.items[:limit]]

    def subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any] | None) -> str:
        return str(arguments.get("service") or "")

    def fact(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
             words: frozenset[str]) -> Fact:
        service = arguments.get("service")
        deploys = self.shown_items(projection)
        if status is EvidenceStatus.NO_EVIDENCE or not deploys:
            return Fact(f"No deploys of {service} were listed.")
        table = FactTable(columns=list(COLUMNS), rows=[list(_row(d)) for d in deploys[:5]], total_rows=len(deploys))
        return Fact(f"Deploys of {service}: the newest is {deploys[0]['version']}.", table=table)

    def evidence_view(self, projection: Mapping[str, Any]) -> EvidenceView | None:
        deploys = self.shown_items(projection)
        return TableView(COLUMNS, tuple(_row(d) for d in deploys)) if deploys else None

    def telling_item(self, projection: Mapping[str, Any], words: frozenset[str], limit: int) -> str:
        deploys = self.shown_items(projection)
        return " · ".join(f"{c}={v}" for c, v in zip(COLUMNS, _row(deploys[0]), strict=True))[:limit] if deploys else ""
