"""What the webhook answers for one pod: refuse, warn, or patch. One decode per review, by the
extender's own pod decoder, so admission and filter say the same thing about the same pod."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from extender.config.admission.types import SHARE_KINDS
from extender.config.presets import LABEL_VALUE_RULE
from extender.errors import RequestError
from extender.kube import objects
from extender.kube.shape import check_pod
from extender.model import (
    ANNOTATION_ACCELERATORS,
    ANNOTATION_VISIBLE_DEVICES,
    LABEL_ACCELERATOR,
    GpuRequest,
)
from extender.platform import Platform
from extender.webhook import patch, trust
from extender.webhook.dra_mix import dra_mix_refusal
from extender.webhook.evictions import AgentEvictions
from extender.webhook.first_available import CLAIM_KINDS, rewrite
from extender.webhook.mapping import PlatformMapping
from extender.webhook.pools import NodePools
from extender.webhook.review import AdmissionRequest
from extender.webhook.workloads import TEMPLATE_PATHS, template_pod

DEFAULT_SCHEDULERS = ("", "default-scheduler")


@dataclass(frozen=True)
class Answer:
    allowed: bool
    outcome: str
    """For metrics: not-a-pod, no-gpu, allowed, refused, forged, invalid, patched,
    unchanged, and ``eviction-<outcome>`` for the agent's Evictions (``evictions.py``)."""
    message: str = ""
    warnings: tuple[str, ...] = ()
    patch: tuple[patch.Operation, ...] = ()


