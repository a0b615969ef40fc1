"""DIAG_TOOLSETS_FILE (SPEC §3.2): the TOML list of MCP servers, their allow-lists and bounds, as pydantic models.

Every problem with the file is one clear line naming the server and the field; a file with any problem is invalid
as a whole (serve refuses to start on it), so an operator never runs with half of what they wrote.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

SERVER_NAME = re.compile(r"[a-z][a-z0-9]{0,15}")
# The model APIs' function-name rule (OpenAI: ^[a-zA-Z0-9_-]{1,64}$); mcp_<server>_<tool> must fit it whole.
FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_SERVERS = 32
MAX_TOOLS_PER_SERVER = 64
MAX_FILE_BYTES = 256 * 1024
DEFAULT_TIMEOUT_S = 15.0
DEFAULT_MAX_OUTPUT_BYTES = 96 * 1024
START_TIMEOUT_S = 20.0
"""A server must have initialised within this (or its timeout_s, if longer than 5 s and shorter)."""


class ToolsetsFileError(ValueError):
    """The toolsets file cannot be used; `problems` holds one line per problem."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: " + "; ".join(problems))


def function_name(server: str, tool: str) -> str:
    """The name the agent sees for a server's tool."""
    return f"mcp_{server}_{tool}"


class McpServerConfig(BaseModel):
    """One [[mcp]] table: a stdio (`command`) or streamable-HTTP (`url`) server and what of it may be used."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="[a-z][a-z0-9]{0,15}; the agent sees mcp_<name>_<tool>.")
    command: tuple[str, ...] | None = Field(default=None, description="The stdio server's argv (no shell).")
    url: str | None = Field(default=None, description="The streamable-HTTP endpoint, e.g. http://host:8080/mcp.")
    env: Mapping[str, str] = Field(default_factory=dict, description="Extra environment of a command server.")
    headers: Mapping[str, str] = Field(default_factory=dict, description="HTTP headers of a url server.")
    tools: tuple[str, ...] = Field(description="The allow-list: only these tools are offered, if the server has them.")
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=600, description="Per-call timeout in seconds.")
    max_output_bytes: int = Field(
        default=DEFAULT_MAX_OUTPUT_BYTES, ge=1024, le=16 * 1024 * 1024, description="Bytes of one call's content kept."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SERVER_NAME.fullmatch(value):
            raise ValueError(f"{value!r} must match [a-z][a-z0-9]{{0,15}} (lower-case letters and digits, 16 at most)")
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and (not value or not value[0].strip()):
            raise ValueError("must be a non-empty list: the program and its arguments")
        if value is not None and any("\0" in part for part in value):
            raise ValueError("must not contain NUL characters")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host, e.g. http://host:8080/mcp")
        if parts.username or parts.password:
            raise ValueError("must not carry credentials; put them in headers with ${VAR}")
        return value

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("the allow-list is empty: name the tools the agent may call")
        if len(value) > MAX_TOOLS_PER_SERVER:
            raise ValueError(f"at most {MAX_TOOLS_PER_SERVER} tools per server")
        seen: set[str] = set()
        for tool in value:
            if tool in seen:
                raise ValueError(f"{tool!r} is listed twice")
            seen.add(tool)
        return value

    @model_validator(mode="after")
    def _transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of command (a stdio server) or url (a streamable-HTTP server)")
        if self.url is not None and self.env:
            raise ValueError("env is for command servers; a url server gets headers")
        if self.command is not None and self.headers:
            raise ValueError("headers are for url servers; a command server gets env")
        for tool in self.tools:
            name = function_name(self.name, tool)
            if not FUNCTION_NAME.fullmatch(name):
                raise ValueError(f"tool {tool!r}: {name!r} is not a valid function name (A-Z a-z 0-9 _ -, 64 at most)")
        return self

    @property
    def transport(self) -> str:
        """`stdio` or `http`."""
        return "stdio" if self.command is not None else "http"

    @property
    def where(self) -> str:
        """The server's program or URL, for check lines (headers and env values are never shown)."""
        if self.command is not None:
            return self.command[0]
        parts = urlsplit(self.url or "")
        return f"{parts.scheme}://{parts.netloc}{parts.path}"


