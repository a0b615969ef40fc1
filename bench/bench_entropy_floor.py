"""How many uniformly random base62 tokens the keyword-free high-entropy-token rule lets through, by length: the flat
4.2-bit floor against the length-scaled floor (SecretRule.entropy_floor). No service needed.

Run: python bench/bench_entropy_floor.py [--samples 50000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import string

from core.evidence.redaction import DEFAULT_RULES, shannon_entropy

_B62 = string.ascii_letters + string.digits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rule = next(r for r in DEFAULT_RULES.rules if r.id == "high-entropy-token")
    draw = random.Random(args.seed)
    print(f"{'length':>6} {'floor':>6} {'under 4.2':>10} {'under floor':>12}   ({args.samples:,} tokens a length)")
    for size in (32, 34, 36, 38, 40, 44, 48):
        values = [shannon_entropy("".join(draw.choice(_B62) for _ in range(size))) for _ in range(args.samples)]
        floor = rule.entropy_floor(size)
        flat = sum(v <= rule.entropy for v in values) / args.samples
        scaled = sum(v <= floor for v in values) / args.samples
        print(f"{size:>6} {floor:>6.2f} {flat:>10.4%} {scaled:>12.4%}")


if __name__ == "__main__":
    main()
