"""Which decisions two settings of the default strategy disagree on (issue 27).

Replays one openb trace (or the CI fixture) under ``--main`` weights and records, on every
arrival, where ``--shadow`` weights would have chosen another node
(``extender.simulator.divergence``); then replays the shadow setting on its own and prints,
side by side: unallocated % at 100 %, the failed pods by request, the GPU-equivalents held
per type at the end, and the most frequent divergences (pod, main node, shadow node).

    nice .venv/bin/python benchmarks/placement_divergence.py --trace gpushare40 --seed 42 \\
        --main idlePrice=1 --shadow idlePrice=0
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.placement_cost import scenario_for  # noqa: E402
from extender.simulator.divergence import ShadowReplay, summarise  # noqa: E402
from extender.simulator.replay import Replay, ReplayOptions, ReplayResult  # noqa: E402


def weights_of(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in text.split(","):
        if part.strip():
            name, _, value = part.partition("=")
            out[name.strip()] = float(value)
    return out


def held(result: ReplayResult) -> dict[str, float]:
    totals: Counter[str] = Counter()
    for label in result.placed_by_label.values():
        for key, value in label.items():
            if key != "pods":
                totals[key] += value
    return dict(sorted(totals.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="gpushare40")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--policy", default="cost-fragmentation")
    parser.add_argument("--main", default="idlePrice=1")
    parser.add_argument("--shadow", default="idlePrice=0")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    main_s = scenario_for(args.trace, None, args.seed, weights_of(args.main))
    shadow_s = scenario_for(args.trace, None, args.seed, weights_of(args.shadow))
    options = ReplayOptions(policy=args.policy, seed=args.seed)
    shadow_replay = ShadowReplay(main_s, options, shadow_s.platform)
    ours = shadow_replay.run()
    theirs = Replay(shadow_s, options).run()
    print(f"trace {args.trace}, seed {args.seed}, {args.policy}: main {args.main}, "
          f"shadow {args.shadow}\n")
    print("| setting | unallocated % @100 | failed pods | GPU-equivalents held per type |")
    print("|---|---:|---:|---|")
    for name, result in ((args.main, ours), (args.shadow, theirs)):
        types = ", ".join(f"{k} {v:.0f}" for k, v in held(result).items())
        print(f"| {name} | {result.unallocated_at(100)} | {result.failed} | {types} |")
    print("\nfailed pods by request (main / shadow):")
    for kind in sorted(set(ours.failures_by_kind) | set(theirs.failures_by_kind)):
        print(f"  {kind}: {ours.failures_by_kind.get(kind, 0)} / "
              f"{theirs.failures_by_kind.get(kind, 0)}")
    divergences = shadow_replay.divergences
    early = [d for d in divergences if d.arrived_pct <= 100]
    print(f"\n{len(divergences)} divergent decisions of {ours.placed} placements "
          f"({len(early)} before 100 % arrived); first at "
          f"{divergences[0].arrived_pct if divergences else '-'} %\n")
    print("| pod | main chose | shadow would choose | count |")
    print("|---|---|---|---:|")
    for pod, chose, other, count in summarise(early, args.top):
        print(f"| {pod} | {chose} | {other} | {count} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
