"""Which decisions two settings of the default strategy disagree on (issue 27).

Replays one openb trace (or the CI fixture) under ``--main`` weights and records, on every
arrival, where ``--shadow`` weights (of ``--shadow-policy``, by default the same policy)
would have chosen another node (``extender.simulator.divergence``); then replays the shadow
setting on its own and prints, side by side: unallocated % at 100 %, the failed pods by
request, the GPU-equivalents held per type at the end, the most frequent divergences (pod,
main node, shadow node; then by pod shape and by node classes alone), and why the free GPUs
are free at 100 % arrived and at the end in both runs (``extender.simulator.stranding``:
CPU or memory exhausted beside free GPUs, partial GPUs, whole GPUs no kind fits).

    nice .venv/bin/python benchmarks/placement_divergence.py --trace gpushare40 --seed 42 \\
        --main idlePrice=1 --shadow idlePrice=0
    nice .venv/bin/python benchmarks/placement_divergence.py --trace default --seed 42 \\
        --main '' --shadow '' --shadow-policy fgd          # the default against FGD
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
from extender.simulator.divergence import (  # noqa: E402
    ShadowReplay,
    by_classes,
    by_pod,
    summarise,
)
from extender.simulator.replay import ReplayOptions, ReplayResult  # noqa: E402
from extender.simulator.stranding import (  # noqa: E402
    STRANDED,
    Breakdown,
    Cause,
    StrandingReplay,
    compare,
)


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
    parser.add_argument("--shadow-policy", help="the shadow's policy (default: --policy)")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    main_s = scenario_for(args.trace, None, args.seed, weights_of(args.main))
    shadow_s = scenario_for(args.trace, None, args.seed, weights_of(args.shadow))
    options = ReplayOptions(policy=args.policy, seed=args.seed)
    shadow_policy = args.shadow_policy or args.policy
    shadow_replay = ShadowReplay(main_s, options, shadow_s.platform, shadow_policy)
    ours = shadow_replay.run()
    alone = StrandingReplay(shadow_s, ReplayOptions(policy=shadow_policy, seed=args.seed))
    theirs = alone.run()
    print(f"trace {args.trace}, seed {args.seed}: main {args.policy} {args.main!r}, "
          f"shadow {shadow_policy} {args.shadow!r}\n")
    print("| setting | unallocated % @100 | failed pods | GPU-equivalents held per type |")
    print("|---|---:|---:|---|")
    names = (f"{args.policy} {args.main}".strip(), f"{shadow_policy} {args.shadow}".strip())
    for name, result in zip(names, (ours, theirs), strict=True):
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
    print("\n| pod (any nodes) | count |\n|---|---:|")
    for pod, count in by_pod(early, args.top):
        print(f"| {pod} | {count} |")
    print("\n| main chose (any pod) | shadow would choose | count |\n|---|---|---:|")
    for chose, other, count in by_classes(early, args.top):
        print(f"| {chose} | {other} | {count} |")
    pairs = list(zip(shadow_replay.breakdowns, alone.breakdowns, strict=True))
    if shadow_replay.final is not None and alone.final is not None:
        pairs.append((shadow_replay.final, alone.final))
    for mine, other in pairs:
        print_stranding(mine, other, args.top)
    return 0


def print_stranding(mine: Breakdown, other: Breakdown, top: int) -> None:
    print(f"\nfree GPUs by cause at {mine.arrived_pct:g} % arrived (main) / "
          f"{other.arrived_pct:g} % (shadow), % of the cluster's GPUs:\n")
    print("| cause | main | shadow |\n|---|---:|---:|")
    for cause in Cause:
        print(f"| {cause.value} | {mine.pct(cause):.2f} | {other.pct(cause):.2f} |")
    print(f"| stranded (all but usable) | {sum(mine.pct(c) for c in STRANDED):.2f} | "
          f"{sum(other.pct(c) for c in STRANDED):.2f} |")
    print("\n| cause | node class | main GPUs (nodes) | shadow GPUs (nodes) |\n|---|---|---:|---:|")
    for cause, label, a, b, na, nb in compare(mine, other, top):
        print(f"| {cause} | {label} | {a:.1f} ({na}) | {b:.1f} ({nb}) |")


if __name__ == "__main__":
    sys.exit(main())
