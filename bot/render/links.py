"""Deep links for sources: DIAG_LOGS_LINK_TEMPLATE / DIAG_SQL_LINK_TEMPLATE with {service}, {query}, {start}, {end}.

Values are URL-encoded into the template; only http(s) templates are used. A linked label is escaped like any text
and cannot break out of the link (`|` and `>` are replaced).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from bot.render.mrkdwn import escape
from core.contracts.evidence import ToolName

URL_MAX = 2000
PLACEHOLDERS = ("service", "query", "start", "end")


@dataclass(frozen=True)
class SourceLinks:
    """The configured templates (None: sources stay plain text)."""

    logs: str | None = None
    sql: str | None = None

    def url(self, tool: ToolName | str, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> str | None:
        """The deep link of one call, or None when no template applies."""
        if tool == ToolName.QUERY_LOGS:
            template = self.logs
            values = {"service": arguments.get("service"), "query": arguments.get("query"),
                      "start": projection.get("window_start") or arguments.get("start"),
                      "end": projection.get("window_end") or arguments.get("end")}
        elif tool == ToolName.QUERY_MYSQL:
            template = self.sql
            values = {"service": "", "query": arguments.get("sql"), "start": "", "end": ""}
        else:
            return None
        if not template or not template.lower().startswith(("https://", "http://")):
            return None
        url = template
        for key in PLACEHOLDERS:
            url = url.replace("{" + key + "}", quote(str(values.get(key) or ""), safe=""))
        return url if len(url) <= URL_MAX else None


def linked(label: str, url: str | None) -> str:
    """The escaped label, as a Slack link when there is a URL."""
    text = escape(label)
    if url is None:
        return text
    return f"<{url.replace('|', '%7C').replace('>', '%3E')}|{text.replace('|', '¦')}>"
