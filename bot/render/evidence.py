"""Click-to-verify: the verified items behind one finding, exactly the projections the guards checked.

Each cited call's tool says how its items look (ToolSpec.evidence_view, plain data): lines (log lines with time and
level), a table (SQL rows under their column names: the first as a Block Kit `table`, Slack allows one per message;
others in monospace), excerpts (runbook sections with their document) or series (metrics as sparklines with
min/max/last). Inline, each finding shows its single most telling item (ToolSpec.telling_item).
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
from core.contracts.release import EvidenceSource, PublishedReport
from core.evidence.subjects import question_words, shorten
from core.tools.contract import ExcerptsView, LinesView, SeriesView, TableView
from core.tools.registry import current_registry

ITEM_MAX = 200
VIEW_LINES = 20
VIEW_ROWS = 20
EXCERPT_MAX = 600
LINES_MAX_CHARS = 2200
UNKNOWN_TOOL = "_No tool of this version is named like this call's, so its items cannot be shown._"
NOT_KEPT = "_The items of this call were not kept with the report._"


def telling_item(finding: Analysis, report: PublishedReport) -> str:
    """The one item of the finding's cited calls that best matches its text (bounded), or ''."""
    words = question_words(finding.text)
    for cid in finding.tool_call_ids:
        projection = report.evidence.get(cid) or {}
        spec = current_registry().find(str(projection.get("tool_name") or ""))
        if spec is not None and (item := spec.telling_item(projection, words, ITEM_MAX)):
            return item
    return ""


def source_text(source: EvidenceSource, report: PublishedReport, links: SourceLinks | None) -> str:
    """A source's whole label, linked when a deep-link template applies."""
    url = None
    if links is not None:
        url = links.url(source.tool_name, report.evidence_arguments.get(source.tool_call_id, {}),
                        report.evidence.get(source.tool_call_id, {}))
    return linked(source.label, url)


def _lines_blocks(view: LinesView) -> list[dict[str, Any]]:
    lines, used = [], 0
    for line in view.lines[:VIEW_LINES]:
        used += len(line) + 1
        if used > LINES_MAX_CHARS:
            break
        lines.append(line)
    more = len(view.lines) - len(lines)
    noun = view.noun if more == 1 else f"{view.noun}s"
    note = f"\n_{more} more {noun} of this call not shown._" if more > 0 else ""
    return [section(pre("\n".join(lines)) + note)]


def _excerpt_blocks(view: ExcerptsView) -> list[dict[str, Any]]:
    parts = [f"*{escape(shorten(e.source, 120))}* § {escape(shorten(e.section, 120))}\n"
             f"{pre(shorten(e.text, EXCERPT_MAX))}" for e in view.excerpts[:2]]
    return [section("\n".join(parts))]


def _call_blocks(source: EvidenceSource, projection: Mapping[str, Any], table_used: bool) -> tuple[list[dict[str, Any]], bool]:
    """The blocks of one cited call's items; the bool says whether the message's one table block is now used."""
    spec = current_registry().find(str(projection.get("tool_name") or source.tool_name))
    if spec is None:
        return [section(UNKNOWN_TOOL)], table_used
    view = spec.evidence_view(projection) if projection else None
    if isinstance(view, LinesView):
        return _lines_blocks(view), table_used
    if isinstance(view, TableView):
        columns, body = list(view.columns), [list(r) for r in view.rows[:VIEW_ROWS]]
        if not table_used:
            return [table_block(columns, body)], True
        return [section(mono_table(columns, body))], table_used
    if isinstance(view, ExcerptsView):
        return _excerpt_blocks(view), table_used
    if isinstance(view, SeriesView):
        return series_view_blocks(view), table_used
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

