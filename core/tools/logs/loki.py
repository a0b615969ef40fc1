"""query_logs over Grafana Loki: the same arguments, matching rules and RawResult shape as the JSONL backend.

The tool builds one LogQL log query from the validated arguments and runs two requests concurrently:

- `GET /loki/api/v1/query_range` (`direction=forward`, `limit`): the earliest matching lines of the window,
  returned oldest first like the embedded backend;
- `GET /loki/api/v1/query` (instant, at the window's end): `sum(count_over_time(<same query> [<window>]))`,
  the exact number of matches. When only this count fails, the items still count as evidence and
  `total_count` falls back to the number of items with `notes["total_count_exact"] = False`.

Safety: every piece of user text reaches LogQL only inside a double-quoted string literal, escaped for that
literal (backslash, quote, control characters) after being escaped for RE2 (every ASCII punctuation character
is backslash-escaped), so text such as `"} |= "x` or `.*(` is matched literally and cannot change the query's
structure. Matching: the service label matches exactly, ignoring case (as the tool contract says); the level
label matches the level's common spellings, ignoring case; each keyword (or the quoted phrase) must appear in
the stored line, ignoring case. Lines come from [start, end]; the count covers (start, end] (Loki's range
vectors are left-open), so a line exactly at `start` is listed but may be missing from the count, which is why
the total is never below the number of items. Loki filters whole lines, so for JSON lines a keyword may also match a field
other than the message (`notes["match_scope"]` says so).

Failures become ToolFailure: BACKEND_UNAVAILABLE (connection errors, timeouts, 5xx, 429, other statuses),
LOKI_BAD_QUERY (400, with Loki's message shortened), LOKI_UNAUTHORIZED (401/403), LOKI_BAD_RESPONSE (an answer
that is not Loki's JSON). Messages never contain the URL, its credentials or the token.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from pydantic import SecretStr

from core.contracts.evidence import RawResult
from core.errors import ToolFailure
from core.tools.item_bounds import ItemBounds, bound_items
from core.tools.logs.args import LogsArgs
from core.tools.logs.backend import (
    CORE_KEYS,
    MAX_EXTRA_FIELDS,
    HttpBackend,
    HttpLogsTool,
    checked_window,
    clean_error_text,
    effective_arguments,
    is_short,
    split_url,
)
from core.tools.logs.query import every_line, normalise_level, parse_terms
from core.tools.logs.scan import iso_utc

DEFAULT_TIMEOUT_S = 10.0
_LOKI = HttpBackend("Loki", "LOKI", "check DIAG_LOKI_TOKEN and DIAG_LOKI_TENANT")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_MESSAGE_KEYS = ("message", "msg")
_JSON_LEVEL_KEYS = ("level", "severity", "lvl")
# Spellings of each level in the wild; the level label matches any of them, ignoring case.
LEVEL_SPELLINGS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "ERROR": ("error", "err", "fatal", "critical", "crit"),
    "WARN": ("warn", "warning"),
    "INFO": ("info", "information", "notice"),
    "DEBUG": ("debug", "trace"),
})


# ---- LogQL building ---------------------------------------------------------------------------


def re2_literal(text: str) -> str:
    """RE2 pattern matching `text` literally: ASCII punctuation backslash-escaped, ASCII controls as \\xHH."""
    out: list[str] = []
    for char in text:
        code = ord(char)
        if code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x80 and not char.isalnum() and char != " ":
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def logql_string(text: str) -> str:
    """A double-quoted LogQL (Go) string literal whose value is exactly `text`."""
    if any(0xD800 <= ord(char) <= 0xDFFF for char in text):
        raise ToolFailure("INVALID_ARGUMENTS", "The arguments contain invalid Unicode (lone surrogates).")
    # json.dumps escapes backslash, quote and control characters with escapes Go's strconv.Unquote accepts.
    return json.dumps(text, ensure_ascii=False)


def level_pattern(level: str) -> str:
    """Case-insensitive, fully anchored (as Loki anchors label regexes) pattern of a level's spellings."""
    spellings = LEVEL_SPELLINGS.get(level, (level.lower(),))
    return "(?i)(?:" + "|".join(re2_literal(s) for s in spellings) + ")"


