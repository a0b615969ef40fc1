"""Elasticsearch / OpenSearch search responses to query_logs items: fields by (dotted) path, short extras, times in UTC."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from core.errors import ToolFailure
from core.tools.logs.backend import CORE_KEYS, MAX_EXTRA_FIELDS, is_short
from core.tools.logs.query import normalise_level, parse_timestamp
from core.tools.logs.scan import iso_utc


def field_value(source: Mapping[str, Any], path: str) -> Any:
    """A `_source` field by name: a flat key ("log.level") first, else the nested path (log -> level); None if absent."""
    if path in source:
        return source[path]
    node: Any = source
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _flatten(source: Mapping[str, Any], prefix: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every non-object value, objects flattened up to three levels deep."""
    for key, value in source.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if depth < 3:
                yield from _flatten(value, name + ".", depth + 1)
        else:
            yield name, value


def _timestamp(value: Any, sort_values: Any) -> str:
    """The hit's time as ISO-8601 UTC 'Z': the source's ISO string or epoch millis, else the sort value (millis)."""
    parsed = parse_timestamp(value)
    if parsed is not None:
        return iso_utc(parsed)
    millis: Any = value
    if not isinstance(millis, int | float) or isinstance(millis, bool):
        millis = sort_values[0] if isinstance(sort_values, list) and sort_values else None
    if isinstance(millis, int | float) and not isinstance(millis, bool) and math.isfinite(millis):
        try:
            return iso_utc(datetime.fromtimestamp(millis / 1000, UTC))
        except (OverflowError, OSError, ValueError):
            pass
    return str(value) if value is not None else ""


def hit_item(hit: Mapping[str, Any], fields: Mapping[str, str]) -> dict[str, Any]:
    """One RawResult item from an ES hit: timestamp, service, level, message, then short other `_source` fields."""
    source = hit.get("_source")
    if not isinstance(source, Mapping):
        raise TypeError("hit without _source")
    message = field_value(source, fields["message"])
    level = field_value(source, fields["level"])
    service = field_value(source, fields["service"])
    item: dict[str, Any] = {
        "timestamp": _timestamp(field_value(source, fields["timestamp"]), hit.get("sort")),
        "service": "" if service is None else str(service),
        "level": normalise_level(level) if level is not None and is_short(level) else "UNKNOWN",
        "message": "" if message is None else message if isinstance(message, str) else json.dumps(message),
    }
    skip = CORE_KEYS | set(fields.values())
    extras = 0
    for key, value in _flatten(source):
        if extras >= MAX_EXTRA_FIELDS:
            break
        if key in skip or key in item or not is_short(value):
            continue
        item[key] = value
        extras += 1
    return item


def parse_hits(body: Any, fields: Mapping[str, str]) -> tuple[list[dict[str, Any]], int, bool]:
    """(items, total, partial) of a `_search` answer; raises ES_BAD_RESPONSE on any other shape."""
    hits = body.get("hits") if isinstance(body, dict) else None
    if not isinstance(hits, dict) or not isinstance(hits.get("hits"), list):
        raise ToolFailure("ES_BAD_RESPONSE", "Elasticsearch answered the search with an unexpected shape; not evidence.")
    try:
        items = [hit_item(hit, fields) for hit in hits["hits"]]
        raw_total = hits.get("total")
        if isinstance(raw_total, dict):
            total, relation = int(raw_total["value"]), raw_total.get("relation", "eq")
        elif isinstance(raw_total, int):  # ES 6 sends a bare number
            total, relation = raw_total, "eq"
        else:
            raise TypeError("hits.total missing")
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ToolFailure("ES_BAD_RESPONSE", "Elasticsearch answered the search with malformed hits; not evidence.") from exc
    shards = body.get("_shards")
    failed = shards.get("failed", 0) if isinstance(shards, dict) else 0
    partial = bool(body.get("timed_out")) or (isinstance(failed, int) and failed > 0) or relation != "eq"
    return items, total, partial
