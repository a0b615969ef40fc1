"""A small local Loki for tests: holds log streams and really evaluates the LogQL subset LokiLogsTool generates.

Supported: `GET /loki/api/v1/query_range` with a log query `{name=~"re", name="v", ...} |~ "re" |= "text" ...`
(start inclusive, end exclusive, `limit`, `direction`), and `GET /loki/api/v1/query` with
`sum(count_over_time(<log query> [<N>ms|s|m|h]))` at `time` (range (time - N, time]). String literals are
decoded like Go's strconv.Unquote (an unknown escape such as `\\-` is a parse error, as in Loki), label regexes
are fully anchored, line-filter regexes are searched, both with Python `re` (the tool's patterns stay in the
subset RE2 and Python agree on). Anything else is answered 400 "parse error", like Loki.

Every request is recorded (path, params, headers, and the parsed query); faults can be injected per endpoint:
a status with a body, or a delay before answering.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

RANGE = "query_range"
INSTANT = "query"
_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_OP = re.compile(r"=~|!~|!=|=")
_FILTER_OP = re.compile(r"\|~|\|=|!~|!=")
_METRIC = re.compile(r"^\s*sum\s*\(\s*count_over_time\s*\((?P<inner>.*)\[(?P<n>\d+)(?P<unit>ms|s|m|h)\]\s*\)\s*\)\s*$", re.S)
_UNIT_NS = {"ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"'}


class LogQLError(ValueError):
    """The query is outside the supported subset or malformed (answered 400, like Loki's parse errors)."""


@dataclass(frozen=True)
class LogQuery:
    """A parsed log query: label matchers (name, op, value) and line filters (op, value)."""

    matchers: tuple[tuple[str, str, str], ...]
    filters: tuple[tuple[str, str], ...]

    def selects(self, labels: dict[str, str]) -> bool:
        """True when the stream's labels satisfy every matcher (regex matchers are fully anchored)."""
        for name, op, value in self.matchers:
            actual = labels.get(name, "")
            if op == "=" and actual != value:
                return False
            if op == "!=" and actual == value:
                return False
            if op == "=~" and not re.fullmatch(value, actual):
                return False
            if op == "!~" and re.fullmatch(value, actual):
                return False
        return True

    def keeps(self, line: str) -> bool:
        """True when the line passes every line filter."""
        for op, value in self.filters:
            found = bool(re.search(value, line)) if op in ("|~", "!~") else value in line
            if found != (op in ("|~", "|=")):
                return False
        return True


def go_unquote(text: str, pos: int) -> tuple[str, int]:
    """Decode the Go double-quoted string literal starting at text[pos]; returns (value, position after it)."""
    if pos >= len(text) or text[pos] != '"':
        raise LogQLError(f"parse error at col {pos + 1}: expected a string literal")
    out: list[str] = []
    i = pos + 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(out), i + 1
        if char == "\n":
            raise LogQLError(f"parse error at col {i + 1}: newline in string")
        if char != "\\":
            out.append(char)
            i += 1
            continue
        esc = text[i + 1: i + 2]
        if esc in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[esc])
            i += 2
        elif esc in ("x", "u", "U"):
            width = {"x": 2, "u": 4, "U": 8}[esc]
            digits = text[i + 2: i + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise LogQLError(f"parse error at col {i + 1}: invalid escape")
            out.append(chr(int(digits, 16)))
            i += 2 + width
        else:
            raise LogQLError(f"parse error at col {i + 1}: invalid escape \\{esc} in string")
    raise LogQLError("parse error: unterminated string")


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def parse_log_query(text: str) -> LogQuery:
    """Parse `{matchers} filters...`; the whole text must be consumed."""
    pos = _skip(text, 0)
    if text[pos: pos + 1] != "{":
        raise LogQLError("parse error at col 1: expected a stream selector")
    pos += 1
    matchers: list[tuple[str, str, str]] = []
    while True:
        pos = _skip(text, pos)
        name = _NAME.match(text, pos)
        if not name:
            raise LogQLError(f"parse error at col {pos + 1}: expected a label name")
        pos = _skip(text, name.end())
        op = _OP.match(text, pos)
        if not op:
            raise LogQLError(f"parse error at col {pos + 1}: expected a matcher operator")
        value, pos = go_unquote(text, _skip(text, op.end()))
        if op.group() in ("=~", "!~"):
            _compile(value, pos)
        matchers.append((name.group(), op.group(), value))
        pos = _skip(text, pos)
        if text[pos: pos + 1] == ",":
            pos += 1
            continue
        if text[pos: pos + 1] == "}":
            pos += 1
            break
        raise LogQLError(f"parse error at col {pos + 1}: expected , or }}")
    if not any(op in ("=", "=~") and not re.fullmatch(value, "") for _, op, value in matchers):
        raise LogQLError("queries require at least one regexp or equality matcher that does not match the empty string")
    filters: list[tuple[str, str]] = []
    pos = _skip(text, pos)
    while pos < len(text):
        op = _FILTER_OP.match(text, pos)
        if not op:
            raise LogQLError(f"parse error at col {pos + 1}: unexpected {text[pos:pos + 10]!r}")
        value, pos = go_unquote(text, _skip(text, op.end()))
        if op.group() in ("|~", "!~"):
            _compile(value, pos)
        filters.append((op.group(), value))
        pos = _skip(text, pos)
    return LogQuery(tuple(matchers), tuple(filters))


def _compile(pattern: str, pos: int) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise LogQLError(f"parse error at col {pos}: invalid regex {exc}") from exc


@dataclass
class Fault:
    """What an endpoint answers instead of the real result: a status and body, possibly after a delay."""

    status: int = 200
    body: str = ""
    delay_s: float = 0.0


@dataclass
class Recorded:
    """One request the server received."""

    endpoint: str
    params: dict[str, str]
    headers: dict[str, str]
    parsed: LogQuery | None = None


@dataclass
class FakeLoki:
    """Streams of (ns, line) under label sets, served over HTTP on 127.0.0.1 while used as `async with`."""

    streams: list[tuple[dict[str, str], list[tuple[int, str]]]] = field(default_factory=list)
    faults: dict[str, Fault] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    def push(self, labels: dict[str, str], ns: int, line: str) -> None:
        """Append one line to the stream with exactly these labels."""
        for stream_labels, values in self.streams:
            if stream_labels == labels:
                values.append((ns, line))
                return
        self.streams.append((dict(labels), [(ns, line)]))

    async def __aenter__(self) -> FakeLoki:
        app = web.Application()
        app.router.add_get("/loki/api/v1/query_range", self._query_range)
        app.router.add_get("/loki/api/v1/query", self._query)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ---- evaluation ------------------------------------------------------------------------------

    def _matching(self, query: LogQuery, lo: int, hi: int, include_lo: bool) -> list[tuple[dict[str, str], int, str]]:
        out = []
        for labels, values in self.streams:
            if not query.selects(labels):
                continue
            for ns, line in values:
                inside = (lo <= ns if include_lo else lo < ns) and ns <= hi
                if inside and query.keeps(line):
                    out.append((labels, ns, line))
        return out

    async def _answer(self, request: web.Request, endpoint: str) -> tuple[Recorded, web.Response | None]:
        recorded = Recorded(endpoint, dict(request.query), dict(request.headers))
        self.requests.append(recorded)
        fault = self.faults.get(endpoint)
        if fault is not None:
            if fault.delay_s:
                await asyncio.sleep(fault.delay_s)  # a slow Loki is the fault being injected
            if fault.status != 200 or fault.body:
                return recorded, web.Response(status=fault.status, text=fault.body)
        return recorded, None

    async def _query_range(self, request: web.Request) -> web.Response:
        recorded, faulted = await self._answer(request, RANGE)
        if faulted is not None:
            return faulted
        try:
            query = parse_log_query(request.query["query"])
        except LogQLError as exc:
            return web.Response(status=400, text=str(exc))
        recorded.parsed = query
        start, end = int(request.query["start"]), int(request.query["end"])
        limit = int(request.query.get("limit", "100"))
        matches = self._matching(query, start, end - 1, include_lo=True)  # end is exclusive
        matches.sort(key=lambda m: m[1], reverse=request.query.get("direction") == "backward")
        kept = matches[:limit]
        result: list[dict[str, Any]] = []
        for labels, _values in self.streams:
            values = [[str(ns), line] for lab, ns, line in kept if lab is labels]
            if values:
                result.append({"stream": labels, "values": values})
        result.reverse()  # streams in no particular order: the client must merge them chronologically
        return web.json_response({"status": "success", "data": {"resultType": "streams", "result": result}})

    async def _query(self, request: web.Request) -> web.Response:
        recorded, faulted = await self._answer(request, INSTANT)
        if faulted is not None:
            return faulted
        metric = _METRIC.match(request.query["query"])
        if metric is None:
            return web.Response(status=400, text="parse error: only sum(count_over_time(...)) is supported")
        try:
            query = parse_log_query(metric.group("inner"))
        except LogQLError as exc:
            return web.Response(status=400, text=str(exc))
        recorded.parsed = query
        at = int(request.query["time"])
        window = int(metric.group("n")) * _UNIT_NS[metric.group("unit")]
        count = len(self._matching(query, at - window, at, include_lo=False))
        result = [{"metric": {}, "value": [at / 1e9, str(count)]}] if count else []
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})
