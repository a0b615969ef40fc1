"""The series the agent sees: per series its metric, labels, unit, kind, summary and a downsampled list of points,
fitted into the projection's byte bound.

Fitting keeps the summary of as many series as fit (highest peak first) and gives the points what is left: it
halves the points per series until everything fits, and drops series from the end only when even summaries alone do
not fit. Label values are cleaned like every tool text (redacted, instruction-like spans marked, capped)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from core.tools.metrics.series import Series, downsample
from core.tools.metrics.units import KINDS

PROJECTION_POINTS = 60
MAX_LABELS = 12
MAX_LABEL_CHARS = 120
SUMMARY_KEYS = ("first", "last", "min", "max")


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode())


def _moment(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _shown_points(item: dict[str, Any], budget: int) -> list[list[Any]]:
    """At most about `budget` of the item's points, its min and max points always among them."""
    points = [p for p in item.get("points") or [] if isinstance(p, list | tuple) and len(p) == 2]
    if len(points) <= budget:
        return [list(p) for p in points]
    series, pairs = Series(str(item.get("metric", "")), {}), []
    for pair in points:
        t = _moment(pair[0])
        if t is not None:
            series.add(t, float("nan") if pair[1] is None else float(pair[1]))
            pairs.append(pair)
    marks = [item.get(key) for key in ("min", "max")]
    keep = [t for m in marks if isinstance(m, dict) and (t := _moment(m.get("t"))) is not None]
    index = {t: i for i, t in enumerate(series.times)}
    return [list(pairs[index[p.t]]) for p in downsample(series, budget, keep)]


def clean_item(item: dict[str, Any], clean: Callable[[Any, int], str]) -> dict[str, Any]:
    """A raw series item without its points, texts cleaned and labels capped."""
    raw_labels = item.get("labels")
    labels: dict[str, Any] = raw_labels if isinstance(raw_labels, dict) else {}
    kind = item.get("kind") if item.get("kind") in KINDS else "unknown"
    out: dict[str, Any] = {
        "metric": clean(item.get("metric", ""), MAX_LABEL_CHARS),
        "labels": {clean(k, 64): clean(v, MAX_LABEL_CHARS) for k, v in list(labels.items())[:MAX_LABELS]},
        "unit": clean(item.get("unit", ""), 16),
        "kind": kind,
    }
    for key in (*SUMMARY_KEYS, "mean", "points_total"):
        if key in item:
            out[key] = item[key]
    return out


def fit_series(items: Sequence[dict[str, Any]], base_bytes: int, max_bytes: int,
               clean: Callable[[Any, int], str]) -> tuple[list[dict[str, Any]], bool]:
    """The series items that fit beside an envelope of `base_bytes`, and whether anything was cut."""
    bare = [clean_item(i, clean) for i in items]
    points = PROJECTION_POINTS
    while True:
        shown = [{**b, "points": _shown_points(i, points)} if points else b for b, i in zip(bare, items, strict=True)]
        total = base_bytes + sum(_size(s) + 1 for s in shown)
        if total <= max_bytes:
            # Downsampling to PROJECTION_POINTS is the design (points_total says how many there were), not a cut.
            wanted = [min(len(i.get("points") or []), PROJECTION_POINTS) for i in items]
            cut = any(len(s.get("points", [])) < w for s, w in zip(shown, wanted, strict=True))
            return shown, cut
        if points == 0:
            break
        points = points // 2 if points > 4 else 0
    kept: list[dict[str, Any]] = []
    total = base_bytes
    for b in bare:
        total += _size(b) + 1
        if total > max_bytes:
            break
        kept.append(b)
    return kept, True
