"""Observed facts for fallbacks: what each call of the run queried and returned, in plain words, from projections only.

Each fact is one sentence (no tool names, no call ids), plus the most telling log lines or runbook excerpt, or a
small table of the SQL rows that match the question best. Nothing here reads the draft.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState, ToolName
from core.contracts.release import FactTable, ObservedFact
from core.evidence.subjects import plural, shorten, sql_words, window_text
from core.release.wording import tool_error_words

FACT_MAX = 400
LINE_MAX = 200
LINES_SHOWN = 2
ROWS_SHOWN = 5
COLUMNS_SHOWN = 8
CELL_MAX = 40
_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]{2,}")
_LEVEL_WEIGHT = MappingProxyType({"FATAL": 4, "CRITICAL": 4, "ERROR": 3, "WARN": 2, "WARNING": 2})
# Columns whose high values mean pressure (a saturated pool, a backlog) and those whose high values mean room.
_PRESSURE = re.compile(r"active|used|busy|wait|pending|queue|error|fail|lag|latency|duration|retr|timeout|reject|count")
_ROOM = re.compile(r"idle|free|avail|spare|remaining|success")


def question_words(question: str) -> frozenset[str]:
    """The question's words of 3+ characters, lower-cased (service names, statuses, keywords)."""
    return frozenset(_WORD.findall(question.lower()))


def _overlap(text: str, words: frozenset[str]) -> int:
    return len(words & set(_WORD.findall(text.lower()))) if words else 0


