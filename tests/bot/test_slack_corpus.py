"""Slack's own payload shapes (tests/slack_corpus/) through the real app over HTTP: every documented shape passes
the request guard and reaches its listener; every shape outside the documented one is refused 400 (401 unsigned)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_bolt.async_app import AsyncAck
from slack_bolt.context import BoltContext
from slack_bolt.request.internals import build_context
from slack_bolt.request.payload_utils import to_action, to_command, to_event, to_message, to_shortcut, to_view

from bot.request_guard import body_problem
from tests.bot.conftest import Harness
from tests.bot.slack_corpus import Case, documented, encode, malformed
from tests.fakes.slack_server import FakeSlack
from tests.waiting import until

DOCUMENTED = documented()
MALFORMED = malformed()
RUN_ID = "run_0123456789abcdef0123456789abcd00"


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    """The fake Slack with an Enterprise Grid user (W111) in C1 besides U1..U5."""
    slack = await FakeSlack(members={"C1": ["U1", "U2", "U3", "W111"], "C2": ["U9"]}).start()
    yield slack
    await slack.aclose()


def test_the_corpus_covers_every_kind_the_app_receives() -> None:
    kinds = {(c.body.get("type"), (c.body.get("event") or {}).get("type"), (c.body.get("event") or {}).get("subtype"))
             for c in DOCUMENTED}
    for needed in [("event_callback", "app_mention", None), ("event_callback", "message", None),
                   ("event_callback", "message", "bot_message"), ("event_callback", "message", "message_changed"),
                   ("event_callback", "message", "message_deleted"),
                   ("event_callback", "assistant_thread_started", None),
                   ("event_callback", "assistant_thread_context_changed", None), ("block_actions", None, None),
                   ("view_submission", None, None), ("view_closed", None, None), ("shortcut", None, None),
                   ("message_action", None, None), ("url_verification", None, None)]:
        assert needed in kinds, needed
    action_types = {a["type"] for c in DOCUMENTED for a in c.body.get("actions", [])}
    assert {"button", "feedback_buttons", "icon_button", "overflow"} <= action_types
    assert any(c.body.get("team", {}) is None and c.body.get("is_enterprise_install") for c in DOCUMENTED)
    assert any("command" in c.body for c in DOCUMENTED)
    assert all(a["text"]["type"] == "plain_text" for c in DOCUMENTED for a in c.body.get("actions", [])
               if a["type"] in {"button", "feedback_buttons", "icon_button"})


@pytest.mark.parametrize("case", DOCUMENTED, ids=[c.id for c in DOCUMENTED])
def test_every_documented_shape_passes_the_shape_check(case: Case) -> None:
    body = encode(case.filled(response_url="https://hooks.slack.com/actions/T1/1/x", run_id=RUN_ID), case.encoding)
    assert body_problem(body.encode(), case.content_type) is None


@pytest.mark.parametrize("case", MALFORMED, ids=[c.id for c in MALFORMED])
def test_every_shape_outside_the_documented_one_is_named(case: Case) -> None:
    body = encode(case.filled(response_url="https://hooks.slack.com/actions/T1/1/x", run_id=RUN_ID), case.encoding)
    problem = body_problem(body.encode(), case.content_type)
    assert problem is not None
    assert "javascript" not in problem
    assert "Show evidence" not in problem


def _listen(harness: Harness, spec: str) -> asyncio.Event:
    """Register a test listener on the real app (the kinds diagbot itself has no listener for)."""
    reached = asyncio.Event()

    async def listener(ack: AsyncAck) -> None:
        await ack()
        reached.set()

    kind, _, name = spec.partition(":")
    register = {"action": harness.bot.app.action, "view": harness.bot.app.view,
                "view_closed": harness.bot.app.view_closed, "shortcut": harness.bot.app.shortcut}[kind]
    register(name)(listener)
    # Ahead of the app's catch-all listeners (bot/unhandled.py), which ack what nothing registered before handles.
    listeners = harness.bot.app._async_listeners
    listeners.insert(0, listeners.pop())
    return reached


def _ts_of(body: dict[str, Any]) -> str:
    return str((body.get("event") or {}).get("ts") or "")


async def _expect(harness: Harness, case: Case, body: dict[str, Any], answer: str, reached: asyncio.Event | None) -> None:
    if case.expect == "turn":
        await until(lambda: any(t.message_ts == _ts_of(body) for t in harness.chat.turns), 10, message="the turn")
    elif case.expect == "ignored":
        await harness.settle()
        assert harness.chat.turns == []
    elif case.expect == "greeting":
        await harness.slack.wait_for_call("assistant.threads.setSuggestedPrompts")
    elif case.expect in {"ephemeral", "command"}:
        response = await harness.slack.next_response()
        assert response.get("response_type") == "ephemeral"
    elif case.expect == "challenge":
        assert json.loads(answer)["challenge"] == body["challenge"]
    else:
        assert case.expect == "listener"
        assert reached is not None
        await asyncio.wait_for(reached.wait(), 5)


@pytest.mark.parametrize("case", DOCUMENTED, ids=[c.id for c in DOCUMENTED])
async def test_every_documented_shape_reaches_its_listener_through_the_real_app(harness: Harness, case: Case) -> None:
    harness.chat.add_run(RUN_ID, "T1", "C1")
    if case.session:
        harness.chat.sessions.add(case.session)
    reached = _listen(harness, case.listener) if case.listener else None
    body = case.filled(response_url=harness.slack.response_url("corpus"), run_id=RUN_ID)
    status, answer = await harness.send.post(encode(body, case.encoding), case.content_type)
    assert status == 200, answer
    await _expect(harness, case, body, answer, reached)


@pytest.mark.parametrize("case", MALFORMED, ids=[c.id for c in MALFORMED])
async def test_every_malformed_shape_is_refused_and_starts_nothing(harness: Harness, case: Case,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    harness.chat.add_run(RUN_ID, "T1", "C1")
    body = encode(case.filled(response_url=harness.slack.response_url("corpus"), run_id=RUN_ID), case.encoding)
    with caplog.at_level(logging.INFO, logger="bot.request_guard"):
        status, _ = await harness.send.post(body, case.content_type)
    assert status == 400
    assert [r.levelno for r in caplog.records if r.name == "bot.request_guard"] == [logging.WARNING]
    status, _ = await harness.send.post(body, case.content_type, signature="v0=" + "0" * 64)
    assert status == 401
    await harness.settle()
    assert harness.chat.turns == []
    assert harness.slack.responses == []


async def test_an_org_wide_installs_click_with_team_null_shows_the_trace_to_a_member_only(harness: Harness) -> None:
    """Enterprise Grid org-wide install: `team` is null and `user.team_id` is the org's id; channel membership of
    the run's channel decides."""
    harness.chat.add_run(RUN_ID, "T1", "C1")
    for user, shown in (("W111", True), ("U9", False)):
        status, _ = await harness.send.action("view_trace", RUN_ID, user=user, team=None, enterprise="E1",
                                              response_url=harness.slack.response_url(user))
        assert status == 200
        answer = await harness.slack.next_response()
        assert ("blocks" in answer) is shown, answer


