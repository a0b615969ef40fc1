"""Click-to-verify and feedback: "Show evidence", "Show all findings" and 👍/👎, each authorised like /diag trace.

A finding's evidence comes from the published report as stored at release time (the verified projections), so it
is there after the canonical records' TTL. Unknown runs and refusals get the same one-line denial.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from bot.access import DENIAL, Teams, interaction_teams
from bot.commands import UNAVAILABLE
from bot.deps import BotDeps
from bot.render.evidence import evidence_view
from bot.render.footer import FEEDBACK_ACTION, SHOW_ALL_ACTION
from bot.render.limits import fit_blocks
from bot.render.report import SHOW_EVIDENCE_ACTION, all_findings_pages
from core.contracts.feedback import Vote
from core.contracts.release import PublishedReport

log = logging.getLogger(__name__)

_INDEX = re.compile(r"[0-9]{1,4}")
VOTE_WORDS = {Vote.UP: "👍", Vote.DOWN: "👎"}
_FEEDBACK_VALUES = {"positive_feedback": Vote.UP, "negative_feedback": Vote.DOWN}


def who_clicked(body: dict[str, Any]) -> tuple[Teams, str]:
    """The clicking user's workspace/org ids and user id."""
    user = body.get("user")
    return interaction_teams(body), (user.get("id") or "") if isinstance(user, dict) else ""


async def _report(deps: BotDeps, run_id: str, team: Teams, user: str) -> PublishedReport | None:
    """The run's published report when `user` may see the run, else None."""
    run = await deps.access.run_for(run_id, team, user)
    if run is None or run.published_report is None:
        return None
    return PublishedReport.model_validate(run.published_report)


def finding_index(text: str) -> int | None:
    """A finding's index from a button value: ASCII digits only, at most four (`²`, `٣` or a 5,000-digit number
    pass str.isdigit and then fail or stall int(); they get the denial, like any value we did not render)."""
    return int(text) if _INDEX.fullmatch(text) else None


async def evidence_message(deps: BotDeps, value: str, team: Teams, user: str) -> dict[str, Any]:
    """The ephemeral "Show evidence" answer for a button value `run_id|index`, or the denial."""
    run_id, _, index_text = value.partition("|")
    index = finding_index(index_text)
    report = await _report(deps, run_id, team, user) if index is not None else None
    if report is None or index is None or index >= len(report.draft.analysis):
        return {"text": DENIAL}
    blocks = fit_blocks(evidence_view(report, index, deps.render.links), run_id=None)
    return {"text": f"Evidence for finding {index + 1} of run {run_id}", "blocks": blocks}


async def all_findings_messages(deps: BotDeps, run_id: str, team: Teams, user: str) -> list[dict[str, Any]]:
    """The "Show all findings" answer: one or more ephemeral messages holding every finding, or the denial."""
    report = await _report(deps, run_id, team, user)
    if report is None:
        return [{"text": DENIAL}]
    pages = all_findings_pages(report, deps.render.links)
    return [{"text": f"All findings of run {run_id} ({i + 1}/{len(pages)})", "blocks": fit_blocks(page, run_id=None)}
            for i, page in enumerate(pages)]


def parse_vote(value: str) -> tuple[Vote, str] | None:
    """('up'|'down', run_id) from a feedback button value `up|run_…`."""
    word, _, run_id = value.partition("|")
    vote = _FEEDBACK_VALUES.get(word) or (Vote(word) if word in {v.value for v in Vote} else None)
    return (vote, run_id) if vote is not None and run_id else None


async def vote_message(deps: BotDeps, value: str, team: Teams, user: str) -> str:
    """Record a vote the user may cast (a member of the run's channel) and say so; the denial otherwise."""
    parsed = parse_vote(value)
    if parsed is None:
        return DENIAL
    vote, run_id = parsed
    run = await deps.access.run_for(run_id, team, user)
    if run is None or not await deps.feedback.vote(run_id, user, run.team, vote):
        return DENIAL
    return f"Thanks, your {VOTE_WORDS[vote]} on this answer is recorded."


Replies = Callable[[BotDeps, str, Teams, str], Awaitable[list[dict[str, Any]]]]
ActionHandler = Callable[[AsyncAck, dict[str, Any], dict[str, Any], AsyncRespond], Awaitable[None]]


async def _evidence_replies(deps: BotDeps, value: str, team: Teams, user: str) -> list[dict[str, Any]]:
    return [await evidence_message(deps, value, team, user)]


async def _vote_replies(deps: BotDeps, value: str, team: Teams, user: str) -> list[dict[str, Any]]:
    return [{"text": await vote_message(deps, value, team, user)}]


def clicked_in(body: dict[str, Any]) -> str:
    """The channel of the message clicked (`channel.id`, else the container's `channel_id`)."""
    channel, container = body.get("channel"), body.get("container")
    if isinstance(channel, dict) and channel.get("id"):
        return str(channel["id"])
    return str(container.get("channel_id") or "") if isinstance(container, dict) else ""


async def click_refusal(deps: BotDeps, body: dict[str, Any]) -> str | None:
    """The access policy applied to a click (the clicking user, in the channel of the message clicked)."""
    return await deps.gate.refusal(clicked_in(body), who_clicked(body)[1])


def can_respond(body: dict[str, Any], what: str) -> bool:
    """Slack sends a response_url only for clicks in messages (not in modals or the Home tab, where the bot's
    buttons never are): without one there is nobody to answer."""
    if body.get("response_url"):
        return True
    log.info("%s click without a response_url (not in a message): not answered", what)
    return False


def ephemeral_action(deps: BotDeps, what: str, replies: Replies) -> ActionHandler:
    """A button listener: ack, then answer the clicking user only with `replies` for the button's value; a failure
    (a store outage) becomes a short note, details in the logs."""

    async def handler(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        if not can_respond(body, what):
            return
        messages: list[dict[str, Any]]
        try:
            if (why := await click_refusal(deps, body)) is not None:
                messages = [{"text": why}]
            else:
                messages = await replies(deps, str(action.get("value") or ""), *who_clicked(body))
        except Exception as exc:
            log.warning("%s failed: %s", what, type(exc).__name__)
            messages = [{"text": UNAVAILABLE}]
        for msg in messages:
            await respond(response_type="ephemeral", replace_original=False, **msg)

    return handler


def register_verify_actions(app: AsyncApp, deps: BotDeps) -> None:
    """Attach Show evidence, Show all findings and the feedback listeners."""
    app.action(SHOW_EVIDENCE_ACTION)(ephemeral_action(deps, "show evidence", _evidence_replies))
    app.action(SHOW_ALL_ACTION)(ephemeral_action(deps, "show all findings", all_findings_messages))
    on_vote = ephemeral_action(deps, "feedback", _vote_replies)
    for action_id in (FEEDBACK_ACTION, f"{FEEDBACK_ACTION}_up", f"{FEEDBACK_ACTION}_down"):
        app.action(action_id)(on_vote)
