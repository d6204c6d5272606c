"""Fluent builders for Pod and Node JSON, as the API server sends them (camelCase, quantities as
strings), in the style of kube-scheduler's ``st.MakePod()`` / ``st.MakeNode()``.

    pod = make_pod("p").namespace("ml").gpus(2).accelerator("a100").obj()
    node = make_node("n1").gfd("NVIDIA-A100-SXM4-80GB", count=8, memory=81920) \\
        .allocatable(gpu=8).obj()

Every amount method (``gpus``, ``shared_gpus``, ``mig``, ``gpu_memory``, ``gpu_milli``,
``container``) adds one container, so ``make_pod("p").gpus(1).gpus(2)`` has two containers that
add up to 3 GPUs; ``init_container`` / ``sidecar`` take the same resource arguments. ``obj()``
returns a deep copy, so a builder can be reused as a template.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from extender.kube.annotations import encode_assignment, node_gpus_document
from extender.model import (
    ANNOTATION_ACCELERATORS,
    ANNOTATION_ASSIGNED,
    ANNOTATION_EXCLUDE,
    ANNOTATION_NODE_GPUS,
    LABEL_ACCELERATOR,
    RESOURCE_GPU,
    RESOURCE_GPU_MEMORY,
    RESOURCE_GPU_MILLI,
    RESOURCE_GPU_SHARED,
    RESOURCE_MIG_PREFIX,
    Assignment,
)

JSON = dict[str, Any]
NODE_AFFINITY_PATH = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")


def _q(value: object) -> object:
    """Quantities travel as strings; anything else (None, bool, dict) is passed through so
    tests can send malformed values on purpose."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _resources(requests: Mapping[str, object] | None,
               limits: Mapping[str, object] | None) -> JSON:
    out: JSON = {}
    if requests:
        out["requests"] = {k: _q(v) for k, v in requests.items()}
    if limits:
        out["limits"] = {k: _q(v) for k, v in limits.items()}
    return out


def expr(key: str, operator: str, *values: str) -> JSON:
    """One ``matchExpressions`` entry: ``expr("nvidia.com/gpu.product", "In", "Tesla-T4")``."""
    out: JSON = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


