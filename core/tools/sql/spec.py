"""query_mysql's static description (the toolset contract): projection of rows, words and views."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from core.contracts.evidence import EvidenceStatus, ProjectionBase, RawResult
from core.contracts.release import FactTable
from core.evidence.clean import clean_text
from core.evidence.redaction import REDACTED
from core.evidence.subjects import overlap, plural, shorten, sql_words
from core.tools.contract import (
    ArgumentRoles,
    Cleaner,
    EvidenceView,
    Fact,
    Leaf,
    Nouns,
    StepHints,
    TableView,
    ToolSpec,
)
from core.tools.sql.args import NAME, SqlArgs
from core.tools.sql.secrets import SecretColumns, secret_cells

ROWS_SHOWN = 5
COLUMNS_SHOWN = 8
CELL_MAX = 40
VIEW_COLUMN_MAX = 60
_MAX_COLUMN_CHARS = 64
# Columns whose high values mean pressure (a saturated pool, a backlog) and those whose high values mean room.
_PRESSURE = re.compile(
    r"active|used|busy|wait|pending|queue|error|fail|lag|latency|duration|retr|timeout|reject|count")
_ROOM = re.compile(r"idle|free|avail|spare|remaining|success")


class SqlProjection(ProjectionBase):
    """Projection of a query_mysql call."""

    tool_name: Literal["query_mysql"] = NAME
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list, description="Rows as JSON scalars, possibly capped.")


# ---- words -----------------------------------------------------------------------------------------------------


def cell(value: Any) -> str:
    """A SQL value as a person reads it: NULL, numbers as written, text bounded (never a Python repr)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return shorten(value, CELL_MAX)


def _row_score(row: Sequence[Any], columns: Sequence[str], maxima: Sequence[float], words: frozenset[str]) -> float:
    score = 10.0 * overlap(" ".join(str(v) for v in row), words)
    for value, name, top in zip(row, columns, maxima, strict=False):
        if isinstance(value, int | float) and not isinstance(value, bool) and top > 0:
            if _PRESSURE.search(name.lower()):
                score += value / top
            elif _ROOM.search(name.lower()):
                score -= value / top
    return score


def telling_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], words: frozenset[str],
                 limit: int = ROWS_SHOWN) -> list[Sequence[Any]]:
    """The rows that match the question (named values first, then pressure over room), kept in result order."""
    if len(rows) <= limit:
        return list(rows)
    maxima = [max((abs(r[i]) for r in rows if i < len(r) and isinstance(r[i], int | float)
                   and not isinstance(r[i], bool)), default=0.0) for i in range(len(columns))]
    ranked = sorted(range(len(rows)), key=lambda i: (-_row_score(rows[i], columns, maxima, words), i))
    return [rows[i] for i in sorted(ranked[:limit])]


def fact_table(projection: Mapping[str, Any], words: frozenset[str]) -> FactTable:
    """A small table of the rows that match the question, as strings."""
    columns = [shorten(c, CELL_MAX) for c in (projection.get("columns") or [])][:COLUMNS_SHOWN]
    rows = _rows(projection)
    shown = telling_rows(list(projection.get("columns") or []), rows, words)
    return FactTable(columns=columns, rows=[[cell(v) for v in r[:COLUMNS_SHOWN]] for r in shown],
                     total_rows=int(projection.get("count") or len(rows)))


def _rows(projection: Mapping[str, Any]) -> list[list[Any]]:
    return [r for r in projection.get("rows") or [] if isinstance(r, list)]


# ---- projection ------------------------------------------------------------------------------------------------


def _sql_row(row: Sequence[Any], hidden: Sequence[bool], clean: Cleaner) -> list[Any]:
    cells: list[Any] = []
    secret_here = secret_cells(row)
    for index, value in enumerate(row[: clean.columns]):
        secret = (index < len(hidden) and hidden[index]) or index in secret_here
        cells.append(REDACTED if secret and value not in (None, "") else clean.scalar(value, clean.item_chars))
    if len(row) > clean.columns:
        clean.cut()
    return cells


