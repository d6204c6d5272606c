"""The objects a plan becomes, deterministically named so that a reconcile is idempotent.

- ``utility-pods``: one pod per planned node, lowest priority (``demand.priorityClassName``: a
  class below zero with ``preemptionPolicy: Never``), under the extender's scheduler name (so it
  is judged and marked Unschedulable, which is what autoscalers act on), asking the node's whole
  ``nvidia.com/gpu`` with the type's node affinity and tolerations, a pause container,
  ``terminationGracePeriodSeconds: 0``. Named ``gpu-demand-<type>-<shape>-<n>``.
- ``provisioning-request``: per (type, GPUs per node), a PodTemplate with the same pod spec (no
  scheduler name or priority: Cluster Autoscaler simulates it in-tree) and an
  ``autoscaling.x-k8s.io/v1`` ProvisioningRequest for ``count`` of them, both named
  ``gpu-demand-<type>-<shape>-x<count>`` (a ProvisioningRequest's spec is immutable: another
  count is another object).

The affinity is the webhook's platform mapping (``webhook/mapping.py``, the same function) for a
whole-GPU pod of that type; where the config names no ``typeLabel`` the mapping is built on the
first node-label preset that has a type label (GFD's ``nvidia.com/gpu.product`` by default).
``<shape>`` hashes the type, the GPUs per node, the affinity and the tolerations: a changed
mapping is a new shape, and the old objects go after their cooldown.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import orjson

from extender.config.demand import DemandConfig, DemandMode
from extender.config.presets import PRESETS
from extender.demand.labels import (
    ANNOTATION_GPUS,
    ANNOTATION_PODS,
    LABEL_DEMAND,
    LABEL_FOR,
    LABEL_MANAGED_BY,
    LABEL_SHAPE,
    LABEL_TYPE,
    MANAGED_BY,
)
from extender.demand.pack import Plan, PlannedNode
from extender.model import RESOURCE_GPU, GpuRequest, RequestKind
from extender.platform import Platform
from extender.webhook.mapping import PlatformMapping

PR_API_VERSION = "autoscaling.x-k8s.io/v1"


class Kind(StrEnum):
    POD = "Pod"
    POD_TEMPLATE = "PodTemplate"
    PROVISIONING_REQUEST = "ProvisioningRequest"


@dataclass(frozen=True)
class DemandObject:
    kind: Kind
    name: str
    body: Mapping[str, Any]
    type_id: str
    nodes: int
    """Planned nodes it asks for."""
    pods: tuple[str, ...]
    """The real pods it serves (``namespace/name``)."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind.value, self.name)

    def via(self, namespace: str) -> str:
        """How the event on a real pod names it."""
        if self.kind is Kind.POD:
            return f"utility pod {self.name}"
        return f"ProvisioningRequest {namespace}/{self.name}"


@dataclass(frozen=True)
class Emitted:
    objects: tuple[DemandObject, ...]
    unmapped: tuple[tuple[str, str], ...] = ()
    """``(pod, why)``: planned on a type no node label can be asked for."""


@dataclass(frozen=True)
class Shape:
    type_id: str
    gpus: int
    digest: str
    affinity: Mapping[str, Any] | None
    tolerations: tuple[Mapping[str, Any], ...]


def mapping_platform(platform: Platform) -> Platform:
    """``platform`` with its mapping switched on and typed by a label: the config's
    ``typeLabel``, else the first ``nodeLabels.presets`` entry that has a type label."""
    admission = platform.config.admission
    mapping = admission.platform_mapping
    label = mapping.type_label or next(
        (p for p in platform.config.node_labels.presets if p in PRESETS), "gfd")
    mapping = replace(mapping, enabled=True, type_label=label)
    config = replace(platform.config, admission=replace(admission, platform_mapping=mapping))
    return replace(platform, config=config)


