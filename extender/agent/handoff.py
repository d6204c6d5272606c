"""Did the share's GPU reach its container? (docs/handoff.md "The agent checks")

A VRAM share or a fraction is booked on one GPU; nothing but the handoff (the CDI annotation,
or the env var) makes the container see that GPU. The agent maps every GPU process to its pod
(``usage.measure``), so it can tell: a share pod whose processes run on another GPU than the
one its assignment names gets a Warning event ``GpuHandoffMismatch``, a count in
``gpu_extender_agent_handoff_mismatches``, and a correction in
``gpu-extender.io/assigned-observed`` naming the GPU it really uses, so the books follow the
truth. A share pod with no process on any GPU after ``grace_s`` gets the event and the count
(there is no truth to record). Each finding is reported once per pod and GPU.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum

from prometheus_client import CollectorRegistry, Counter

from extender.agent.devices import Device, DeviceMap
from extender.agent.nodeapi import AgentApi
from extender.agent.pods import NodePod
from extender.agent.usage import Usage
from extender.errors import ExtenderError
from extender.kube.annotations import encode_assignment
from extender.model import ANNOTATION_OBSERVED, Assignment, RequestKind

log = logging.getLogger(__name__)

REASON = "GpuHandoffMismatch"
SHARE_KINDS = frozenset({RequestKind.VRAM, RequestKind.FRACTION})
DEFAULT_GRACE_S = 300.0
"""How long a share pod may run without a process on any GPU before it is reported (a
container loads its model before it touches the GPU)."""


class Finding(Enum):
    WRONG_GPU = "wrong-gpu"
    """Its processes run on another GPU than the one booked."""
    NO_GPU = "no-gpu"
    """No process on any GPU after the grace period (the handoff gave it none)."""


@dataclass(frozen=True)
class Mismatch:
    pod: NodePod
    finding: Finding
    booked: Device
    used: Device | None
    correction: Assignment | None
    message: str


class HandoffCheck:
    def __init__(self, api: AgentApi, registry: CollectorRegistry, *, write: bool,
                 grace_s: float = DEFAULT_GRACE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._api = api
        self._write = write
        self._grace = grace_s
        self._clock = clock
        self._idle_since: dict[str, float] = {}
        self._reported: set[tuple[str, str, str]] = set()
        self.mismatches = Counter(
            "gpu_extender_agent_handoff_mismatches",
            "Share pods whose processes run on another GPU than the one booked (wrong-gpu) or "
            "on none after the grace period (no-gpu)", ["finding"], registry=registry)

    def check(self, pods: Mapping[str, NodePod], devices: DeviceMap,
              usage: list[Usage]) -> tuple[list[Mismatch], list[str]]:
        """The new findings of this pass (reported, counted and corrected here), and the
        problems of writing them."""
        used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for entry in usage:
            used[entry.pod_uid][entry.uuid] += entry.used_mib
        now = self._clock()
        found: list[Mismatch] = []
        for uid, pod in pods.items():
            mismatch = self._judge(pod, devices, used.get(uid, {}), now)
            if mismatch is None:
                continue
            key = (uid, mismatch.finding.value, mismatch.used.uuid if mismatch.used else "")
            if key in self._reported:
                continue
            self._reported.add(key)
            found.append(mismatch)
        live = set(pods)
        self._idle_since = {u: t for u, t in self._idle_since.items() if u in live}
        self._reported = {k for k in self._reported if k[0] in live}
        return found, [p for m in found for p in self._report(m)]

    def _judge(self, pod: NodePod, devices: DeviceMap, used: Mapping[str, int],
               now: float) -> Mismatch | None:
        assignment = pod.assignment
        if assignment is None or assignment.kind not in SHARE_KINDS or \
                len(assignment.grants) != 1:
            return None
        booked = devices.of_grant(assignment.grants[0])
        if booked is None:
            return None
        # whole GPUs only: a share never runs in a MIG instance
        on = {uuid: mib for uuid, mib in used.items()
              if devices.by_uuid[uuid].mig_profile is None}
        if booked.uuid in on:
            self._idle_since.pop(pod.key.uid, None)
            return None
        if on:
            self._idle_since.pop(pod.key.uid, None)
            truth = devices.by_uuid[max(on, key=lambda u: (on[u], u))]
            grant = replace(assignment.grants[0], index=truth.gpu_index, uuid=truth.gpu_uuid)
            return Mismatch(pod, Finding.WRONG_GPU, booked, truth,
                            replace(assignment, grants=(grant,)),
                            f"booked on GPU {booked.gpu_index} ({booked.uuid}), but its "
                            f"processes run on GPU {truth.gpu_index} ({truth.uuid}): the "
                            f"runtime did not hand over the booked GPU (docs/handoff.md); "
                            f"recorded in {ANNOTATION_OBSERVED}")
        since = self._idle_since.setdefault(pod.key.uid, now)
        if now - since < self._grace:
            return None
        return Mismatch(pod, Finding.NO_GPU, booked, None, None,
                        f"booked on GPU {booked.gpu_index} ({booked.uuid}), but no process of "
                        f"the pod has run on any GPU for {now - since:.0f} s: the runtime may "
                        f"not have handed the GPU over (docs/handoff.md)")

    def _report(self, mismatch: Mismatch) -> list[str]:
        self.mismatches.labels(mismatch.finding.value).inc()
        key = mismatch.pod.key
        log.warning("pod %s: %s", key, mismatch.message)
        if not self._write:
            return []
        problems = []
        writes: list[tuple[str, Callable[[], object]]] = [
            ("handoff event", lambda: self._api.warn(key, REASON, mismatch.message))]
        if mismatch.correction is not None:
            text = encode_assignment(mismatch.correction)
            writes.append(("handoff correction", lambda: self._api.patch_pod_annotations(
                key, {ANNOTATION_OBSERVED: text})))
        for stage, write in writes:
            try:
                write()
            except ExtenderError as exc:
                problems.append(f"pod {key}: {stage}: {exc}")
        return problems
