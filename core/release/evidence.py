"""What a published report keeps of its verified evidence, so "Show evidence" works after the canonical TTL.

Exactly the projections the guards verified (the snapshot), bounded in bytes: when over the bound, the largest
projection loses its last items first (marked truncated), so every cited call keeps its first, best-ranked items.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from core.contracts.release import VerifiedEvidenceSnapshot
from core.evidence.json_size import compact_json_size

EVIDENCE_MAX_BYTES = 48 * 1024
ITEM_KEYS = ("logs", "rows", "evidence_blocks")


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


def _fits_surely(projections: dict[str, dict[str, Any]], budget: int) -> bool:
    """True when the projections' _size total is surely within `budget`: json's compact size of JSON's own types
    (compact_json_size, by orjson) at most half of it, since _size only adds a space after each `,` and `:`, each
    one byte of the compact text. False means "not sure": the caller measures exactly."""
    total = 0
    for projection in projections.values():
        size = compact_json_size(projection)
        if size is None:
            return False
        total += size
    return 2 * total <= budget


def _drop_one(projection: dict[str, Any]) -> bool:
    """Remove the last item of the projection's item list; False when it has none left."""
    for key in ITEM_KEYS:
        items = projection.get(key)
        if isinstance(items, list) and items:
            items.pop()
            projection["truncated"] = True
            return True
    return False


def kept_evidence(snapshot: VerifiedEvidenceSnapshot, max_bytes: int = EVIDENCE_MAX_BYTES
                  ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(projections, effective arguments) of the cited calls, together at most `max_bytes` of JSON. A projection
    that fits is the snapshot's own (the report is built from it and dumped, never changed in place); only one that
    loses items is copied first (copying them all was ~400 deepcopy calls a run for nothing)."""
    projections = dict(snapshot.projections)
    arguments = {cid: copy.deepcopy(snapshot.effective_arguments.get(cid, {})) for cid in projections}
    budget = max_bytes - _size(arguments)
    if _fits_surely(projections, budget):  # nothing to drop: the exact sizes would say so too
        return projections, arguments
    sizes = {cid: _size(p) for cid, p in projections.items()}
    copied: set[str] = set()
    while sum(sizes.values()) > budget:
        cid = max(sizes, key=lambda k: sizes[k])
        if cid not in copied:
            projections[cid] = copy.deepcopy(projections[cid])
            copied.add(cid)
        if not _drop_one(projections[cid]):
            break
        sizes[cid] = _size(projections[cid])
    return projections, arguments