class ToolsetsFile(BaseModel):
    """The whole file: its MCP servers, in file order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mcp: tuple[McpServerConfig, ...] = ()


def _expand(value: str, environ: Mapping[str, str], where: str, problems: list[str]) -> str:
    """${VAR} replaced by the environment's value; a missing variable is a problem naming it (never its value)."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            problems.append(f"{where} uses ${{{name}}} but the environment has no {name}: export it or remove it")
            return ""
        return environ[name]

    return _VARIABLE.sub(one, value)


def _expand_server(index: int, raw: Any, environ: Mapping[str, str], problems: list[str]) -> Any:
    """The raw table with ${VAR} in headers and env values read from the environment."""
    if not isinstance(raw, dict):
        return raw
    label = f"mcp[{index}] ({raw.get('name', '?')})" if isinstance(raw.get("name"), str) else f"mcp[{index}]"
    out = dict(raw)
    for field in ("headers", "env"):
        table = raw.get(field)
        if isinstance(table, dict):
            out[field] = {
                key: _expand(value, environ, f"{label} {field}.{key}", problems) if isinstance(value, str) else value
                for key, value in table.items()
            }
    return out


def _validation_lines(index: int, raw: Any, exc: ValidationError) -> list[str]:
    name = raw.get("name") if isinstance(raw, dict) and isinstance(raw.get("name"), str) else None
    label = f"mcp[{index}]" + (f" ({name})" if name else "")
    lines = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            message = "is required" + (": the allow-list of tools the agent may call" if where == "tools" else "")
        elif err["type"] == "extra_forbidden":
            message = "is not a known field (name, command, url, env, headers, tools, timeout_s, max_output_bytes)"
        lines.append(f"{label} {where}: {message}".replace(" : ", ": ") if where else f"{label}: {message}")
    return lines


def parse_toolsets(text: str, path: Path, environ: Mapping[str, str] | None = None) -> ToolsetsFile:
    """The file's servers; ToolsetsFileError listing every problem (syntax, fields, duplicates, missing variables)."""
    env = os.environ if environ is None else environ
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ToolsetsFileError(path, [f"not valid TOML: {exc}"]) from None
    problems: list[str] = []
    unknown = sorted(set(data) - {"mcp"})
    if unknown:
        problems.append(f"unknown top-level keys {', '.join(unknown)}: the file holds [[mcp]] tables only")
    tables = data.get("mcp", [])
    if not isinstance(tables, list):
        raise ToolsetsFileError(path, [*problems, "mcp must be an array of tables: write each server as [[mcp]]"])
    if len(tables) > MAX_SERVERS:
        problems.append(f"{len(tables)} servers; at most {MAX_SERVERS}")
    servers: list[McpServerConfig] = []
    for index, raw in enumerate(tables):
        expanded = _expand_server(index, raw, env, problems)
        try:
            servers.append(McpServerConfig.model_validate(expanded))
        except ValidationError as exc:
            problems.extend(_validation_lines(index, raw, exc))
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            problems.append(f"server name {server.name!r} is used twice: each [[mcp]] needs its own name")
        seen.add(server.name)
    if problems:
        raise ToolsetsFileError(path, problems)
    return ToolsetsFile(mcp=tuple(servers))


def load_toolsets(path: Path, environ: Mapping[str, str] | None = None) -> ToolsetsFile:
    """Read and parse DIAG_TOOLSETS_FILE (bounded in size)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ToolsetsFileError(path, [f"{size} bytes; a toolsets file is at most {MAX_FILE_BYTES // 1024} KiB"])
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ToolsetsFileError(path, ["no such file: fix DIAG_TOOLSETS_FILE or unset it"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolsetsFileError(path, [f"cannot be read: {type(exc).__name__}: {exc}"]) from None
    return parse_toolsets(text, path, environ)