class PodBuilder:
    def __init__(self, name: str) -> None:
        self._pod: JSON = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": []},
            "status": {"phase": "Pending"},
        }

    # -- metadata ---------------------------------------------------------------------------

    def namespace(self, namespace: str) -> PodBuilder:
        self._pod["metadata"]["namespace"] = namespace
        return self

    def uid(self, uid: str) -> PodBuilder:
        self._pod["metadata"]["uid"] = uid
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self._pod["metadata"].setdefault("labels", {})[key] = value
        return self

    def annotation(self, key: str, value: str) -> PodBuilder:
        self._pod["metadata"].setdefault("annotations", {})[key] = value
        return self

    def accelerator(self, name: str) -> PodBuilder:
        """Label ``gpu-extender.io/accelerator``."""
        return self.label(LABEL_ACCELERATOR, name)

    def accelerators(self, *names: str) -> PodBuilder:
        """Annotation ``gpu-extender.io/accelerators`` (any of)."""
        return self.annotation(ANNOTATION_ACCELERATORS, ",".join(names))

    def exclude(self, *names: str) -> PodBuilder:
        """Annotation ``gpu-extender.io/exclude-accelerators``."""
        return self.annotation(ANNOTATION_EXCLUDE, ",".join(names))

    def assigned(self, assignment: Assignment | str) -> PodBuilder:
        """Annotation ``gpu-extender.io/assigned`` (an ``Assignment`` is encoded)."""
        text = assignment if isinstance(assignment, str) else encode_assignment(assignment)
        return self.annotation(ANNOTATION_ASSIGNED, text)

    # -- containers -------------------------------------------------------------------------

    def container(self, requests: Mapping[str, object] | None = None,
                  limits: Mapping[str, object] | None = None, *,
                  name: str | None = None) -> PodBuilder:
        containers = self._pod["spec"]["containers"]
        containers.append({"name": name or f"c{len(containers)}", "image": "busybox",
                           "resources": _resources(requests, limits)})
        return self

    def init_container(self, requests: Mapping[str, object] | None = None,
                       limits: Mapping[str, object] | None = None, *,
                       name: str | None = None,
                       restart_policy: str | None = None) -> PodBuilder:
        init = self._pod["spec"].setdefault("initContainers", [])
        entry: JSON = {"name": name or f"init{len(init)}", "image": "busybox",
                       "resources": _resources(requests, limits)}
        if restart_policy is not None:
            entry["restartPolicy"] = restart_policy
        init.append(entry)
        return self

    def sidecar(self, requests: Mapping[str, object] | None = None,
                limits: Mapping[str, object] | None = None, *,
                name: str | None = None) -> PodBuilder:
        """A restartable init container (``restartPolicy: Always``)."""
        return self.init_container(requests, limits, name=name, restart_policy="Always")

    def gpus(self, count: object) -> PodBuilder:
        """A container with ``limits: {nvidia.com/gpu: count}`` (requests default to limits)."""
        return self.container(limits={RESOURCE_GPU: count})

    def shared_gpus(self, count: object) -> PodBuilder:
        return self.container(limits={RESOURCE_GPU_SHARED: count})

    def mig(self, profile: str, count: object = 1) -> PodBuilder:
        return self.container(limits={RESOURCE_MIG_PREFIX + profile: count})

    def gpu_memory(self, quantity: object) -> PodBuilder:
        return self.container(limits={RESOURCE_GPU_MEMORY: quantity})

    def gpu_milli(self, milli: object) -> PodBuilder:
        return self.container(limits={RESOURCE_GPU_MILLI: milli})

    # -- scheduling -------------------------------------------------------------------------

    def node_selector(self, key: str, value: str) -> PodBuilder:
        self._pod["spec"].setdefault("nodeSelector", {})[key] = value
        return self

    def node_affinity_term(self, *expressions: JSON) -> PodBuilder:
        """Add one required ``nodeSelectorTerms`` entry (terms are OR-ed, expressions AND-ed)."""
        node = self._pod["spec"]
        for key in NODE_AFFINITY_PATH:
            node = node.setdefault(key, {})
        node.setdefault("nodeSelectorTerms", []).append(
            {"matchExpressions": list(expressions)})
        return self

    def node_name(self, node: str) -> PodBuilder:
        self._pod["spec"]["nodeName"] = node
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._pod["status"]["phase"] = phase
        return self

    def obj(self) -> JSON:
        return copy.deepcopy(self._pod)


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._node: JSON = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
        }

    def label(self, key: str, value: object) -> NodeBuilder:
        self._node["metadata"]["labels"][key] = str(value)
        return self

    def annotation(self, key: str, value: str) -> NodeBuilder:
        self._node["metadata"].setdefault("annotations", {})[key] = value
        return self

    def gfd(self, product: str, *, count: int | None = None, memory: int | None = None,
            replicas: int | None = None, sharing: str | None = None) -> NodeBuilder:
        """GPU Feature Discovery labels (``nvidia.com/gpu.product`` and friends)."""
        self.label("nvidia.com/gpu.product", product)
        for key, value in (("count", count), ("memory", memory), ("replicas", replicas),
                           ("sharing-strategy", sharing)):
            if value is not None:
                self.label(f"nvidia.com/gpu.{key}", value)
        return self

    def gke(self, accelerator: str, *, count: int | None = None, max_shared: int | None = None,
            sharing: str | None = None) -> NodeBuilder:
        self.label("cloud.google.com/gke-accelerator", accelerator)
        for key, value in (("gke-accelerator-count", count),
                           ("gke-max-shared-clients-per-gpu", max_shared),
                           ("gke-gpu-sharing-strategy", sharing)):
            if value is not None:
                self.label(f"cloud.google.com/{key}", value)
        return self

    def karpenter(self, gpu_name: str, *, memory: int | None = None,
                  count: int | None = None) -> NodeBuilder:
        """EKS Karpenter labels (``karpenter.k8s.aws/instance-gpu-*``)."""
        self.label("karpenter.k8s.aws/instance-gpu-name", gpu_name)
        if memory is not None:
            self.label("karpenter.k8s.aws/instance-gpu-memory", memory)
        if count is not None:
            self.label("karpenter.k8s.aws/instance-gpu-count", count)
        return self

    def aks(self, gpu_name: str, *, count: int | None = None) -> NodeBuilder:
        """AKS node auto-provisioning labels (``karpenter.azure.com/sku-gpu-*``)."""
        self.label("karpenter.azure.com/sku-gpu-name", gpu_name)
        if count is not None:
            self.label("karpenter.azure.com/sku-gpu-count", count)
        return self

    def allocatable(self, *, gpu: object = None, shared: object = None, cpu: object = None,
                    memory: object = None, **resources: object) -> NodeBuilder:
        """``status.allocatable``: ``gpu`` is nvidia.com/gpu, ``shared`` nvidia.com/gpu.shared;
        other resources by full name via ``**{"nvidia.com/mig-1g.10gb": 7}``."""
        named = {RESOURCE_GPU: gpu, RESOURCE_GPU_SHARED: shared, "cpu": cpu, "memory": memory}
        for key, value in {**named, **resources}.items():
            if value is not None:
                self._node["status"]["allocatable"][key] = _q(value)
        return self

    def mig(self, counts: Mapping[str, int]) -> NodeBuilder:
        """Mixed-strategy MIG: ``nvidia.com/mig-<profile>`` allocatable plus GFD's labels."""
        self.label("nvidia.com/mig.strategy", "mixed")
        for profile, count in counts.items():
            self.label(f"nvidia.com/mig-{profile}.count", count)
            self.allocatable(**{RESOURCE_MIG_PREFIX + profile: count})
        return self

    def gpus_annotation(self, gpus: list[JSON]) -> NodeBuilder:
        """``gpu-extender.io/gpus`` (version 1) from entries made with ``gpu_entry``."""
        return self.annotation(ANNOTATION_NODE_GPUS, node_gpus_document(gpus))

    def obj(self) -> JSON:
        return copy.deepcopy(self._node)


def gpu_entry(index: int, type_id: str, memory: int | None = None, *, uuid: str | None = None,
              mig: JSON | None = None, replicas: int | None = None,
              healthy: bool | None = None) -> JSON:
    """One entry of the ``gpu-extender.io/gpus`` annotation."""
    entry: JSON = {"index": index, "uuid": uuid or f"GPU-{index:04d}", "type": type_id}
    for key, value in (("memoryMiB", memory), ("mig", mig), ("replicas", replicas),
                       ("healthy", healthy)):
        if value is not None:
            entry[key] = value
    return entry


def static_mig(*instances: tuple[str, int]) -> JSON:
    """``{"mode": "static", "instances": [...]}`` from (profile, start) pairs."""
    return {"mode": "static",
            "instances": [{"profile": p, "start": s} for p, s in instances]}


DYNAMIC_MIG: JSON = {"mode": "dynamic"}


def make_pod(name: str = "pod") -> PodBuilder:
    return PodBuilder(name)


def make_node(name: str = "node") -> NodeBuilder:
    return NodeBuilder(name)
