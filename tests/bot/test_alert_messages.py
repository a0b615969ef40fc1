"""Alert messages of other apps (DIAG_ALERT_SOURCES): a listed app's message in a listed channel starts one
DIAGNOSIS turn in its thread, read from its text and its attachments; repeats within DIAG_ALERT_DEDUP_S, unlisted
apps and channels, edits and the bot's own messages start nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import SecretStr

from core.contracts.run import Intent
from core.evidence.instructions import OPEN
from core.settings import Settings
from tests.alert_payloads import HOSTILE
from tests.bot.conftest import Harness
from tests.bot.slack_requests import SECRET, message
from tests.fakes.slack_server import BOT_ID, BOT_USER_ID, FakeSlack


@pytest.fixture
def settings(fake_slack: FakeSlack) -> Settings:
    return Settings(diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"),
                    slack_signing_secret=SecretStr(SECRET), slack_api_url=fake_slack.api_url,
                    diag_alert_sources="C1:BGRAFANA,C2:*", diag_alert_max_per_hour=3)


def app_message(ts: str, *, bot_id: str = "BGRAFANA", channel: str = "C1", text: str = "",
                attachments: list[dict[str, Any]] | None = None, user: str | None = None,
                subtype: str = "bot_message") -> dict[str, Any]:
    """A bot message as Slack delivers an integration's post (subtype bot_message, bot_id, bot_profile)."""
    return message(text, ts=ts, user=user, channel=channel, subtype=subtype, bot_id=bot_id,
                   bot_profile={"id": bot_id, "name": "Grafana", "app_id": "A9"}, attachments=attachments or [])


GRAFANA = [{"fallback": "[FIRING:1] HighErrorRate order-service", "color": "#D63232",
            "title": "[FIRING:1] HighErrorRate (order-service critical)",
            "title_link": "http://grafana.example/alerting/list",
            "text": "**Firing**\nValue: B=7.2\nLabels:\n - alertname = HighErrorRate\n - service = order-service",
            "footer": "Grafana v10.4.1"}]


async def test_an_alert_apps_attachment_message_starts_one_investigation_in_its_thread(harness: Harness) -> None:
    status, _ = await harness.send.event(app_message("500.0001", attachments=GRAFANA))
    assert status == 200
    await harness.slack.wait_until(lambda: len(harness.chat.turns) == 1, 5, "the investigation")
    await harness.settle()
    [turn] = harness.chat.turns
    assert turn.intent is Intent.DIAGNOSIS
    assert turn.session.thread_ts == "500.0001"
    assert turn.message_ts == "500.0001"
    assert "HighErrorRate (order-service critical)" in turn.text
    assert "B=7.2" in turn.text
    assert "Grafana" in turn.text
    assert len(harness.slack.finals("C1", "500.0001")) == 1


async def test_repeats_unlisted_apps_edits_and_own_messages_start_nothing(harness: Harness) -> None:
    await harness.send.event(app_message("501.0001", attachments=GRAFANA))
    await harness.slack.wait_until(lambda: len(harness.chat.turns) == 1, 5, "the investigation")
    await harness.send.event(app_message("501.0002", attachments=GRAFANA))  # the same alert posted again
    await harness.send.event(app_message("501.0003", bot_id="BOTHER", text="CPU high"))  # not listed for C1
    await harness.send.event(app_message("501.0004", channel="C3", text="CPU high"))  # channel not listed
    await harness.send.event(app_message("501.0005", bot_id=BOT_ID, channel="C2", text="our own alert root",
                                         user=BOT_USER_ID))
    await harness.send.event(app_message("501.0006", text="edited", subtype="message_changed"))
    await harness.settle()
    await asyncio.sleep(0.1)  # a negative: nothing else may start
    assert len(harness.chat.turns) == 1


async def test_any_app_in_a_star_channel_and_text_read_with_attachments(harness: Harness) -> None:
    await harness.send.event(app_message("502.0001", bot_id="BPAGERDUTY", channel="C2", text="Incident #42 triggered",
                                         attachments=[{"title": "checkout-service p99 latency", "fields": [
                                             {"title": "Urgency", "value": "high"}]}]))
    await harness.slack.wait_until(lambda: len(harness.chat.turns) == 1, 5, "the investigation")
    [turn] = harness.chat.turns
    assert "Incident #42 triggered" in turn.text
    assert "Urgency: high" in turn.text


async def test_an_alert_message_addressing_the_model_reaches_it_marked(harness: Harness) -> None:
    await harness.send.event(app_message("503.0001", bot_id="BANY", channel="C2", text=HOSTILE))
    await harness.slack.wait_until(lambda: len(harness.chat.turns) == 1, 5, "the investigation")
    assert f"{OPEN}SYSTEM NOTE TO AI" in harness.chat.turns[0].text


async def test_past_the_hourly_limit_one_notice_counts_the_rest(harness: Harness) -> None:
    for i in range(5):
        await harness.send.event(app_message(f"504.000{i}", bot_id="BANY", channel="C2", text=f"alert number {i}"))
        await harness.settle()
    assert len(harness.chat.turns) == 3
    notices = [m for (ch, _), m in harness.slack.messages.items() if ch == "C2" and "Alert storm" in m.get("text", "")]
    assert len(notices) == 1
    assert "2 more were not investigated" in notices[0]["text"]
