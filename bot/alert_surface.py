"""The Slack side of alert-triggered investigations (core/alerts/intake.AlertSurface): the group's root message,
the thread notes when alerts join or resolve, the resolved mark, the hourly storm notice.

Every alert field is data from outside: escaped (no pings, links or formatting from labels), bounded, and the
generator link shown only when it is a plain http(s) URL.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.render.limits import clip, fit_blocks
from bot.render.mrkdwn import context, escape, escape_entities, header, section
from bot.slack_errors import error_code
from core.alerts.alertmanager import Alert, AlertGroup
from core.alerts.question import summary_of, when

log = logging.getLogger(__name__)

MAX_LABELS_SHOWN = 12
MAX_LISTED = 10
_URL = re.compile(r"https?://[^\s<>|]{1,2000}")


def _severity(group: AlertGroup) -> str | None:
    first = group.alerts[0]
    return group.common_labels.get("severity") or first.labels.get("severity")


def _labels(labels: dict[str, str]) -> str:
    shown = [f"{escape(clip(k, 60))}={escape(clip(v, 120))}" for k, v in sorted(labels.items())[:MAX_LABELS_SHOWN]]
    more = f" (+{len(labels) - MAX_LABELS_SHOWN} more)" if len(labels) > MAX_LABELS_SHOWN else ""
    return ", ".join(shown) + more


def _link(url: str, label: str) -> str | None:
    return f"<{escape_entities(url)}|{label}>" if _URL.fullmatch(url) else None


def root_blocks(group: AlertGroup, resolved: bool = False) -> tuple[str, list[dict[str, Any]]]:
    """The root message of a group: name, severity, summary, labels, start time, the generator's link."""
    first = group.alerts[0]
    severity = _severity(group)
    state = "Resolved" if resolved else "Firing"
    title = f"{state}: {first.name}" + (f" ({severity})" if severity else "")
    count = len(group.alerts) + group.truncated_alerts
    lines = [f"*{escape(clip(summary_of(first.annotations) or 'No summary given.', 600))}*"]
    lines.append(f"Started {escape(when(min(a.starts_at for a in group.alerts)))}"
                 + (f" · {count} alerts in the group" if count > 1 else ""))
    links = [link for link in (_link(first.generator_url, "Source"), _link(group.external_url, "Alertmanager"))
             if link is not None]
    blocks = [header(clip(title, 150)), section("\n".join(lines)), context(_labels(group.common_labels or first.labels))]
    tail = [context(" · ".join([*links, "investigating in the thread" if not resolved else "resolved"]))]
    text = clip(f"{title}: {summary_of(first.annotations) or ''}", 300)
    return escape(text), fit_blocks(blocks, tail)


def _alert_line(alert: Alert) -> str:
    summary = summary_of(alert.annotations)
    return f"• {escape(clip(alert.name, 120))}" + (f": {escape(clip(summary, 300))}" if summary else "") + (
        f" ({_labels(alert.labels)})")


class SlackAlertSurface:
    """AlertSurface over the Web API client (the app's: retries and outgoing redaction included)."""

    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client
        self._team: str | None = None

    async def team_id(self) -> str:
        if self._team is None:
            try:
                self._team = str((await self._client.auth_test()).get("team_id") or "")
            except Exception as exc:  # the session still works without it; asked again next time
                log.warning("auth.test for the alert session's team failed: %s", error_code(exc))
                return ""
        return self._team

    async def _post(self, channel: str, text: str, blocks: list[dict[str, Any]],
                    thread_ts: str | None = None) -> str | None:
        try:
            resp = await self._client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text, blocks=blocks)
            return str(resp.get("ts") or "") or None
        except Exception as exc:  # logged with the channel; the intake decides what to do without it
            log.warning("alert message in channel %s not posted: %s", channel, error_code(exc))
            return None

    async def post_root(self, channel: str, group: AlertGroup) -> str | None:
        text, blocks = root_blocks(group)
        return await self._post(channel, text, blocks)

    async def post_changes(self, channel: str, thread_ts: str, joined: Sequence[Alert],
                           resolved: Sequence[Alert]) -> None:
        parts: list[str] = []
        for title, alerts in (("joined the group", joined), ("resolved", resolved)):
            if alerts:
                listed = "\n".join(_alert_line(a) for a in alerts[:MAX_LISTED])
                more = f"\n…and {len(alerts) - MAX_LISTED} more" if len(alerts) > MAX_LISTED else ""
                parts.append(f"*{len(alerts)} alert(s) {title}:*\n{listed}{more}")
        text = "\n\n".join(parts)
        await self._post(channel, clip(text, 300), fit_blocks([section(clip(text, 2900))], []), thread_ts)

    async def post_resolved(self, channel: str, root_ts: str, group: AlertGroup) -> None:
        ended = [a.ended for a in group.alerts if a.ended is not None]
        at = when(max(ended)) if ended else "an unknown time"
        note = f"Resolved at {at}: Alertmanager reports every alert of this group resolved."
        await self._post(channel, note, [section(escape(note))], root_ts)
        text, blocks = root_blocks(group, resolved=True)
        try:
            await self._client.chat_update(channel=channel, ts=root_ts, text=text, blocks=blocks)
        except Exception as exc:
            log.warning("alert root message in channel %s not marked resolved: %s", channel, error_code(exc))

    async def storm_notice(self, channel: str, notice_ts: str | None, skipped: int, limit: int) -> str | None:
        note = (f"Alert storm: {limit} alerts were investigated in this channel this hour, the most allowed "
                f"(DIAG_ALERT_MAX_PER_HOUR). {skipped} more were not investigated.")
        blocks = [section(escape(note))]
        if notice_ts is None:
            return await self._post(channel, note, blocks)
        try:
            await self._client.chat_update(channel=channel, ts=notice_ts, text=note, blocks=blocks)
        except Exception as exc:
            log.warning("storm notice in channel %s not updated: %s", channel, error_code(exc))
        return notice_ts
