"""What the Slack listeners share: settings, the core port, dedup, the turn queue and runner, membership checks."""

from __future__ import annotations

from dataclasses import dataclass, field

from slack_sdk.web.async_client import AsyncWebClient

from bot.access import RunAccess
from bot.ask_gate import AskGate
from bot.dedup import Deduplicator
from bot.render.message import RenderOptions
from core.alerts.intake import AlertIntake
from core.ports import ChatServicePort, FeedbackPort
from core.turns.runner import TurnRunner
from core.turns.worker import TurnJobs


@dataclass
class BotDeps:
    """Constructed once in build_app and passed to every listener module."""

    chat: ChatServicePort
    client: AsyncWebClient
    dedup: Deduplicator
    runner: TurnRunner
    jobs: TurnJobs
    access: RunAccess
    feedback: FeedbackPort
    gate: AskGate
    render: RenderOptions = field(default_factory=RenderOptions)
    alerts: AlertIntake | None = None
    """Alert-triggered investigations (the webhook's and the alert apps' messages)."""
