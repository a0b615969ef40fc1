"""Upper bounds of the guard's cold-check savings: bench_guard's cold check with one part made free (an exact lookup
of the answers a first check recorded), to count what a structural change to that part could save at most.

Run under callgrind twice per mode and subtract (instruction counts are repeatable with a fixed hash seed):

    for n in 10 40; do PYTHONHASHSEED=0 PYTHONPATH=$PWD valgrind --tool=callgrind \\
        --callgrind-out-file=/tmp/cg-$n.out python bench/guard_bounds.py --mode index --checks $n; done
    # (Ir of cg-40 - Ir of cg-10) / 30 = instructions per cold check, memory store read included

Modes (each free part answers exactly as before: the result of every check is compared with the first one's):
- none: the real cold check;
- index: Grounder._direct (every evidence search of a claim, and the record reading it triggers) is a dict
  lookup: a perfect evidence index that costs nothing to build;
- extract: the draft texts' quantity extraction is a dict lookup;
- parse: the projections' parse outcomes are a dict lookup (what a write-time digest of them would save);
- all: the three together (what is left: the other rules, GuardInput, the grounding loop itself, the snapshot).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parent))

import bench_guard

from core.guard import grounding, inputs
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.stores.canonical import InMemoryCanonicalStore

MODES = ("none", "index", "extract", "parse", "all")


def _recording(real: Callable[..., Any], kept: dict[Any, Any], key: Callable[..., Any]) -> Callable[..., Any]:
    def first(*args: Any) -> Any:
        found = kept[key(*args)] = real(*args)
        return found

    return first


def _lookup(kept: dict[Any, Any], key: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *args: kept[key(*args)]


def _direct_key(_self: Any, claim: Any, calls: Any, context: Any, stat: Any = None) -> Any:
    return (claim.kind, claim.value, claim.clock, claim.tolerance, claim.bound, claim.limit_cue, claim.noun,
            claim.text, tuple(c.tool_call_id for c in calls), context, stat)


async def run(mode: str, checks: int) -> None:
    store = InMemoryCanonicalStore()
    records = bench_guard.build_records()
    for record in records:
        await store.put(record)
    draft = bench_guard.build_draft(records)
    rules = load_rules()
    direct, parsed = grounding.Grounder._direct, inputs.parse_projection_keyed
    extracted = getattr(grounding, "extract_with_text")  # noqa: B009  (not exported: replaced here on purpose)
    answers: dict[Any, Any] = {}
    texts: dict[Any, Any] = {}
    outcomes: dict[Any, Any] = {}
    grounding.Grounder._direct = _recording(direct, answers, _direct_key)  # type: ignore[method-assign]
    setattr(grounding, "extract_with_text", _recording(extracted, texts, lambda text: text))  # noqa: B010
    inputs.parse_projection_keyed = _recording(parsed, outcomes, lambda _p, key, _kept: key)
    first = (await EvidenceGuard(store, rules).check(bench_guard.RUN, draft)).model_dump_json()
    grounding.Grounder._direct = (  # type: ignore[method-assign]
        _lookup(answers, _direct_key) if mode in ("index", "all") else direct)
    setattr(grounding, "extract_with_text",  # noqa: B010
            _lookup(texts, lambda text: text) if mode in ("extract", "all") else extracted)
    inputs.parse_projection_keyed = (
        _lookup(outcomes, lambda _p, key, _kept: key) if mode in ("parse", "all") else parsed)
    for _ in range(checks):
        result = await EvidenceGuard(store, rules).check(bench_guard.RUN, draft)
    assert checks == 0 or result.model_dump_json() == first, "a free part answered differently"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=MODES, default="none")
    parser.add_argument("--checks", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(run(args.mode, args.checks))


if __name__ == "__main__":
    main()
