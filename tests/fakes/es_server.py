"""A small local Elasticsearch for tests: stores documents per index and really evaluates a query-DSL subset.

Served: `POST /<index>/_search` (also GET), where `<index>` is a comma-separated list of names or wildcard
patterns. A concrete name that does not exist answers 404 `index_not_found_exception`, as ES does; a pattern that
matches nothing searches nothing. Evaluated DSL: `bool` (`filter`, `must`, `should` with `minimum_should_match`,
`must_not`), `term` (with `case_insensitive`), `terms`, `range` (`gt`/`gte`/`lt`/`lte` on dates), `match` (with
`operator` and/or), `match_phrase` and `match_all`; `sort` on a field (asc/desc) and `_doc`, `size`, `from`,
`track_total_hits` (without it the total stops at 10,000 with relation "gte", like ES). Text fields are analyzed by
a simple lowercase word tokenizer (`\\w+`), keyword fields compare whole values. Anything else (an unknown query
type such as `query_string`, an unknown body key) is answered 400 with ES's error shape.

Every request is recorded (path, index, headers, parsed JSON body); a Fault answers instead of the real result:
a status with a body (text or JSON), possibly after a delay.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from aiohttp import web

_WORD = re.compile(r"\w+")
_COMPARE = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}
_BODY_KEYS = frozenset({"query", "sort", "size", "from", "track_total_hits", "_source"})


class DslError(ValueError):
    """The request is outside the supported subset or malformed (answered 400, like ES's parsing exceptions)."""

    def __init__(self, reason: str, kind: str = "parsing_exception") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


def tokens(text: Any) -> list[str]:
    """The lowercase words of a text value (lists are analyzed element by element)."""
    if isinstance(text, list):
        return [tok for part in text for tok in tokens(part)]
    return _WORD.findall(str(text).lower()) if text is not None else []


def get_field(doc: Mapping[str, Any], path: str) -> Any:
    """A document field: the flat key first, else the nested path; None when absent."""
    if path in doc:
        return doc[path]
    node: Any = doc
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def to_time(value: Any) -> datetime | None:
    """An ISO-8601 string (UTC when naive, 'Z' accepted) or epoch millis as an aware datetime."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1000, UTC)
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def _one_field(spec: Any, kind: str) -> tuple[str, Any]:
    if not isinstance(spec, dict) or len(spec) != 1:
        raise DslError(f"[{kind}] query malformed, expected exactly one field")
    ((name, value),) = spec.items()
    return str(name), value


def _values(doc: Mapping[str, Any], name: str) -> list[Any]:
    value = get_field(doc, name)
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _term_equal(actual: Any, wanted: Any, case_insensitive: bool) -> bool:
    if isinstance(actual, str) and isinstance(wanted, str):
        return actual.lower() == wanted.lower() if case_insensitive else actual == wanted
    return bool(actual == wanted)


def evaluate(query: Any, doc: Mapping[str, Any]) -> bool:
    """True when the document matches the query (raises DslError outside the subset)."""
    if not isinstance(query, dict) or len(query) != 1:
        raise DslError("query malformed, expected exactly one query type")
    ((kind, spec),) = query.items()
    if kind == "match_all":
        return True
    if kind == "bool":
        if not isinstance(spec, dict) or set(spec) - {"filter", "must", "should", "must_not", "minimum_should_match"}:
            raise DslError("[bool] query does not support the given keys")

        def clauses(key: str) -> list[Any]:
            value = spec.get(key, [])
            return value if isinstance(value, list) else [value]

        if not all(evaluate(q, doc) for q in clauses("filter") + clauses("must")):
            return False
        if any(evaluate(q, doc) for q in clauses("must_not")):
            return False
        should = clauses("should")
        if should:
            default = 0 if clauses("filter") or clauses("must") else 1
            needed = int(spec.get("minimum_should_match", default))
            return sum(evaluate(q, doc) for q in should) >= needed
        return True
    if kind == "term":
        name, value = _one_field(spec, kind)
        options = value if isinstance(value, dict) else {"value": value}
        if set(options) - {"value", "case_insensitive", "boost"} or "value" not in options:
            raise DslError("[term] query does not support the given options")
        insensitive = bool(options.get("case_insensitive", False))
        return any(_term_equal(actual, options["value"], insensitive) for actual in _values(doc, name))
    if kind == "terms":
        name, wanted = _one_field(spec, kind)
        if not isinstance(wanted, list):
            raise DslError("[terms] query requires an array of terms")
        return any(_term_equal(actual, w, False) for actual in _values(doc, name) for w in wanted)
    if kind == "range":
        name, bounds = _one_field(spec, kind)
        if not isinstance(bounds, dict) or set(bounds) - {"gt", "gte", "lt", "lte", "format"}:
            raise DslError("[range] query does not support the given options")
        limits: dict[str, datetime] = {}
        for op in ("gt", "gte", "lt", "lte"):
            if op in bounds:
                bound = to_time(bounds[op])
                if bound is None:
                    raise DslError(f"failed to parse date field [{bounds[op]}]", kind="parse_exception")
                limits[op] = bound
        for actual in _values(doc, name):
            moment = to_time(actual)
            if moment is None:
                continue
            if all(_COMPARE[op](moment, bound) for op, bound in limits.items()):
                return True
        return False
    if kind in ("match", "match_phrase"):
        name, value = _one_field(spec, kind)
        options = value if isinstance(value, dict) else {"query": value}
        allowed = {"query", "operator"} if kind == "match" else {"query"}
        if set(options) - allowed or not isinstance(options.get("query"), str):
            raise DslError(f"[{kind}] query does not support the given options")
        wanted = tokens(options["query"])
        have = tokens(get_field(doc, name))
        if not wanted:
            return False  # zero_terms_query: none
        if kind == "match_phrase":
            width = len(wanted)
            return any(have[i: i + width] == wanted for i in range(len(have) - width + 1))
        operator = str(options.get("operator", "or")).lower()
        if operator not in ("and", "or"):
            raise DslError(f"[match] unknown operator [{operator}]")
        found = [tok in have for tok in wanted]
        return all(found) if operator == "and" else any(found)
    raise DslError(f"unknown query [{kind}]")


@dataclass
class Fault:
    """What the search answers instead of the real result: a status and body, possibly after a delay."""

    status: int = 200
    body: str | dict[str, Any] = ""
    delay_s: float = 0.0


def es_error(status: int, kind: str, reason: str, **extra: Any) -> dict[str, Any]:
    """An error body shaped like Elasticsearch's."""
    cause = {"type": kind, "reason": reason, **extra}
    return {"error": {"root_cause": [cause], **cause}, "status": status}


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    index: str
    headers: dict[str, str]
    body: Any = None


@dataclass
class FakeElasticsearch:
    """Documents per index, served over HTTP on 127.0.0.1 while used as `async with`."""

    indices: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    fault: Fault | None = None
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    def add(self, index: str, doc: dict[str, Any]) -> None:
        """Index one document (the index is created on first use)."""
        self.indices.setdefault(index, []).append(doc)

    async def __aenter__(self) -> FakeElasticsearch:
        app = web.Application()
        app.router.add_route("POST", "/{index}/_search", self._search)
        app.router.add_route("GET", "/{index}/_search", self._search)
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

    def _resolve(self, spec: str) -> list[str]:
        names: list[str] = []
        for part in spec.split(","):
            if any(char in part for char in "*?"):
                names.extend(n for n in sorted(self.indices) if fnmatch.fnmatchcase(n, part) and n not in names)
            elif part in self.indices:
                if part not in names:
                    names.append(part)
            else:
                raise DslError(f"no such index [{part}]", kind="index_not_found_exception")
        return names

    @staticmethod
    def _sort_key(sort: Any, doc: Mapping[str, Any], position: int) -> list[Any]:
        key: list[Any] = []
        specs = sort if isinstance(sort, list) else [sort]
        for spec in specs:
            name, options = (spec, {}) if isinstance(spec, str) else _one_field(spec, "sort")
            order = options.get("order", "asc") if isinstance(options, dict) else str(options)
            if name == "_doc":
                value: Any = position
            else:
                moment = to_time(get_field(doc, name))
                value = moment.timestamp() if moment is not None else float("inf")
            key.append(-value if order == "desc" else value)
        return key

    @staticmethod
    def _sort_value(spec: Any, doc: Mapping[str, Any], position: int) -> Any:
        """What ES reports in a hit's `sort`: epoch millis for a date field, the position for `_doc`."""
        name = spec if isinstance(spec, str) else next(iter(spec))
        if name == "_doc":
            return position
        moment = to_time(get_field(doc, name))
        return int(moment.timestamp() * 1000) if moment is not None else None

    def search(self, index: str, body: Any) -> dict[str, Any]:
        """The `_search` answer for a parsed body (raises DslError)."""
        if not isinstance(body, dict) or set(body) - _BODY_KEYS:
            raise DslError(f"request body has unsupported keys {sorted(set(body) - _BODY_KEYS)}"
                           if isinstance(body, dict) else "request body is not an object")
        query = body.get("query", {"match_all": {}})
        candidates = [(name, pos, doc) for name in self._resolve(index) for pos, doc in enumerate(self.indices[name])]
        matches = [(name, pos, doc) for name, pos, doc in candidates if evaluate(query, doc)]
        sort = body.get("sort")
        if sort is not None:
            matches.sort(key=lambda m: self._sort_key(sort, m[2], m[1]))
        start = int(body.get("from", 0))
        size = int(body.get("size", 10))
        hits = []
        for name, pos, doc in matches[start: start + size]:
            hit: dict[str, Any] = {"_index": name, "_id": f"{name}-{pos}", "_score": None, "_source": doc}
            if sort is not None:
                hit["sort"] = [self._sort_value(spec, doc, pos) for spec in (sort if isinstance(sort, list) else [sort])]
            hits.append(hit)
        if body.get("track_total_hits") is True:
            total = {"value": len(matches), "relation": "eq"}
        else:
            total = {"value": min(len(matches), 10_000), "relation": "eq" if len(matches) <= 10_000 else "gte"}
        shards = {"total": 1, "successful": 1, "skipped": 0, "failed": 0}
        return {"took": 1, "timed_out": False, "_shards": shards, "hits": {"total": total, "max_score": None, "hits": hits}}

    async def _search(self, request: web.Request) -> web.Response:
        index = request.match_info["index"]
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        self.requests.append(Recorded(request.method, request.path, index, dict(request.headers), body))
        if self.fault is not None:
            if self.fault.delay_s:
                await asyncio.sleep(self.fault.delay_s)  # a slow cluster is the fault being injected
            if self.fault.status != 200 or self.fault.body:
                text = self.fault.body if isinstance(self.fault.body, str) else json.dumps(self.fault.body)
                return web.Response(status=self.fault.status, text=text, content_type="application/json")
        if body is None:
            return web.json_response(es_error(400, "parse_exception", "request body is not JSON"), status=400)
        try:
            return web.json_response(self.search(index, body))
        except DslError as exc:
            status = 404 if exc.kind == "index_not_found_exception" else 400
            extra = {"index": index} if status == 404 else {}
            return web.json_response(es_error(status, exc.kind, exc.reason, **extra), status=status)
