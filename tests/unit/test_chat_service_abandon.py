"""ChatService.abandon: a run wedged past every timeout (it swallows its cancel) is finished from outside — its
session is freed for the turns queued behind it, it is recorded FAILED, and the FAILURE says what was observed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from core.contracts.draft import DiagnosisDraft
from core.contracts.release import FailureCause, Outcome, PublishedReport
from core.contracts.run import Budgets, RunStatus, SessionKey, StopReason, Turn
from core.run import RunContext
from tests.unit.test_chat_service import Agent, Result, a_draft, make_rig
from tests.waiting import until


@dataclass
class WedgedFirstRun(Agent):
    """The first run ignores every cancel until `unstick`; later runs answer at once."""

    unstick: asyncio.Event = field(default_factory=asyncio.Event)
    calls: int = 0
    cancels_ignored: int = 0

    async def run(self, ctx: RunContext, previous_report: PublishedReport | None) -> Result:
        self.calls += 1
        if self.calls == 1:
            while not self.unstick.is_set():
                try:
                    await self.unstick.wait()
                except asyncio.CancelledError:
                    self.cancels_ignored += 1
                    continue
        draft: DiagnosisDraft = a_draft()
        return Result(draft, StopReason.SUBMITTED)


def turn_in(thread: str, ts: str, run_id: str | None = None) -> Turn:
    return Turn(session=SessionKey(team="T", channel="C", thread_ts=thread), text="why?", user="U", message_ts=ts,
                run_id=run_id)


async def test_abandon_frees_a_wedged_session_and_records_the_failure() -> None:
    """The next turn of the thread waits behind a wedged run until abandon(); then it runs, and so do later ones."""
    agent = WedgedFirstRun()
    rig = make_rig(agent=agent, budgets=Budgets(deadline_s=0.2))
    stuck = asyncio.create_task(rig.service.handle(turn_in("t9", "1.0", run_id="run_stuck")))
    await until(lambda: agent.cancels_ignored >= 1, timeout_s=5,  # the core's hard backstop, past the deadline
                message="the core to cancel the run")
    assert not stuck.done()  # the run ignored it
    queued = asyncio.create_task(rig.service.handle(turn_in("t9", "2.0")))
    done, _ = await asyncio.wait({queued}, timeout=0.1)  # a negative: 100 ms later the next turn still waits
    assert not done  # one turn per session at a time

    outcome = await rig.service.abandon("T:C:t9", "run_stuck")
    assert outcome.outcome is Outcome.FAILURE
    assert outcome.run_id == "run_stuck"
    assert rig.release.failures[-1] == FailureCause.DEADLINE
    assert rig.runs.runs["run_stuck"].status is RunStatus.FAILED
    assert (await asyncio.wait_for(queued, 5)).outcome is Outcome.SUCCESS

    agent.unstick.set()  # the wedged run finally returns: its release of the session must not free anyone else's
    await asyncio.wait_for(stuck, 5)
    assert rig.runs.runs["run_stuck"].status is RunStatus.FAILED  # the late result does not rewrite the record
    assert (await asyncio.wait_for(rig.service.handle(turn_in("t9", "3.0")), 5)).outcome is Outcome.SUCCESS


async def test_turn_run_id_is_the_run_id() -> None:
    """A caller-chosen run id (the bot's, so its watchdog knows it before the run starts) is the run's id."""
    rig = make_rig()
    outcome = await rig.service.handle(turn_in("t8", "1.0", run_id="run_chosen"))
    assert outcome.run_id == "run_chosen"
    assert "run_chosen" in rig.runs.runs
