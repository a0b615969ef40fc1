"""`/diag trace`: a run's summary and its ordered timeline events (safe scalars only)."""

from __future__ import annotations

from typing import Any

from bot.render.limits import clip
from bot.render.mrkdwn import code, escape, header, section
from core.contracts.feedback import FeedbackTally, Vote
from core.contracts.run import RunRecord, TimelineEvent

_LINES_PER_SECTION = 12
_VALUE_CAP = 200


def _scalar(value: Any) -> str:
    if isinstance(value, list | tuple):
        value = ", ".join(str(v) for v in value)
    elif isinstance(value, dict):
        value = ", ".join(f"{k}={v}" for k, v in value.items())
    return escape(clip(str(value), _VALUE_CAP))


def event_line(event: TimelineEvent, t0: float) -> str:
    """One timeline event as a line: offset, type, duration and its safe summary."""
    offset = event.at.timestamp() - t0
    parts = [f"`+{offset:.1f}s`", f"*{event.type.value}*"]
    if event.duration_ms:
        parts.append(f"({event.duration_ms:.0f} ms)")
    parts += [f"{escape(str(k))}={_scalar(v)}" for k, v in event.summary.items()]
    return " ".join(parts)


def feedback_line(tally: FeedbackTally) -> str:
    """'*Feedback* 👍 2 · 👎 1 (<@U1> 👍, …)': the counts and who voted how (latest vote per user)."""
    who = ", ".join(f"<@{escape(v.user)}> {'👍' if v.vote is Vote.UP else '👎'}" for v in tally.votes[:10])
    more = f", +{len(tally.votes) - 10} more" if len(tally.votes) > 10 else ""
    return f"*Feedback* 👍 {tally.up} · 👎 {tally.down}" + (f" ({who}{more})" if who else "")


def timeline_blocks(run: RunRecord, events: list[TimelineEvent], feedback: FeedbackTally | None = None
                    ) -> list[dict[str, Any]]:
    """Blocks of a run's trace (limits applied by the caller)."""
    facts = [
        f"*Run* {code(run.run_id)} · status {escape(run.status.value)}",
        f"*Intent* {escape(run.intent or 'unknown')} · *outcome* {escape(run.outcome or 'pending')}"
        + (f" ({escape(run.fallback_type)})" if run.fallback_type else ""),
        f"*Started* {run.started_at.isoformat(timespec='seconds')}"
        + (f" · *finished* {run.finished_at.isoformat(timespec='seconds')}" if run.finished_at else ""),
    ]
    versions = []
    if run.rule_set_version:
        versions.append(f"rules {escape(run.rule_set_version)}")
    versions += [f"{escape(k)} model {escape(v)}" for k, v in run.models.items()]
    versions += [f"{escape(k)} prompt {escape(v[:12])}" for k, v in run.prompt_hashes.items()]
    if versions:
        facts.append("*Versions* " + " · ".join(versions))
    if feedback is not None:
        facts.append(feedback_line(feedback))
    blocks: list[dict[str, Any]] = [header(f"Trace {run.run_id}"), section("\n".join(facts))]
    if not events:
        blocks.append(section("No timeline events recorded."))
        return blocks
    ordered = sorted(events, key=lambda e: e.seq)
    t0 = min(e.at.timestamp() for e in ordered)
    lines = [event_line(e, t0) for e in ordered]
    for i in range(0, len(lines), _LINES_PER_SECTION):
        blocks.append(section("\n".join(lines[i : i + _LINES_PER_SECTION])))
    return blocks
