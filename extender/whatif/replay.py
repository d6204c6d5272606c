"""What-if on a user's cluster: replay pod manifests against a ``kubectl get nodes,pods -A -o
json`` dump through the service itself (``ExtenderService`` offline: the same decode,
inventory, filter, prioritize and bind kube-scheduler would call), once per policy.

Each pod goes the way kube-scheduler drives the extender: ``filter`` on every node,
``prioritize`` on the feasible ones, the best priority wins (ties: the node the extender holds
for the pod, i.e. its own first choice), ``bind``. A pod no node takes waits, with the reasons
filter gave, grouped. Pods are placed one after the other, in manifest order, each seeing the
GPUs the previous ones took; the dump's bound pods hold what they hold.
"""

from __future__ import annotations

import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from extender.core.assign import taken_fraction
from extender.platform import Platform
from extender.sync.offline import ClusterObjects
from extender.whatif.manifests import PodManifest

WIDTH = 100


@dataclass(frozen=True)
class Outcome:
    pod: str
    request: str
    node: str = ""
    gpus: tuple[int, ...] = ()
    type_id: str = ""
    gpu_equivalents: float = 0.0
    cost_per_hour: float = 0.0
    waits: str = ""
    """Why no node took it: the filter's reasons, grouped, most nodes first."""

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "request": self.request, "node": self.node or None,
                "gpus": list(self.gpus), "type": self.type_id or None,
                "gpuEquivalents": round(self.gpu_equivalents, 4),
                "costPerHour": round(self.cost_per_hour, 4), "waits": self.waits or None}


