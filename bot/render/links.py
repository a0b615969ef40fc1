"""Deep links for sources: each tool's template setting (DIAG_LOGS_LINK_TEMPLATE, DIAG_SQL_LINK_TEMPLATE,
DIAG_METRICS_LINK_TEMPLATE) with {service}, {query}, {start}, {end} filled from the call (ToolSpec.link_values).

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
from core.settings import Settings
from core.tools.registry import current_registry

URL_MAX = 2000
PLACEHOLDERS = ("service", "query", "start", "end")


@dataclass(frozen=True)
class SourceLinks:
    """The configured templates by tool name (none: sources stay plain text)."""

    templates: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_settings(cls, settings: Settings) -> SourceLinks:
        """Each registered tool's template setting (DIAG_LOGS_LINK_TEMPLATE, DIAG_SQL_LINK_TEMPLATE, ...) that is set."""
        found = {spec.name: value for spec in current_registry().specs()
                 if spec.link_setting and isinstance(value := getattr(settings, spec.link_setting, None), str) and value}
        return cls(MappingProxyType(found))

    def url(self, tool: str, arguments: Mapping[str, Any], projection: Mapping[str, Any]) -> str | None:
        """The deep link of one call, or None when no template applies."""
        spec = current_registry().find(tool)
        template = self.templates.get(spec.name) if spec is not None else None
        values = spec.link_values(arguments, projection) if spec is not None and template else None
        if not template or values is None or not template.lower().startswith(("https://", "http://")):
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
