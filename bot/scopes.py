"""The bot token scopes diagbot needs: the ones manifest.yml requests (tests/bot/test_slack_checks.py keeps the
two equal, so a scope added to the manifest is checked by `diagbot check` too)."""

from __future__ import annotations

BOT_SCOPES = frozenset({
    "app_mentions:read",
    "chat:write",
    "commands",
    "channels:history",
    "groups:history",
    "channels:read",
    "groups:read",
    "im:history",
    "im:read",
    "assistant:write",
    "users:read",
    "usergroups:read",
})
# Without these no question reaches the bot or no answer leaves it: missing one stops `diagbot serve`.
ESSENTIAL_SCOPES = frozenset({"app_mentions:read", "chat:write"})
