"""The generated grounding eval on a second seed (CI keeps seed 1): rates per class and the floor.

Run: python bench/bench_grounding_eval.py [SEED] [CASES]. Prints eval/paraphrase/generate.py's table for seed 2
(default) and 5,000 cases: a different sample of sentences, fields and repetitions than CI's, so a rule fitted to
one sample shows here. Goal: 100 % of inventions blocked, at most 1 % of honest forms refused.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval.paraphrase.generate import evaluate, generate, report, summary


def main() -> None:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    started = time.perf_counter()
    rates, misses = asyncio.run(evaluate(generate(seed, count)))
    print(f"seed {seed}, {count} cases, {time.perf_counter() - started:.1f} s")
    report(rates, misses)
    blocked, refused, _, _ = summary(rates)
    print(f"floor {'MET' if blocked == 1.0 and refused <= 0.01 else 'NOT MET'}")


if __name__ == "__main__":
    main()
