"""Queue entries that are not turn jobs (a version skew, a hand-edited or hostile entry): what can be salvaged.

Such an entry is answered, not dropped: when it still names its thread (channel, thread ts) well enough, the worker
posts one plain-words final there and the thread's order moves on; whatever it names, the raw entry (bounded) is
kept in a dead-letter stream and counted. Only strict, Slack-shaped values are salvaged: a hostile entry cannot make
the bot post anywhere a real turn could not have come from, nor echo a word of its content.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from core.contracts.run import SessionKey
from core.queue.job import TurnJob, turn_job_id

MAX_SALVAGE_BYTES = 64 * 1024  # beyond this an entry is not parsed at all (kept, counted, not answered)
MAX_DEAD_RAW_BYTES = 16 * 1024  # what the dead-letter stream keeps of one raw entry
DEAD_LETTER_MAXLEN = 1000  # entries kept in the dead-letter stream (oldest trimmed first)

_TEAM = re.compile(r"[A-Z0-9]{1,32}\Z")
_CHANNEL = re.compile(r"[A-Z0-9]{1,32}\Z")
_TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}\Z")
_USER = re.compile(r"[A-Z0-9]{1,32}\Z")
_RUN_ID = re.compile(r"run[_-][A-Za-z0-9._-]{1,64}\Z")


def bounded_raw(raw: bytes | str | None) -> str:
    """The raw entry as stored in the dead-letter stream: decoded leniently, cut to MAX_DEAD_RAW_BYTES."""
    data = raw.encode("utf-8", "replace") if isinstance(raw, str) else (raw or b"")
    cut = data[:MAX_DEAD_RAW_BYTES].decode("utf-8", "replace")
    return cut if len(data) <= MAX_DEAD_RAW_BYTES else cut + f"…[{len(data) - MAX_DEAD_RAW_BYTES} bytes cut]"


def _field(data: dict[str, Any], name: str, pattern: re.Pattern[str]) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) and pattern.match(value) else None


def _loads(raw: bytes | str | None) -> dict[str, Any] | None:
    if not raw or len(raw) > MAX_SALVAGE_BYTES:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def salvage(raw: bytes | str | None) -> TurnJob | None:
    """A stand-in job addressing the entry's thread (no text: nothing of it is run or echoed), or None when the
    entry does not name a channel and thread in Slack's own shapes."""
    data = _loads(raw)
    session = data.get("session") if data is not None else None
    if data is None or not isinstance(session, dict):
        return None
    channel, thread_ts = _field(session, "channel", _CHANNEL), _field(session, "thread_ts", _TS)
    if channel is None or thread_ts is None:
        return None
    job_id = data.get("job_id")
    named_ts = job_id.split(":", 1)[1] if isinstance(job_id, str) and job_id.startswith(f"{channel}:") else ""
    message_ts = _field(data, "message_ts", _TS) or (named_ts if _TS.match(named_ts) else None) or thread_ts
    if not (isinstance(job_id, str) and _TS.match(named_ts)):
        # Without its real id the entry cannot leave the thread's order; the answer still goes out once.
        job_id = turn_job_id(channel, message_ts)
    return TurnJob(job_id=job_id, session=SessionKey(team=_field(session, "team", _TEAM) or "", channel=channel,
                                                     thread_ts=thread_ts),
                   text="", user=_field(data, "user", _USER) or "", message_ts=message_ts,
                   run_id=_field(data, "run_id", _RUN_ID) or f"run_{uuid.uuid4().hex}")


def reason_of(exc: Exception) -> str:
    """A short, content-free reason (the exception type; a pydantic error's first location and type)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))[:80]
            return f"{type(exc).__name__}: {loc or '-'} {str(first.get('type', ''))[:40]}".strip()
        except (IndexError, TypeError, AttributeError, ValueError):
            pass
    return type(exc).__name__
