"""ChatService.abandon: a run wedged past every timeout (it swallows its cancel) is finished from outside — its
session is freed for the turns queued behind it, it is recorded FAILED, and the FAILURE says what was observed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from core.contracts.draft import DiagnosisDraft
from core.contracts.release import FailureCause, Outcome, PublishedReport
from core.contracts.run import Budgets, RunStatus, SessionKey, StopReason, Turn
from core.service.run_context import RunContext
from tests.unit.test_chat_service import Agent, Result, a_draft, make_rig


@dataclass
class WedgedFirstRun(Agent):
    """The first run ignores every cancel until `unstick`; later runs answer at once."""

    unstick: asyncio.Event = field(default_factory=asyncio.Event)
    calls: int = 0

    async def run(self, ctx: RunContext, previous_report: PublishedReport | None) -> Result:
        self.calls += 1
        if self.calls == 1:
            while not self.unstick.is_set():
                try:
                    await self.unstick.wait()
                except asyncio.CancelledError:
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
    await asyncio.sleep(1.5)  # past the deadline and the core's own hard backstop: the run ignored both
    assert not stuck.done()
    queued = asyncio.create_task(rig.service.handle(turn_in("t9", "2.0")))
    await asyncio.sleep(0.1)
    assert not queued.done()  # one turn per session at a time

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
