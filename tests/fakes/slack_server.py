"""A local fake of the Slack Web API (aiohttp): records every call, answers like Slack, injects faults.

Answers auth.test, chat.postMessage (returns a ts), chat.update, chat.delete, chat.postEphemeral,
conversations.members (configurable, paginated), conversations.replies (a thread read back), users.info and
usergroups.users.list (slack_directory.py), reactions.add, the streaming methods and assistant.threads.* (slack_ai.py),
and a response_url endpoint for Bolt's `respond()`. It is also a Socket Mode server: apps.connections.open hands out
`ws://.../link`, where it says `hello`, pushes the envelopes a test queues with `push()` and records the client's acks
(`wait_for_ack()`). It validates Block Kit limits the way Slack does (slack_blocks.py: invalid_blocks /
only_one_table_allowed / msg_blocks_too_long), so a renderer bug shows up as an `ok: false` answer here rather than in
production. `plan` (tests/fakes/slack_faults.py) injects any bad answer — JSON errors, text/HTML/empty bodies,
resets, 429s — per method and call number; `thread()` / `finals()` show what a user sees in a thread after every edit
and deletion; `wait_until()` / `wait_for_calls()` wait on that state, woken after each answered call, so tests never
sleep a fixed time for Slack traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from tests.fakes.slack_ai import AiSurface, Stream
from tests.fakes.slack_blocks import TOTAL_BLOCKS_CHARS, validate_blocks
from tests.fakes.slack_directory import DirectorySurface, Guest
from tests.fakes.slack_faults import FaultPlan

__all__ = ["BOT_ID", "BOT_USER_ID", "TEAM_ID", "TOTAL_BLOCKS_CHARS", "Call", "FakeSlack", "Fault", "Stream",
           "validate_blocks"]

BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T1"


@dataclass
class Call:
    """One recorded Web API call."""

    method: str
    params: dict[str, Any]


@dataclass
class Fault:
    """A scripted answer for the next `times` calls of a method."""

    error: str
    times: int = 1
    status: int = 200
    retry_after: int | None = None


def _parse_json_fields(params: dict[str, Any]) -> dict[str, Any]:
    for key in ("blocks", "metadata"):
        if isinstance(params.get(key), str):
            params[key] = json.loads(params[key])
    return params


@dataclass
class FakeSlack(AiSurface, DirectorySurface):
    """The fake server's state; `start()` serves it on a free local port."""

    members: dict[str, list[str]] = field(default_factory=dict)
    members_page_size: int = 2
    guests: dict[str, Guest] = field(default_factory=dict)  # users.info is_restricted / is_ultra_restricted
    usergroups: dict[str, list[str]] = field(default_factory=dict)  # usergroups.users.list
    disabled_usergroups: set[str] = field(default_factory=set)
    calls: list[Call] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)
    faults: dict[str, list[Fault]] = field(default_factory=lambda: defaultdict(list))
    messages: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    hold: dict[str, asyncio.Event] = field(default_factory=dict)
    plan: FaultPlan = field(default_factory=FaultPlan)  # fault injection by method and call number (slack_faults.py)
    deleted: list[tuple[str, str]] = field(default_factory=list)
    streams: dict[tuple[str, str], Stream] = field(default_factory=dict)  # chat.*Stream (slack_ai.py)
    statuses: list[dict[str, Any]] = field(default_factory=list)  # assistant.threads.setStatus
    suggested_prompts: list[dict[str, Any]] = field(default_factory=list)
    titles: list[dict[str, Any]] = field(default_factory=list)
    rejected_responses: list[dict[str, Any]] = field(default_factory=list)  # response_url posts Slack would refuse
    _call_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _call_answered: asyncio.Event = field(default_factory=asyncio.Event)
    _response_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    acks: list[dict[str, Any]] = field(default_factory=list)
    socket_connections: int = 0
    oauth_scopes: str | None = None
    """When set, auth.test answers with this `x-oauth-scopes` header (the bot token's granted scopes), as Slack does."""
    _outbox: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    _sockets: set[web.WebSocketResponse] = field(default_factory=set)
    _socket_connected: asyncio.Event = field(default_factory=asyncio.Event)
    _ack_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _answered: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))  # calls answered per method
    _runner: web.AppRunner | None = None
    port: int = 0

    @property
    def api_url(self) -> str:
        """Base URL for AsyncWebClient(base_url=...)."""
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, key: str = "r1") -> str:
        """A response_url for slash command / action payloads."""
        return f"http://127.0.0.1:{self.port}/response/{key}"

    def fail(self, method: str, error: str, *, times: int = 1, status: int = 200, retry_after: int | None = None) -> None:
        """Make the next `times` calls of `method` fail with this error (status 429 + Retry-After for rate limits)."""
        self.faults[method].append(Fault(error=error, times=times, status=status, retry_after=retry_after))

    def calls_of(self, method: str) -> list[Call]:
        """Recorded calls of one method, in order."""
        return [c for c in self.calls if c.method == method]

    async def start(self) -> FakeSlack:
        """Serve on 127.0.0.1 at a free port."""
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/response/{key}", self._response)
        app.router.add_get("/link", self._link)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def aclose(self) -> None:
        """Stop serving (Socket Mode connections still open are closed first)."""
        for ws in list(self._sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY)
        if self._runner is not None:
            await self._runner.cleanup()

    # --- Socket Mode -------------------------------------------------------------------------------------------------

    @property
    def socket_url(self) -> str:
        """The WebSocket URL apps.connections.open hands out."""
        return f"ws://127.0.0.1:{self.port}/link"

    @staticmethod
    def events_api_envelope(body: dict[str, Any], *, retry_attempt: int = 0, retry_reason: str = "",
                            envelope_id: str | None = None) -> dict[str, Any]:
        """An `events_api` envelope around an event_callback body, as Slack sends it over the socket."""
        return {"envelope_id": envelope_id or str(uuid.uuid4()), "type": "events_api", "payload": body,
                "accepts_response_payload": False, "retry_attempt": retry_attempt, "retry_reason": retry_reason}

    @staticmethod
    def slash_command_envelope(form: dict[str, Any], *, envelope_id: str | None = None) -> dict[str, Any]:
        """A `slash_commands` envelope (payload = the command's form fields)."""
        return {"envelope_id": envelope_id or str(uuid.uuid4()), "type": "slash_commands", "payload": form,
                "accepts_response_payload": True}

    @staticmethod
    def interactive_envelope(payload: dict[str, Any], *, envelope_id: str | None = None) -> dict[str, Any]:
        """An `interactive` envelope (block_actions, view_submission, shortcuts: the payload as over HTTP, e.g. from
        tests/fakes/slack_interactions.block_actions)."""
        return {"envelope_id": envelope_id or str(uuid.uuid4()), "type": "interactive", "payload": payload,
                "accepts_response_payload": payload.get("type") in {"view_submission", "block_suggestion"}}

    async def push(self, envelope: dict[str, Any]) -> str:
        """Queue an envelope for the connected client (sent as soon as a connection exists); returns its envelope_id."""
        await self._outbox.put(envelope)
        return str(envelope["envelope_id"])

    async def wait_connected(self, timeout_s: float = 10.0) -> None:
        """Wait until a Socket Mode client has connected and received `hello`."""
        await asyncio.wait_for(self._socket_connected.wait(), timeout_s)

    async def wait_for_ack(self, envelope_id: str, timeout_s: float = 5.0) -> dict[str, Any]:
        """Wait for the client's acknowledgement of one envelope; returns the ack message."""
        async with asyncio.timeout(timeout_s):
            while True:
                for ack in self.acks:
                    if ack.get("envelope_id") == envelope_id:
                        return ack
                self._ack_arrived.clear()
                await self._ack_arrived.wait()

    def acks_of(self, envelope_id: str) -> list[dict[str, Any]]:
        """Every ack received for one envelope."""
        return [a for a in self.acks if a.get("envelope_id") == envelope_id]

    async def _send_envelopes(self, ws: web.WebSocketResponse) -> None:
        while not ws.closed:
            envelope = await self._outbox.get()
            await ws.send_json(envelope)

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()  # answers the client's pings (the SDK checks its ping-pong)
        await ws.prepare(request)
        self._sockets.add(ws)
        self.socket_connections += 1
        await ws.send_json({"type": "hello", "num_connections": len(self._sockets),
                            "debug_info": {"host": "applink-fake", "approximate_connection_time": 18060},
                            "connection_info": {"app_id": "A1"}})
        self._socket_connected.set()
        sender = asyncio.create_task(self._send_envelopes(ws))
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self.acks.append(json.loads(msg.data))
                    self._ack_arrived.set()
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
            self._sockets.discard(ws)
        return ws

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update(dict(await request.post()))
        return _parse_json_fields(params)

    async def _response(self, request: web.Request) -> web.Response:
        body = await request.json()
        body["_key"] = request.match_info["key"]
        if (error := validate_blocks(body.get("blocks"))) is not None or len(body.get("text") or "") > 40_000:
            self.rejected_responses.append(body)  # Slack refuses the payload; nothing reaches the user
            return web.Response(status=400, text=error or "msg_too_long")
        self.responses.append(body)
        self._response_arrived.set()
        return web.Response(text="ok")

    async def wait_for_call(self, method: str, timeout_s: float = 5.0) -> Call:
        """Wait until a call of `method` has been received; returns the first one."""
        async with asyncio.timeout(timeout_s):
            while not self.calls_of(method):
                self._call_arrived.clear()
                await self._call_arrived.wait()
        return self.calls_of(method)[0]

    async def wait_for_metadata(self, timeout_s: float = 5.0) -> dict[str, Any]:
        """Wait for the first message sent with metadata (a turn's final message); returns that metadata."""
        async with asyncio.timeout(timeout_s):
            while True:
                for call in self.calls:
                    if call.params.get("metadata"):
                        return dict(call.params["metadata"])
                self._call_arrived.clear()
                await self._call_arrived.wait()

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 5.0,
                         message: str | Callable[[], str] = "the fake Slack's state") -> None:
        """Wait until `predicate` holds, checked again after each Web API call is answered (its effect applied);
        AssertionError naming `message` after `timeout_s`."""
        try:
            async with asyncio.timeout(timeout_s):
                while not predicate():
                    self._call_answered.clear()
                    await self._call_answered.wait()
        except TimeoutError:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout_s} s waiting for {text}") from None

    async def wait_for_calls(self, method: str, count: int, timeout_s: float = 5.0) -> list[Call]:
        """Wait until at least `count` calls of `method` have been answered; returns the calls received so far."""
        answered = self._answered
        await self.wait_until(lambda: answered[method] >= count, timeout_s,
                              lambda: f"{count} answered {method} calls (got {answered[method]})")
        return self.calls_of(method)

    async def next_response(self, timeout_s: float = 5.0) -> dict[str, Any]:
        """Wait for and take the oldest response_url post (respond())."""
        async with asyncio.timeout(timeout_s):
            while not self.responses:
                self._response_arrived.clear()
                await self._response_arrived.wait()
        return self.responses.pop(0)

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        try:
            return await self._answer(method, request)
        finally:
            self._answered[method] += 1
            self._call_answered.set()

    async def _answer(self, method: str, request: web.Request) -> web.StreamResponse:
        params = await self._params(request)
        self.calls.append(Call(method, params))
        self._call_arrived.set()
        if method in self.hold:  # a slow Slack: answer only once the test releases the method
            await self.hold[method].wait()
        if (injected := await self.plan.answer(method, params, request)) is not None:
            return injected
        queue = self.faults.get(method)
        if queue:
            fault = queue[0]
            fault.times -= 1
            if fault.times <= 0:
                queue.pop(0)
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            return web.json_response({"ok": False, "error": fault.error}, status=fault.status, headers=headers)
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        result: dict[str, Any] = handler(params)
        scopes = {"x-oauth-scopes": self.oauth_scopes} if method == "auth.test" and self.oauth_scopes is not None else None
        return web.json_response(result, headers=scopes)

    def _m_auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "diagbot", "team_id": TEAM_ID,
                "user_id": BOT_USER_ID, "bot_id": BOT_ID, "is_enterprise_install": False}

    def _check_message(self, params: dict[str, Any]) -> dict[str, Any] | None:
        if not params.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if not params.get("text") and not params.get("blocks"):
            return {"ok": False, "error": "no_text"}
        if len(params.get("text") or "") > 40_000:
            return {"ok": False, "error": "msg_too_long"}
        error = validate_blocks(params.get("blocks"))
        return {"ok": False, "error": error} if error else None

    def new_ts(self) -> str:
        """A fresh message ts."""
        return f"1700000000.{next(self._ts):06d}"

    def _m_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        if (bad := self._check_message(params)) is not None:
            return bad
        ts = self.new_ts()
        self.messages[(params["channel"], ts)] = params
        return {"ok": True, "channel": params["channel"], "ts": ts, "message": {"text": params.get("text"), "ts": ts}}

    def _m_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        if (bad := self._check_message(params) or self.streaming_conflict(params)) is not None:
            return bad
        key = (params["channel"], params.get("ts", ""))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        self.messages[key] = {**self.messages[key], **params}
        self.messages[key].pop("chunks", None)  # an edit replaces the streamed content too
        return {"ok": True, "channel": params["channel"], "ts": params["ts"], "text": params.get("text")}

    def _m_chat_delete(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (params.get("channel", ""), params.get("ts", ""))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        del self.messages[key]
        self.deleted.append(key)
        return {"ok": True, "channel": key[0], "ts": key[1]}

    def thread(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """The messages in a thread as a user sees them now (after every edit and deletion), oldest first."""
        found = [(ts, m) for (ch, ts), m in self.messages.items() if ch == channel and m.get("thread_ts") == thread_ts]
        return [{**m, "ts": ts} for ts, m in sorted(found, key=lambda item: item[0])]

    def finals(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """The visible messages of a thread that carry a turn's `diag_run_finished` metadata."""
        return [m for m in self.thread(channel, thread_ts)
                if (m.get("metadata") or {}).get("event_type") == "diag_run_finished"]

    def _m_chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        if (bad := self._check_message(params)) is not None:
            return bad
        return {"ok": True, "message_ts": f"1700000001.{next(self._ts):06d}"}

    def _m_apps_connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": self.socket_url}

    def _m_reactions_add(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    def _m_conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        """conversations.replies as documented: the thread holding `ts` (its parent first, then replies, oldest
        first), filtered by `oldest`/`latest` (`inclusive`), paginated by `limit`/`cursor`; metadata only with
        `include_all_metadata`; thread_not_found for a ts the channel does not have."""
        channel, ts = params.get("channel", ""), str(params.get("ts", ""))
        known = self.messages.get((channel, ts))
        root = str((known or {}).get("thread_ts") or ts)
        thread = sorted((mts, m) for (ch, mts), m in self.messages.items()
                        if ch == channel and (mts == root or m.get("thread_ts") == root))
        if known is None and not thread:
            return {"ok": False, "error": "thread_not_found"}
        inclusive = str(params.get("inclusive", "")).lower() in {"1", "true"}
        oldest, latest = params.get("oldest"), params.get("latest")

        def within(mts: str) -> bool:
            low = oldest is None or float(mts) > float(oldest) or (inclusive and float(mts) == float(oldest))
            high = latest is None or float(mts) < float(latest) or (inclusive and float(mts) == float(latest))
            return low and high

        with_metadata = str(params.get("include_all_metadata", "")).lower() in {"1", "true"}
        found = [{"type": "message", "ts": mts, "text": m.get("text", ""), "thread_ts": root, "bot_id": BOT_ID,
                  **({"metadata": m["metadata"]} if with_metadata and m.get("metadata") else {})}
                 for mts, m in thread if within(mts)]
        start, limit = int(params.get("cursor") or 0), int(params.get("limit") or 1000)
        page, more = found[start : start + limit], start + limit < len(found)
        return {"ok": True, "messages": page, "has_more": more,
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _m_conversations_members(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = params.get("channel", "")
        if channel not in self.members:
            return {"ok": False, "error": "channel_not_found"}
        users = self.members[channel]
        start = int(params.get("cursor") or 0)
        limit = min(int(params.get("limit") or self.members_page_size), self.members_page_size)
        page = users[start : start + limit]
        nxt = str(start + limit) if start + limit < len(users) else ""
        return {"ok": True, "members": page, "response_metadata": {"next_cursor": nxt}}
