"""The native tools' argument base (ToolArgs) and, until the registry answers, the models by tool name."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ValidationError

from core.contracts.evidence import ToolName
from core.tools.knowledge.args import KnowledgeArgs
from core.tools.logs.args import LogsArgs
from core.tools.sql.args import SqlArgs

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
