"""The HTTP ingress on a thread and event loop of its own, so the ack never queues behind the runs' work.

With runs in the same process (DIAG_SERVE_RUNS=true), the main event loop also posts placeholders, edits progress,
renders and redacts reports; an Events API delivery arriving meanwhile would wait for that batch of callbacks
before Bolt could even read it. Here the server, the request guard (signature, body checks) and the ack run on the
ingress thread; what needs the bot's state runs on the main loop:

- a signed, well-formed `event_callback` is answered 200 at once (Bolt acks events before any listener runs, and
  errors after that ack return 200 anyway) and dispatched to Bolt on the main loop. Until one such dispatch has
  returned there, each waits for it, so a first delivery that fails in Bolt's own middleware (its one auth.test)
  still gets the 500 that makes Slack retry;
- everything else (slash commands, interactivity, url_verification, /healthz, /readyz) is run on the main loop
  and its answer relayed back: listeners that `ack()` with a body keep it, and /healthz still says the main loop
  answers. The body is read here first, so no handler there touches this loop's stream.

Dispatches still pending at shutdown are awaited (bounded) before the bot closes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

import orjson
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.alert_webhook import AlertWebhook, add_alert_routes
from bot.health import Readiness, healthz
from bot.metering import ack_timer, add_metrics_route
from bot.request_guard import request_guard
from core.observability.metrics import Metrics
from core.runtime import run_loop, running_loop_kind

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SWITCH_INTERVAL_S = 0.001
"""The GIL is handed over at least this often (CPython's default, 5 ms, would let a run's pure-Python work hold
the ack thread that long)."""
START_TIMEOUT_S = 30.0
DRAIN_TIMEOUT_S = 5.0


def is_event_callback(body: bytes, content_type: str) -> bool:
    """An Events API delivery (JSON of type event_callback), as opposed to a url_verification, command or action."""
    if content_type != "application/json":
        return False
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(payload, dict) and payload.get("type") == "event_callback"


def thread_safe_spawn(loop: asyncio.AbstractEventLoop,
                      spawn: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    """`spawn` (the runner's: a task kept referenced) called on `loop` from any thread."""

    def on_loop(coro: Any, name: str) -> None:
        loop.call_soon_threadsafe(spawn, coro, name)

    return on_loop


class MainLoop:
    """Runs handlers on the main event loop from the ingress thread, and remembers what is still pending there."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()

    def submit(self, work: Awaitable[Any]) -> concurrent.futures.Future[Any]:
        """Run `work` (a coroutine: aiohttp handlers are coroutine functions) on the main loop."""
        future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(
            cast(Coroutine[Any, Any, Any], work), self.loop)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def _done(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)

    def relay(self, handler: Handler) -> Handler:
        """`handler` run on the main loop, its response returned here."""

        async def on_main(request: web.Request) -> web.StreamResponse:
            await request.read()  # cached on the request: the handler over there reads these bytes, not the stream
            return await asyncio.wrap_future(self.submit(handler(request)))

        return on_main

    async def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Wait (on the main loop) for the dispatches the ingress started there."""
        with self._lock:
            pending = [asyncio.wrap_future(f) for f in self._pending]
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)


def events_handler(bot_app: AsyncApp, main: MainLoop) -> Handler:
    """POST /slack/events behind the request guard: Bolt's request is built here and dispatched on the main loop;
    an event_callback is acked here without waiting for it (see the module doc), anything else gets Bolt's answer."""
    proven = threading.Event()

    def dispatched(future: concurrent.futures.Future[Any]) -> None:
        if future.cancelled():
            return
        if (exc := future.exception()) is not None:
            log.error("event dispatch failed after its ack: %s", type(exc).__name__)
        elif future.result().status >= 500:
            log.error("event dispatch failed after its ack (status %d)", future.result().status)

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        bolt_request = AsyncBoltRequest(body=body.decode(), query=request.query_string,
                                        headers=request.headers)  # type: ignore[arg-type]  # as Bolt's adapter does
        dispatch = bot_app.async_dispatch(bolt_request)
        if proven.is_set() and is_event_callback(body, request.content_type):
            # handed over once this task has written the answer and waits for the next request: submitted now, it
            # would wake the main loop to take the GIL while the answer is still being written
            asyncio.get_running_loop().call_soon(lambda: main.submit(dispatch).add_done_callback(dispatched))
            return web.Response(status=200)
        answer: BoltResponse = await asyncio.wrap_future(main.submit(dispatch))
        if answer.status < 500 and is_event_callback(body, request.content_type):
            proven.set()
        return await to_aiohttp_response(answer)

    return handle


def ingress_app(bot_app: AsyncApp, main: MainLoop, readiness: Readiness, *, path: str, signing_secret: str,
                body_timeout_s: float, metrics: Metrics | None = None,
                alerts: AlertWebhook | None = None) -> web.Application:
    """The routes of bot.serve.build_web_app for the ingress thread: the request guard and the ack timer run here,
    POST `path` as events_handler says, /healthz and /readyz on the main loop, /metrics here (the registry is
    thread-safe), and the Alertmanager webhook here with its investigation spawned on the main loop."""
    web_app = web.Application()
    web_app.middlewares.append(request_guard(signing_secret, path, body_timeout_s=body_timeout_s))
    web_app.router.add_post(path, events_handler(bot_app, main))  # Bolt's own server adds only OAuth routes besides
    web_app.router.add_get("/healthz", main.relay(healthz))
    web_app.router.add_get("/readyz", main.relay(readiness.handle))
    add_alert_routes(web_app, alerts.spawning_with(thread_safe_spawn(main.loop, alerts.spawn))
                     if alerts is not None else None)
    if metrics is not None:
        web_app.middlewares.append(ack_timer(metrics, path))
        add_metrics_route(web_app, metrics)
    return web_app


class IngressThread:
    """An aiohttp server for `build()`'s application on a daemon thread with its own event loop."""

    def __init__(self, build: Callable[[], web.Application], host: str, port: int, *,
                 runner: Callable[[web.Application], web.AppRunner] | None = None) -> None:
        self._build = build
        self._host = host
        self._port = port
        self._runner_of = runner or (lambda app: web.AppRunner(app, access_log=None))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="slack-ingress", daemon=True)
        self._switch_interval: float | None = None
        self._loop_kind = "asyncio"
        self.port = 0

    def _main(self) -> None:
        run_loop(self._serve(), self._loop_kind)  # the loop kind of the thread that started it (DIAG_EVENT_LOOP)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        runner = self._runner_of(self._build())
        try:
            await runner.setup()
            site = web.TCPSite(runner, self._host, self._port)
            await site.start()
            server = site._server  # the bound port when 0 was asked for
            sockets = getattr(server, "sockets", None) or []
            self.port = sockets[0].getsockname()[1] if sockets else self._port
        except BaseException as exc:
            self._error = exc
            self._started.set()
            await runner.cleanup()
            return
        self._started.set()
        try:
            await self._stop.wait()
        finally:
            await runner.cleanup()

    async def start(self) -> int:
        """Start serving; the port it listens on (raises what binding raised)."""
        self._loop_kind = running_loop_kind()
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, SWITCH_INTERVAL_S))
        self._thread.start()
        await asyncio.to_thread(self._started.wait, START_TIMEOUT_S)
        if self._error is not None:
            raise self._error
        if not self._started.is_set():
            raise TimeoutError("the Slack ingress thread did not start")
        return self.port

    async def aclose(self, timeout_s: float = 10.0) -> None:
        """Stop taking requests (those being answered finish), then end the thread."""
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread.ident is not None:
            await asyncio.to_thread(self._thread.join, timeout_s)
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None
