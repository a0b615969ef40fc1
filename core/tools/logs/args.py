"""Arguments of query_logs (SPEC §3): validated at the boundary; their JSON schema is what the agent sees."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import Field, field_validator

from core.tools.native import WindowArgs

DEFAULT_LOG_WINDOW = timedelta(minutes=60)
LogLevel = Literal["ERROR", "WARN", "INFO", "DEBUG"]
_LEVEL_ALIASES = MappingProxyType({"WARNING": "WARN", "ERR": "ERROR"})

NAME: Final = "query_logs"
"""The tool's name: part of the product's interface (SPEC §3), in prompts, transcripts and tests."""


class LogsArgs(WindowArgs):
    """Arguments of query_logs: matching lines of one service in a time window."""

    service: str = Field(min_length=1, max_length=200, description="Exact service name (case-insensitive), e.g. 'order-service'.")
    query: str = Field(
        min_length=1,
        max_length=500,
        description='Keywords that must all appear in the message (case-insensitive), or a "quoted phrase"; '
                    '* alone matches every line (e.g. with level ERROR: what the service logs as errors).',
    )
    level: LogLevel | None = Field(default=None, description="Only lines of this level: ERROR, WARN, INFO or DEBUG.")
    start: datetime | None = Field(
        default=None, description="Window start, ISO-8601 (UTC if no offset). Default: 60 minutes before `end`."
    )
    end: datetime | None = Field(
        default=None, description="Window end, ISO-8601 (UTC if no offset). Default: the configured clock."
    )
    limit: int = Field(default=20, ge=1, le=50, description="Maximum lines returned (1-50); the count covers all matches.")

    @field_validator("level", mode="before")
    @classmethod
    def _normalise_level(cls, value: Any) -> Any:
        if isinstance(value, str):
            upper = value.strip().upper()
            return _LEVEL_ALIASES.get(upper, upper)
        return value

    def window(self, now: datetime) -> tuple[datetime, datetime]:
        """The effective [start, end] window: missing end is `now`, missing start is 60 minutes before end."""
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        end = self.end or (now if self.start is None or self.start < now else self.start + DEFAULT_LOG_WINDOW)
        start = self.start or end - DEFAULT_LOG_WINDOW
        return start, end
