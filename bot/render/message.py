"""The final message of a turn: plain-text summary, bounded blocks and the `diag_run_finished` metadata."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from bot.render.fallback import fallback_blocks, fallback_summary
from bot.render.footer import footer
from bot.render.help import chat_blocks
from bot.render.knowledge import knowledge_blocks, knowledge_summary
from bot.render.limits import clip_plain, fit_blocks
from bot.render.links import SourceLinks
from bot.render.mrkdwn import context, escape, section
from bot.render.report import hidden_findings, report_blocks, report_summary
from core.contracts.release import Outcome, ReleaseOutcome

EVENT_TYPE = "diag_run_finished"


class SlackMessage(BaseModel):
    """What chat.postMessage / chat.update receive."""

    text: str
    blocks: list[dict[str, Any]]
    metadata: dict[str, Any] | None = None


def finished_metadata(outcome: ReleaseOutcome) -> dict[str, Any]:
    """Slack message metadata of a turn's final message (SPEC §10)."""
    return run_metadata(outcome.run_id, outcome.intent, outcome.outcome.value,
                        outcome.fallback_type.value if outcome.fallback_type else None)


def run_metadata(run_id: str, intent: str | None, outcome: str, fallback_type: str | None) -> dict[str, Any]:
    """The `diag_run_finished` metadata from its four fields."""
    return {"event_type": EVENT_TYPE,
            "event_payload": {"run_id": run_id, "intent": intent, "outcome": outcome, "fallback_type": fallback_type}}


@dataclass(frozen=True)
class RenderOptions:
    """Presentation settings: deep links for sources and the feedback control's form."""

    links: SourceLinks | None = None
    plain_feedback: bool = False


def _body(outcome: ReleaseOutcome, options: RenderOptions) -> tuple[list[dict[str, Any]], str]:
    if outcome.intent == "CHAT":
        text = outcome.chat_text or "I can diagnose incidents from logs, databases and runbooks. Try `/diag help`."
        return chat_blocks(text), text
    if outcome.intent == "KNOWLEDGE" and outcome.outcome != Outcome.FAILURE:
        return knowledge_blocks(outcome.knowledge), knowledge_summary(outcome.knowledge)
    if outcome.outcome == Outcome.SUCCESS and outcome.report is not None:
        return report_blocks(outcome.report, options.links), report_summary(outcome.report)
    return fallback_blocks(outcome.outcome, outcome.fallback_type, outcome.fallback), fallback_summary(
        outcome.outcome, outcome.fallback
    )


def render_outcome(outcome: ReleaseOutcome, duration_s: float | None = None,
                   options: RenderOptions = RenderOptions(), *, note: str | None = None) -> SlackMessage:
    """Render a turn's outcome as one bounded Slack message (footer, buttons and 👍/👎 included); `note` is a plain
    line above the footer (e.g. that the turn was re-run after its worker stopped)."""
    body, summary = _body(outcome, options)
    show_all = outcome.report is not None and outcome.outcome == Outcome.SUCCESS and hidden_findings(outcome.report)
    tail = footer(outcome.run_id, duration_s, outcome.outcome.value,
                  outcome.fallback_type.value if outcome.fallback_type else None, show_all=show_all,
                  plain_feedback=options.plain_feedback)
    if note:
        tail = [context(escape(note)), *tail]
    blocks = fit_blocks(body, tail, run_id=outcome.run_id)
    return SlackMessage(text=clip_plain(escape(summary)), blocks=blocks, metadata=finished_metadata(outcome))


def fault_message(msg: SlackMessage, error_code: str) -> SlackMessage:
    """The short note sent when Slack refused a final message; it keeps that message's metadata."""
    run_id = str(((msg.metadata or {}).get("event_payload") or {}).get("run_id") or "")
    where = f"; see /diag trace {escape(run_id)}" if run_id else ""
    text = f"I couldn't post the full report ({escape(error_code)}){where}"
    return SlackMessage(text=text, blocks=[section(text)], metadata=msg.metadata)


def internal_error_message(run_id: str | None) -> SlackMessage:
    """The final message when the run crashed before producing an outcome (details stay in the logs).

    It ends the turn like any other: plain text, a block, and `diag_run_finished` metadata (outcome FAILURE).
    """
    label = f" (run {escape(run_id)})" if run_id else ""
    text = f"Something went wrong and this run stopped without a result{label}. Please try again."
    return SlackMessage(text=text, blocks=[section(text)], metadata=run_metadata(run_id or "", None, Outcome.FAILURE.value,
                                                                                 None))


def shutdown_message(run_id: str | None) -> SlackMessage:
    """The final message of a run cut short because diagbot was stopped or restarted."""
    label = f" (run {escape(run_id)})" if run_id else ""
    text = f"diagbot was restarted while this run was working, so it stopped without a result{label}. Please ask again."
    return SlackMessage(text=text, blocks=[section(text)], metadata=run_metadata(run_id or "", None, Outcome.FAILURE.value,
                                                                                 None))


def cancelled_before_start_message(run_id: str) -> SlackMessage:
    """The final message of a turn cancelled while it still waited in the queue (no run was started)."""
    text = "Cancelled before it started: this question was still waiting behind the thread's current run."
    return SlackMessage(text=text, blocks=[section(text)], metadata=run_metadata(run_id, None, Outcome.FAILURE.value,
                                                                                 None))


def busy_message(waiting: int, run_id: str) -> SlackMessage:
    """The immediate answer when the queue is full (DIAG_QUEUE_MAX): nothing was started for this message. It ends
    the turn like any final message (FAILURE metadata with the run id the turn would have had)."""
    text = (f"I'm too busy to take this right now ({waiting} questions are waiting). Nothing was started for this "
            "message; please ask again in a few minutes.")
    return SlackMessage(text=text, blocks=[section(text)], metadata=run_metadata(run_id, None, Outcome.FAILURE.value,
                                                                                 None))


def unprocessable_message(run_id: str) -> SlackMessage:
    """The final message of a queued turn whose job could not be read back (a damaged or foreign queue entry):
    nothing of it ran."""
    text = "This request could not be processed; please ask again."
    return SlackMessage(text=text, blocks=[section(text)], metadata=run_metadata(run_id, None, Outcome.FAILURE.value,
                                                                                 None))


def restart_note(first_run_id: str) -> str:
    """The line a re-run's final message carries."""
    return f"Re-run from the start: the bot process running it first (run {first_run_id}) stopped."


def gave_up_message(run_id: str, tries: int) -> SlackMessage:
    """The final message of a turn whose process stopped on every try (a question that crashes it, or a fleet in
    trouble): it is not tried again."""
    text = (f"I started on this {tries} times and each time the bot process running it stopped, so I am not trying "
            f"again (run {escape(run_id)}). An operator can find why in the bot's logs.")
    return SlackMessage(text=text, blocks=[section(text)], metadata=run_metadata(run_id, None, Outcome.FAILURE.value,
                                                                                 None))
