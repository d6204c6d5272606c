"""The marks every demand object carries, so the controller finds its own and never counts
them as real pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.kube import objects
from extender.model import ANNOTATION_PREFIX

LABEL_DEMAND = ANNOTATION_PREFIX + "demand"
"""``"true"`` on every demand object (utility pods, PodTemplates, ProvisioningRequests)."""
LABEL_TYPE = ANNOTATION_PREFIX + "demand-type"
"""The catalog type id the object asks nodes of."""
LABEL_FOR = ANNOTATION_PREFIX + "demand-for"
"""The same type id, under the name docs/DESIGN use for utility pods."""
LABEL_SHAPE = ANNOTATION_PREFIX + "demand-shape"
"""The hash of what the object asks (type, GPUs per node, affinity): its name's middle part."""
ANNOTATION_PODS = ANNOTATION_PREFIX + "demand-pods"
"""The real pods (``namespace/name``, comma-separated) the object was created for."""
ANNOTATION_GPUS = ANNOTATION_PREFIX + "demand-gpus"
"""GPUs of the planned node(s) the pods take (the rest is the node shape's spare)."""
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpu-extender-demand"
SELECTOR = f"{LABEL_DEMAND}=true"


def is_demand(obj: Mapping[str, Any]) -> bool:
    return str(objects.labels(obj).get(LABEL_DEMAND, "")) == "true"


def served_pods(obj: Mapping[str, Any]) -> tuple[str, ...]:
    text = str(objects.annotations(obj).get(ANNOTATION_PODS) or "")
    return tuple(p for p in text.split(",") if p)
