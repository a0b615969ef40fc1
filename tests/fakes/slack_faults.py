"""Fault injection for the fake Slack Web API: any answer a real Slack, proxy or network can give, per method and call.

A `FaultPlan` is consulted by `FakeSlack` before a method's normal handler (the call is recorded either way). Rules
match a method (or every method with "*") and either the next `times` calls or given call numbers of that method
(1-based, counted here for each method). What they answer:

- `json_error(code, status=200)`: Slack's own `{"ok": false, "error": code}` (e.g. `not_in_channel` at 200, or a
  JSON 500 / 503);
- `text(status=500)`: a plain-text body (`text/plain`), as a load balancer answers;
- `html(status=502)`: an HTML error page (`text/html`);
- `bad_json(status=500)`: `application/json` whose body does not parse;
- `empty(status=500)`: no body at all;
- `reset()`: the connection is dropped without an answer (the client sees a reset / disconnect);
- `ratelimited(retry_after=1)`: 429 with `Retry-After` and Slack's `ratelimited` body.

`when=lambda params: ...` narrows a rule to some calls (e.g. only the final message, the one with metadata).
`outage(fault)` makes every call of every method fail until `restore()` (Slack down, then back).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

How = Literal["json", "text", "html", "bad_json", "empty", "reset"]


@dataclass(frozen=True)
class Injected:
    """One scripted bad answer."""

    how: How
    status: int = 500
    error: str = ""
    retry_after: int | None = None


def json_error(code: str, status: int = 200) -> Injected:
    """Slack's JSON error body."""
    return Injected("json", status=status, error=code)


def text(status: int = 500) -> Injected:
    """A plain-text error body."""
    return Injected("text", status=status)


def html(status: int = 502) -> Injected:
    """An HTML error page."""
    return Injected("html", status=status)


def bad_json(status: int = 500) -> Injected:
    """A JSON content type with a body that is not JSON."""
    return Injected("bad_json", status=status)


def empty(status: int = 500) -> Injected:
    """A response without a body."""
    return Injected("empty", status=status)


def reset() -> Injected:
    """The connection closed without a response."""
    return Injected("reset")


def ratelimited(retry_after: int = 1) -> Injected:
    """HTTP 429 with Retry-After (Slack's rate limit)."""
    return Injected("json", status=429, error="ratelimited", retry_after=retry_after)


@dataclass
class _Rule:
    method: str
    fault: Injected
    times: int | None = None
    calls: frozenset[int] | None = None
    when: Callable[[dict[str, Any]], bool] | None = None

    def matches(self, method: str, n: int, params: dict[str, Any]) -> bool:
        if self.method not in ("*", method) or (self.when is not None and not self.when(params)):
            return False
        if self.calls is not None:
            return n in self.calls
        return self.times is None or self.times > 0


@dataclass
class FaultPlan:
    """Scripted faults by method and call number; `counts` says how many calls each method has had."""

    rules: list[_Rule] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    injected: list[tuple[str, int, Injected]] = field(default_factory=list)

    def inject(self, method: str, fault: Injected, *, times: int | None = 1, calls: set[int] | None = None,
               when: Callable[[dict[str, Any]], bool] | None = None) -> None:
        """Fail the next `times` calls of `method` (None: every call), or exactly the call numbers in `calls`;
        `when` limits the rule to calls whose parameters it accepts (e.g. only the final message, with metadata)."""
        self.rules.append(_Rule(method, fault, None if calls is not None else times,
                                frozenset(calls) if calls is not None else None, when))

    def outage(self, fault: Injected | None = None) -> None:
        """Every call of every method fails (a reset by default) until restore()."""
        self.rules.insert(0, _Rule("*", fault or reset(), times=None))

    def restore(self) -> None:
        """End an outage (rules for single methods stay)."""
        self.rules = [r for r in self.rules if not (r.method == "*" and r.times is None and r.calls is None)]

    def clear(self) -> None:
        """Forget every rule."""
        self.rules.clear()

    def pick(self, method: str, params: dict[str, Any]) -> Injected | None:
        """Count one call of `method`; the fault to answer it with, if any."""
        self.counts[method] += 1
        n = self.counts[method]
        for rule in self.rules:
            if rule.matches(method, n, params):
                if rule.times is not None:
                    rule.times -= 1
                self.injected.append((method, n, rule.fault))
                return rule.fault
        return None

    async def answer(self, method: str, params: dict[str, Any], request: web.Request) -> web.StreamResponse | None:
        """The faulty response for this call, or None to answer normally."""
        fault = self.pick(method, params)
        if fault is None:
            return None
        return await respond(fault, request)


async def respond(fault: Injected, request: web.Request) -> web.StreamResponse:
    """Write the scripted bad answer."""
    if fault.how == "reset":
        if request.transport is not None:
            request.transport.abort()  # nothing is written: the client's read fails as on a reset
        return web.Response(status=500)
    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
    if fault.how == "json":
        return web.Response(text=json.dumps({"ok": False, "error": fault.error}), status=fault.status,
                            content_type="application/json", headers=headers)
    if fault.how == "text":
        return web.Response(text="Internal Server Error", status=fault.status, content_type="text/plain")
    if fault.how == "html":
        page = "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"
        return web.Response(text=page, status=fault.status, content_type="text/html")
    if fault.how == "bad_json":
        return web.Response(text="{not json", status=fault.status, content_type="application/json")
    return web.Response(body=b"", status=fault.status, content_type="application/json")


def final_message(params: dict[str, Any]) -> bool:
    """A `when` for the calls that carry a turn's final message (they have metadata)."""
    return bool(params.get("metadata"))
