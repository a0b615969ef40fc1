"""The native tools' argument base (ToolArgs) and, until the registry answers, the models by tool name."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from core.contracts.evidence import ToolName
from core.tools.logs.args import LogsArgs
from core.tools.native import ToolArgs
from core.tools.sql.args import SqlArgs


class KnowledgeArgs(ToolArgs):
    """Arguments of lookup_knowledge: ranked retrieval over the Markdown runbooks."""

    query: str = Field(
        min_length=1, max_length=500, description="What to look up, in plain words (e.g. 'HikariCP pool exhausted')."
    )
    top_k: int = Field(default=5, ge=1, le=10, description="How many runbook sections to return (1-10).")


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
