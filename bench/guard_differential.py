"""Differential harness for the EvidenceGuard: every case's verdict, cold and warm, as JSON lines, to diff two trees.

Run with the tree under test first on the path (the harness itself may live in another tree):

    PYTHONPATH=/path/to/tree python bench/guard_differential.py --out /tmp/tree.jsonl [--store memory|redis]
    diff <(PYTHONPATH=/base ... --out -) <(PYTHONPATH=/mine ... --out -)   # or diff the two files

Each case runs in a fresh run of its own through a new EvidenceGuard: the first check is "cold", a second check of
the same draft by the same guard is "warm" (its caches answer). A line holds the case id, which check, whether the
draft is valid, its violations and warnings (code, path, message, severity, rule), the snapshot's derivations, and a
hash of the whole GuardResult JSON (projections and arguments of the snapshot included), so any difference shows.

Cases (all deterministic):
- corpus: eval/grounding (cases.jsonl over records.jsonl, the metrics cases inline);
- gen-1, gen-2, gen-3: the generated paraphrase / inventor eval (eval/paraphrase/generate.py), 3,000 cases a seed;
- wide-run: 1,500 generated cases (seed 4) in a run that holds every shared record, cited or not (the limitations
  rest on the whole run: the guard reads it);
- wide-cite: 1,500 generated cases (seed 5) whose analyses cite 10 calls (theirs and others of the shared
  records, seeded), in a run that holds every shared record;
- bench: bench/bench_guard.py's draft over its 20 records, and 400 seeded variants of it (numbers moved by one,
  scaled, units swapped, times shifted, citations shuffled).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import re
import sys
import time
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(1, str(HERE))  # bench_guard's records and draft (after the tree under test on PYTHONPATH)

import core  # noqa: E402
from core.contracts.draft import DiagnosisDraft  # noqa: E402
from core.contracts.evidence import CanonicalRecord  # noqa: E402
from core.contracts.release import GuardResult  # noqa: E402
from core.guard.corpus import load_corpus  # noqa: E402
from core.guard.evidence_guard import EvidenceGuard  # noqa: E402
from core.guard.rules import RuleSet, load_rules  # noqa: E402
from core.ports import CanonicalStore  # noqa: E402
from core.stores.canonical import InMemoryCanonicalStore, RedisCanonicalStore  # noqa: E402

ROOT = Path(core.__file__).resolve().parent.parent
"""The tree under test (its eval data and generator are read from it)."""


@dataclass
class DiffCase:
    """One draft over the records of one run; `cited` are put in the run too (all records of the run)."""

    id: str
    records: list[CanonicalRecord]
    draft: dict[str, Any]


def corpus_cases() -> Iterator[DiffCase]:
    shared, cases = load_corpus(ROOT / "eval" / "grounding")
    for case in cases:
        yield DiffCase(f"corpus:{case.id}", [*(shared[c] for c in case.calls), *case.records], case.draft)


def _generated(seed: int, count: int) -> tuple[dict[str, CanonicalRecord], list[Any]]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from eval.paraphrase.generate import generate, shared_records

    return shared_records(), generate(seed, count)


def generated_cases(seed: int, count: int) -> Iterator[DiffCase]:
    shared, cases = _generated(seed, count)
    for case in cases:
        yield DiffCase(f"gen-{seed}:{case.id}", [*(shared[c] for c in case.calls), *case.records], case.draft)


def wide_run_cases(seed: int, count: int) -> Iterator[DiffCase]:
    shared, cases = _generated(seed, count)
    everything = list(shared.values())
    for case in cases:
        yield DiffCase(f"wide-run-{seed}:{case.id}", [*everything, *case.records], case.draft)


def wide_cite_cases(seed: int, count: int) -> Iterator[DiffCase]:
    shared, cases = _generated(seed, count)
    everything = list(shared.values())
    ids = [r.tool_call_id for r in everything]
    rng = random.Random(seed)
    for case in cases:
        draft = json.loads(json.dumps(case.draft))
        for item in draft.get("analysis", []):
            others = [c for c in ids if c not in item["tool_call_ids"]]
            item["tool_call_ids"] = [*item["tool_call_ids"], *rng.sample(others, 10 - len(item["tool_call_ids"]))]
        yield DiffCase(f"wide-cite-{seed}:{case.id}", [*everything, *case.records], draft)


_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_UNITS = [("ms", "s"), ("s", "ms"), ("ERROR", "WARN"), (" lines", " rows"), ("waiting=", "active="), ("22:", "21:")]


def _perturb(text: str, rng: random.Random) -> str:
    """Move one or two numbers of a text (by one, by ten times, by rounding) or swap a unit word."""
    for _ in range(rng.choice((1, 1, 2))):
        if rng.random() < 0.25:
            old, new = rng.choice(_UNITS)
            text = text.replace(old, new, 1)
            continue
        found = list(_NUMBER.finditer(text))
        if not found:
            continue
        m = rng.choice(found)
        value = m.group(0)
        choice = rng.randrange(5)
        if choice == 0:
            moved = str(int(float(value)) + rng.choice((-1, 1)))
        elif choice == 1:
            moved = str(int(float(value)) * 10)
        elif choice == 2:
            moved = f"about {value}"
        elif choice == 3:
            moved = value[:-1] or "0"
        else:
            moved = f"{value}.5"
        text = text[: m.start()] + moved + text[m.end() :]
    return text


def bench_cases(variants: int) -> Iterator[DiffCase]:
    import bench_guard

    records = bench_guard.build_records()
    base = bench_guard.build_draft(records).model_dump(mode="json")
    run_records = [r.model_copy(update={"run_id": "x"}) for r in records]
    yield DiffCase("bench:draft", run_records, base)
    rng = random.Random(21)
    ids = [r.tool_call_id for r in records]
    for n in range(variants):
        draft = json.loads(json.dumps(base))
        for item in draft["analysis"]:
            if rng.random() < 0.3:
                item["text"] = _perturb(item["text"], rng)
            if rng.random() < 0.1:
                item["tool_call_ids"] = rng.sample(ids, rng.choice((1, 2, 3)))
        if rng.random() < 0.3:
            draft["conclusion"]["text"] = _perturb(draft["conclusion"]["text"], rng)
        if rng.random() < 0.3:
            draft["limitations"]["scope"] = _perturb(draft["limitations"]["scope"], rng)
        if rng.random() < 0.2:
            draft["limitations"]["missing_info"] = [_perturb("pool sizes of svc-3 after 23:10 (waiting=9)", rng)]
        yield DiffCase(f"bench:v{n:04d}", run_records, draft)


def all_cases(scale: float = 1.0) -> Iterator[DiffCase]:
    n = max(1, int(3000 * scale))
    yield from corpus_cases()
    for seed in (1, 2, 3):
        yield from generated_cases(seed, n)
    yield from wide_run_cases(4, n // 2)
    yield from wide_cite_cases(5, n // 2)
    yield from bench_cases(max(1, int(400 * scale)))


def outcome(case_id: str, check: str, result: GuardResult) -> dict[str, Any]:
    def finding(v: Any) -> list[str]:
        return [v.code, v.path, v.message, str(v.severity), v.rule_id]

    derivations = [d.model_dump(mode="json") for d in result.snapshot.derivations] if result.snapshot else []
    return {
        "id": case_id,
        "check": check,
        "valid": result.valid,
        "violations": [finding(v) for v in result.violations],
        "warnings": [finding(v) for v in result.warnings],
        "derivations": derivations,
        "result_sha": hashlib.sha256(result.model_dump_json().encode()).hexdigest()[:16],
    }


async def stores(kind: str) -> AsyncGenerator[CanonicalStore, None]:
    if kind == "memory":
        while True:
            yield InMemoryCanonicalStore()
    import redis.asyncio as aioredis

    client = aioredis.from_url("redis://127.0.0.1:6379/0")
    prefix = f"guarddiff:{time.time_ns()}:"
    try:
        while True:
            yield RedisCanonicalStore(client, prefix, ttl_s=600)
    finally:
        keys = [k async for k in client.scan_iter(match=f"{prefix}*")]
        for i in range(0, len(keys), 500):
            await client.delete(*keys[i : i + 500])
        await client.aclose()


async def run(out: IO[str], kind: str, scale: float, only: str | None) -> int:
    rules: RuleSet = load_rules()
    made = stores(kind)
    count = 0
    try:
        for case in all_cases(scale):
            if only is not None and not case.id.startswith(only):
                continue
            store = await anext(made)
            run_id = f"diff-{count}"
            for record in case.records:
                await store.put(record.model_copy(update={"run_id": run_id}))
            draft = DiagnosisDraft.model_validate(case.draft)
            guard = EvidenceGuard(store, rules)
            for check in ("cold", "warm"):
                result = await guard.check(run_id, draft)
                out.write(json.dumps(outcome(case.id, check, result), sort_keys=True) + "\n")
            count += 1
    finally:
        await made.aclose()
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="-", help="JSON lines file ('-': standard output)")
    parser.add_argument("--store", choices=("memory", "redis"), default="memory")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the generated cases (1.0: ~12,700)")
    parser.add_argument("--only", default=None, help="only the cases whose id starts with this")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.out == "-":
        count = asyncio.run(run(sys.stdout, args.store, args.scale, args.only))
    else:
        with open(args.out, "w", encoding="utf-8") as out:
            count = asyncio.run(run(out, args.store, args.scale, args.only))
    print(f"{count} cases, cold and warm, tree {ROOT}, store {args.store}, {time.perf_counter() - started:.1f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
