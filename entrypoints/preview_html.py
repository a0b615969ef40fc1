"""An HTML approximation of Block Kit, for the README pictures (`make preview`): not Slack, but close enough to read.

Covers the blocks diagbot sends: header, section (mrkdwn, accessory button), context, actions, context_actions
(feedback buttons), table, divider; and a streamed plan of tasks for the progress picture.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

_PRE = re.compile(r"```(.*?)```", re.S)
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"&lt;(https?://[^|&]+)\|([^&]*)&gt;|<(https?://[^|>]+)\|([^>]*)>")
_BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_([^_\n]+)_(?![\w_])")
STATUS_ICON = {"pending": "○", "in_progress": "◐", "complete": "✔", "error": "⚠"}

CSS = """
body { font-family: -apple-system, 'Segoe UI', 'DejaVu Sans', Lato, sans-serif; background: #fff; margin: 0;
       color: #1d1c1d; font-size: 15px; line-height: 1.46; }
.msg { display: flex; padding: 12px 20px; max-width: 760px; }
.avatar { width: 36px; height: 36px; border-radius: 6px; background: #2c2d30; color: #fff; font-weight: 700;
          display: flex; align-items: center; justify-content: center; margin-right: 10px; flex: none; }
.who { font-weight: 900; } .app { background: #e8e8e8; font-size: 11px; padding: 1px 4px; border-radius: 3px;
       color: #616061; margin-left: 4px; } .time { color: #616061; font-size: 12px; margin-left: 6px; }
.header { font-size: 18px; font-weight: 900; margin: 4px 0 6px; }
.section { margin: 6px 0; display: flex; justify-content: space-between; gap: 12px; }
.section .text { white-space: normal; overflow-wrap: anywhere; }
.context { color: #616061; font-size: 12.5px; margin: 6px 0; }
pre { background: #f8f8f8; border: 1px solid #ddd; border-radius: 4px; padding: 6px 8px; font-size: 12px;
      white-space: pre-wrap; margin: 4px 0; font-family: Monaco, Menlo, 'DejaVu Sans Mono', monospace; }
code { background: #f8f8f8; border: 1px solid #ddd; border-radius: 3px; padding: 0 3px; color: #c01343;
       font-size: 12.5px; font-family: Monaco, Menlo, 'DejaVu Sans Mono', monospace; }
.button { border: 1px solid #bbb; border-radius: 4px; padding: 3px 10px; font-size: 13px; font-weight: 700;
          background: #fff; white-space: nowrap; height: fit-content; }
.actions { display: flex; gap: 8px; margin: 8px 0; }
table { border-collapse: collapse; font-size: 12.5px; margin: 6px 0; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; } th { background: #f4f4f4; }
a { color: #1264a3; text-decoration: none; }
.plan { border: 1px solid #ddd; border-radius: 8px; padding: 8px 12px; margin: 6px 0; }
.plan .title { font-weight: 700; margin-bottom: 4px; } .task { margin: 3px 0; }
.task .out { color: #616061; font-size: 13px; margin-left: 22px; } .ephemeral { color: #616061; font-size: 12px; }
"""


def mrkdwn(text: str) -> str:
    """Slack mrkdwn (already entity-escaped by the renderers) as HTML."""
    parts: list[str] = []
    last = 0
    for match in _PRE.finditer(text):
        parts.append(_inline(text[last:match.start()]))
        parts.append(f"<pre>{match.group(1).strip(chr(10))}</pre>")
        last = match.end()
    parts.append(_inline(text[last:]))
    return "".join(parts)


def _inline(text: str) -> str:
    text = text.replace("\u200b", "")
    text = _LINK.sub(lambda m: f'<a href="#">{m.group(2) or m.group(4)}</a>', text)
    text = _CODE.sub(r"<code>\1</code>", text)
    text = _BOLD.sub(r"<b>\1</b>", text)
    text = _ITALIC.sub(r"<i>\1</i>", text)
    return text.replace("\n", "<br>")


def _button(element: dict[str, Any]) -> str:
    return f'<span class="button">{html.escape(element["text"]["text"])}</span>'


def block_html(block: dict[str, Any]) -> str:
    """One block as HTML."""
    kind = block.get("type")
    if kind == "header":
        return f'<div class="header">{html.escape(block["text"]["text"])}</div>'
    if kind == "section":
        accessory = _button(block["accessory"]) if block.get("accessory", {}).get("type") == "button" else ""
        return f'<div class="section"><div class="text">{mrkdwn(block["text"]["text"])}</div>{accessory}</div>'
    if kind == "context":
        return '<div class="context">' + " ".join(mrkdwn(e.get("text", "")) for e in block["elements"]) + "</div>"
    if kind == "actions":
        return '<div class="actions">' + "".join(_button(e) for e in block["elements"]) + "</div>"
    if kind == "context_actions":
        buttons = [b for e in block["elements"] for b in (e.get("positive_button"), e.get("negative_button")) if b]
        return '<div class="actions">' + "".join(_button(b) for b in buttons) + "</div>"
    if kind == "table":
        rows = block["rows"]
        head = "".join(f"<th>{html.escape(c.get('text', ''))}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c.get('text', ''))}</td>" for c in r) + "</tr>"
                       for r in rows[1:])
        return f"<table><tr>{head}</tr>{body}</table>"
    return "<hr>" if kind == "divider" else ""


def plan_html(title: str, tasks: Sequence[dict[str, Any]]) -> str:
    """A streamed plan: its title and each task with its status and output."""
    items = "".join(
        f'<div class="task">{STATUS_ICON.get(t["status"], "•")} {html.escape(t["title"])}'
        + (f'<div class="out">{html.escape(t.get("output", ""))}</div>' if t.get("output") else "") + "</div>"
        for t in tasks)
    return f'<div class="plan"><div class="title">{html.escape(title)}</div>{items}</div>'


def page(body_html: str, *, ephemeral: bool = False) -> str:
    """A whole page: one bot message (its avatar, name and time) around the given content."""
    note = '<div class="ephemeral">Only visible to you</div>' if ephemeral else ""
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>{CSS}</style></head><body>"
            f'<div class="msg"><div class="avatar">d</div><div>{note}<span class="who">diagbot</span>'
            f'<span class="app">APP</span><span class="time">23:31</span>{body_html}</div></div>'
            "<script>document.title = String(document.documentElement.scrollHeight);</script></body></html>")


def blocks_page(blocks: Sequence[dict[str, Any]], *, ephemeral: bool = False) -> str:
    """A message's blocks as a page."""
    return page("".join(block_html(b) for b in blocks), ephemeral=ephemeral)