_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                       max_leaves=6)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, (*prefix, i))
    return found


def test_a_null_response_urls_is_refused() -> None:
    """CI's hypothesis draw of 2026-12-05: a view_submission whose `response_urls` is null passed the check, and
    Bolt's build_context took its len(). Slack documents an array (empty when no input has response_url_enabled)."""
    case = next(c for c in DOCUMENTED if c.body.get("type") == "view_submission" and c.encoding != "form")
    body = case.filled(response_url="https://hooks.slack.com/actions/T1/1/x", run_id=RUN_ID)
    body["response_urls"] = None
    assert body_problem(encode(body, case.encoding).encode(), case.content_type) is not None
    body["response_urls"] = []
    assert body_problem(encode(body, case.encoding).encode(), case.content_type) is None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_whatever_passes_the_shape_check_bolt_can_read(data: st.DataObject) -> None:
    """Any field of any documented payload replaced by any JSON value: the check never raises, and whatever it lets
    through, Bolt's own request parsing (context ids, response_url, listener matching) reads without an error."""
    case = data.draw(st.sampled_from([c for c in DOCUMENTED if c.encoding != "form"]))
    body = case.filled(response_url="https://hooks.slack.com/actions/T1/1/x", run_id=RUN_ID)
    path = data.draw(st.sampled_from(_paths(body)))
    target: Any = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(_VALUES)
    if body_problem(encode(body, case.encoding).encode(), case.content_type) is not None:
        return
    build_context(BoltContext(), body)
    for probe in (to_action, to_event, to_message, to_command, to_view, to_shortcut):
        probe(body)
