"""Metric series in Show evidence: each cited series as a compact sparkline with its min / max / last and the points
a finding rests on (a SeriesView from the query_metrics spec; core/ never renders Slack)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bot.render.mrkdwn import code, context, escape, section
from core.evidence.subjects import shorten
from core.tools.contract import SeriesLine, SeriesView

BARS = "▁▂▃▄▅▆▇█"
WIDTH = 48
MAX_SERIES = 5


def sparkline(values: Sequence[float | None], width: int = WIDTH) -> str:
    """Values as block characters scaled between their min and max (a gap is a space), at most `width` wide: each
    character is the highest value of its slice, so a peak never disappears."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return ""
    step = max(1, math.ceil(len(values) / width))
    slices = [values[i:i + step] for i in range(0, len(values), step)]
    low, high = min(finite), max(finite)
    span = high - low
    out = []
    for chunk in slices:
        shown = [v for v in chunk if v is not None and math.isfinite(v)]
        if not shown:
            out.append(" ")
            continue
        level = 0 if span == 0 else round((max(shown) - low) / span * (len(BARS) - 1))
        out.append(BARS[level])
    return "".join(out)


def series_section(line: SeriesLine) -> list[dict[str, Any]]:
    """One series: its title, the sparkline, min/max/last, and the points the finding rests on."""
    spark = sparkline(line.values)
    title = f"*{escape(shorten(line.title, 150))}*"
    stats = f"min {escape(line.low)} · max {escape(line.high)} · last {escape(line.last)}"
    body = f"{title}\n{code(spark) if spark else '_no values in the window_'}\n{stats}"
    blocks = [section(body)]
    if line.marks:
        blocks.append(context("Rests on: " + "; ".join(escape(m) for m in line.marks[:4])))
    return blocks


def series_view_blocks(view: SeriesView) -> list[dict[str, Any]]:
    """Blocks for every series of a view (the first MAX_SERIES), the window, and how many were left out."""
    blocks: list[dict[str, Any]] = []
    for line in view.series[:MAX_SERIES]:
        blocks += series_section(line)
    notes = [escape(view.window)] if view.window else []
    left = view.more + max(0, len(view.series) - MAX_SERIES)
    if left:
        notes.append(f"{left} more series not shown")
    if notes:
        blocks.append(context(" · ".join(notes)))
    return blocks
