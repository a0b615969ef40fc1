"""Where alerts may start investigations: the settings of SPEC §10.1 parsed once (allow-lists, never deny-lists)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.health.result import CheckResult, Level
from core.settings import Settings

_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{1,30}")
_BOT_ID = re.compile(r"B[A-Z0-9]{1,30}")
ANY_APP = "*"


def alert_sources(value: str | None) -> frozenset[tuple[str, str]]:
    """DIAG_ALERT_SOURCES: `CHANNEL_ID:BOT_ID` or `CHANNEL_ID:*` pairs, comma separated."""
    pairs: set[tuple[str, str]] = set()
    for part in (value or "").split(","):
        channel, _, bot = part.strip().partition(":")
        if _CHANNEL_ID.fullmatch(channel) and (bot == ANY_APP or _BOT_ID.fullmatch(bot)):
            pairs.add((channel, bot))
    return frozenset(pairs)


def invalid_entries(settings: Settings) -> list[str]:
    """Entries of the alert settings that are not understood (for `diagbot check`)."""
    bad: list[str] = []  # DIAG_ALLOWED_CHANNELS is validated with the access policy (core/access_policy.py)
    for part in (settings.diag_alert_sources or "").split(","):
        channel, _, bot = part.strip().partition(":")
        if part.strip() and not (_CHANNEL_ID.fullmatch(channel) and (bot == ANY_APP or _BOT_ID.fullmatch(bot))):
            bad.append(part.strip())
    if settings.diag_alert_channel and not _CHANNEL_ID.fullmatch(settings.diag_alert_channel):
        bad.append(settings.diag_alert_channel)
    return bad


@dataclass(frozen=True)
class AlertPolicy:
    """The alert settings, parsed."""

    webhook_token: str | None
    channel: str | None
    sources: frozenset[tuple[str, str]]
    allowed_channels: frozenset[str] | None
    """DIAG_ALLOWED_CHANNELS (None: every channel the bot is in)."""
    dedup_s: float
    max_per_hour: int

    @classmethod
    def from_settings(cls, settings: Settings) -> AlertPolicy:
        token = settings.diag_alert_webhook_token.get_secret_value() if settings.diag_alert_webhook_token else None
        channel = settings.diag_alert_channel if _CHANNEL_ID.fullmatch(settings.diag_alert_channel or "") else None
        return cls(webhook_token=token or None, channel=channel, sources=alert_sources(settings.diag_alert_sources),
                   allowed_channels=settings.access_policy.channels, dedup_s=settings.diag_alert_dedup_s,
                   max_per_hour=settings.diag_alert_max_per_hour)

    def allowed(self, channel: str) -> bool:
        """DIAG_ALLOWED_CHANNELS: unset lets every channel the bot is in."""
        return self.allowed_channels is None or channel in self.allowed_channels

    def alert_channel(self, labels: dict[str, str]) -> str | None:
        """The channel of a group's root message: the `diag_channel` label when that channel is explicitly allowed
        (DIAG_ALLOWED_CHANNELS lists it), else DIAG_ALERT_CHANNEL (when allowed); None: nowhere to post."""
        wanted = labels.get("diag_channel", "")
        if wanted and self.allowed_channels is not None and wanted in self.allowed_channels:
            return wanted
        return self.channel if self.channel is not None and self.allowed(self.channel) else None

    def watches(self, channel: str, bot_id: str) -> bool:
        """True when a message of app `bot_id` in `channel` is an alert to investigate (DIAG_ALERT_SOURCES)."""
        return self.allowed(channel) and ((channel, bot_id) in self.sources or (channel, ANY_APP) in self.sources)


MIN_TOKEN_CHARS = 16


def check_alert_settings(settings: Settings) -> CheckResult:
    """`diagbot check`'s line for SPEC §10.1: what is on, and what in the settings would keep alerts from working."""
    policy = AlertPolicy.from_settings(settings)
    bad = invalid_entries(settings)
    problems = [f"not understood: {', '.join(b[:40] for b in bad)}"] if bad else []
    if policy.webhook_token is not None and policy.channel is None:
        problems.append("DIAG_ALERT_WEBHOOK_TOKEN is set but DIAG_ALERT_CHANNEL is not (or not allowed)")
    if policy.webhook_token is not None and len(policy.webhook_token) < MIN_TOKEN_CHARS:
        problems.append(f"DIAG_ALERT_WEBHOOK_TOKEN is shorter than {MIN_TOKEN_CHARS} characters")
    if policy.webhook_token is None and not policy.sources:
        return CheckResult(name="alerts", level=Level.SKIP, detail="alert-triggered investigations are off")
    on = ([f"webhook POST /alerts/alertmanager -> {policy.channel or '?'}"] if policy.webhook_token else []) + (
        [f"{len(policy.sources)} alert source(s)"] if policy.sources else [])
    detail = f"{'; '.join(on)}; at most {policy.max_per_hour} per channel and hour"
    if problems:
        return CheckResult(name="alerts", level=Level.WARN, detail=f"{detail}; {'; '.join(problems)}",
                           fix="channel ids (C…/G…) and bot ids (B…) as in docs/slack-setup.md, section 4")
    return CheckResult(name="alerts", level=Level.OK, detail=detail)
