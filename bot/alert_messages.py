"""Alert messages of other Slack apps (SPEC §10.1, DIAG_ALERT_SOURCES): which bot messages are alerts, and their
text. Alertmanager's, Grafana's and PagerDuty's Slack integrations post as bots, often with legacy attachments (or
blocks) and an empty `text`: all three are read."""

from __future__ import annotations

from typing import Any

MAX_TEXT_CHARS = 8000
APP_SUBTYPES = frozenset({None, "bot_message"})  # a new bot post; edits, deletions and joins are not alerts


def _attachment_lines(attachment: dict[str, Any]) -> list[str]:
    lines = [str(attachment.get(key) or "") for key in ("pretext", "author_name", "title", "text")]
    for field in attachment.get("fields") or []:
        if isinstance(field, dict):
            lines.append(f"{field.get('title') or ''}: {field.get('value') or ''}".strip(": "))
    for block in attachment.get("blocks") or []:
        lines += _block_lines(block)
    if not any(lines):
        lines.append(str(attachment.get("fallback") or ""))
    lines.append(str(attachment.get("footer") or ""))
    return lines


MAX_BLOCK_DEPTH = 8  # rich_text nests block > list > section > element; deeper is not a message Slack renders


def _block_lines(block: Any, depth: int = 0) -> list[str]:
    """The words of a block or element, recursively: text objects (`{"type": "mrkdwn", "text": ...}`), a markdown
    block's or a rich-text element's string `text`, a link's text (else its URL), and the `text`, `fields` and
    `elements` nested in it (rich_text sections, lists, quotes and preformatted blocks keep their words there)."""
    if not isinstance(block, dict) or depth > MAX_BLOCK_DEPTH:
        return []
    text = block.get("text")
    lines = [text] if isinstance(text, str) else _block_lines(text, depth + 1)
    if block.get("type") == "link" and not isinstance(text, str):
        lines.append(str(block.get("url") or ""))
    for key in ("fields", "elements"):
        children = block.get(key)
        if isinstance(children, list):
            lines += [line for child in children for line in _block_lines(child, depth + 1)]
    return lines


def alert_text(event: dict[str, Any]) -> str:
    """The message's words: its text, its attachments' and its blocks' (bounded; repeats dropped)."""
    lines = [str(event.get("text") or "")]
    for attachment in event.get("attachments") or []:
        if isinstance(attachment, dict):
            lines += _attachment_lines(attachment)
    for block in event.get("blocks") or []:
        lines += _block_lines(block)
    seen: set[str] = set()
    kept: list[str] = []
    for line in (part.strip() for chunk in lines for part in chunk.splitlines()):
        if line and line not in seen:
            seen.add(line)
            kept.append(line)
    return "\n".join(kept)[:MAX_TEXT_CHARS]


def app_of(event: dict[str, Any]) -> tuple[str, str]:
    """(bot id, app name) of a bot message; ("", "") for a person's."""
    raw = event.get("bot_profile")
    profile: dict[str, Any] = raw if isinstance(raw, dict) else {}
    bot_id = str(event.get("bot_id") or profile.get("id") or "")
    return bot_id, str(profile.get("name") or event.get("username") or bot_id)


def is_foreign_app_message(event: dict[str, Any], own_bot_id: str | None, own_user_id: str | None) -> bool:
    """A new message posted by an app other than this bot."""
    bot_id, _ = app_of(event)
    if not bot_id or event.get("subtype") not in APP_SUBTYPES:
        return False
    return bot_id != own_bot_id and not (own_user_id and event.get("user") == own_user_id)
