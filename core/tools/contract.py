"""The toolset contract: what one evidence source declares, in its own folder, so that nothing else switches on its name.

Design
======
A *toolset* is one folder under core/tools/ (logs/, sql/, knowledge/, metrics/, mcp/). It has three parts:

`ToolSpec` — the static description of a tool, valid with no backend configured. Canonical records outlive the
    configuration (a worker renders a report another replica made, `diagbot replay` re-checks old drafts), so
    everything that reads a record asks the spec named by the record's `tool_name`, never a backend:
      * the projection: its model, the list field holding the items, the extra envelope fields, how one raw result
        becomes bounded items (`project_items`, through a `Cleaner` that redacts, marks and caps text);
      * the evidence status rule (`found`: by default "at least one item");
      * the quantity kinds of its fields for the EvidenceGuard (`QuantityKinds`: timestamps, counts, durations and
        sizes with their unit, identifiers that are not quantities, prose; a unit may come from another field of the
        item, e.g. a metric series' `unit`) and which arguments ground what (`ArgumentRoles`);
      * plain words: the fallback's observed fact, the error phrase, next steps, the source label, progress nouns;
      * the Show-evidence view as plain data (`LinesView`, `TableView`, `ExcerptsView`): bot/ renders it in Block Kit,
        core/ never imports Slack.
    A spec may answer for a family of names known only at start (MCP: `mcp_<server>_<tool>`): override `matches`.
`Tool` — a configured, runnable tool the ToolBoundary calls: its name, what the agent is told (`description`,
    `parameters` = a JSON schema), `validate` (raises `InvalidArguments` with a safe message) and `run`.
    `NativeTool` implements validate/parameters from a pydantic argument model; an MCP tool validates against the
    JSON Schema its server declared.
`Toolset` — builds its tools from Settings (the one place its backends are chosen; may start processes on the
    stack), names its checks for `diagbot check` and `/readyz`, and may propose cheap `first_look` calls for a service
    and window (run before the agent's first step).

The field kinds live in core/tools/kinds.py and the words and views in core/tools/views.py; both are re-exported
here, so a tool imports the contract from this one module. The registry (core/tools/registry.py) lists the
toolsets, one line each. Release, guard, render, health, steps and the
boundary ask it; an unknown name raises `UnknownTool` (never a default projection, never a KeyError).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from pydantic import BaseModel

from core.contracts.evidence import EvidenceStatus, ProjectionBase, RawResult
from core.tools.kinds import GUESS as GUESS
from core.tools.kinds import ArgumentRoles as ArgumentRoles
from core.tools.kinds import FieldKind as FieldKind
from core.tools.kinds import FieldQuantity as FieldQuantity
from core.tools.kinds import Leaf as Leaf
from core.tools.kinds import QuantityKinds as QuantityKinds
from core.tools.views import EvidenceView as EvidenceView
from core.tools.views import Excerpt as Excerpt
from core.tools.views import ExcerptsView as ExcerptsView
from core.tools.views import Fact as Fact
from core.tools.views import LinesView as LinesView
from core.tools.views import Nouns as Nouns
from core.tools.views import SeriesLine as SeriesLine
from core.tools.views import SeriesView as SeriesView
from core.tools.views import StepHints as StepHints
from core.tools.views import TableView as TableView

if TYPE_CHECKING:
    from collections.abc import Callable

    from core.health.result import Check
    from core.settings import Settings

A = TypeVar("A")


class UnknownTool(LookupError):
    """A tool name no registered toolset answers for: an explicit error wherever a name is looked up."""

    def __init__(self, name: str, known: Sequence[str] = ()) -> None:
        self.name = name
        shown = f"; known: {', '.join(known)}" if known else ""
        super().__init__(f"unknown tool {name[:64]!r}{shown}")


class InvalidArguments(ValueError):
    """Arguments that do not validate; `message` names each bad field without echoing the (possibly secret) input."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class PlannedCall:
    """A call a toolset proposes for a first look (tool name and arguments as the agent would send them)."""

    tool: str
    arguments: Mapping[str, Any]