class PodAdmission:
    def __init__(self, platform: Platform,
                 trusted_users: Collection[str] = trust.DEFAULT_TRUSTED_USERS, *,
                 dra_mapped: frozenset[str] = frozenset(),
                 first_available: bool = False, pools: NodePools | None = None,
                 evictions: AgentEvictions | None = None) -> None:
        """``dra_mapped``: extended resources a DeviceClass maps (``webhook/dra_mix.py``);
        ``first_available``: rewrite untyped GPU claims (``webhook/first_available.py``);
        ``pools``: the watched nodes, to refuse shares no pool hands over (``pools.py``);
        ``evictions``: the node agent's Evictions, judged (``evictions.py``)."""
        self._platform = platform
        self._pools = pools
        self._evictions = evictions
        self._dra_mapped = dra_mapped
        self._first_available = first_available
        self._config = platform.config.admission
        self.mapping = PlatformMapping(platform)
        self.trusted_users = frozenset(trusted_users)

    def _decode(self, pod: Mapping[str, Any], namespace: str = "") -> GpuRequest | None:
        """The request, judged against the protection of ``namespace`` (the review's; a pod
        object being created may not carry it yet) too: filter would refuse an untyped share
        that only a protected type holds on every node, so admission says it at once."""
        # the shape first, as the extender's cycle does (ShapeError is a RequestError naming
        # the field); the API server has already typed the object, so this rarely fires
        check_pod(pod)
        namespace = namespace or objects.namespace(pod)
        blocked = self._platform.protection.blocked(namespace).tolist()
        return self._platform.pods.request(pod, blocked=blocked)

    # -- validate ----------------------------------------------------------------------------

    def validate(self, review: AdmissionRequest) -> Answer:
        """CREATE: the request and who wrote the GPU annotations. UPDATE: only what it
        changes (a finalizer removed from a pod whose request is no longer valid passes)."""
        if review.kind in TEMPLATE_PATHS:
            return self._validate_workload(review)
        if review.sub_resource == "eviction":
            if self._evictions is None:
                return Answer(True, "not-a-pod")
            verdict = self._evictions.judge(review.username, review.extra, review.namespace,
                                            review.name)
            return Answer(verdict.allowed, f"eviction-{verdict.outcome}",
                          message=verdict.message)
        if review.kind != "Pod":
            return Answer(True, "not-a-pod")
        update = review.operation == "UPDATE" and review.old_object is not None
        old = review.old_object if update else None
        if review.username not in self.trusted_users:
            forged = trust.forged_annotations(review.object, old)
            if forged:
                return Answer(False, "forged", message=trust.forgery_message(
                    forged, review.username, self.trusted_users))
        try:
            request = self._decode(review.object, review.namespace)
        except RequestError as exc:
            if old is not None and self._same_refusal(old, str(exc), review.namespace):
                return Answer(True, "unchanged")  # not this update's doing
            return Answer(False, "refused", message=f"gpu-extender: {exc}")
        if request is not None and not update and request.kind.value in SHARE_KINDS:
            env = self._config.visible_devices.env
            foreign = trust.foreign_visible_devices(review.object, env)
            if foreign:
                return Answer(False, "forged", message=(
                    f"gpu-extender: {', '.join(foreign)}: {env} in a pod with a GPU share "
                    f"would choose its GPU; only the reference to "
                    f"metadata.annotations['{ANNOTATION_VISIBLE_DEVICES}'] that the webhook "
                    f"writes is accepted (remove the variable)"))
        mixed = dra_mix_refusal(review.object, self._dra_mapped)
        if mixed is not None:
            return Answer(False, "refused", message=mixed)
        if request is not None and not update and self._pools is not None:
            stranded = self._pools.share_refusal(request, review.object, review.namespace)
            if stranded is not None:
                return Answer(False, "refused", message=stranded)
        warnings = self._warnings(review.object, request) if self._config.warnings else ()
        if request is None:
            return Answer(True, "no-gpu", warnings=warnings)
        return Answer(True, "allowed", warnings=warnings)

    def _validate_workload(self, review: AdmissionRequest) -> Answer:
        """A workload's pod template, judged as its pods will be (``webhook/workloads.py``):
        a warning or, with ``admission.workloads: refuse``, a refusal. An UPDATE that leaves
        the template's refusal as it was is not this update's doing."""
        mode = self._config.workloads
        found = template_pod(review.kind, review.object)
        if mode == "off" or found is None:
            return Answer(True, "not-a-pod")
        pod, path = found
        try:
            request = self._decode(pod, review.namespace)
        except RequestError as exc:
            old = template_pod(review.kind, review.old_object) \
                if review.operation == "UPDATE" and review.old_object is not None else None
            if old is not None and self._same_refusal(old[0], str(exc), review.namespace):
                return Answer(True, "unchanged")
            name = objects.name(review.object)
            message = (f"gpu-extender: {review.kind} {name}: its pods would be refused: "
                       f"{path}.{exc}")
            if mode == "refuse":
                return Answer(False, "refused", message=message)
            return Answer(True, "workload-warned", warnings=(message,))
        warnings = self._warnings(pod, request) if self._config.warnings else ()
        return Answer(True, "no-gpu" if request is None else "allowed", warnings=warnings)

    def _warnings(self, pod: Mapping[str, Any], request: GpuRequest | None) -> tuple[str, ...]:
        spec = pod.get("spec") or {}
        labels, annotations = objects.labels(pod), objects.annotations(pod)
        out = []
        if LABEL_ACCELERATOR in annotations and LABEL_ACCELERATOR not in labels:
            out.append(f"gpu-extender: {LABEL_ACCELERATOR} is an annotation here, and only a "
                       f"label types a pod: move it to metadata.labels (or list types in the "
                       f"{ANNOTATION_ACCELERATORS} annotation)")
        if request is None:
            named = LABEL_ACCELERATOR in labels or ANNOTATION_ACCELERATORS in annotations
            if named:
                out.append("gpu-extender: the pod names a GPU type but requests no GPU "
                           "(nvidia.com/gpu, nvidia.com/mig-<profile>, "
                           "gpu-extender.io/gpu-memory, ...); it gets none")
            return tuple(out)
        scheduler = self._config.scheduler_name
        current = spec.get("schedulerName") or ""
        if scheduler.enabled and current not in (*DEFAULT_SCHEDULERS, scheduler.name):
            out.append(f"gpu-extender: spec.schedulerName={current!r} is not "
                       f"{scheduler.name!r}: unless that scheduler calls gpu-extender, the "
                       f"GPU request is not placed per GPU")
        catalog = self._platform.catalog
        if request.types is not None and request.excluded - request.types:
            names = catalog.describe(request.excluded - request.types)
            out.append(f"gpu-extender: metadata.annotations[gpu-extender.io/exclude-"
                       f"accelerators] excludes {names}, which the pod does not accept anyway")
        mapped = self.mapping.for_request(request)
        if mapped.unmapped:
            why = "" if not mapped.skipped else (
                f" ({', '.join(repr(v) for v in mapped.skipped)} cannot be a label value: "
                f"{LABEL_VALUE_RULE})")
            out.append(f"gpu-extender: no node affinity written: {', '.join(mapped.unmapped)} "
                       f"has no value on label {self.mapping.type_key}{why}; autoscalers "
                       f"cannot tell which nodes fit (add admission.platformMapping.gpuTypes "
                       f"entries)")
        return tuple(out)

    def _same_refusal(self, old: Mapping[str, Any], message: str, namespace: str) -> bool:
        try:
            self._decode(old, namespace)
        except RequestError as exc:
            return str(exc) == message
        return False

    # -- mutate ------------------------------------------------------------------------------

    def mutate(self, review: AdmissionRequest) -> Answer:
        if review.kind in CLAIM_KINDS and self._first_available:
            rewritten = rewrite(review.object, review.kind, self._platform.catalog,
                                self._platform.protection.protected)
            return Answer(True, "patched" if rewritten else "unchanged",
                          patch=tuple(rewritten))
        if review.kind != "Pod" or review.operation not in ("CREATE", ""):
            return Answer(True, "not-a-pod")
        pod = review.object
        try:
            request = self._decode(pod, review.namespace)
        except RequestError:
            return Answer(True, "invalid")  # /validate refuses it with the message
        if request is None:
            return Answer(True, "no-gpu")
        spec = pod.get("spec") or {}
        config = self._config
        ops: list[patch.Operation] = []
        if config.scheduler_name.enabled:
            ops += patch.scheduler_name(spec, config.scheduler_name.name)
        if config.runtime_class.enabled:
            ops += patch.runtime_class(spec, config.runtime_class.name)
        wanted = self.mapping.for_request(request)
        ops += patch.node_affinity(spec, wanted.groups, self.mapping.partition_key)
        ops += patch.tolerations(spec, wanted.tolerations)
        devices = config.visible_devices
        if devices.enabled and request.kind.value in devices.kinds:
            ops += patch.env_from_annotation(spec, devices.env, ANNOTATION_VISIBLE_DEVICES)
        return Answer(True, "patched" if ops else "unchanged", patch=tuple(ops))