def _items(projection: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = projection.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def clock(timestamp: Any) -> str:
    """'22:41:07' from an ISO timestamp (the raw value, shortened, when it is not one)."""
    try:
        return datetime.fromisoformat(str(timestamp)).strftime("%H:%M:%S")
    except ValueError:
        return shorten(timestamp, 30)


def log_line(line: Mapping[str, Any], limit: int = LINE_MAX) -> str:
    """'22:41:07 ERROR HikariPool-1 - Connection is not available…' (time, level, message, bounded)."""
    head = f"{clock(line.get('timestamp', '?'))} {shorten(line.get('level', '?'), 8)}"
    return f"{head} {shorten(line.get('message', ''), max(20, limit - len(head) - 1))}"


def telling_lines(logs: Sequence[Mapping[str, Any]], words: frozenset[str], limit: int = LINES_SHOWN) -> list[str]:
    """The lines that best match the question (then the most severe), shown in time order."""
    ranked = sorted(range(len(logs)), key=lambda i: (-_overlap(str(logs[i].get("message", "")), words),
                                                      -_LEVEL_WEIGHT.get(str(logs[i].get("level", "")).upper(), 0), i))
    return [log_line(logs[i]) for i in sorted(ranked[:limit])]


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
    score = 10.0 * _overlap(" ".join(str(v) for v in row), words)
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
    rows = [r for r in (projection.get("rows") or []) if isinstance(r, list)]
    shown = telling_rows(list(projection.get("columns") or []), rows, words)
    return FactTable(columns=columns, rows=[[cell(v) for v in r[:COLUMNS_SHOWN]] for r in shown],
                     total_rows=int(projection.get("count") or len(rows)))


def _window(projection: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    return window_text(projection.get("window_start") or args.get("start"), projection.get("window_end") or args.get("end"))


def _logs_fact(status: EvidenceStatus, projection: Mapping[str, Any], args: Mapping[str, Any],
               words: frozenset[str]) -> tuple[str, list[str]]:
    service, query = shorten(args.get("service") or "every service", 60), shorten(args.get("query") or "", 80)
    level = f" at level {shorten(args['level'], 8)}" if args.get("level") else ""
    if status is EvidenceStatus.NO_EVIDENCE:
        return (f'Logs of {service}: no lines matched "{query}"{level} {_window(projection, args)}'
                " — this does not show the service is healthy."), []
    count = plural(projection.get("count", 0), "matching line")
    head = f'Logs of {service} matching "{query}"{level} {_window(projection, args)}: {count}.'
    return head, telling_lines(_items(projection, "logs"), words)


def _sql_fact(status: EvidenceStatus, projection: Mapping[str, Any], args: Mapping[str, Any],
              words: frozenset[str]) -> tuple[str, FactTable | None]:
    sql = sql_words(args.get("sql"), 120)
    if status is EvidenceStatus.NO_EVIDENCE:
        return f'Database query "{sql}" returned no rows — this does not show the data is as expected.', None
    table = fact_table(projection, words)
    shown = f" (the {len(table.rows)} that match the question best shown)" if len(table.rows) < table.total_rows else ""
    return f'Database query "{sql}": {plural(table.total_rows, "row")}{shown}.', table


def _knowledge_fact(status: EvidenceStatus, projection: Mapping[str, Any], args: Mapping[str, Any]) -> tuple[str, list[str]]:
    query = shorten(args.get("query") or "", 80)
    blocks = _items(projection, "evidence_blocks")
    if status is EvidenceStatus.NO_EVIDENCE or not blocks:
        return f'No runbook section matched "{query}".', []
    first = next((b for b in blocks if str(b.get("text") or "").strip()), blocks[0])
    more = f" (+{len(blocks) - 1} more section{'s' if len(blocks) > 2 else ''})" if len(blocks) > 1 else ""
    head = (f"Runbook {shorten(first.get('doc', '?'), 80)} § {shorten(first.get('heading', '?'), 80)} matched "
            f'"{query}"{more}')
    text = str(first.get("text") or "").strip()
    if not text:  # a heading without body text: name the section, never quote an empty excerpt
        return head + ".", []
    return head + "; it says (guidance, not an observation of this environment):", [shorten(text, LINE_MAX)]


def error_reason(record: CanonicalRecord, projection: Mapping[str, Any]) -> str:
    """Why a call could not run, in words; SQL refusals and errors keep the checker's own sentence."""
    error = projection.get("error")
    code = str(error.get("code")) if isinstance(error, Mapping) and error.get("code") else (
        record.error.code if record.error else "")
    message = str(error.get("message") or "") if isinstance(error, Mapping) else (record.error.message if record.error else "")
    words = tool_error_words(code)
    if code.startswith("SQL_") and message:
        return f"{words}: {shorten(message, 200)}"
    return words


def _error_fact(record: CanonicalRecord, projection: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    what = {ToolName.QUERY_LOGS: f'The logs query for {shorten(args.get("service") or "every service", 60)}',
            ToolName.QUERY_MYSQL: f'The database query "{sql_words(args.get("sql"), 80)}"',
            ToolName.LOOKUP_KNOWLEDGE: f'The runbook lookup "{shorten(args.get("query") or "", 60)}"'}[ToolName(record.tool_name)]
    return f"{what} could not run: {error_reason(record, projection)}."


def _fact(record: CanonicalRecord, words: frozenset[str]) -> tuple[int, ObservedFact] | None:
    """(priority, fact) for one record; None for calls still pending."""
    if record.state is InvocationState.PENDING:
        return None
    projection = record.projection or {}
    args = record.effective_arguments or record.arguments
    status = record.evidence_status
    lines: list[str] = []
    table: FactTable | None = None
    if record.state is InvocationState.READY and projection and status in (EvidenceStatus.EVIDENCE_FOUND,
                                                                            EvidenceStatus.NO_EVIDENCE):
        priority = 0 if status is EvidenceStatus.EVIDENCE_FOUND else 1
        if record.tool_name == ToolName.QUERY_LOGS:
            text, lines = _logs_fact(status, projection, args, words)
        elif record.tool_name == ToolName.QUERY_MYSQL:
            text, table = _sql_fact(status, projection, args, words)
        else:
            text, lines = _knowledge_fact(status, projection, args)
    else:
        priority, text, status = 2, _error_fact(record, projection, args), EvidenceStatus.ERROR
    return priority, ObservedFact(text=shorten(text, FACT_MAX), tool_call_id=record.tool_call_id,
                                  tool_name=record.tool_name, evidence_status=status, lines=lines, table=table)


def observed_facts(records: Sequence[CanonicalRecord], limit: int = 8, run_id: str | None = None,
                   question: str = "") -> list[ObservedFact]:
    """Bounded facts from tool projections only: FOUND first, then NO_EVIDENCE, then calls that could not run."""
    words = question_words(question)
    ranked = [f for r in records if run_id is None or r.run_id == run_id if (f := _fact(r, words)) is not None]
    ranked.sort(key=lambda pair: pair[0])  # stable: call order within each priority
    unique: list[ObservedFact] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for _, fact in ranked:  # a call repeated with the same arguments and answer is one fact, listed once
        key = (fact.text, tuple(fact.lines))
        if key not in seen and len(unique) < max(0, limit):
            seen.add(key)
            unique.append(fact)
    return unique