class Emitter:
    def __init__(self, platform: Platform, config: DemandConfig, *, namespace: str,
                 scheduler_name: str) -> None:
        self._platform = platform
        self._config = config
        self.namespace = namespace
        self._scheduler = scheduler_name
        self._mapping = PlatformMapping(mapping_platform(platform))

    def shape(self, type_id: str, gpus: int) -> Shape:
        index = self._platform.catalog.index_of(type_id)
        request = GpuRequest(RequestKind.WHOLE, gpus, types=frozenset({index}))
        mapped = self._mapping.for_request(request)
        # every value is one a node label can hold (the mapping leaves the others out); a
        # copy, since the mapping's answer is cached and shared
        terms = [{"matchExpressions": [copy.deepcopy(dict(e)) for e in group]}
                 for group in mapped.groups]
        affinity = None if not terms else {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
        tolerations = tuple(dict(t) for t in mapped.tolerations)
        digest = hashlib.sha256(orjson.dumps(
            [type_id, gpus, affinity, tolerations], option=orjson.OPT_SORT_KEYS)).hexdigest()
        return Shape(type_id, gpus, digest[:8], affinity, tolerations)

    def objects(self, plan: Plan) -> Emitted:
        out: list[DemandObject] = []
        unmapped: list[tuple[str, str]] = []
        for (type_id, gpus), nodes in sorted(plan.shapes().items()):
            shape = self.shape(type_id, gpus)
            if shape.affinity is None:  # an autoscaler could bring any GPU: ask for none
                unmapped += [(pod, f"no node label names {type_id} on this platform (set "
                                   "admission.platformMapping)") for n in nodes for pod in n.pods]
                continue
            if self._config.mode is DemandMode.UTILITY_PODS:
                out += [self._utility_pod(shape, i, node) for i, node in enumerate(nodes)]
            else:
                out += self._provisioning_request(shape, nodes)
        return Emitted(tuple(out), tuple(unmapped))

    # -- bodies ----------------------------------------------------------------------------

    def _metadata(self, name: str, shape: Shape, pods: Sequence[str], gpus_used: int
                  ) -> dict[str, Any]:
        return {"name": name, "namespace": self.namespace,
                "labels": {LABEL_DEMAND: "true", LABEL_TYPE: shape.type_id,
                           LABEL_FOR: shape.type_id, LABEL_SHAPE: shape.digest,
                           LABEL_MANAGED_BY: MANAGED_BY},
                "annotations": {ANNOTATION_PODS: ",".join(pods),
                                ANNOTATION_GPUS: str(gpus_used)}}

    def _pod_spec(self, shape: Shape) -> dict[str, Any]:
        gpus = {RESOURCE_GPU: str(shape.gpus)}
        spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "containers": [{"name": "pause", "image": self._config.image,
                            "resources": {"requests": dict(gpus), "limits": dict(gpus)}}],
        }
        if shape.affinity is not None:
            spec["affinity"] = dict(shape.affinity)
        if shape.tolerations:
            spec["tolerations"] = [dict(t) for t in shape.tolerations]
        return spec

    def _utility_pod(self, shape: Shape, n: int, node: PlannedNode) -> DemandObject:
        name = f"gpu-demand-{shape.type_id}-{shape.digest}-{n}"
        spec = {"schedulerName": self._scheduler,
                "priorityClassName": self._config.priority_class_name, **self._pod_spec(shape)}
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": self._metadata(name, shape, node.pods, node.gpus_used),
                "spec": spec}
        return DemandObject(Kind.POD, name, body, shape.type_id, 1, node.pods)

    def _provisioning_request(self, shape: Shape, nodes: Sequence[PlannedNode]
                              ) -> list[DemandObject]:
        name = f"gpu-demand-{shape.type_id}-{shape.digest}-x{len(nodes)}"
        pods = tuple(p for node in nodes for p in node.pods)
        used = sum(node.gpus_used for node in nodes)
        metadata = self._metadata(name, shape, pods, used)
        template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": metadata,
                    "template": {"metadata": {"labels": dict(metadata["labels"])},
                                 "spec": self._pod_spec(shape)}}
        request = {"apiVersion": PR_API_VERSION, "kind": "ProvisioningRequest",
                   "metadata": metadata,
                   "spec": {"provisioningClassName":
                            self._config.provisioning_class.class_name,
                            "podSets": [{"podTemplateRef": {"name": name},
                                         "count": len(nodes)}]}}
        return [DemandObject(Kind.POD_TEMPLATE, name, template, shape.type_id, len(nodes), pods),
                DemandObject(Kind.PROVISIONING_REQUEST, name, request, shape.type_id,
                             len(nodes), pods)]
