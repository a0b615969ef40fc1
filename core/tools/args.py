"""Argument models of the three read-only tools; they are validated at the boundary and become the model's JSON schemas."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.contracts.evidence import ToolName

DEFAULT_LOG_WINDOW = timedelta(minutes=60)
LogLevel = Literal["ERROR", "WARN", "INFO", "DEBUG"]
_LEVEL_ALIASES = MappingProxyType({"WARNING": "WARN", "ERR": "ERROR"})


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        """A null for a field with a non-null default means "use the default" (strict schemas make every field
        required and optional ones nullable, so strict-mode models send `"limit": null`)."""
        if isinstance(data, dict):
            fields = cls.model_fields
            return {k: v for k, v in data.items() if not (v is None and k in fields and fields[k].default is not None)}
        return data


class KnowledgeArgs(_Args):
    """Arguments of lookup_knowledge: ranked retrieval over the Markdown runbooks."""

    query: str = Field(
        min_length=1, max_length=500, description="What to look up, in plain words (e.g. 'HikariCP pool exhausted')."
    )
    top_k: int = Field(default=5, ge=1, le=10, description="How many runbook sections to return (1-10).")


class LogsArgs(_Args):
    """Arguments of query_logs: matching lines of one service in a time window."""

    service: str = Field(min_length=1, max_length=200, description="Exact service name (case-insensitive), e.g. 'order-service'.")
    query: str = Field(
        min_length=1,
        max_length=500,
        description='Keywords that must all appear in the message (case-insensitive), or a "quoted phrase".',
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

    @field_validator("start", "end")
    @classmethod
    def _assume_utc(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    @model_validator(mode="after")
    def _start_before_end(self) -> LogsArgs:
        if self.start is not None and self.end is not None and self.start >= self.end:
            raise ValueError("start must be before end")
        return self

    def window(self, now: datetime) -> tuple[datetime, datetime]:
        """The effective [start, end] window: missing end is `now`, missing start is 60 minutes before end."""
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        end = self.end or (now if self.start is None or self.start < now else self.start + DEFAULT_LOG_WINDOW)
        start = self.start or end - DEFAULT_LOG_WINDOW
        return start, end


class SqlArgs(_Args):
    """Arguments of query_mysql: one read-only statement in MySQL syntax."""

    sql: str = Field(
        min_length=1,
        max_length=20_000,
        description="Exactly one SELECT (or WITH...SELECT, UNION, SHOW, DESCRIBE, EXPLAIN) statement, MySQL dialect.",
    )


ARGS_MODELS: Mapping[ToolName, type[BaseModel]] = MappingProxyType({
    ToolName.LOOKUP_KNOWLEDGE: KnowledgeArgs,
    ToolName.QUERY_LOGS: LogsArgs,
    ToolName.QUERY_MYSQL: SqlArgs,
})


def args_model_for(name: ToolName) -> type[BaseModel]:
    """The argument model of a tool."""
    return ARGS_MODELS[name]


def normalised_arguments(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """A tool call's arguments after validation (defaults filled, strings trimmed), to tell identical calls apart;
    None for an unknown tool or arguments that do not validate (the boundary answers those with an ERROR)."""
    try:
        model = ARGS_MODELS[ToolName(name)]
        dumped: dict[str, Any] = model.model_validate(arguments).model_dump(mode="json")
    except (ValidationError, ValueError, TypeError):
        return None
    return {k: v.strip() if isinstance(v, str) else v for k, v in dumped.items()}
