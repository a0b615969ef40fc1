"""/diag commands and the View trace button: authorisation by team and channel membership, usage, cancel."""

from __future__ import annotations

import asyncio

from bot.access import DENIAL
from core.contracts.run import SessionKey
from core.queue.job import Enqueued, TurnJob, turn_job_id
from tests.bot.conftest import Harness
from tests.bot.slack_requests import mention


async def _command(h: Harness, text: str, user: str = "U1", team: str = "T1") -> dict[str, object]:
    status, _ = await h.send.command(text, user=user, team=team, response_url=h.slack.response_url())
    assert status == 200
    await h.settle()
    return await h.slack.next_response()


async def test_trace_for_channel_member_shows_timeline_ephemerally(harness: Harness) -> None:
    """A member of the run's channel (found on a later page of conversations.members) sees the timeline."""
    harness.chat.add_run("run_abc", team="T1", channel="C1")
    resp = await _command(harness, "trace run_abc", user="U5")
    assert resp["response_type"] == "ephemeral"
    text = str(resp["blocks"])
    assert "RUN_STARTED" in text
    assert "TOOL_CALL" in text
    assert "RUN_FINISHED" in text
    assert len(harness.slack.calls_of("conversations.members")) == 3  # 5 members, 2 per page


async def test_membership_is_cached_briefly(harness: Harness) -> None:
    """A second trace of the same channel does not call conversations.members again."""
    harness.chat.add_run("run_abc", team="T1", channel="C1")
    await _command(harness, "trace run_abc", user="U1")
    calls = len(harness.slack.calls_of("conversations.members"))
    await _command(harness, "trace run_abc", user="U2")
    assert len(harness.slack.calls_of("conversations.members")) == calls


async def test_denial_is_identical_for_non_member_other_team_and_unknown_id(harness: Harness) -> None:
    """Non-members, users of another team and unknown ids all get the same one-line denial and nothing else."""
    harness.chat.add_run("run_abc", team="T1", channel="C1")
    answers = [
        await _command(harness, "trace run_abc", user="U9"),
        await _command(harness, "trace run_abc", user="U1", team="T2"),
        await _command(harness, "trace run_nope", user="U1"),
    ]
    for a in answers:
        assert a["text"] == DENIAL
        assert "blocks" not in a or not a["blocks"]
        assert a["response_type"] == "ephemeral"


async def test_channel_the_bot_cannot_read_denies(harness: Harness) -> None:
    """When Slack refuses conversations.members (e.g. channel_not_found), access is denied, not granted."""
    harness.chat.add_run("run_x", team="T1", channel="C404")
    assert (await _command(harness, "trace run_x", user="U1"))["text"] == DENIAL


async def test_bad_usage_and_help(harness: Harness) -> None:
    """Unknown subcommands get a one-line usage; empty text and 'help' (any case) get the help."""
    assert str((await _command(harness, "frobnicate"))["text"]).startswith("Usage:")
    assert str((await _command(harness, "trace"))["text"]).startswith("Usage:")
    assert str((await _command(harness, "trace a b"))["text"]).startswith("Usage:")
    assert "/diag trace" in str((await _command(harness, "help"))["blocks"])
    assert "/diag trace" in str((await _command(harness, ""))["blocks"])
    assert "/diag trace" in str((await _command(harness, "Help"))["blocks"])
    assert str((await _command(harness, "help me"))["text"]).startswith("Usage:")


async def test_diag_cancel_cancels_a_running_run(harness: Harness) -> None:
    """/diag cancel <run_id> by a channel member cancels the run; the run ends and its thread says so."""
    harness.chat.delay_s = 30
    await harness.send.event(mention(ts="10.0"))
    await asyncio.wait_for(harness.chat.started.wait(), 5)
    resp = await _command(harness, "cancel run_1", user="U2")
    assert resp["text"] == "Cancelling run `run_1`."
    await harness.settle()
    final = harness.slack.calls_of("chat.update")[-1].params
    assert final["metadata"]["event_payload"] == {"run_id": "run_1", "intent": "DIAGNOSIS", "outcome": "FAILURE",
                                                  "fallback_type": None}
    assert (await _command(harness, "cancel run_1", user="U2"))["text"] == "Run `run_1` is not running."


async def test_diag_cancel_by_non_member_is_denied(harness: Harness) -> None:
    """A non-member cannot cancel a run (and learns nothing about it)."""
    harness.chat.add_run("run_abc", team="T1", channel="C1")
    assert (await _command(harness, "cancel run_abc", user="U9"))["text"] == DENIAL