class Cleaner(Protocol):
    """What a spec's `project_items` cleans text with (core/evidence/projection.py implements it): redaction, then
    instruction marking, then a cap, remembering whether anything was cut. Limits shrink when items do not fit."""

    @property
    def item_chars(self) -> int:
        """Characters one item's main text may keep."""
        ...

    @property
    def columns(self) -> int:
        """Columns (or fields) one item may keep."""
        ...

    def text(self, value: Any, limit: int) -> str:
        """Cleaned and capped to `limit` characters (marker included)."""
        ...

    def redact(self, text: str) -> str:
        """Cleaned, not capped (short values)."""
        ...

    def scalar(self, value: Any, limit: int) -> Any:
        """A JSON scalar: numbers and booleans as they are, text cleaned and capped, bytes as their size."""
        ...

    def cut(self) -> None:
        """Record that something was shortened or dropped (the projection says truncated)."""
        ...


# ---- the static description of a tool -------------------------------------------------------------------------


class ToolSpec:
    """The static description of one tool (or one family of tools); subclass it in the tool's folder.

    Defaults fit a tool whose raw result is a list of JSON objects (`RawResult.items`) shown under `items_field`.
    Every method reads only a projection and effective arguments, both JSON, and never raises for odd values."""

    name: ClassVar[str]
    projection_model: ClassVar[type[ProjectionBase]]
    items_field: ClassVar[str] = "items"
    nouns: ClassVar[Nouns]
    quantities: ClassVar[QuantityKinds] = QuantityKinds()
    arguments: ClassVar[ArgumentRoles] = ArgumentRoles()
    link_setting: ClassVar[str | None] = None
    """The Settings field holding a deep-link template for this tool's sources (e.g. "diag_logs_link_template")."""
    args_model: ClassVar[type[BaseModel] | None] = None
    """A native tool's argument model (its JSON schema is what the agent sees); None for tools known only at start."""
    summary: ClassVar[str] = ""
    """One line the agent is told before the argument model's docstring."""

    def matches(self, name: str) -> bool:
        """Whether this spec describes the tool `name` (a family overrides this)."""
        return name == self.name

    # projection
    def raw_items(self, raw: RawResult) -> Sequence[Any]:
        """The raw result's items, in order."""
        return raw.items

    def found(self, raw: RawResult) -> bool:
        """EVIDENCE_FOUND when True, else NO_EVIDENCE (the query ran)."""
        return bool(self.raw_items(raw))

    def envelope(self, raw: RawResult | None, clean: Cleaner) -> dict[str, Any]:
        """Fields of the projection beside the common ones and the items (raw is None for an ERROR projection)."""
        return {}

    def project_items(self, raw: RawResult, limit: int, clean: Cleaner) -> list[Any]:
        """At most `limit` bounded, cleaned items (each a JSON value or a pydantic model)."""
        return [_clean_json(item, clean) for item in self.raw_items(raw)[:limit]]

    def shown_items(self, projection: Mapping[str, Any]) -> list[Any]:
        """The items a projection lists."""
        value = projection.get(self.items_field)
        return value if isinstance(value, list) else []

    def leaves(self, projection: Mapping[str, Any]) -> Iterator[Leaf]:
        """Every scalar the listed items show (nested objects and lists are walked)."""
        found: list[Leaf] = []
        for i, item in enumerate(self.shown_items(projection)):
            _walk(i, "", "", item, found)
        return iter(found)

    # words
    def subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any] | None) -> str:
        """What the call queried, short (a progress task title)."""
        return ""

    def label_subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> str:
        """What the call queried, for its source label."""
        return self.subject(arguments, projection)

    def fact(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
             words: frozenset[str]) -> Fact:
        """The fact a READY call shows (status FOUND or NO_EVIDENCE); `words` are the question's words."""
        if status is EvidenceStatus.NO_EVIDENCE:
            return Fact(f"The {self.nouns.what} matched nothing — this does not show all is well.")
        return Fact(f"The {self.nouns.what} returned {projection.get('count', 0)} {self.nouns.label}(s).")

    def error_subject(self, arguments: Mapping[str, Any]) -> str:
        """'The logs query for order-service' (the start of "... could not run: <reason>.")."""
        return f"The {self.nouns.what}"

    def error_words(self, code: str, message: str, words: str) -> str:
        """Why a call could not run; `words` is the generic sentence for `code` (a tool may add its own message)."""
        return words

    def next_steps(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
                   reason: str) -> StepHints:
        """What to do next after this call; `reason` is the error in words (ERROR only)."""
        if status is EvidenceStatus.ERROR:
            return StepHints((f"The {self.nouns.what} could not run ({reason}); fix its backend or arguments and "
                              "ask again.",))
        return StepHints()

    # views
    def evidence_view(self, projection: Mapping[str, Any]) -> EvidenceView | None:
        """The items as Show evidence presents them, or None when the projection lists none."""
        return None

    def telling_item(self, projection: Mapping[str, Any], words: frozenset[str], limit: int) -> str:
        """The one item that best matches `words`, as one line of at most `limit` characters ('' for none)."""
        return ""

    def link_values(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Values for the deep-link template's {service}, {query}, {start}, {end} (None: no link)."""
        return None


def _walk(item: int, path: str, key: str, value: Any, found: list[Leaf]) -> None:
    """Append the scalars under `value`; `key` is the last path segment that is not a list index (what types a
    leaf). A list building recursion, not nested generators: the guard walks every item of a cited call."""
    if isinstance(value, Mapping):
        for name, inner in value.items():
            part = str(name)
            inner_key = key if part.isdigit() else part if "." not in part else \
                next((p for p in reversed(part.split(".")) if not p.isdigit()), key)
            _walk(item, f"{path}.{part}" if path else part, inner_key, inner, found)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _walk(item, f"{path}.{index}" if path else str(index), key, inner, found)
    else:
        found.append(Leaf(item, path, key, value))


def _clean_json(value: Any, clean: Cleaner, depth: int = 0) -> Any:
    """A JSON value with every string cleaned and capped (a generic item projection)."""
    if isinstance(value, Mapping) and depth < 4:
        kept = list(value.items())[: clean.columns]
        if len(kept) < len(value):
            clean.cut()
        return {str(k)[:64]: _clean_json(v, clean, depth + 1) for k, v in kept}
    if isinstance(value, list | tuple) and depth < 4:
        return [_clean_json(v, clean, depth + 1) for v in value[: clean.columns]]
    if isinstance(value, Mapping | list | tuple):
        clean.cut()
        return None
    return clean.scalar(value, clean.item_chars)


# ---- the runnable tool and the toolset -------------------------------------------------------------------------


class Tool(Protocol[A]):
    """A configured tool behind the ToolBoundary. `A` is what validation yields (an argument model, or a dict)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str:
        """What the agent is told the tool does."""
        ...

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments, as the agent sees it (before strict-mode rewriting)."""
        ...

    def validate(self, arguments: Mapping[str, Any]) -> A:
        """Validated arguments; raises InvalidArguments."""
        ...

    def effective(self, args: A) -> dict[str, Any]:
        """The validated arguments as JSON, defaults filled (what the record keeps and grounding reads)."""
        ...

    async def run(self, args: A) -> RawResult:
        """Execute validated arguments. Raise ToolFailure for a clear ERROR; any other exception is a bug."""
        ...


ArgsT = TypeVar("ArgsT", bound=BaseModel)


class NativeTool(Protocol[ArgsT]):
    """A native backend: its name, its pydantic argument model and `run` (wrap it with `native` for the boundary)."""

    name: str
    args_model: type[ArgsT]

    async def run(self, args: ArgsT) -> RawResult: ...


@dataclass(frozen=True)
class ToolEnv:
    """What every toolset's build gets besides Settings: the clock for default windows, and the stack that closes
    whatever the tools opened (connections, server processes) when the services close."""

    clock: Callable[[], datetime]
    pinned: datetime | None
    """The pinned 'now' (DIAG_CLOCK, or the demo's clock over the demo data), None on the real clock."""
    stack: AsyncExitStack


class Toolset(Protocol):
    """One evidence source: its specs (static), how settings build its tools, its checks, its first look."""

    @property
    def name(self) -> str:
        """Short name of the source ("logs", "sql", "knowledge", "metrics", "mcp")."""
        ...

    @property
    def specs(self) -> Sequence[ToolSpec]:
        """The specs of every tool (or family of tools) this toolset can offer."""
        ...

    async def build(self, settings: Settings, env: ToolEnv) -> Sequence[Tool[Any]]:
        """The configured tools (empty when the source is not configured); raises ValueError for settings that
        contradict each other. Called once per process, where the services are built."""
        ...

    def checks(self, settings: Settings, *, readiness: bool) -> Sequence[Check]:
        """`diagbot check` lines (readiness=False) or what /readyz probes (readiness=True)."""
        ...

    def first_look(self, service: str | None, start: datetime, end: datetime) -> Sequence[PlannedCall]:
        """Cheap default calls for a service and window, run before the agent's first step ( () for none)."""
        ...
