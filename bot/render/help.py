"""The help text shown by /diag help and for chat turns."""

from __future__ import annotations

from typing import Any

from bot.render.mrkdwn import escape, header, section

HELP_TEXT = (
    "*Ask me in a channel:* `@diagbot why is order-service throwing errors?` — I reply in a thread, "
    "and replies in that thread are follow-ups (no mention needed).\n"
    "*Reply* `stop` or `cancel` in the thread to stop the running diagnosis.\n"
    "*Commands:*\n"
    "• `/diag trace <run_id>` — the timeline of a run (only for members of its channel)\n"
    "• `/diag cancel <run_id>` — cancel a running run\n"
    "• `/diag help` — this message\n"
    "I publish a diagnosis only when every claim is backed by tool results of that run; otherwise "
    "I show what was actually observed and where it got stuck."
)
USAGE = "Usage: `/diag trace <run_id>` · `/diag cancel <run_id>` · `/diag help`"


def help_blocks() -> list[dict[str, Any]]:
    """Blocks of the help message."""
    return [header("diagbot"), section(HELP_TEXT)]


def chat_blocks(text: str) -> list[dict[str, Any]]:
    """Body blocks of a chat turn's short answer."""
    return [section(escape(text))]
