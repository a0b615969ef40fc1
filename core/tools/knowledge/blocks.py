"""Splits Markdown runbooks into blocks: one block per heading's section (heading + its text)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Block:
    """One section of a document."""

    doc: str
    heading: str
    text: str


def split_blocks(doc: str, markdown: str) -> list[Block]:
    """Blocks of a Markdown document; text before the first heading becomes a block headed by the doc name."""
    blocks: list[Block] = []
    heading = doc
    lines: list[str] = []
    in_fence = False

    def flush() -> None:
        text = "\n".join(lines).strip()
        if text or heading != doc:
            blocks.append(Block(doc=doc, heading=heading, text=text))

    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            flush()
            heading = match.group(2).strip()
            lines = []
        else:
            lines.append(line)
    flush()
    return blocks