async def test_view_trace_button_uses_the_same_authorisation(harness: Harness) -> None:
    """The footer's View trace button shows the timeline to members and the denial to others."""
    harness.chat.add_run("run_abc", team="T1", channel="C1")
    for user, allowed in (("U1", True), ("U9", False)):
        status, _ = await harness.send.button("run_abc", user=user, response_url=harness.slack.response_url("b"))
        assert status == 200
        resp = await harness.slack.next_response()
        assert resp["response_type"] == "ephemeral"
        assert resp["replace_original"] is False
        assert ("RUN_STARTED" in str(resp.get("blocks"))) is allowed
        assert (resp["text"] == DENIAL) is not allowed


async def test_store_failure_during_trace_answers_briefly_without_internals(harness: Harness) -> None:
    """If looking the run up fails (store down), the user still gets a short ephemeral answer, never the error, and
    the View trace button behaves the same."""

    async def broken(run_id: str) -> None:
        raise ConnectionError("redis://:hunter2@10.0.0.5:6379 refused")

    harness.chat.get_run = broken  # type: ignore[method-assign]
    for answer in (await _command(harness, "trace run_abc"), await _command(harness, "cancel run_abc")):
        assert answer["response_type"] == "ephemeral"
        assert "try again" in str(answer["text"])
        assert "hunter2" not in str(answer)
    await harness.send.button("run_abc", user="U1", response_url=harness.slack.response_url())
    answer = await harness.slack.next_response()
    assert "try again" in str(answer["text"])


async def test_denied_cancel_leaves_the_running_run_alone(harness: Harness) -> None:
    """A non-member's /diag cancel of a run that is really running is denied *and* has no effect: the run finishes."""
    harness.chat.hang = True  # the run is still running when both cancels arrive, whatever the machine's load
    await harness.send.event(mention(ts="11.0"))
    await asyncio.wait_for(harness.chat.started.wait(), 5)
    for user, team in (("U9", "T1"), ("U1", "T2")):
        await harness.send.command("cancel run_1", user=user, team=team, response_url=harness.slack.response_url(user))
        assert (await harness.slack.next_response())["text"] == DENIAL
    assert harness.chat.cancel_calls == []
    harness.chat.unstick.set()
    await harness.settle()
    final = harness.slack.calls_of("chat.update")[-1].params
    assert final["metadata"]["event_payload"]["outcome"] == "SUCCESS"


async def test_diag_cancel_reaches_a_turn_still_waiting_in_the_queue(harness: Harness) -> None:
    """A turn queued behind its thread's running turn has no run record yet: /diag cancel <its run id> by a member
    of its channel cancels it (it never runs; its thread says so); a non-member gets the denial and changes nothing."""
    harness.chat.delay_s = 30
    await harness.send.event(mention(ts="20.0"))
    await asyncio.wait_for(harness.chat.started.wait(), 5)
    queue = harness.bot.deps.jobs.queue
    session = SessionKey(team="T1", channel="C1", thread_ts="20.0")
    for ts, run_id in (("20.5", "run_waiting"), ("20.6", "run_waiting_too")):
        job = TurnJob(job_id=turn_job_id("C1", ts), session=session, text="and the pool?", user="U2", message_ts=ts,
                      run_id=run_id)
        assert await queue.enqueue(job, 100) is Enqueued.QUEUED  # what a follow-up's listener does
    answers = []
    for user, run_id in (("U9", "run_waiting_too"), ("U2", "run_waiting"), ("U2", "run_unknown")):
        await harness.send.command(f"cancel {run_id}", user=user, response_url=harness.slack.response_url(user))
        answers.append((await harness.slack.next_response())["text"])
    assert answers == [DENIAL, "Cancelled run `run_waiting` before it started.", DENIAL]
    harness.chat.delay_s = 0  # the turn left waiting runs at once after the first
    await harness.send.command("cancel run_1", user="U1", response_url=harness.slack.response_url("first"))
    assert (await harness.slack.next_response())["text"] == "Cancelling run `run_1`."
    await harness.settle()
    assert [t.message_ts for t in harness.chat.turns] == ["20.0", "20.6"]  # the cancelled one never ran
    assert any("Cancelled before it started" in str(m["blocks"]) for m in harness.slack.finals("C1", "20.0"))
