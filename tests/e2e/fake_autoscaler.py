"""A test-side autoscaler for kwok clusters: it answers the demand ``gpu-extender demand``
writes by creating kwok GPU nodes of the kind asked for, as Cluster Autoscaler (for a
ProvisioningRequest) or Karpenter (for a pending utility pod) would on a cloud.

- **ProvisioningRequest** (``autoscaling.x-k8s.io/v1``): for every request not yet Provisioned,
  each pod set's PodTemplate gives the node shape and ``count`` the number of nodes (one node per
  pod: the node groups of this fake hold exactly one such pod); then the request gets
  ``Accepted`` and ``Provisioned`` True, as CA writes them. A ``check-capacity`` request (CA
  only checks, never scales) gets no node and ``Provisioned`` False: this fake has no spare.
- **Utility pods**: every pod matching ``utility_selector`` that kube-scheduler marked
  ``PodScheduled=False/Unschedulable`` and has not been served gets one node of its shape.

The shape of a pod spec: ``nvidia.com/gpu`` (summed over the containers) GPUs; labels from its
nodeSelector and from the ``In`` (first value) / ``Exists`` terms of its required node affinity,
as GFD and the cloud would label such a node; GFD's ``nvidia.com/gpu.count`` and
``nvidia.com/gpu.memory`` (what the GPU really reports, ``REPORTED_MIB``) added. Nodes get no
taints (the demand's tolerations have nothing to tolerate). Everything it
created is in ``scale_ups``, for the test to assert type and count.

One thread, owned by the context manager (``with FakeAutoscaler(...) as scaler``), stopped on
exit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client import ApiException

from extender.config import load_config_text
from extender.platform import build_platform
from localcluster import LocalCluster
from localcluster.kwok import Kwok

GROUP, VERSION, PLURAL = "autoscaling.x-k8s.io", "v1", "provisioningrequests"
PRODUCT_LABEL = "nvidia.com/gpu.product"
WHOLE_GPU = "nvidia.com/gpu"
CHECK_CAPACITY = "check-capacity."
# GFD's nvidia.com/gpu.memory per catalog type (MiB): what the GPU reports, not its nominal
# size (a T4 reports 15360 of its 16384).
REPORTED_MIB = {"t4": 15360, "l4": 23034, "a10g": 23028, "l40s": 46068, "a100-80gb": 81920}


@dataclass(frozen=True)
class ScaleUp:
    """One node the fake autoscaler created, and what asked for it."""

    node: str
    labels: Mapping[str, str]
    gpus: int
    source: str
    """``provisioningrequest/<ns>/<name>`` or ``pod/<ns>/<name>``."""

    @property
    def type_id(self) -> str:
        """The catalog type of the node's GPUs (t4, l4, ...)."""
        return catalog_type(self.labels.get(PRODUCT_LABEL, ""))


def node_shape(spec: Mapping[str, Any]) -> tuple[dict[str, str], int]:
    """A pod spec (API JSON, camelCase) -> (node labels, GPUs) of the node it asks for."""
    gpus = 0
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        asked = (resources.get("limits") or {}).get(WHOLE_GPU) or \
            (resources.get("requests") or {}).get(WHOLE_GPU) or 0
        gpus += int(asked)
    labels = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    for expression in (terms[0].get("matchExpressions") or []) if terms else []:
        if expression["operator"] == "In" and expression.get("values"):
            labels[expression["key"]] = expression["values"][0]
        elif expression["operator"] == "Exists":
            labels[expression["key"]] = "true"
    labels["nvidia.com/gpu.count"] = str(gpus)
    type_id = catalog_type(labels.get(PRODUCT_LABEL, ""))
    if type_id in REPORTED_MIB:
        labels["nvidia.com/gpu.memory"] = str(REPORTED_MIB[type_id])
    return labels, gpus


def catalog_type(product: str) -> str:
    """The shipped catalog's type id for a GFD product name ("" when unknown)."""
    catalog = build_platform(load_config_text("")).catalog
    index = catalog.resolve_node_type(product) if product else None
    return catalog.id_of(index) if index is not None else ""


@dataclass
class FakeAutoscaler:
    cluster: LocalCluster
    kwok: Kwok
    utility_selector: str | None = None
    """Label selector of utility pods; None: serve ProvisioningRequests only."""
    interval_s: float = 0.5
    scale_ups: list[ScaleUp] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _served: set[str] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def running(self) -> Iterator[FakeAutoscaler]:
        thread = threading.Thread(target=self._loop, name="fake-autoscaler", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=10)

    def created(self) -> list[ScaleUp]:
        with self._lock:
            return list(self.scale_ups)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.reconcile()
            except ApiException as error:  # keep serving; the test reads errors on failure
                self.errors.append(f"{error.status} {error.reason}: {error.body}")

    def reconcile(self) -> None:
        self._serve_provisioning_requests()
        if self.utility_selector is not None:
            self._serve_utility_pods(self.utility_selector)

    def _serve_provisioning_requests(self) -> None:
        custom = client.CustomObjectsApi(self.cluster.api_client())
        core = self.cluster.api()
        listed = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
        for request in listed.get("items", []):
            meta = request["metadata"]
            key = f"provisioningrequest/{meta['namespace']}/{meta['name']}"
            served = f"{key}/{meta['uid']}"  # a re-created request is served (and counted) again
            conditions = (request.get("status") or {}).get("conditions") or []
            if served in self._served or any(c["type"] == "Provisioned" for c in conditions):
                continue
            self._served.add(served)
            if request["spec"]["provisioningClassName"].startswith(CHECK_CAPACITY):
                # CA only checks whether the capacity exists; this fake never has spare nodes
                custom.patch_namespaced_custom_object_status(
                    GROUP, VERSION, meta["namespace"], PLURAL, meta["name"],
                    {"status": {"conditions": [_condition("Accepted"),
                                               _condition("Provisioned", "False")]}})
                continue
            for pod_set in request["spec"]["podSets"]:
                template = core.read_namespaced_pod_template(
                    pod_set["podTemplateRef"]["name"], meta["namespace"])
                spec = self.cluster.api_client().sanitize_for_serialization(
                    template.template.spec)
                for _ in range(int(pod_set["count"])):
                    self._create_node(spec, key)
            custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, meta["namespace"], PLURAL, meta["name"],
                {"status": {"conditions": [_condition("Accepted"), _condition("Provisioned")]}})

    def _serve_utility_pods(self, selector: str) -> None:
        api_client = self.cluster.api_client()
        for pod in self.cluster.api().list_pod_for_all_namespaces(
                label_selector=selector).items:
            key = f"pod/{pod.metadata.namespace}/{pod.metadata.name}"
            served = f"{key}/{pod.metadata.uid}"
            if served in self._served or pod.spec.node_name or not _unschedulable(pod):
                continue
            self._create_node(api_client.sanitize_for_serialization(pod.spec), key)
            self._served.add(served)

    def _create_node(self, spec: Mapping[str, Any], source: str) -> None:
        labels, gpus = node_shape(spec)
        with self._lock:
            name = f"scaled-{len(self.scale_ups)}"
            self.kwok.create_node(self.cluster, name, {WHOLE_GPU: gpus}, labels=labels)
            self.scale_ups.append(ScaleUp(name, labels, gpus, source))


def _unschedulable(pod: client.V1Pod) -> bool:
    return any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
               for c in (pod.status.conditions or []))


def _condition(kind: str, status: str = "True") -> dict[str, str]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"type": kind, "status": status, "reason": "FakeAutoscaler",
            "message": "kwok nodes created by tests/e2e/fake_autoscaler.py",
            "lastTransitionTime": now}
