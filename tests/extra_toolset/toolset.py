"""The deploys toolset: a fixed list of deploys as its backend (its settings), one check for `diagbot check`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from core.contracts.evidence import RawResult
from core.health.result import Check, CheckResult, Level
from core.settings import Settings
from core.tools.contract import PlannedCall, Tool, ToolEnv, ToolSpec
from core.tools.native import NativeToolAdapter
from tests.extra_toolset.spec import NAME, DeploysArgs, DeploysSpec


class DeploysBackend:
    name = NAME
    args_model = DeploysArgs

    def __init__(self, deploys: Sequence[dict[str, Any]]) -> None:
        self._deploys = list(deploys)

    async def run(self, args: DeploysArgs) -> RawResult:
        found = [d for d in self._deploys if d["service"] == args.service]
        return RawResult(items=found[: args.limit], total_count=len(found),
                         effective_arguments={"service": args.service, "limit": args.limit})


class DeploysToolset:
    name = "deploys"
    specs: Sequence[ToolSpec] = (DeploysSpec(),)

    def __init__(self, deploys: Sequence[dict[str, Any]]) -> None:
        self._deploys = deploys

    async def build(self, settings: Settings, env: ToolEnv) -> Sequence[Tool[Any]]:
        return (NativeToolAdapter(DeploysBackend(self._deploys), DeploysSpec.summary),)

    def checks(self, settings: Settings, *, readiness: bool) -> Sequence[Check]:
        async def probe() -> CheckResult:
            return CheckResult(name=f"tool.{NAME}", level=Level.OK, detail=f"{len(self._deploys)} deploys listed")

        return (Check(f"tool.{NAME}", probe, failing=Level.WARN),)

    def first_look(self, service: str | None, start: datetime, end: datetime) -> Sequence[PlannedCall]:
        return (PlannedCall(NAME, {"service": service}),) if service else ()
