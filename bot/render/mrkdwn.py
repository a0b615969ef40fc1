"""Safe Block Kit text objects: user and tool text is escaped so it cannot ping, link or format-inject."""

from __future__ import annotations

from typing import Any

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape(text: str) -> str:
    """Escape &, < and > for Slack mrkdwn (so `<!channel>` or `<http://x|y>` in tool output stays inert)."""
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


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
