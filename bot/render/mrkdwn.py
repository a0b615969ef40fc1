"""Safe Block Kit text objects: user and tool text is escaped so it cannot ping, link or format-inject."""

from __future__ import annotations

import re
from typing import Any

# Slack mrkdwn has no escape character. A formatting marker (*bold*, _italic_, ~strike~, `code`) acts only at a word
# boundary, so a zero-width space between the boundary and the marker keeps tool text such as `_id_` or `*` literal.
_ZWSP = "\u200b"
_OPENING = re.compile(r"(^|(?<=[\s(\[{\"'/,;:]))([*_~`])")
_CLOSING = re.compile(r"([*_~`])(?=$|[\s)\]}\"'/,;:.!?])")
_MARKER = re.compile(r"[*_~`]")
_FENCE = re.compile(r"`{3,}")


def escape_entities(text: str) -> str:
    """Escape &, < and > only (for text inside a ``` block, where no other formatting applies)."""
    if "&" in text:  # first, so the entities added below are not escaped again
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def escape(text: str) -> str:
    """Make text inert in Slack mrkdwn: &, < and > escaped (no pings, no links), formatting markers neutralised."""
    text = escape_entities(text)
    if _MARKER.search(text) is None:  # no formatting marker: nothing for the two passes below to neutralise
        return text
    text = _OPENING.sub(lambda m: m.group(1) + _ZWSP + m.group(2), text)
    return _CLOSING.sub(lambda m: m.group(1) + _ZWSP, text)


def pre(text: str) -> str:
    """A preformatted block (monospace, no formatting): only entities escaped, fences inside cannot close it."""
    return "```" + escape_entities(_FENCE.sub(lambda m: "'" * len(m.group(0)), text)) + "```"


def code(text: str) -> str:
    """Inline code span for ids; backticks inside are dropped so the span cannot be broken out of."""
    return "`" + escape(text.replace("`", "'")) + "`"


def mrkdwn(text: str) -> dict[str, Any]:
    """A mrkdwn text object; verbatim so Slack does not auto-link or auto-parse mentions."""
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def plain(text: str) -> dict[str, Any]:
    """A plain_text object (emoji off: tool text is shown as written)."""
    return {"type": "plain_text", "text": text, "emoji": False}


def header(text: str) -> dict[str, Any]:
    """A header block (plain text, clipped later by the limits pass)."""
    return {"type": "header", "text": plain(text)}


def section(text: str) -> dict[str, Any]:
    """A section block whose text is already-escaped mrkdwn."""
    return {"type": "section", "text": mrkdwn(text)}


def context(*texts: str) -> dict[str, Any]:
    """A context block of already-escaped mrkdwn elements."""
    return {"type": "context", "elements": [mrkdwn(t) for t in texts]}


def divider() -> dict[str, Any]:
    """A divider block."""
    return {"type": "divider"}
