"""From an alert to an investigation (SPEC §10.1), whichever replica receives it and however often it is sent.

Alertmanager (HA) sends each notification from every peer and re-sends a group every repeat_interval; alert apps'
messages may repeat. Everything shared lives in the KV (Redis for several replicas), every decision is one atomic
step there:

- a group (`groupKey`) is opened once: `alert-group:<id>` set-if-absent (pending, then the root message's ts, kept
  DIAG_ALERT_DEDUP_S). The replica that sets it checks the storm limit, posts the root message and submits the
  DIAGNOSIS turn in its thread (the turn queue dedups it once more by the root's identity); the others wait for the
  root and only report what changed;
- what changed is decided per alert: `alert-seen:<id>:<fingerprint>:<status>` set-if-absent, so an alert joining
  the group or resolving is listed once; the group's resolution is replied once and ends the group (a later firing
  of the same groupKey is a new incident);
- the storm limit is a counter per channel and clock hour (`incr`), and its one notice per hour is set-if-absent.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from core.alerts.alertmanager import Alert, AlertGroup
from core.alerts.policy import AlertPolicy
from core.alerts.question import alertmanager_question, message_question
from core.contracts.run import Intent, SessionKey
from core.observability.metrics import Metrics
from core.ports import KeyValueStore
from core.queue.job import Enqueued

log = logging.getLogger(__name__)

ALERTMANAGER = "alertmanager"
SLACK_APP = "slack_app"
PENDING = "pending"
PENDING_TTL_S = 60.0  # the opening replica posts the root within this (else the next notification tries again)
ROOT_WAIT_S = 10.0
ROOT_POLL_S = 0.2
HOUR_S = 3600


def digest(value: str) -> str:
    """A short, fixed-size key part for any text (group keys and alert texts are long and arbitrary)."""
    return hashlib.sha256(value.encode()).hexdigest()[:32]


class AlertSurface(Protocol):
    """What an investigation's start needs from the chat surface (bot/alert_surface.py for Slack)."""

    async def team_id(self) -> str:
        """The workspace the bot posts in (a session's team)."""
        ...

    async def post_root(self, channel: str, group: AlertGroup) -> str | None:
        """Post the group's root message; its ts, or None when Slack refused it (logged)."""
        ...

    async def post_changes(self, channel: str, thread_ts: str, joined: Sequence[Alert],
                           resolved: Sequence[Alert]) -> None:
        """List alerts that joined the group or resolved, in its thread."""
        ...

    async def post_resolved(self, channel: str, root_ts: str, group: AlertGroup) -> None:
        """Reply "resolved at …" in the thread and mark the root message resolved."""
        ...

    async def storm_notice(self, channel: str, notice_ts: str | None, skipped: int, limit: int) -> str | None:
        """Post (or, with `notice_ts`, update) the hour's notice that `skipped` alerts were not investigated."""
        ...


class TurnSubmitter(Protocol):
    """The turn queue's entry (core/turns/worker.TurnJobs)."""

    async def submit(self, session: SessionKey, text: str, user: str, message_ts: str, *,
                     intent: Intent | None = None) -> Enqueued: ...


