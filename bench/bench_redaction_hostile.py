"""Redaction on hostile input: every secret rule on 100 KB of the shapes that make a backtracking engine quadratic.

Run: python bench/bench_redaction_hostile.py. Prints the slowest rule/shape pairs (the rule alone) and redact() with
the whole rule set on the shapes every rule family shares, as CPU ms per 100 KB and MB/s, then the 2x-size ratio of
the slowest ones (a linear pattern stays near 2.0, a quadratic one goes to 4). Issue 25's case, `"://a:"` x 40 KB,
took 1.2 s with Python's re; the goal is linear time for every pattern.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.evidence.redaction import DEFAULT_RULES, _rule_findings, redact
from core.evidence.secrets.ruleset import SecretRule
from testkit.hostile_text import SIZE, common_texts, hostile_texts


def cpu_s(fn: object, repeat: int = 3) -> float:
    """Best CPU time of fn() over `repeat` runs (CPU time: the other processes on the machine drift out)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - started)
    return best


def per_rule() -> list[tuple[float, SecretRule, str, str]]:
    rows: list[tuple[float, SecretRule, str, str]] = []
    for rule in DEFAULT_RULES.rules:
        for label, text in hostile_texts(rule):
            data = text.encode()
            rows.append((cpu_s(lambda data=data, rule=rule: _rule_findings(data, rule, False, []), 1), rule, label, text))
    return sorted(rows, key=lambda row: row[0], reverse=True)


def main() -> None:
    rows = per_rule()
    print(f"{len(rows)} (rule, hostile text) pairs of {SIZE // 1000} KB; slowest, the rule alone:")
    for spent, rule, label, text in rows[:8]:
        double = text * 2
        ratio = cpu_s(lambda double=double, rule=rule: _rule_findings(double.encode(), rule, False, [])) / max(
            cpu_s(lambda text=text, rule=rule: _rule_findings(text.encode(), rule, False, [])), 1e-9)
        print(f"  {rule.id:<40} {label[:34]:<36} {spent * 1000:8.1f} ms  {SIZE / 1e6 / spent:7.1f} MB/s  2x size: {ratio:.2f}x")
    print("\nredact() with every rule on the shapes the families share:")
    common = sorted(((cpu_s(lambda text=text: redact(text)), label) for label, text in common_texts()), reverse=True)
    for spent, label in common[:8]:
        print(f"  {label[:40]:<42} {spent * 1000:8.1f} ms  {SIZE / 1e6 / spent:7.1f} MB/s")
    dsn = "://a:" * (40_000 // 5)
    print(f"\nissue 25's case, '://a:' x 40 KB: {cpu_s(lambda: redact(dsn)) * 1000:.2f} ms (was 1,200 ms with Python re)")
    print(f"slowest pair: {rows[0][0] * 1000:.1f} ms per {SIZE // 1000} KB (goal: linear; a quadratic pattern takes seconds)")


if __name__ == "__main__":
    main()
