"""query_logs over Elasticsearch / OpenSearch: the same arguments and RawResult shape as the JSONL and Loki backends.

The tool sends one `POST /<index>/_search` whose body is a `bool` query built from the validated arguments:

- `filter` `term` on the service field with `case_insensitive: true` (exact name, ignoring case; ES >= 7.10 and
  OpenSearch);
- for a level, a `bool.should` of case-insensitive `term`s, one per common spelling (`WARN` matches `warn`,
  `WARNING`, ...), like the Loki backend;
- `range` on the timestamp field, start and end both inclusive (the window [start, end] of the other backends);
- `must`: one `match` on the message field with `operator: and` for the keywords (every word must appear) and
  one `match_phrase` per "quoted phrase";

sorted by the timestamp ascending then `_doc` (the earliest matches first, like the other backends), `size: limit`
and `track_total_hits: true`, so `hits.total.value` is the exact number of matches beyond the limit.

Matching differs slightly from the JSONL folder: Elasticsearch matches analyzed full-text tokens (words, per the
index's analyzer), not substrings, so `pool` does not match `HikariPool`; `notes["match_scope"]` says so. A query
with no word characters at all (e.g. `*`) has no tokens for ES to match and is refused as INVALID_ARGUMENTS rather
than reported as NO_EVIDENCE; such punctuation-only terms next to real words are left out of the search and
listed in `notes["unsearchable_terms"]`.

Safety: user text only ever becomes a JSON string value inside the query DSL (never `query_string` or a script),
so quotes, backslashes, `*` or `" OR 1=1` are plain text and cannot change the query.

Failures become ToolFailure: BACKEND_UNAVAILABLE (connection errors, timeouts, 5xx, 429, other statuses, and an
empty answer when shards failed or timed out), ES_BAD_QUERY (400, with ES's `error.reason` shortened and
redacted), ES_UNAUTHORIZED (401/403), ES_INDEX_MISSING (404 `index_not_found_exception`), ES_BAD_RESPONSE (an
answer that is not ES's JSON). Messages never contain the URL, its credentials or the API key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from pydantic import SecretStr
from yarl import URL

from core.contracts.evidence import RawResult
from core.errors import ToolFailure
from core.tools.item_bounds import ItemBounds, bound_items
from core.tools.logs.args import LogsArgs
from core.tools.logs.backend import (
    HttpBackend,
    HttpLogsTool,
    checked_window,
    clean_error_text,
    effective_arguments,
    split_url,
)
from core.tools.logs.es_hits import parse_hits
from core.tools.logs.loki import LEVEL_SPELLINGS
from core.tools.logs.query import every_line

DEFAULT_TIMEOUT_S = 10.0
_ES = HttpBackend("Elasticsearch", "ES", "check DIAG_ES_API_KEY or the URL's user")
_TERM = re.compile(r'"([^"]*)"|(\S+)')  # the same split as log_query.parse_terms, keeping phrases apart
_WORD = re.compile(r"\w")
# Characters Elasticsearch forbids in index names (',' separates a list, '*' is a wildcard, ':' names a remote cluster).
_BAD_INDEX_CHARS = frozenset('\\/?"<>| #')


# ---- query building ---------------------------------------------------------------------------


def split_terms(query: str) -> tuple[list[str], list[str]]:
    """(keywords, phrases) of a query, lowercased and de-duplicated: "quoted phrases" apart from the other words."""
    words: list[str] = []
    phrases: list[str] = []
    for phrase, word in _TERM.findall(query):
        if phrase:
            term = phrase.strip().lower()
            if term and term not in phrases:
                phrases.append(term)
        else:
            term = word.strip().lower()
            if term and term not in words:
                words.append(term)
    return words, phrases


def _es_time(value: datetime) -> str:
    """ISO-8601 UTC with 'Z', keeping microseconds (ES parses up to nanoseconds with strict_date_optional_time)."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def build_search(
    service: str,
    words: list[str],
    phrases: list[str],
    level: str | None,
    start: datetime,
    end: datetime,
    limit: int,
    fields: Mapping[str, str],
) -> dict[str, Any]:
    """The `_search` body; every piece of user text is a JSON string value, never query syntax."""
    filters: list[dict[str, Any]] = [
        {"term": {fields["service"]: {"value": service, "case_insensitive": True}}},
        {"range": {fields["timestamp"]: {
            "gte": _es_time(start), "lte": _es_time(end), "format": "strict_date_optional_time"}}},
    ]
    if level is not None:
        spellings = LEVEL_SPELLINGS.get(level, (level.lower(),))
        filters.append({"bool": {
            "should": [{"term": {fields["level"]: {"value": s, "case_insensitive": True}}} for s in spellings],
            "minimum_should_match": 1,
        }})
    must: list[dict[str, Any]] = []
    if words:
        must.append({"match": {fields["message"]: {"query": " ".join(words), "operator": "and"}}})
    must.extend({"match_phrase": {fields["message"]: {"query": phrase}}} for phrase in phrases)
    return {
        "query": {"bool": {"filter": filters, "must": must}},
        "sort": [{fields["timestamp"]: {"order": "asc", "unmapped_type": "date"}}, {"_doc": {"order": "asc"}}],
        "size": limit,
        "track_total_hits": True,
    }


# ---- the tool ---------------------------------------------------------------------------------


def _check_index(index: str) -> str:
    parts = [part.strip() for part in index.split(",")]
    if not parts or any(not part or part.startswith(("_", "-", "+")) or _BAD_INDEX_CHARS & set(part) for part in parts):
        raise ValueError("DIAG_ES_INDEX must be index names or patterns such as 'logs-*' (comma-separated)")
    return ",".join(parts)


