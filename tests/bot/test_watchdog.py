"""The guarantee above every component: a turn wedged past every timeout (its run swallows its cancel) is finished
by the watchdog — one clear FAILURE in its thread with what was observed, no placeholder left, its session released —
and the stuck run's late answer never becomes a second final message."""

from __future__ import annotations

import time
from typing import Any

import pytest

from core.turns.timing import TurnTiming
from tests.bot.conftest import Harness
from tests.bot.slack_requests import mention
from tests.fakes import slack_faults as faults

# A 0.2 s run deadline: the core's backstop is 1.2 s, the watchdog takes over 0.3 s later.
TIMING = TurnTiming(run_deadline_s=0.2, watchdog_grace_s=0.3, final_margin_s=5.0, interval_s=0.05)


@pytest.fixture
def timing() -> TurnTiming:
    """Short deadlines so the watchdog acts within the test."""
    return TIMING


async def wait_for_finals(h: Harness, thread_ts: str, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """Wait until a final message is visible in the thread."""
    await h.slack.wait_until(lambda: bool(h.slack.finals("C1", thread_ts)), timeout_s, f"a final in {thread_ts}")
    return h.slack.finals("C1", thread_ts)


async def test_wedged_turn_is_finished_by_the_watchdog_with_one_failure(harness: Harness) -> None:
    """The run never returns and ignores its cancel: by due time the placeholder becomes a clear FAILURE with the
    observed facts and run metadata; the session is released; when the run finally returns, nothing more is posted."""
    harness.chat.hang = True
    started = time.monotonic()
    await harness.send.event(mention(ts="60.0"))
    [final] = await wait_for_finals(harness, "60.0")
    elapsed = time.monotonic() - started
    assert TIMING.due_s <= elapsed < TIMING.answer_by_s
    assert final["metadata"] == {"event_type": "diag_run_finished", "event_payload": {
        "run_id": "run_1", "intent": "DIAGNOSIS", "outcome": "FAILURE", "fallback_type": None}}
    text = str(final["blocks"])
    assert "did not finish" in text
    assert "query_logs order-service: no matches" in text  # the observed fact the stuck run had
    assert [m.get("text") for m in harness.slack.thread("C1", "60.0")] == [final.get("text")]  # it replaced the placeholder
    assert harness.chat.abandoned == [("T1:C1:60.0", harness.chat.turns[0].run_id)]

    harness.chat.unstick.set()  # the wedged run returns SUCCESS at last: the guard drops it
    await harness.settle()
    assert harness.slack.finals("C1", "60.0") == [final]
    assert len(harness.slack.calls_of("chat.postMessage")) == 1


async def test_turn_that_answers_in_time_is_never_taken_over(harness: Harness) -> None:
    """A run that returns before its due time is answered by itself; the watchdog does nothing."""
    harness.chat.delay_s = 0.1
    await harness.send.event(mention(ts="61.0"))
    await harness.settle()
    assert harness.chat.abandoned == []
    assert len(harness.slack.finals("C1", "61.0")) == 1
    assert harness.bot.deps.runner.watchdog.check(time.monotonic() + 3600) == 0  # nothing left to watch


async def test_watchdog_answer_survives_slack_faults_too(harness: Harness) -> None:
    """The watchdog's FAILURE goes through the same delivery: a failing edit still ends in one visible answer."""
    harness.chat.hang = True
    harness.slack.plan.inject("chat.update", faults.text(500), times=None, when=faults.final_message)
    await harness.send.event(mention(ts="62.0"))
    [final] = await wait_for_finals(harness, "62.0")
    assert final["metadata"]["event_payload"]["outcome"] == "FAILURE"
    await harness.slack.wait_until(lambda: len(harness.slack.thread("C1", "62.0")) == 1,
                                   message="the placeholder to go, leaving only the final")
    assert [m.get("metadata") is not None for m in harness.slack.thread("C1", "62.0")] == [True]
    harness.chat.unstick.set()
    await harness.settle()
    assert len(harness.slack.finals("C1", "62.0")) == 1


async def test_a_turn_waiting_behind_its_threads_earlier_turn_gets_its_own_deadline(harness: Harness) -> None:
    """Two turns of one thread, each shorter than the deadline but longer together: the second waits for the first
    (turns of a thread run one at a time), then runs in its own time and is answered, not taken over."""
    harness.chat.delay_s = 0.9  # < TIMING.due_s (1.5 s); 1.8 s for both
    await harness.send.event(mention(ts="70.0"))
    await harness.send.event(mention("<@UBOT> and now?", ts="70.1", thread_ts="70.0"))
    await harness.slack.wait_until(lambda: len(harness.slack.finals("C1", "70.0")) == 2, 10, "both answers")
    outcomes = [f["metadata"]["event_payload"]["outcome"] for f in harness.slack.finals("C1", "70.0")]
    assert outcomes == ["SUCCESS", "SUCCESS"]
    assert harness.chat.abandoned == []
