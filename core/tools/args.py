"""Arguments as the tool loop compares them: a repeated call is one with the same tool and normalised arguments."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from core.tools.registry import current_registry


def normalised_arguments(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """A tool call's arguments after validation (defaults filled, strings trimmed), to tell identical calls apart;
    None for an unknown tool or arguments that do not validate (the boundary answers those with an ERROR). A tool
    without a static argument model (MCP: its schema comes from the server) is compared by its arguments as sent."""
    spec = current_registry().find(name)
    if spec is None:
        return None
    if spec.args_model is None:
        return dict(arguments)
    try:
        dumped: dict[str, Any] = spec.args_model.model_validate(arguments).model_dump(mode="json")
    except (ValidationError, ValueError, TypeError):
        return None
    return {k: v.strip() if isinstance(v, str) else v for k, v in dumped.items()}