class ElasticsearchLogsTool(HttpLogsTool):
    """The query_logs tool over Elasticsearch or OpenSearch (`_search` query DSL); one aiohttp session, closed by aclose()."""

    def __init__(
        self,
        url: str,
        clock: Callable[[], datetime],
        *,
        index: str = "logs-*",
        service_field: str = "service",
        level_field: str = "level",
        message_field: str = "message",
        timestamp_field: str = "@timestamp",
        api_key: SecretStr | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._fields = {"service": service_field, "level": level_field, "message": message_field,
                        "timestamp": timestamp_field}
        for role, name in self._fields.items():
            if not name or not name.strip() or name != name.strip() or name.startswith("_"):
                raise ValueError(f"DIAG_ES_{role.upper()}_FIELD must be a document field name, got {name!r}")
        self._index = _check_index(index)
        self._base, basic = split_url(url, "DIAG_ES_URL", "http://elasticsearch:9200")
        self._search_url = URL(f"{self._base}/{quote(self._index, safe='*,+-.:')}/_search", encoded=True)
        self._clock = clock
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        self._connect(url, basic, headers, "ApiKey", api_key, timeout_s)

    async def run(self, args: LogsArgs) -> RawResult:
        """Search the index for the documents matching the arguments; the exact total comes from `hits.total`."""
        start, end = checked_window(args, self._clock())
        words, phrases = ([], []) if every_line(args.query) else split_terms(args.query)
        if not words and not phrases and not every_line(args.query):
            raise ToolFailure("INVALID_ARGUMENTS", "query has no keywords; give words or a \"quoted phrase\".")
        # ES analyzes text into words; a term of punctuation only has no word to match (ES would then match nothing).
        unsearchable = [term for term in words + phrases if not _WORD.search(term)]
        words = [term for term in words if term not in unsearchable]
        phrases = [term for term in phrases if term not in unsearchable]
        if not words and not phrases and not every_line(args.query):
            raise ToolFailure("INVALID_ARGUMENTS", "query has no words to search: Elasticsearch matches whole words, "
                                                   "so punctuation alone (such as '*') cannot be searched.")
        search = build_search(args.service, words, phrases, args.level, start, end, args.limit, self._fields)
        body = await self._search(search)
        items, total, partial = parse_hits(body, self._fields)
        if partial and not items:
            raise ToolFailure("BACKEND_UNAVAILABLE", "Elasticsearch answered with no hits but some shards failed or "
                                                     "timed out; an incomplete empty answer is not evidence.")
        items = items[: args.limit]
        notes: dict[str, Any] = {
            "backend": "elasticsearch",
            "index": self._index,
            "query_dsl": search,
            "order": "chronological, earliest matches first",
            "match_scope": "keywords and phrases are matched as analyzed full-text words of the message field "
                           "(token-based, per the index's analyzer), not as substrings like the JSONL folder backend: "
                           "'pool' does not match 'HikariPool'",
            "total_count_exact": not partial,
        }
        if unsearchable:
            notes["unsearchable_terms"] = unsearchable  # punctuation only: the analyzer drops it, so it was not matched
        if partial:
            notes["partial"] = "some shards failed or timed out; the items are real matches, the total may be low"
        if items:
            notes["first_match"] = items[0]["timestamp"]
        items, cut = bound_items(items, ItemBounds())  # each line and the result bounded in bytes, as files are
        notes.update(cut)
        return RawResult(items=items, total_count=max(total, len(items)),
                         effective_arguments=effective_arguments(args, start, end), notes=notes)

    async def _search(self, search: dict[str, Any]) -> Any:
        """POST the search and return its JSON; every failure becomes a ToolFailure without secrets."""
        request = self._http.get().post(self._search_url, data=json.dumps(search).encode())
        status, body = await _ES.read(request, "search", self._http)
        if status == 400:
            raise _ES.rejected("search", self._reason(body))
        if status == 404 and self._error_type(body) == "index_not_found_exception":
            message = f"No index matches DIAG_ES_INDEX '{self._index}' ({self._reason(body)}); this call is not evidence."
            raise ToolFailure("ES_INDEX_MISSING", message)
        return _ES.json_body(status, body, "search", answer="Elasticsearch's answer")

    @staticmethod
    def _error(body: bytes) -> Any:
        try:
            obj = json.loads(body)
        except ValueError:
            return None
        return obj.get("error") if isinstance(obj, dict) else None

    def _error_type(self, body: bytes) -> str | None:
        error = self._error(body)
        kind = error.get("type") if isinstance(error, dict) else None
        return kind if isinstance(kind, str) else None

    def _reason(self, body: bytes) -> str:
        """ES's `error.reason` (or the plain body), on one line, shortened, with any secret removed."""
        error = self._error(body)
        text: str
        if isinstance(error, dict):
            reason = error.get("reason")
            causes = error.get("root_cause")
            if not isinstance(reason, str) and isinstance(causes, list) and causes and isinstance(causes[0], dict):
                reason = causes[0].get("reason")
            kind = error.get("type")
            text = str(reason) if reason is not None else ""
            if isinstance(kind, str) and kind and text:
                text = f"{kind}: {text}"
            elif isinstance(kind, str):
                text = text or kind
        elif isinstance(error, str):
            text = error
        else:
            text = body.decode("utf-8", "replace")
        return clean_error_text(text, self._secrets, [(self._base, "[ES]")])
