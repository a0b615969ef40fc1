"""Deep links for sources: DIAG_LOGS_LINK_TEMPLATE / DIAG_SQL_LINK_TEMPLATE with {service}, {query}, {start}, {end}.

Values are URL-encoded into the template; only http(s) templates are used. A linked label is escaped like any text
and cannot break out of the link (`|` and `>` are replaced).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from bot.render.mrkdwn import escape
from core.contracts.evidence import ToolName
from core.tools.registry import current_registry

URL_MAX = 2000
PLACEHOLDERS = ("service", "query", "start", "end")


@dataclass(frozen=True)
class SourceLinks:
    """The configured templates (None: sources stay plain text)."""

    logs: str | None = None
    sql: str | None = None
    others: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Templates of registered toolsets by tool name (their spec's link_setting, e.g. DIAG_METRICS_LINK_TEMPLATE);
    the values come from the spec's link_values."""

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
            template = self.others.get(str(tool))
            spec = current_registry().find(str(tool)) if template else None
            found = spec.link_values(arguments, projection) if spec is not None else None
            if found is None:
                return None
            values = dict(found)
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
