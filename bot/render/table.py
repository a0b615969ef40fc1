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
TABLE_MAX_CHARS = 4500
MONO_MAX_CHARS = 2800


def _fits(rows: Sequence[Sequence[str]], size: int, max_chars: int) -> int:
    """How many of `rows` fit in `max_chars` when each costs its characters plus `size` of overhead per cell."""
    used, count = 0, 0
    for row in rows:
        used += sum(len(c) + size for c in row)
        if used > max_chars:
            break
        count += 1
    return count


def table_block(columns: Sequence[str], rows: Sequence[Sequence[str]], max_chars: int = TABLE_MAX_CHARS) -> dict[str, Any]:
    """A `table` block: the column names as the first row, then as many rows as fit (every row the same width)."""
    width = min(MAX_TABLE_CELLS, max([len(columns), *(len(r) for r in rows)], default=1)) or 1
    header = [*columns[:width], *[""] * (width - len(columns[:width]))]
    body = [[clip(c, TABLE_CELL_MAX) for c in [*r[:width], *[""] * (width - len(r[:width]))]]
            for r in rows[: MAX_TABLE_ROWS - 1]]
    overhead = 36  # characters of JSON around each cell
    body = body[: _fits(body, overhead, max_chars - sum(len(c) + overhead for c in header))]

    def raw(text: str) -> dict[str, str]:
        return {"type": "raw_text", "text": clip(text, TABLE_CELL_MAX) or " "}

    return {"type": "table", "column_settings": [{"is_wrapped": True}] * width,
            "rows": [[raw(c) for c in header], *[[raw(c) for c in r] for r in body]]}


def mono_table(columns: Sequence[str], rows: Sequence[Sequence[str]], max_width: int = MONO_WIDTH,
               max_chars: int = MONO_MAX_CHARS) -> str:
    """The rows as an aligned monospace table in a ``` block: columns dropped from the right to fit `max_width`,
    rows from the end to fit `max_chars` (said in a last line)."""
    body = [[clip(c, MONO_CELL_MAX) for c in r] for r in rows]
    kept = _fits(body, 3, max_chars - max_width * 2)
    text = _grid([clip(c, MONO_CELL_MAX) for c in columns], body[:kept], max_width)
    if kept < len(body):
        text += f"\n({len(body) - kept} more row{'s' if len(body) - kept != 1 else ''} not shown)"
    return pre(text)


def _grid(columns: Sequence[str], rows: Sequence[Sequence[str]], max_width: int) -> str:
    grid = [list(columns), *[list(r) for r in rows]]
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
    return "\n".join(lines)
