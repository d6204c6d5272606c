"""The what-if's text: one row per owner (a Deployment's 168 replicas are one row), the
policies side by side, then why pods wait with identical reasons collapsed; ``wide``: one row
per pod. Columns fit the terminal's width; a cut cell ends in "…"."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from extender.whatif.replay import Outcome, PolicyRun


@dataclass(frozen=True)
class OwnerRow:
    owner: str
    request: str
    positions: tuple[int, ...]
    """Indices of the owner's pods in each run's outcomes."""


def owner_rows(outcomes: Sequence[Outcome]) -> list[OwnerRow]:
    """Pods grouped by owner (a bare pod is its own group), in first-seen order."""
    order: dict[tuple[str, str], list[int]] = {}
    for i, o in enumerate(outcomes):
        order.setdefault((o.owner or o.pod, o.request), []).append(i)
    return [OwnerRow(owner, request, tuple(p)) for (owner, request), p in order.items()]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _placed_cell(outcomes: Sequence[Outcome]) -> str:
    placed = [o for o in outcomes if o.node]
    if len(outcomes) == 1:
        o = outcomes[0]
        if not o.node:
            return "waits"
        gpus = ",".join(map(str, o.gpus))
        return f"{o.node}[{gpus}]" if gpus else o.node
    nodes = Counter(o.node for o in placed)
    text = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in nodes.most_common())
    waiting = len(outcomes) - len(placed)
    parts = [f"{len(placed)} placed" + (f" ({text})" if text else "")] if placed else []
    if waiting:
        parts.append(f"{waiting} wait")
    return "; ".join(parts)


def render(runs: Sequence[PolicyRun], *, source: str = "", width: int = 100,
           wide: bool = False) -> str:
    if not runs:
        return ""
    first = runs[0]
    lines = [_cut(f"what-if: {len(first.outcomes)} pods on {source or 'the cluster file'}; "
                  f"{first.gpus} GPUs, {first.allocated_before:.2f} GPU-equivalents held "
                  "before", width), ""]
    rows = [OwnerRow(o.pod, o.request, (i,)) for i, o in enumerate(first.outcomes)] if wide \
        else owner_rows(first.outcomes)
    labels = [r.owner + (f" (x{len(r.positions)})" if len(r.positions) > 1 else "")
              for r in rows]
    req_w = min(max([7, *(len(r.request) for r in rows)]), 24)
    cells = [[_placed_cell([run.outcomes[i] for i in r.positions]) for run in runs]
             for r in rows]
    col_w = [max([len(run.policy), *(len(c[j]) for c in cells)]) for j, run in enumerate(runs)]
    pod_w = max([3, *(len(label) for label in labels)])
    budget = width - req_w - 2 - sum(min(w, 16) + 1 for w in col_w)
    pod_w = max(12, min(pod_w, budget))
    spare = width - pod_w - req_w - 2 - len(runs)
    col_w = _share(col_w, spare)
    head = "POD" if wide else "OWNER / POD"
    lines.append(_row([head, "REQUEST", *[r.policy for r in runs]], [pod_w, req_w, *col_w]))
    for label, row, row_cells in zip(labels, rows, cells, strict=True):
        lines.append(_row([label, row.request, *row_cells], [pod_w, req_w, *col_w]))
    lines += ["", f"{'POLICY':<22} {'PLACED':>6} {'WAITING':>7} "
                  f"{'GPU-EQ HELD BEFORE->AFTER':>26} {'$/H PLACED':>10}"]
    for run in runs:
        held = f"{run.allocated_before:.2f} -> {run.allocated_after:.2f} of {run.gpus}"
        lines.append(f"{_cut(run.policy, 22):<22} {run.placed:>6} "
                     f"{len(run.outcomes) - run.placed:>7} {held:>26} {run.cost_per_hour:>10.2f}")
    waiting = _waiting(runs, rows)
    if waiting:
        lines += ["", "waiting:"]
        for label, text in waiting:
            lines += textwrap.wrap(f"  {label}: {text}", width, subsequent_indent="      ",
                                   break_on_hyphens=False)
    return "\n".join(lines)


def _share(widths: list[int], spare: int) -> list[int]:
    """Each policy column its own width if they all fit, else an equal share (>= 12)."""
    if sum(widths) <= spare:
        return widths
    each = max(12, spare // max(len(widths), 1))
    return [min(w, each) for w in widths]


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return " ".join(f"{_cut(c, w):<{w}}" for c, w in zip(cells, widths, strict=True)).rstrip()


def _waiting(runs: Sequence[PolicyRun], rows: Sequence[OwnerRow]) -> list[tuple[str, str]]:
    """Per owner and policy, each distinct reason once, with how many of its pods it holds
    back."""
    out: list[tuple[str, str]] = []
    for row in rows:
        for run in runs:
            reasons = Counter(run.outcomes[i].waits for i in row.positions
                              if not run.outcomes[i].node)
            for text, count in reasons.most_common():
                label = row.owner if len(row.positions) == 1 else \
                    f"{row.owner} ({count} of {len(row.positions)} pods)"
                if len(runs) > 1:
                    label += f" [{run.policy}]"
                out.append((label, text))
    return out


def document(runs: Sequence[PolicyRun], *, cluster_file: str, pods: str) -> dict[str, Any]:
    return {"schema": 2, "clusterFile": cluster_file, "pods": pods,
            "policies": [r.to_json() for r in runs]}
