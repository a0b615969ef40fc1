"""Who may ask (SPEC §10) through the real app: DIAG_ALLOWED_CHANNELS, DIAG_DM_USERS (users and user groups resolved
with usergroups.users.list) and guests (users.info), checked before any run starts on every way in; a refused asker
gets one ephemeral line saying why."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from core.access_policy import AccessPolicy, DmRule, Refusal
from core.health.config import check_access_policy
from core.settings import Settings
from tests.bot.conftest import Harness
from tests.bot.slack_requests import SECRET, mention, message
from tests.fakes.slack_server import FakeSlack

POLICY: dict[str, Any] = {}


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    """C1 and C2 with members; U7 is a guest, U8 a single-channel guest; group S1 holds U3."""
    slack = await FakeSlack(members={"C1": ["U1", "U2", "U3", "U7"], "C2": ["U1"]},
                            guests={"U7": "restricted", "U8": "ultra_restricted"}, usergroups={"S1": ["U3"]}).start()
    yield slack
    await slack.aclose()


@pytest.fixture
def settings(fake_slack: FakeSlack, request: pytest.FixtureRequest) -> Settings:
    marker = request.node.get_closest_marker("policy")
    return Settings(diag_slack_streaming=False, slack_bot_token=SecretStr("xoxb-test"),
                    slack_signing_secret=SecretStr(SECRET), slack_api_url=fake_slack.api_url,
                    **(marker.kwargs if marker else {}))


def ephemerals(h: Harness) -> list[dict[str, Any]]:
    return [c.params for c in h.slack.calls_of("chat.postEphemeral")]


@pytest.mark.policy(diag_allowed_channels="C2")
async def test_a_mention_outside_the_allowed_channels_starts_nothing_and_says_why_once(harness: Harness) -> None:
    for retry in (None, 1):  # Slack's retry of the same delivery is not refused twice
        await harness.send.event(mention(ts="10.0", channel="C1"), event_id="Ev10", retry_num=retry)
    await harness.settle()
    assert harness.chat.turns == []
    [line] = ephemerals(harness)
    assert (line["channel"], line["user"], line["text"]) == ("C1", "U1", Refusal.CHANNEL.value)
    await harness.send.event(mention(ts="11.0", channel="C2"))
    await harness.settle()
    assert [t.session.channel for t in harness.chat.turns] == ["C2"]


@pytest.mark.policy(diag_allowed_channels="C2")
async def test_a_follow_up_in_a_session_thread_outside_the_allowed_channels_is_refused(harness: Harness) -> None:
    harness.chat.sessions.add("T1:C1:20.0")
    await harness.send.event(message("and now?", ts="20.5", thread_ts="20.0"))
    await harness.settle()
    assert harness.chat.turns == []
    assert [(e["thread_ts"], e["text"]) for e in ephemerals(harness)] == [("20.0", Refusal.CHANNEL.value)]


@pytest.mark.policy(diag_dm_users="none")
async def test_no_dm_questions_when_dms_are_off(harness: Harness) -> None:
    await harness.send.event(message("why?", ts="30.0", channel="D1", channel_type="im"))
    await harness.settle()
    assert harness.chat.turns == []
    assert [e["text"] for e in ephemerals(harness)] == [Refusal.DM_OFF.value]
    await harness.send.event(mention(ts="31.0"))  # channels are not affected
    await harness.settle()
    assert len(harness.chat.turns) == 1


@pytest.mark.policy(diag_dm_users="U2, S1")
async def test_dm_users_and_user_groups_may_ask_others_not(harness: Harness) -> None:
    for i, user in enumerate(["U2", "U3", "U4", "U3"]):
        await harness.send.event(message("why?", ts=f"4{i}.0", user=user, channel="D1", channel_type="im"))
    await harness.settle()
    assert sorted(t.user for t in harness.chat.turns) == ["U2", "U3", "U3"]
    assert [(e["user"], e["text"]) for e in ephemerals(harness)] == [("U4", Refusal.DM_USER.value)]
    assert len(harness.slack.calls_of("usergroups.users.list")) == 1  # cached: U3's second DM, U4's both hit it


async def test_guests_are_refused_by_default(harness: Harness) -> None:
    for i, user in enumerate(["U7", "U8", "U1"]):
        await harness.send.event(mention(ts=f"5{i}.0", user=user))
    await harness.settle()
    assert [t.user for t in harness.chat.turns] == ["U1"]
    assert [(e["user"], e["text"]) for e in ephemerals(harness)] == [("U7", Refusal.GUEST.value),
                                                                     ("U8", Refusal.GUEST.value)]


@pytest.mark.policy(diag_allow_guests=True)
async def test_guests_may_ask_when_allowed(harness: Harness) -> None:
    await harness.send.event(mention(ts="60.0", user="U7"))
    await harness.settle()
    assert [t.user for t in harness.chat.turns] == ["U7"]
    assert harness.slack.calls_of("users.info") == []  # nothing to look up


async def test_a_policy_that_cannot_be_checked_refuses(harness: Harness) -> None:
    harness.slack.fail("users.info", "ratelimited", times=10, status=200)
    await harness.send.event(mention(ts="70.0"))
    await harness.settle()
    assert harness.chat.turns == []
    assert [e["text"] for e in ephemerals(harness)] == [Refusal.UNCHECKED.value]


@pytest.mark.policy(diag_dm_users="none")
async def test_the_assistant_container_is_a_dm_and_refused_before_its_status_is_set(harness: Harness) -> None:
    await harness.send.event(message("why?", ts="80.5", thread_ts="80.0", channel="D1", channel_type="im"))
    await harness.settle()
    assert harness.chat.turns == []
    assert harness.slack.statuses == []
    assert [e["text"] for e in ephemerals(harness)] == [Refusal.DM_OFF.value]


@pytest.mark.policy(diag_allowed_channels="C2")
async def test_slash_commands_and_clicks_outside_the_allowed_channels_are_refused(harness: Harness) -> None:
    harness.chat.add_run("run_x", "T1", "C1")
    await harness.send.command("trace run_x", user="U1", response_url=harness.slack.response_url("t"))
    assert (await harness.slack.next_response())["text"] == Refusal.CHANNEL.value
    await harness.send.command("help", user="U1", response_url=harness.slack.response_url("h"))
    assert "blocks" in await harness.slack.next_response()  # help reveals nothing and starts nothing
    for action_id, value in (("view_trace", "run_x"), ("show_evidence", "run_x|0"), ("diag_feedback", "up|run_x")):
        await harness.send.action(action_id, value, user="U1", response_url=harness.slack.response_url(action_id),
                                  kind="feedback_buttons" if action_id == "diag_feedback" else "button")
        assert (await harness.slack.next_response())["text"] == Refusal.CHANNEL.value


def test_settings_name_the_bad_id() -> None:
    with pytest.raises(ValidationError, match="'general' is not a Slack channel id"):
        Settings(diag_allowed_channels="C1,general")
    with pytest.raises(ValidationError, match="'bob' is neither `all`, `none`"):
        Settings(diag_dm_users="U1,bob")
    assert Settings(diag_allowed_channels=" C1 ,G2\n").access_policy.channels == frozenset({"C1", "G2"})
    assert Settings(diag_allowed_channels="").access_policy.channels is None


def test_the_policy_is_shown_by_diagbot_check() -> None:
    result = check_access_policy(Settings(diag_allowed_channels="C1,C2", diag_dm_users="U1,S1"))
    assert result.detail == "channels: C1, C2; DMs: 1 user(s) and 1 user group(s); guests: refused"
    policy = AccessPolicy(channels=frozenset({"C1"}), dm=DmRule.parse("none"))
    assert policy.channel_allowed("C1")
    assert not policy.channel_allowed("C9")  # the alert triggers' check
