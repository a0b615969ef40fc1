"""The logs toolset: query_logs over Loki, Elasticsearch/OpenSearch or a JSONL folder, chosen by the settings."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from core.health.result import Check, Level, static
from core.settings import Settings
from core.tools.contract import PlannedCall, Tool, ToolEnv, ToolSpec
from core.tools.logs.build import logs_tool
from core.tools.logs.health import check_log_backend_choice, check_logs
from core.tools.logs.spec import LogsSpec
from core.tools.native import NativeToolAdapter, closing

CHECK = "tool.query_logs"


class LogsToolset:
    """query_logs."""

    name = "logs"
    specs: Sequence[ToolSpec] = (LogsSpec(),)

    async def build(self, settings: Settings, env: ToolEnv) -> Sequence[Tool[Any]]:
        return (NativeToolAdapter(closing(logs_tool(settings, env.clock), env), LogsSpec.summary),)

    def checks(self, settings: Settings, *, readiness: bool) -> Sequence[Check]:
        probe = Check(CHECK, lambda: check_logs(settings), failing=Level.WARN)
        if readiness:
            return (probe,)
        return (Check(f"{CHECK}.backend", static(check_log_backend_choice(settings))), probe)

    def first_look(self, service: str | None, start: datetime, end: datetime) -> Sequence[PlannedCall]:
        return ()
