"""The fake Slack's AI-app surface: chat.startStream / appendStream / stopStream and assistant.threads.*.

Arguments and limits as docs.slack.dev documents them: a stream needs `channel`; outside a DM it needs
`recipient_user_id` and `recipient_team_id`; `task_display_mode` is `timeline` or `plan`; `markdown_text` is at most
12,000 characters; chunks are `markdown_text`, `task_update` (id, title, status pending|in_progress|complete|error),
`plan_update` (title) or `blocks`. Appending to or stopping a message that is not streaming answers
`message_not_in_streaming_state`; editing a message while it streams answers `streaming_state_conflict`. Suggested
prompts are 1..4 `{title, message}` pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.slack_blocks import validate_blocks

MARKDOWN_MAX = 12_000
TASK_TITLE_MAX = 256
TASK_STATUSES = frozenset({"pending", "in_progress", "complete", "error"})
DISPLAY_MODES = frozenset({"timeline", "plan"})
MAX_PROMPTS = 4


@dataclass
class Stream:
    """One streamed message: the chunks it received, in order, and whether it still streams."""

    channel: str
    ts: str
    chunks: list[dict[str, Any]] = field(default_factory=list)
    streaming: bool = True


def _chunk_error(chunk: Any) -> str | None:
    if not isinstance(chunk, dict):
        return "invalid_chunks"
    kind = chunk.get("type")
    if kind == "markdown_text":
        return None if isinstance(chunk.get("text"), str) and len(chunk["text"]) <= MARKDOWN_MAX else "invalid_chunks"
    if kind == "task_update":
        ok = (isinstance(chunk.get("id"), str) and chunk["id"] and isinstance(chunk.get("title"), str)
              and 0 < len(chunk["title"]) <= TASK_TITLE_MAX and chunk.get("status") in TASK_STATUSES
              and all(isinstance(chunk.get(k, ""), str) for k in ("details", "output")))
        return None if ok else "invalid_chunks"
    if kind == "plan_update":
        return None if isinstance(chunk.get("title"), str) and 0 < len(chunk["title"]) <= TASK_TITLE_MAX else "invalid_chunks"
    if kind == "blocks":
        return validate_blocks(chunk.get("blocks")) if chunk.get("blocks") else "invalid_chunks"
    return "invalid_chunks"


def check_chunks(params: dict[str, Any]) -> str | None:
    """The error Slack gives for the chunks / markdown_text of one stream call, or None."""
    if len(params.get("markdown_text") or "") > MARKDOWN_MAX:
        return "msg_too_long"
    chunks = params.get("chunks")
    if chunks is None:
        return None
    if not isinstance(chunks, list):
        return "invalid_chunks"
    return next((err for c in chunks if (err := _chunk_error(c)) is not None), None)


class AiSurface:
    """Mixed into FakeSlack: `streams`, `statuses`, `suggested_prompts` and `titles` record what the bot sent."""

    messages: dict[tuple[str, str], dict[str, Any]]
    streams: dict[tuple[str, str], Stream]
    statuses: list[dict[str, Any]]
    suggested_prompts: list[dict[str, Any]]
    titles: list[dict[str, Any]]

    new_ts: Callable[[], str]
    """Provided by FakeSlack (the class this is mixed into)."""

    def _m_chat_startStream(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = params.get("channel")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not str(channel).startswith("D"):
            if not params.get("recipient_user_id"):
                return {"ok": False, "error": "missing_recipient_user_id"}
            if not params.get("recipient_team_id"):
                return {"ok": False, "error": "missing_recipient_team_id"}
        if params.get("task_display_mode") not in (None, *DISPLAY_MODES):
            return {"ok": False, "error": "invalid_arguments"}
        if (error := check_chunks(params)) is not None:
            return {"ok": False, "error": error}
        ts = self.new_ts()
        stream = self.streams[(channel, ts)] = Stream(channel=channel, ts=ts, chunks=list(params.get("chunks") or []))
        self.messages[(channel, ts)] = {"channel": channel, "ts": ts, "thread_ts": params.get("thread_ts"),
                                        "text": params.get("markdown_text") or "", "streaming": True,
                                        "chunks": stream.chunks}
        return {"ok": True, "channel": channel, "ts": ts}

    def _stream_for(self, params: dict[str, Any]) -> Stream | dict[str, Any]:
        key = (params.get("channel", ""), params.get("ts", ""))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        stream = self.streams.get(key)
        if stream is None or not stream.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        if (error := check_chunks(params)) is not None:
            return {"ok": False, "error": error}
        return stream

    def _m_chat_appendStream(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("markdown_text") and not params.get("chunks"):
            return {"ok": False, "error": "no_text"}
        stream = self._stream_for(params)
        if isinstance(stream, dict):
            return stream
        stream.chunks += list(params.get("chunks") or [])
        return {"ok": True, "channel": stream.channel, "ts": stream.ts}

    def _m_chat_stopStream(self, params: dict[str, Any]) -> dict[str, Any]:
        stream = self._stream_for(params)
        if isinstance(stream, dict):
            return stream
        if (error := validate_blocks(params.get("blocks"))) is not None:
            return {"ok": False, "error": error}
        stream.chunks += list(params.get("chunks") or [])
        stream.streaming = False
        message = self.messages[(stream.channel, stream.ts)]
        message["streaming"] = False
        for key in ("blocks", "metadata"):
            if params.get(key):
                message[key] = params[key]
        return {"ok": True, "channel": stream.channel, "ts": stream.ts}

    def streaming_conflict(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """chat.update of a message that is still streaming is refused."""
        stream = self.streams.get((params.get("channel", ""), params.get("ts", "")))
        return {"ok": False, "error": "streaming_state_conflict"} if stream is not None and stream.streaming else None

    @staticmethod
    def _thread_error(params: dict[str, Any]) -> dict[str, Any] | None:
        if not params.get("channel_id"):
            return {"ok": False, "error": "channel_not_found"}
        if not params.get("thread_ts"):
            return {"ok": False, "error": "invalid_thread_ts"}
        return None

    def _m_assistant_threads_setStatus(self, params: dict[str, Any]) -> dict[str, Any]:
        if (bad := self._thread_error(params)) is not None:
            return bad
        if not isinstance(params.get("status"), str):
            return {"ok": False, "error": "invalid_arguments"}
        self.statuses.append(params)
        return {"ok": True}

    def _m_assistant_threads_setSuggestedPrompts(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("channel_id"):
            return {"ok": False, "error": "channel_not_found"}
        prompts = params.get("prompts")
        if not isinstance(prompts, list) or not 0 < len(prompts) <= MAX_PROMPTS or not all(
            isinstance(p, dict) and p.get("title") and p.get("message") for p in prompts
        ):
            return {"ok": False, "error": "invalid_arguments"}
        self.suggested_prompts.append(params)
        return {"ok": True}

    def _m_assistant_threads_setTitle(self, params: dict[str, Any]) -> dict[str, Any]:
        if (bad := self._thread_error(params)) is not None:
            return bad
        if not params.get("title"):
            return {"ok": False, "error": "invalid_arguments"}
        self.titles.append(params)
        return {"ok": True}
