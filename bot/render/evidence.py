"""Click-to-verify: the verified items behind one finding, exactly the projections the guards checked.

Log lines with time and level, SQL rows as a table under their column names (the first SQL call as a Block Kit
`table`, Slack allows one per message; others in monospace), runbook excerpts with their document. Inline, each finding
shows its single most telling item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.render.limits import clip
from bot.render.links import SourceLinks, linked
from bot.render.mrkdwn import code, escape, header, pre, section
from bot.render.series import series_view_blocks
from bot.render.table import mono_table, table_block
from core.contracts.draft import Analysis
from core.contracts.evidence import ToolName
from core.contracts.release import EvidenceSource, PublishedReport
from core.evidence.subjects import shorten
from core.release.facts import cell, log_line, question_words, telling_lines, telling_rows
from core.tools.contract import SeriesView, ToolSpec
from core.tools.registry import current_registry

ITEM_MAX = 200
VIEW_LINES = 20
VIEW_ROWS = 20
EXCERPT_MAX = 600
LINES_MAX_CHARS = 2200
NOT_KEPT = "_The items of this call were not kept with the report._"


def _items(projection: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = projection.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _rows(projection: Mapping[str, Any]) -> list[list[Any]]:
    return [r for r in projection.get("rows") or [] if isinstance(r, list)]


def _registered(tool: Any) -> ToolSpec | None:
    """The spec of a registered toolset's tool (the three native tools are rendered below)."""
    if not isinstance(tool, str) or tool in {t.value for t in ToolName}:
        return None
    return current_registry().find(tool)


def telling_item(finding: Analysis, report: PublishedReport) -> str:
    """The one item of the finding's cited calls that best matches its text (bounded), or ''."""
    words = question_words(finding.text)
    for cid in finding.tool_call_ids:
        projection = report.evidence.get(cid) or {}
        tool = projection.get("tool_name")
        spec = _registered(tool)
        if spec is not None and (told := spec.telling_item(projection, words, ITEM_MAX)):
            return told
        if tool == ToolName.QUERY_LOGS and (logs := _items(projection, "logs")):
            return telling_lines(logs, words, 1)[0][:ITEM_MAX]
        if tool == ToolName.QUERY_MYSQL and (rows := _rows(projection)):
            columns = [str(c) for c in projection.get("columns") or []]
            [row] = telling_rows(columns, rows, words, 1)
            return shorten(" · ".join(f"{c}={cell(v)}" for c, v in zip(columns, row, strict=False)), ITEM_MAX)
        if tool == ToolName.LOOKUP_KNOWLEDGE and (blocks := _items(projection, "evidence_blocks")):
            return shorten(f"{blocks[0].get('doc', '?')} § {blocks[0].get('heading', '?')}: {blocks[0].get('text', '')}",
                           ITEM_MAX)
    return ""


def source_text(source: EvidenceSource, report: PublishedReport, links: SourceLinks | None) -> str:
    """A source's whole label, linked when a deep-link template applies."""
    url = None
    if links is not None:
        url = links.url(source.tool_name, report.evidence_arguments.get(source.tool_call_id, {}),
                        report.evidence.get(source.tool_call_id, {}))
    return linked(source.label, url)


def _call_blocks(source: EvidenceSource, projection: Mapping[str, Any], table_used: bool) -> tuple[list[dict[str, Any]], bool]:
    """The blocks of one cited call's items; the bool says whether the message's one table block is now used."""
    tool = projection.get("tool_name")
    spec = _registered(tool)
    view = spec.evidence_view(projection) if spec is not None else None
    if isinstance(view, SeriesView):
        return series_view_blocks(view), table_used
    if tool == ToolName.QUERY_LOGS and (logs := _items(projection, "logs")):
        lines, used = [], 0
        for line in (log_line(item, 400) for item in logs[:VIEW_LINES]):
            used += len(line) + 1
            if used > LINES_MAX_CHARS:
                break
            lines.append(line)
        more = len(logs) - len(lines)
        note = f"\n_{more} more line{'s' if more != 1 else ''} of this call not shown._" if more > 0 else ""
        return [section(pre("\n".join(lines)) + note)], table_used
    if tool == ToolName.QUERY_MYSQL and (rows := _rows(projection)):
        columns = [shorten(c, 60) for c in projection.get("columns") or []]
        body = [[cell(v) for v in r] for r in rows[:VIEW_ROWS]]
        if not table_used:
            return [table_block(columns, body)], True
        return [section(mono_table(columns, body))], table_used
    if tool == ToolName.LOOKUP_KNOWLEDGE and (blocks := _items(projection, "evidence_blocks")):
        parts = [f"*{escape(shorten(b.get('doc', '?'), 120))}* § {escape(shorten(b.get('heading', '?'), 120))}\n"
                 f"{pre(shorten(b.get('text', ''), EXCERPT_MAX))}" for b in blocks[:2]]
        return [section("\n".join(parts))], table_used
    if projection:
        return [section("_This query matched nothing (that is not proof of health)._")], table_used
    return [section(NOT_KEPT)], table_used


def evidence_view(report: PublishedReport, index: int, links: SourceLinks | None = None) -> list[dict[str, Any]]:
    """The blocks of "Show evidence" for finding `index` (limits applied by the caller)."""
    finding = report.draft.analysis[index]
    sources = {s.tool_call_id: s for s in report.sources}
    blocks: list[dict[str, Any]] = [header(f"Evidence for finding {index + 1}"),
                                    section(f"_{escape(clip(finding.text, 600))}_")]
    table_used = False
    for cid in finding.tool_call_ids:
        source = sources.get(cid)
        if source is None:
            continue
        blocks.append(section(f"*Source:* {source_text(source, report, links)}"))
        more, table_used = _call_blocks(source, report.evidence.get(cid) or {}, table_used)
        blocks += more
    return blocks


def inline_item(finding: Analysis, report: PublishedReport) -> str:
    """The finding's telling item as one mrkdwn line ('' when there is none)."""
    item = telling_item(finding, report)
    return f"› {code(item)}" if item else ""


def finding_sources(finding: Analysis, report: PublishedReport, links: SourceLinks | None) -> str:
    """'_Sources:_ label; label' with every label whole (linked when configured)."""
    sources = {s.tool_call_id: s for s in report.sources}
    labels = [source_text(sources[c], report, links) for c in finding.tool_call_ids if c in sources]
    return "_Sources:_ " + "; ".join(labels) if labels else ""

