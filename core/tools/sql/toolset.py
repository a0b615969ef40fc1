"""The SQL toolset: query_mysql over SQLite, MySQL/MariaDB or PostgreSQL (DIAG_SQL_URL), read-only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from core.health.result import Check, Level
from core.settings import Settings
from core.tools.contract import PlannedCall, Tool, ToolEnv, ToolSpec
from core.tools.native import NativeToolAdapter, closing
from core.tools.sql.health import check_sql, check_sql_privileges
from core.tools.sql.spec import SqlSpec
from core.tools.sql.tool import SqlTool

CHECK = "tool.query_mysql"


def sql_tool(settings: Settings, env: ToolEnv) -> SqlTool:
    """The tool over DIAG_SQL_URL with the settings' bounds."""
    return SqlTool(
        settings.diag_sql_url,
        timeout_s=settings.diag_sql_timeout_s,
        row_cap=settings.diag_sql_row_cap,
        # A pinned clock also pins NOW() in SQL, so demo and replay queries see the same "now" as the logs.
        clock=env.clock if env.pinned is not None else None,
        schemas=settings.diag_sql_schemas,
        allow_privileged=settings.diag_sql_allow_privileged,
        cell_max_bytes=settings.diag_sql_cell_max_bytes,
        result_max_bytes=settings.diag_sql_result_max_bytes,
    )


class SqlToolset:
    """query_mysql."""

    name = "sql"
    specs: Sequence[ToolSpec] = (SqlSpec(),)

    async def build(self, settings: Settings, env: ToolEnv) -> Sequence[Tool[Any]]:
        return (NativeToolAdapter(closing(sql_tool(settings, env), env), SqlSpec.summary),)

    def checks(self, settings: Settings, *, readiness: bool) -> Sequence[Check]:
        probe = Check(CHECK, lambda: check_sql(settings), failing=Level.WARN)
        if readiness:
            return (probe,)
        return (probe, Check(f"{CHECK}.privileges", lambda: check_sql_privileges(settings), failing=Level.WARN))

    def first_look(self, service: str | None, start: datetime, end: datetime) -> Sequence[PlannedCall]:
        return ()