def build_log_query(service: str, terms: list[str], level: str | None, service_label: str, level_label: str) -> str:
    """The LogQL log query: stream selector (service, optional level) plus one `|~` line filter per term."""
    matchers = [f"{service_label}=~{logql_string('(?i)' + re2_literal(service))}"]
    if level is not None:
        matchers.append(f"{level_label}=~{logql_string(level_pattern(level))}")
    filters = "".join(f" |~ {logql_string('(?i)' + re2_literal(term))}" for term in terms)
    return "{" + ", ".join(matchers) + "}" + filters


def count_query(log_query: str, window_ms: int) -> str:
    """The metric query counting every match of `log_query` in the `window_ms` before the evaluation time."""
    return f"sum(count_over_time({log_query} [{window_ms}ms]))"


def _ns(value: datetime) -> int:
    """Nanoseconds since the epoch, exact (no float rounding)."""
    delta = value.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


# ---- response parsing -------------------------------------------------------------------------


def line_item(ts_ns: int, line: str, labels: Mapping[str, str], service_label: str, level_label: str) -> dict[str, Any]:
    """One RawResult item: Loki's timestamp, the stream's service and level, the message and short other fields."""
    message = line
    parsed: dict[str, Any] = {}
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            key = next((k for k in _MESSAGE_KEYS if isinstance(obj.get(k), str)), None)
            if key is not None:
                message = obj[key]
                parsed = obj
    level_value = labels.get(level_label)
    if level_value is None:
        level_value = next((str(parsed[k]) for k in _JSON_LEVEL_KEYS if k in parsed and is_short(parsed[k])), "UNKNOWN")
    item: dict[str, Any] = {
        "timestamp": iso_utc(datetime.fromtimestamp(ts_ns // 1_000_000_000, UTC).replace(
            microsecond=(ts_ns % 1_000_000_000) // 1_000)),
        "service": labels.get(service_label, ""),
        "level": normalise_level(level_value),
        "message": message,
    }
    extras = 0
    skip = CORE_KEYS | set(_MESSAGE_KEYS) | set(_JSON_LEVEL_KEYS)
    for source in (parsed, labels):
        for key, value in source.items():
            if extras >= MAX_EXTRA_FIELDS:
                break
            if key in skip or key in item or key in (service_label, level_label) or not is_short(value):
                continue
            item[key] = value
            extras += 1
    return item


def parse_streams(body: Any, service_label: str, level_label: str) -> list[tuple[int, dict[str, Any]]]:
    """(ns, item) for every line of a query_range `streams` answer; raises on any other shape."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "streams" or not isinstance(data.get("result"), list):
        raise ToolFailure("LOKI_BAD_RESPONSE", "Loki answered the log query with an unexpected shape; not evidence.")
    out: list[tuple[int, dict[str, Any]]] = []
    try:
        for stream in data["result"]:
            labels = {str(k): str(v) for k, v in (stream.get("stream") or {}).items()}
            for ts, line in stream.get("values") or []:
                ns = int(ts)
                out.append((ns, line_item(ns, str(line), labels, service_label, level_label)))
    except (AttributeError, TypeError, ValueError) as exc:
        raise ToolFailure("LOKI_BAD_RESPONSE", "Loki answered the log query with malformed lines; not evidence.") from exc
    return out


def parse_count(body: Any) -> int:
    """The single value of a `sum(...)` instant vector (no series means zero)."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise ToolFailure("LOKI_BAD_RESPONSE", "Loki answered the count query with an unexpected shape.")
    try:
        return sum(round(float(series["value"][1])) for series in data["result"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ToolFailure("LOKI_BAD_RESPONSE", "Loki answered the count query with a malformed value.") from exc


# ---- the tool ---------------------------------------------------------------------------------


class LokiLogsTool(HttpLogsTool):
    """The query_logs tool over Grafana Loki (LogQL over HTTP); one aiohttp session per tool, closed by aclose()."""

    def __init__(
        self,
        url: str,
        clock: Callable[[], datetime],
        *,
        service_label: str = "service",
        level_label: str = "level",
        tenant: str | None = None,
        token: SecretStr | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        for label in (service_label, level_label):
            if not _LABEL_NAME.fullmatch(label):
                raise ValueError(f"{label!r} is not a valid Loki label name")
        self._base, basic = split_url(url, "DIAG_LOKI_URL", "http://loki:3100")
        self._clock = clock
        self._service_label = service_label
        self._level_label = level_label
        headers = {"Accept": "application/json"}
        if tenant:
            headers["X-Scope-OrgID"] = tenant
        self._connect(url, basic, headers, "Bearer", token, timeout_s)

    async def run(self, args: LogsArgs) -> RawResult:
        """Query Loki for the lines matching the arguments; the exact total comes from a concurrent count query."""
        start, end = checked_window(args, self._clock())
        terms = [] if every_line(args.query) else parse_terms(args.query)
        if not terms and not every_line(args.query):
            raise ToolFailure("INVALID_ARGUMENTS", "query has no keywords; give words or a \"quoted phrase\".")
        log_query = build_log_query(args.service, terms, args.level, self._service_label, self._level_label)
        start_ns, end_ns = _ns(start), _ns(end)
        window_ms = max(1, -(-(end_ns - start_ns) // 1_000_000))
        metric_query = count_query(log_query, window_ms)
        range_params = {
            "query": log_query, "start": str(start_ns), "end": str(end_ns + 1),  # Loki's end is exclusive
            "limit": str(args.limit), "direction": "forward",
        }
        count_task = asyncio.ensure_future(self._count(metric_query, end_ns))
        try:
            body = await self._get("/loki/api/v1/query_range", range_params, "log query")
            lines = parse_streams(body, self._service_label, self._level_label)
        except BaseException:
            count_task.cancel()
            await asyncio.gather(count_task, return_exceptions=True)
            raise
        lines.sort(key=lambda entry: entry[0])  # streams arrive one after another; merge them chronologically
        items = [item for _, item in lines[: args.limit]]
        counted = await count_task
        notes: dict[str, Any] = {
            "backend": "loki",
            "logql": log_query,
            "order": "chronological, earliest matches first",
            "match_scope": "keywords are matched in the whole stored line",
        }
        if isinstance(counted, int):
            total = max(counted, len(items))
            notes["total_count_exact"] = True
        else:
            total = len(items)
            notes["total_count_exact"] = False
            notes["total_count_error"] = counted.code
        if items:
            notes["first_match"] = items[0]["timestamp"]
        items, cut = bound_items(items, ItemBounds())  # each line and the result bounded in bytes, as files are
        notes.update(cut)
        return RawResult(items=items, total_count=total, effective_arguments=effective_arguments(args, start, end),
                         notes=notes)

    async def _count(self, query: str, at_ns: int) -> int | ToolFailure:
        """The exact number of matches, or the failure (a failed count never fails the call)."""
        try:
            return parse_count(await self._get("/loki/api/v1/query", {"query": query, "time": str(at_ns)}, "count query"))
        except ToolFailure as failure:
            return failure

    async def _get(self, path: str, params: dict[str, str], what: str) -> Any:
        """GET one Loki API path and return its JSON; every failure becomes a ToolFailure without secrets."""
        request = self._http.get().get(self._base + path, params=params)
        status, body = await _LOKI.read(request, what, self._http)
        if status == 400:
            raise _LOKI.rejected(what, self._loki_message(body))
        return _LOKI.json_body(status, body, what)

    def _loki_message(self, body: bytes) -> str:
        """Loki's error text (plain or {"message": ...}), on one line, shortened, with any secret removed."""
        text = body.decode("utf-8", "replace").strip()
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("message") or obj.get("error"), str):
            text = obj.get("message") or obj.get("error") or text
        return clean_error_text(text, self._secrets)
