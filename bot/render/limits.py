"""Block Kit limits: every message we send fits Slack's documented and practical caps, with a visible marker.

Documented: 50 blocks, 3,000 chars per section text, 150 per header, 2,000 per field, 10 context elements.
Practical: Slack rejects messages whose blocks serialise to about 13,000 characters (`msg_blocks_too_long`),
so we budget 12,000 characters of `json.dumps(blocks)`. When the body does not fit, section texts are
shortened evenly (so every part stays visible) and, if that is not enough, trailing body blocks are dropped.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from bot.render.mrkdwn import context, mrkdwn

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_FIELD_TEXT = 2000
MAX_FIELDS = 10
MAX_CONTEXT_ELEMENTS = 10
MAX_CONTEXT_TEXT = 2000
MAX_TOTAL_CHARS = 12_000
MAX_PLAIN_TEXT = 3000
ELLIPSIS = "…"
_MIN_SHRINK = 80

Block = dict[str, Any]


def clip(text: str, limit: int) -> str:
    """Cut text to at most `limit` characters, ending with an ellipsis; never splits an `&amp;`-style escape."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)]
    amp = cut.rfind("&", max(0, len(cut) - 5))
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut + ELLIPSIS


def size(blocks: list[Block]) -> int:
    """The character budget measure: length of the JSON Slack receives for these blocks."""
    return len(json.dumps(blocks))


def truncation_marker(run_id: str | None) -> Block:
    """The visible marker added whenever content was cut."""
    del run_id  # the trace holds the run's steps, not the cut text: pointing there would mislead
    return context(f"{ELLIPSIS}shortened to fit Slack's message limits")


def _copied(value: Any) -> Any:
    """A deep copy of a block's JSON (dicts and lists rebuilt, strings and numbers shared); anything else through
    copy.deepcopy. The same result as deepcopy for the plain JSON renderers build, without its memo and dispatch."""
    kind = type(value)
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    return copy.deepcopy(value)


def clamp_block(block: Block) -> Block:
    """Apply the per-block caps to one block (returns a copy)."""
    b: Block = _copied(block)
    kind = b.get("type")
    if kind == "header":
        b["text"]["text"] = clip(b["text"]["text"], MAX_HEADER_TEXT)
    elif kind == "section":
        if "text" in b:
            b["text"]["text"] = clip(b["text"]["text"], MAX_SECTION_TEXT)
        if "fields" in b:
            b["fields"] = [{**f, "text": clip(f["text"], MAX_FIELD_TEXT)} for f in b["fields"][:MAX_FIELDS]]
    elif kind == "context":
        elements = b["elements"]
        if len(elements) > MAX_CONTEXT_ELEMENTS:
            rest = " · ".join(e.get("text", "") for e in elements[MAX_CONTEXT_ELEMENTS - 1 :])
            elements = [*elements[: MAX_CONTEXT_ELEMENTS - 1], mrkdwn(rest)]
        b["elements"] = [{**e, "text": clip(e["text"], MAX_CONTEXT_TEXT)} if "text" in e else e for e in elements]
    return b


def _with_cap(blocks: list[Block], cap: int) -> list[Block]:
    out = []
    for b in blocks:
        if b.get("type") == "section" and "text" in b and len(b["text"]["text"]) > cap:
            b = {**b, "text": {**b["text"], "text": clip(b["text"]["text"], cap)}}
        out.append(b)
    return out


def fit_blocks(body: list[Block], tail: list[Block] | None = None, *, run_id: str | None = None,
               max_chars: int = MAX_TOTAL_CHARS) -> list[Block]:
    """Fit body + tail (footer, always kept) into every limit; adds a truncation marker if anything was cut."""
    tail = [clamp_block(b) for b in (tail or [])][: MAX_BLOCKS - 1]
    clamped = [clamp_block(b) for b in body]
    truncated = clamped != body
    marker = truncation_marker(run_id)
    room = MAX_BLOCKS - len(tail) - 1
    if len(clamped) > room:
        clamped, truncated = clamped[:room], True
    if not truncated and size(clamped + tail) <= max_chars:
        return clamped + tail

    def fits(blocks: list[Block]) -> bool:
        return size([*blocks, marker, *tail]) <= max_chars

    if not fits(clamped):
        longest = max((len(b["text"]["text"]) for b in clamped if b.get("type") == "section" and "text" in b), default=0)
        lo, hi = _MIN_SHRINK, longest
        best: list[Block] | None = None
        while lo <= hi:  # largest per-section cap that fits: shrinks long sections evenly
            mid = (lo + hi) // 2
            candidate = _with_cap(clamped, mid)
            if fits(candidate):
                best, lo = candidate, mid + 1
            else:
                hi = mid - 1
        clamped = best if best is not None else _with_cap(clamped, _MIN_SHRINK)
        while clamped and not fits(clamped):
            clamped = clamped[:-1]
    return [*clamped, marker, *tail]


def clip_plain(text: str) -> str:
    """The top-level `text` of a message (notification and fallback), kept short."""
    return clip(text, MAX_PLAIN_TEXT)
