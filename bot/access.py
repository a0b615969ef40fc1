"""Who may see a run: users of the run's team who are members of the run's channel (cached briefly)."""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_errors import error_code
from core.contracts.run import RunRecord
from core.ports import ChatServicePort

log = logging.getLogger(__name__)

MEMBERS_TTL_S = 60.0
# One text for unknown ids and refusals, so a denial reveals nothing about whether the run exists.
DENIAL = "No run with that id is available to you."


class ChannelMembers:
    """conversations.members with pagination, cached per channel for a short time in this process."""

    def __init__(self, client: AsyncWebClient, ttl_s: float = MEMBERS_TTL_S) -> None:
        self._client = client
        self._ttl_s = ttl_s
        self._cache: dict[str, tuple[float, frozenset[str]]] = {}

    async def members(self, channel: str) -> frozenset[str]:
        """All member ids of a channel (empty when Slack refuses, e.g. the bot is not in it)."""
        hit = self._cache.get(channel)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        found: set[str] = set()
        cursor: str | None = None
        try:
            while True:
                resp = await self._client.conversations_members(channel=channel, cursor=cursor, limit=200)
                found.update(resp.get("members") or [])
                cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
                if not cursor:
                    break
        except Exception as exc:  # any Slack answer or network failure: nobody is shown the run (fail closed)
            log.warning("conversations.members of %s failed: %s", channel, error_code(exc))
            return frozenset()
        result = frozenset(found)
        self._cache[channel] = (time.monotonic() + self._ttl_s, result)
        return result


Teams = str | frozenset[str] | None
"""Whose workspace asks: one team id, the ids an interaction names (workspace and org), or None for an org-wide
install's interaction that names no workspace (`team` null: any workspace of the org; channel membership decides)."""


def interaction_teams(body: dict[str, Any]) -> Teams:
    """The workspace and org ids an interaction payload names for its user (Slack's documented shapes: `team` an
    object or null, `team.enterprise_id`, `user.team_id` (the org's id for org-wide installs), `enterprise`)."""
    team, user, enterprise = body.get("team"), body.get("user"), body.get("enterprise")
    ids = {team.get("id"), team.get("enterprise_id")} if isinstance(team, dict) else set()
    if isinstance(user, dict):
        ids.add(user.get("team_id"))
    if isinstance(enterprise, dict):
        ids.add(enterprise.get("id"))
    if team is None and body.get("is_enterprise_install") is True:
        return None
    return frozenset(i for i in ids if isinstance(i, str) and i)


def _team_matches(run: RunRecord, teams: Teams) -> bool:
    if teams is None:
        return True
    return run.team == teams if isinstance(teams, str) else run.team in teams


class RunAccess:
    """Resolves a run id for a user, or None (unknown and forbidden look the same)."""

    def __init__(self, chat: ChatServicePort, members: ChannelMembers) -> None:
        self._chat = chat
        self._members = members

    async def run_for(self, run_id: str, team: Teams, user: str) -> RunRecord | None:
        """The run when `user` of `team` may see it (a member of the run's channel), else None."""
        run = await self._chat.get_run(run_id)
        if run is None or not _team_matches(run, team) or not user:
            return None
        if user not in await self._members.members(run.channel):
            return None
        return run

    async def may_see_channel(self, channel: str, user: str) -> bool:
        """True when `user` is a member of `channel` (a turn still queued there has no run record to check yet)."""
        return bool(channel and user) and user in await self._members.members(channel)
