"""`/diag trace|cancel|help`: ack at once, then ephemeral answers through `respond`."""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from bot.access import DENIAL, Teams
from bot.deps import BotDeps
from bot.render.help import USAGE, help_blocks
from bot.render.limits import fit_blocks
from bot.render.mrkdwn import code
from bot.render.timeline import timeline_blocks

log = logging.getLogger(__name__)

UNAVAILABLE = "Run details are unavailable right now; please try again in a minute."
_RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def parse(text: str) -> tuple[str, str | None] | None:
    """('trace'|'cancel', run_id) or ('help', None); None for bad usage."""
    words = text.split()
    verb = words[0].lower() if words else "help"
    if verb == "help" and len(words) <= 1:
        return ("help", None)
    if len(words) == 2 and verb in {"trace", "cancel"} and _RUN_ID.match(words[1]):
        return (verb, words[1])
    return None


async def trace_message(deps: BotDeps, run_id: str, team: Teams, user: str) -> dict[str, Any]:
    """The ephemeral trace of a run, or the one-line denial."""
    run = await deps.access.run_for(run_id, team, user)
    if run is None:
        return {"text": DENIAL}
    events = await deps.chat.timeline(run_id)
    tally = await deps.feedback.tally(run_id)
    blocks = fit_blocks(timeline_blocks(run, events, tally), run_id=None)
    return {"text": f"Trace of run {run_id}", "blocks": blocks}


async def safe_trace_message(deps: BotDeps, run_id: str, team: Teams, user: str) -> dict[str, Any]:
    """trace_message, or a short "try again" when the stores fail (never the error itself)."""
    try:
        return await trace_message(deps, run_id, team, user)
    except Exception as exc:
        log.warning("trace lookup failed: %s", type(exc).__name__)
        return {"text": UNAVAILABLE}


async def cancel_message(deps: BotDeps, run_id: str, team: Teams, user: str) -> str:
    """Cancel a run the user may see, or its turn still waiting in the queue (no run record yet: authorised by
    membership of the turn's channel, its job id `<channel>:<ts>`); the same denial otherwise."""
    run = await deps.access.run_for(run_id, team, user)
    if run is None:
        job_id = await deps.jobs.queue.job_of_run(run_id)
        channel = job_id.partition(":")[0] if job_id else ""
        if not await deps.access.may_see_channel(channel, user):
            return DENIAL
    if await deps.jobs.cancel_run(run_id):
        return f"Cancelling run {code(run_id)}." if run is not None else (
            f"Cancelled run {code(run_id)} before it started.")
    return f"Run {code(run_id)} is not running."


def register_commands(app: AsyncApp, deps: BotDeps) -> None:
    """Attach the /diag command listener."""

    @app.command("/diag")
    async def on_diag(ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        parsed = parse(command.get("text") or "")
        team, user = command.get("team_id", ""), command.get("user_id", "")
        if parsed is None:
            await respond(text=USAGE, response_type="ephemeral")
        elif parsed[0] == "help":
            await respond(text="diagbot help", blocks=help_blocks(), response_type="ephemeral")
        elif (why := await deps.gate.refusal(command.get("channel_id", ""), user)) is not None:
            await respond(text=why, response_type="ephemeral")  # the access policy (SPEC §10)
        elif parsed[0] == "trace" and parsed[1]:
            await respond(response_type="ephemeral", **await safe_trace_message(deps, parsed[1], team, user))
        elif parsed[1]:
            try:
                text = await cancel_message(deps, parsed[1], team, user)
            except Exception as exc:  # the store is down: answer briefly; details stay in the logs
                log.warning("/diag cancel failed: %s", type(exc).__name__)
                text = UNAVAILABLE
            await respond(text=text, response_type="ephemeral")
