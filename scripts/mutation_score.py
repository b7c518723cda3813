"""Killed share of mutants per package, from mutmut's result files (mutants/**/*.py.meta).

Killed = a test failed (or the mutant timed out, i.e. the tests noticed it); survived = every test passed; no
tests = no unit test runs the mutated function. The score is killed / (killed + survived + no tests).
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

KILLED = {1, 3, 24, -24, 36, 152, 255}  # mutmut's "killed" and "timeout" exit codes
SURVIVED = {0}
NO_TESTS = {5, 33}


def package_of(mutant: str) -> str:
    mod = mutant.split(".x", 1)[0]  # harness.stats._effect.x_paired_effect__mutmut_3 -> harness.stats._effect
    parts = mod.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else mod


def main(root: str = "mutants") -> int:
    counts: dict[str, Counter] = {}
    for meta in sorted(Path(root).rglob("*.py.meta")):
        for mutant, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            kind = ("killed" if code in KILLED else "survived" if code in SURVIVED else
                    "no tests" if code in NO_TESTS else "not run")
            counts.setdefault(package_of(mutant), Counter())[kind] += 1
    if not counts:
        print(f"no mutmut results under {root}/", file=sys.stderr)
        return 1
    print(f"{'package':<22} {'mutants':>8} {'killed':>7} {'survived':>9} {'no tests':>9} {'not run':>8} {'score':>7}")
    for pkg, c in sorted(counts.items()):
        scored = c["killed"] + c["survived"] + c["no tests"]
        score = c["killed"] / scored if scored else float("nan")
        print(f"{pkg:<22} {sum(c.values()):>8} {c['killed']:>7} {c['survived']:>9} {c['no tests']:>9} "
              f"{c['not run']:>8} {score:>7.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