@dataclass
class PolicyRun:
    policy: str
    outcomes: list[Outcome] = field(default_factory=list)
    allocated_before: float = 0.0
    allocated_after: float = 0.0
    gpus: int = 0
    wall_seconds: float = 0.0

    @property
    def placed(self) -> int:
        return sum(1 for o in self.outcomes if o.node)

    @property
    def cost_per_hour(self) -> float:
        return sum(o.cost_per_hour for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        return {"policy": self.policy, "placed": self.placed,
                "waiting": len(self.outcomes) - self.placed, "gpus": self.gpus,
                "allocatedGpusBefore": round(self.allocated_before, 4),
                "allocatedGpusAfter": round(self.allocated_after, 4),
                "costPerHourOfPlacedPods": round(self.cost_per_hour, 4),
                "wallSeconds": round(self.wall_seconds, 3),
                "pods": [o.to_json() for o in self.outcomes]}


Progress = Callable[[str, int, int], None]


def with_policy(platform: Platform, policy: str) -> Platform:
    config = platform.config
    return replace(platform, config=replace(config, scoring=replace(config.scoring,
                                                                    strategy=policy)))


def what_if(platform: Platform, objects: ClusterObjects, pods: Sequence[PodManifest],
            policies: Sequence[str], *, progress: Progress | None = None) -> list[PolicyRun]:
    return [_replay(with_policy(platform, policy), policy, objects, pods, progress)
            for policy in policies]


def _replay(platform: Platform, policy: str, objects: ClusterObjects,
            pods: Sequence[PodManifest], progress: Progress | None) -> PolicyRun:
    from extender.server.service import ExtenderService

    began = time.monotonic()
    service = ExtenderService.from_cluster_objects(platform, objects)
    service.start()
    snapshot = service.inventory.snapshot()
    names = [n for n, ok in zip(snapshot.node_names, snapshot.node_valid.tolist(), strict=True)
             if ok]
    run = PolicyRun(policy, gpus=int((snapshot.node_valid[:, None] & snapshot.present).sum()),
                    allocated_before=_allocated(service))
    for i, manifest in enumerate(pods):
        run.outcomes.append(_place(service, manifest.pod, names))
        if progress is not None:
            progress(policy, i + 1, len(pods))
    run.allocated_after = _allocated(service)
    run.wall_seconds = time.monotonic() - began
    return run


def _place(service: Any, pod: dict[str, Any], names: list[str]) -> Outcome:
    meta = pod["metadata"]
    key = f"{meta['namespace']}/{meta['name']}"
    decoded = service.scheduler.cycles.detached(pod).pod  # leaves no trace
    request = _describe(service, decoded.request)
    if decoded.error:
        return Outcome(key, "invalid", waits=decoded.error)
    if decoded.placement is None:
        return Outcome(key, request, waits="asks for no GPU: not the extender's to place")
    answer = service.verbs.filter({"Pod": pod, "Nodes": None, "NodeNames": names}).document()
    feasible = answer.get("NodeNames") or []
    if answer.get("Error"):
        return Outcome(key, request, waits=str(answer["Error"]))
    if not feasible:
        return Outcome(key, request, waits=_grouped_reasons(answer))
    scores = {p["Host"]: int(p["Score"]) for p in service.verbs.prioritize(
        {"Pod": pod, "Nodes": None, "NodeNames": feasible}).document()}
    best_score = max((scores.get(n, 0) for n in feasible), default=0)
    best = [n for n in feasible if scores.get(n, 0) == best_score]
    held = service.inventory.holding(meta["uid"])
    node = held.node if held is not None and held.node in best else sorted(best)[0]
    result = service.verbs.bind({"PodName": meta["name"], "PodNamespace": meta["namespace"],
                                 "PodUID": meta["uid"], "Node": node}).document()
    if result["Error"]:
        return Outcome(key, request, waits=f"bind to {node} refused: {result['Error']}")
    holding = service.inventory.holding(meta["uid"])
    assignment = holding.assignment if holding is not None else None
    if assignment is None:
        return Outcome(key, request, node=node)
    snapshot = service.inventory.snapshot()
    row = snapshot.node_index[node]
    share = taken_fraction(snapshot, row, assignment.grants)
    catalog = snapshot.catalog
    price = float(catalog.price[catalog.index_of(assignment.type_id)]) \
        if assignment.type_id in {t.id for t in catalog.types} else 0.0
    return Outcome(key, request, node=node, gpus=assignment.gpu_indices,
                   type_id=assignment.type_id, gpu_equivalents=share,
                   cost_per_hour=share * price)


def _describe(service: Any, request: Any) -> str:
    if request is None:
        return "no GPU"
    text = str(request.describe())
    if request.types is not None and request.type_source:  # named by the pod
        catalog = service.platform.catalog
        text += " " + "|".join(sorted(catalog.id_of(t) for t in request.types))
    return text


def _grouped_reasons(answer: dict[str, Any]) -> str:
    counts: Counter[str] = Counter()
    for field_name in ("FailedNodes", "FailedAndUnresolvableNodes"):
        for message in (answer.get(field_name) or {}).values():
            counts[str(message)] += 1
    if not counts:
        return "no node in the cluster file"
    return "; ".join(f"{n} node{'s' if n > 1 else ''}: {m}" for m, n in counts.most_common())


def _allocated(service: Any) -> float:
    snapshot = service.inventory.snapshot()
    total = 0.0
    for holding in service.inventory.holdings():
        row = snapshot.node_index.get(holding.node)
        if row is not None and holding.assignment is not None:
            total += taken_fraction(snapshot, row, holding.assignment.grants)
    return total


# -- text ----------------------------------------------------------------------------------

def render(runs: Sequence[PolicyRun], *, source: str = "") -> str:
    if not runs:
        return ""
    policies = [r.policy for r in runs]
    first = runs[0]
    pod_w, req_w = 24, 20
    col_w = max(16, (WIDTH - pod_w - req_w - 2) // len(runs) - 1)
    lines = [_cut(f"what-if: {len(first.outcomes)} pods on {source or 'the cluster file'}; "
                  f"{first.gpus} GPUs, {first.allocated_before:.2f} GPU-equivalents held "
                  "before", WIDTH), ""]
    lines.append(f"{'POD':<{pod_w}} {'REQUEST':<{req_w}} "
                 + " ".join(f"{p:<{col_w}}" for p in policies).rstrip())
    for i, outcome in enumerate(first.outcomes):
        cells = [_cell(run.outcomes[i], col_w) for run in runs]
        lines.append(f"{_cut(outcome.pod, pod_w):<{pod_w}} {_cut(outcome.request, req_w):<{req_w}} "
                     + " ".join(f"{c:<{col_w}}" for c in cells).rstrip())
    lines.append("")
    lines.append(f"{'POLICY':<22} {'PLACED':>6} {'WAITING':>7} {'GPU-EQ HELD (BEFORE->AFTER)':>28} "
                 f"{'$/H OF PLACED PODS':>19}")
    for run in runs:
        held = f"{run.allocated_before:.2f} -> {run.allocated_after:.2f} of {run.gpus}"
        lines.append(f"{_cut(run.policy, 22):<22} {run.placed:>6} "
                     f"{len(run.outcomes) - run.placed:>7} {held:>28} {run.cost_per_hour:>19.2f}")
    waiting = [(run.policy, o) for run in runs for o in run.outcomes if not o.node]
    if waiting:
        lines.append("")
        lines.append("waiting:")
        for policy, outcome in waiting:
            label = f"  {outcome.pod}" + (f" ({policy})" if len(runs) > 1 else "") + ": "
            lines += textwrap.wrap(label + outcome.waits, WIDTH, subsequent_indent="      ",
                                   break_on_hyphens=False)
    return "\n".join(lines)


def _cell(outcome: Outcome, width: int) -> str:
    if not outcome.node:
        return "waits"
    gpus = ",".join(map(str, outcome.gpus))
    text = f"{outcome.node}[{gpus}]" if gpus else outcome.node
    return _cut(text, width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def stderr_progress(stream: TextIO | None = None, every_seconds: float = 1.0) -> Progress:
    """Progress lines on stderr, at most one a second, and the last one of each policy."""
    last = [0.0]

    def report(policy: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= every_seconds:
            last[0] = now
            print(f"  {policy}: {done}/{total} pods replayed", file=stream or sys.stderr,
                  flush=True)

    return report