class AlertIntake:
    """Opens investigations for alert notifications, once per group or alert, within the storm limit."""

    def __init__(self, policy: AlertPolicy, kv: KeyValueStore, surface: AlertSurface, turns: TurnSubmitter, *,
                 metrics: Metrics | None = None, clock: Callable[[], float] = time.time) -> None:
        self._policy = policy
        self._kv = kv
        self._surface = surface
        self._turns = turns
        self._metrics = metrics or Metrics()
        self._clock = clock

    @property
    def policy(self) -> AlertPolicy:
        return self._policy

    async def alertmanager(self, group: AlertGroup) -> None:
        """One validated webhook notification (after its ack): open, update or resolve its group."""
        self._metrics.alert(ALERTMANAGER, "received")
        channel = self._policy.alert_channel(group.common_labels)
        if channel is None:
            log.warning("alert group refused: no allowed channel (set DIAG_ALERT_CHANNEL, or a diag_channel label "
                        "listed in DIAG_ALLOWED_CHANNELS)")
            self._metrics.alert(ALERTMANAGER, "refused")
            return
        gid = digest(group.group_key)
        if group.status == "firing" and await self._kv.set_if_absent(_group_key(gid), PENDING, PENDING_TTL_S):
            await self._open(group, gid, channel)
            return
        state = await self._root_of(gid)
        if state is None:  # resolved (or skipped by the storm limit) before we saw it fire: nothing to add to
            self._metrics.alert(ALERTMANAGER, "deduplicated")
            return
        await self._update(group, gid, *state)

    async def _open(self, group: AlertGroup, gid: str, channel: str) -> None:
        if not await self._within_limit(channel, ALERTMANAGER):
            await self._kv.set(_group_key(gid), "skipped", self._left_of_hour())  # re-sends this hour: nothing
            return
        root = await self._surface.post_root(channel, group)
        if root is None:  # Slack refused it: the next notification of the group tries again
            await self._kv.delete(_group_key(gid))
            self._metrics.alert(ALERTMANAGER, "refused")
            return
        for alert in group.alerts:  # before the group shows its root: a replica waiting for it lists only news
            await self._seen(gid, alert.fingerprint, alert.status)
        await self._kv.set(_group_key(gid), json.dumps({"channel": channel, "root": root}), self._policy.dedup_s)
        session = SessionKey(team=await self._surface.team_id(), channel=channel, thread_ts=root)
        await self._turns.submit(session, alertmanager_question(group), "", root, intent=Intent.DIAGNOSIS)
        self._metrics.alert(ALERTMANAGER, "investigated")
        log.info("alert group %s: investigation started in channel %s", gid[:12], channel)

    async def _root_of(self, gid: str) -> tuple[str, str] | None:
        """(channel, root ts) of an open group, waiting while another replica opens it; None when not open."""
        deadline = time.monotonic() + ROOT_WAIT_S
        while True:
            value = await self._kv.get(_group_key(gid))
            if value is None or value == "skipped":
                return None
            if value != PENDING:
                state = json.loads(value)
                return str(state["channel"]), str(state["root"])
            if time.monotonic() >= deadline:
                log.warning("alert group %s: still being opened by another replica; update dropped", gid[:12])
                return None
            await asyncio.sleep(ROOT_POLL_S)

    async def _update(self, group: AlertGroup, gid: str, channel: str, root: str) -> None:
        joined = [a for a in group.firing if await self._seen(gid, a.fingerprint, "firing")]
        resolved = [a for a in group.resolved if await self._seen(gid, a.fingerprint, "resolved")]
        ended = group.status == "resolved" and await self._seen(gid, "group", "resolved")
        if ended:
            await self._surface.post_resolved(channel, root, group)
            await self._kv.delete(_group_key(gid))  # a later firing of this groupKey is a new incident
        elif joined or resolved:
            await self._surface.post_changes(channel, root, joined, resolved)
        else:
            self._metrics.alert(ALERTMANAGER, "deduplicated")

    async def _seen(self, gid: str, fingerprint: str, status: str) -> bool:
        """True the first time this alert is seen in this status (any replica)."""
        return await self._kv.set_if_absent(f"alert-seen:{gid}:{digest(fingerprint)}:{status}", "1",
                                            self._policy.dedup_s)

    async def app_message(self, *, team: str, channel: str, ts: str, thread_ts: str | None, bot_id: str, app: str,
                          text: str) -> bool:
        """An alert app's message in a watched channel: investigate it in its thread, once per alert text within
        DIAG_ALERT_DEDUP_S; True when an investigation started."""
        self._metrics.alert(SLACK_APP, "received")
        if not text.strip():
            self._metrics.alert(SLACK_APP, "refused")
            return False
        identity = digest(f"{bot_id}\n{' '.join(text.split())}")
        if not await self._kv.set_if_absent(f"alert-msg:{channel}:{identity}", ts, self._policy.dedup_s):
            self._metrics.alert(SLACK_APP, "deduplicated")
            return False
        if not await self._within_limit(channel, SLACK_APP):
            return False
        thread = thread_ts or ts
        await self._turns.submit(SessionKey(team=team, channel=channel, thread_ts=thread), message_question(text, app),
                                 "", ts, intent=Intent.DIAGNOSIS)
        self._metrics.alert(SLACK_APP, "investigated")
        return True

    def _left_of_hour(self) -> float:
        return HOUR_S - self._clock() % HOUR_S + 1.0

    async def _within_limit(self, channel: str, source: str) -> bool:
        """Count one investigation against the channel's hour; past DIAG_ALERT_MAX_PER_HOUR, tell the channel
        (one notice per hour, updated with the count) and say no."""
        hour = int(self._clock() // HOUR_S)
        count = await self._kv.incr(f"alert-storm:{channel}:{hour}", HOUR_S + 60.0)
        limit = self._policy.max_per_hour
        if count <= limit:
            return True
        self._metrics.alert(source, "over_limit")
        notice_key = f"alert-storm-notice:{channel}:{hour}"
        if await self._kv.set_if_absent(notice_key, PENDING, HOUR_S + 60.0):
            ts = await self._surface.storm_notice(channel, None, count - limit, limit)
            if ts is not None:
                await self._kv.set(notice_key, ts, HOUR_S + 60.0)
        elif (ts := await self._kv.get(notice_key)) not in (None, PENDING):
            await self._surface.storm_notice(channel, ts, count - limit, limit)
        log.warning("alert storm in channel %s: %d alerts this hour, limit %d; not investigated", channel, count,
                    limit)
        return False


def _group_key(gid: str) -> str:
    return f"alert-group:{gid}"



