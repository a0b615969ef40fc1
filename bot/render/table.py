"""SQL rows for people: a Block Kit `table` block (one per message, Slack's rule) or a monospace table in a ``` block.

Cells arrive as strings already (the fallback factory and the evidence view turn values into words, never reprs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.render.limits import clip
from bot.render.mrkdwn import pre

# Slack's table block: at most 100 rows (the header row included here) and 20 cells per row.
MAX_TABLE_ROWS = 100
MAX_TABLE_CELLS = 20
TABLE_CELL_MAX = 200
MONO_CELL_MAX = 32
MONO_WIDTH = 110


def table_block(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> dict[str, Any]:
    """A `table` block: the column names as the first row, then the rows (bounded, every row the same width)."""
    width = min(MAX_TABLE_CELLS, max([len(columns), *(len(r) for r in rows)], default=1)) or 1
    header = [*columns[:width], *[""] * (width - len(columns[:width]))]
    body = [[*r[:width], *[""] * (width - len(r[:width]))] for r in rows[: MAX_TABLE_ROWS - 1]]

    def raw(text: str) -> dict[str, str]:
        return {"type": "raw_text", "text": clip(text, TABLE_CELL_MAX) or " "}

    return {"type": "table", "column_settings": [{"is_wrapped": True}] * width,
            "rows": [[raw(c) for c in header], *[[raw(c) for c in r] for r in body]]}


def mono_table(columns: Sequence[str], rows: Sequence[Sequence[str]], max_width: int = MONO_WIDTH) -> str:
    """The rows as an aligned monospace table in a ``` block, columns dropped from the right to fit `max_width`."""
    grid = [[clip(c, MONO_CELL_MAX) for c in columns], *[[clip(c, MONO_CELL_MAX) for c in r] for r in rows]]
    count = max((len(r) for r in grid), default=0)
    widths = [max((len(r[i]) for r in grid if i < len(r)), default=0) for i in range(count)]
    shown = count
    while shown > 1 and sum(widths[:shown]) + 3 * (shown - 1) > max_width:
        shown -= 1
    lines = [" | ".join(r[i].ljust(widths[i]) if i < len(r) else " " * widths[i] for i in range(shown)).rstrip()
             for r in grid]
    if grid:
        lines.insert(1, "-+-".join("-" * widths[i] for i in range(shown)))
    if shown < count:
        lines.append(f"({count - shown} more column{'s' if count - shown != 1 else ''} not shown)")
    return pre("\n".join(lines))
