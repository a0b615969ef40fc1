"""Native tools: `ToolArgs`, the base of their pydantic argument models, and `NativeToolAdapter`, a native backend
(argument model + run) as the boundary's `Tool`."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from core.contracts.evidence import RawResult
from core.tools.contract import ArgsT, InvalidArguments, NativeTool, Tool, ToolEnv

B = TypeVar("B")


class ToolArgs(BaseModel):
    """Base of the native tools' argument models: unknown fields refused, strings trimmed, null = default."""

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


class WindowArgs(ToolArgs):
    """ToolArgs of a tool that reads a `start`/`end` window (its model declares the two fields, so each tool keeps
    its own schema order and wording): a time without an offset is UTC, and start must be before end."""

    @field_validator("start", "end", check_fields=False)
    @classmethod
    def _assume_utc(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    @model_validator(mode="after")
    def _start_before_end(self) -> Self:
        start, end = getattr(self, "start", None), getattr(self, "end", None)
        if start is not None and end is not None and start >= end:
            raise ValueError("start must be before end")
        return self


def validation_message(tool: str, exc: ValidationError) -> str:
    """Plain words naming each bad field, without echoing the (possibly secret) input."""
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg'].lower()}")
    return f"Invalid arguments for {tool}: " + "; ".join(problems[:8]) + "."


def described(summary: str, doc: str | None) -> str:
    """The agent's description of a tool: its one-line summary, then its argument model's docstring."""
    text = (doc or "").strip() or summary
    return text if summary in text else f"{summary} {text}".strip()


class NativeToolAdapter(Generic[ArgsT]):
    """The boundary's view of a native backend: arguments validated by its pydantic model, whose JSON schema the
    agent sees. Other attributes (aclose, engines) stay on `backend`."""

    def __init__(self, backend: NativeTool[ArgsT], summary: str) -> None:
        self.backend = backend
        self._summary = summary

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def args_model(self) -> type[ArgsT]:
        return self.backend.args_model

    @property
    def description(self) -> str:
        return described(self._summary, inspect.getdoc(self.backend.args_model))

    def parameters(self) -> dict[str, Any]:
        return self.backend.args_model.model_json_schema()

    def validate(self, arguments: Mapping[str, Any]) -> ArgsT:
        try:
            return self.backend.args_model.model_validate(arguments)
        except ValidationError as exc:
            raise InvalidArguments(validation_message(self.name, exc)) from None

    def effective(self, args: ArgsT) -> dict[str, Any]:
        dumped: dict[str, Any] = args.model_dump(mode="json")
        return dumped

    async def run(self, args: ArgsT) -> RawResult:
        return await self.backend.run(args)


def closing(backend: B, env: ToolEnv) -> B:
    """`backend`, closed with the services when it has an `aclose` (HTTP sessions, SQL engines)."""
    close = getattr(backend, "aclose", None)
    if callable(close):
        env.stack.push_async_callback(close)
    return backend


def as_tool(tool: Any) -> Tool[Any]:
    """The boundary's Tool for `tool`: itself when it validates its own arguments, else a native backend wrapped."""
    if callable(getattr(tool, "validate", None)) and callable(getattr(tool, "parameters", None)):
        runnable: Tool[Any] = tool
        return runnable
    return NativeToolAdapter(tool, "")