class SqlSpec(ToolSpec):
    """query_mysql: one read-only statement's rows under their column names."""

    name = NAME
    args_model = SqlArgs
    summary = "Run one read-only SELECT/SHOW/EXPLAIN/DESCRIBE statement."
    projection_model = SqlProjection
    items_field = "rows"
    nouns = Nouns(kind="Database", what="database query", found="row", label="row")
    arguments = ArgumentRoles(query=("sql",))
    link_setting = "diag_sql_link_template"

    def __init__(self) -> None:
        self._secret_columns = SecretColumns()

    def raw_items(self, raw: RawResult) -> Sequence[Any]:
        return raw.rows

    def envelope(self, raw: RawResult | None, clean: Cleaner) -> dict[str, Any]:
        if raw is None:
            return {}
        # A long column name is shortened but is not a cut of the results (the projection's `truncated`).
        return {"columns": [clean_text(c, _MAX_COLUMN_CHARS)[0] for c in raw.columns[: clean.columns]]}

    def project_items(self, raw: RawResult, limit: int, clean: Cleaner) -> list[Any]:
        # Secret values are hidden by column name, and by lineage in the statement (aliases, CONCAT, subqueries).
        sql = raw.effective_arguments.get("sql")
        hidden = self._secret_columns(sql if isinstance(sql, str) else None, [str(c) for c in raw.columns])
        if len(raw.columns) > clean.columns:
            clean.cut()
        return [_sql_row(row, hidden, clean) for row in raw.rows[:limit]]

    def leaves(self, projection: Mapping[str, Any]) -> Iterator[Leaf]:
        columns = [str(c) for c in projection.get("columns") or []]
        for i, row in enumerate(projection.get("rows") or []):
            if isinstance(row, list):
                for j, value in enumerate(row):
                    name = columns[j] if j < len(columns) else ""
                    yield Leaf(i, name, name, value)

    def subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any] | None) -> str:
        return sql_words(arguments.get("sql"))

    def label_subject(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> str:
        return f'"{sql_words(arguments.get("sql"), 100)}"'

    def fact(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
             words: frozenset[str]) -> Fact:
        sql = sql_words(arguments.get("sql"), 120)
        if status is EvidenceStatus.NO_EVIDENCE:
            return Fact(f'Database query "{sql}" returned no rows — this does not show the data is as expected.')
        table = fact_table(projection, words)
        shown = f" (the {len(table.rows)} that match the question best shown)" if len(table.rows) < table.total_rows else ""
        return Fact(f'Database query "{sql}": {plural(table.total_rows, "row")}{shown}.', table=table)

    def error_subject(self, arguments: Mapping[str, Any]) -> str:
        return f'The database query "{sql_words(arguments.get("sql"), 80)}"'

    def error_words(self, code: str, message: str, words: str) -> str:
        # SQL refusals and errors keep the checker's own sentence: it says which rule the statement broke.
        return f"{words}: {shorten(message, 200)}" if code.startswith("SQL_") and message else words

    def next_steps(self, status: EvidenceStatus, projection: Mapping[str, Any], arguments: Mapping[str, Any],
                   reason: str) -> StepHints:
        if status is not EvidenceStatus.ERROR:
            return StepHints()
        return StepHints((f'The {self.nouns.what} "{sql_words(arguments.get("sql"), 60)}" was not run ({reason}); '
                          "ask for the data in other words.",))

    def evidence_view(self, projection: Mapping[str, Any]) -> EvidenceView | None:
        rows = _rows(projection)
        if not rows:
            return None
        columns = tuple(shorten(c, VIEW_COLUMN_MAX) for c in projection.get("columns") or [])
        return TableView(columns, tuple(tuple(cell(v) for v in r) for r in rows))

    def telling_item(self, projection: Mapping[str, Any], words: frozenset[str], limit: int) -> str:
        rows = _rows(projection)
        if not rows:
            return ""
        columns = [str(c) for c in projection.get("columns") or []]
        [row] = telling_rows(columns, rows, words, 1)
        return shorten(" · ".join(f"{c}={cell(v)}" for c, v in zip(columns, row, strict=False)), limit)

    def link_values(self, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return {"service": "", "query": arguments.get("sql"), "start": "", "end": ""}
