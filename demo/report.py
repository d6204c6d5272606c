"""Where each demo pod landed, what it costs, or why it is Pending."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from extender.kube.annotations import decode_assignment
from extender.model import ANNOTATION_ASSIGNED
from extender.platform import Platform


@dataclass(frozen=True)
class Row:
    pod: str
    request: str
    node: str
    gpu_type: str
    gpus: str
    dollars_per_hour: str
    reason: str


def describe_request(platform: Platform, pod: dict[str, Any]) -> str:
    request = platform.pods.request(pod)
    return request.describe() if request else "no GPU"


def pod_row(platform: Platform, pod: dict[str, Any], pending_reason: str) -> Row:
    name = pod["metadata"]["name"]
    annotations = pod["metadata"].get("annotations") or {}
    node = pod["spec"].get("nodeName") or ""
    raw = annotations.get(ANNOTATION_ASSIGNED)
    if not node or raw is None:
        return Row(name, describe_request(platform, pod), "-", "-", "-", "-",
                   pending_reason or "Pending")
    assignment = decode_assignment(raw)
    accelerator = platform.catalog.types[platform.catalog.index_of(assignment.type_id)]
    share = 0.0
    for grant in assignment.grants:
        if grant.whole:
            share += 1.0
        elif grant.mig_profile and accelerator.mig is not None:
            share += grant.mig_slices / accelerator.mig.slots
        else:
            share += grant.vram_mib / accelerator.memory_mib
    gpus = ",".join(str(i) for i in assignment.gpu_indices)
    if assignment.grants and assignment.grants[0].mig_profile:
        gpus += " (" + ", ".join(f"{g.mig_profile}@slot{g.mig_start}"
                                 for g in assignment.grants) + ")"
    return Row(name, describe_request(platform, pod), node, assignment.type_id, gpus,
               f"{accelerator.price * share:.2f}", "")


def render(rows: Sequence[Row]) -> str:
    headers = ("POD", "REQUEST", "NODE", "GPU TYPE", "GPUS", "$/HOUR")
    table = [headers] + [(r.pod, r.request, r.node, r.gpu_type, r.gpus, r.dollars_per_hour)
                         for r in rows]
    widths = [max(len(str(line[i])) for line in table) for i in range(len(headers))]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(line, widths, strict=True))
             for line in table]
    pending = [r for r in rows if r.reason]
    if pending:
        lines.append("")
        lines.append("Pending:")
        lines += [f"  {r.pod}: {r.reason}" for r in pending]
    return "\n".join(lines)
