"""A tool's plain words and Show-evidence views (part of the toolset contract, core/tools/contract.py): plain data that
release words and bot/ renders in Block Kit (core/ never imports Slack)."""

from __future__ import annotations

from dataclasses import dataclass

from core.contracts.release import FactTable


@dataclass(frozen=True)
class Nouns:
    """How people name a tool and its results."""

    kind: str
    """Progress task prefix: "Logs", "Database", "Runbooks"."""
    what: str
    """The call in words: "logs query", "database query", "runbook lookup"."""
    found: str = "result"
    """A found item in progress output: "matching line", "row"."""
    label: str = "result"
    """A found item in a source label: "match", "row", "section"."""


@dataclass(frozen=True)
class Fact:
    """One observed fact for a fallback: a plain sentence (no tool names, no ids), telling lines or a small table."""

    text: str
    lines: tuple[str, ...] = ()
    table: FactTable | None = None


@dataclass(frozen=True)
class StepHints:
    """Next steps one finished call suggests; `looked_at` is (service, window in words) of evidence found there."""

    steps: tuple[str, ...] = ()
    looked_at: tuple[str, str] | None = None


@dataclass(frozen=True)
class LinesView:
    """Items as monospace lines, in order (log lines); the renderer caps them and says how many it left out."""

    lines: tuple[str, ...]
    noun: str = "line"


@dataclass(frozen=True)
class TableView:
    """Items as a table of strings under their column names (SQL rows); the renderer caps rows and widths."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Excerpt:
    """A quoted passage: where it is from (document, section) and its text."""

    source: str
    section: str
    text: str


@dataclass(frozen=True)
class ExcerptsView:
    excerpts: tuple[Excerpt, ...]


@dataclass(frozen=True)
class SeriesLine:
    """One time series as Show evidence draws it: a title (metric and labels), its values in time order (None for a
    gap) for a sparkline, its min / max / last in words with their times, and the points a finding rests on."""

    title: str
    values: tuple[float | None, ...]
    low: str
    high: str
    last: str
    marks: tuple[str, ...] = ()


@dataclass(frozen=True)
class SeriesView:
    """Metric series (query_metrics); the renderer draws each as a sparkline with its min/max/last."""

    series: tuple[SeriesLine, ...]
    window: str = ""
    """The queried window in words ("22:30–23:30 UTC, every 30 s")."""
    more: int = 0
    """Series the query returned beyond those listed."""


EvidenceView = LinesView | TableView | ExcerptsView | SeriesView
