"""Pod JSON -> ``PodInfo``: the GPU request computed once, as kube-scheduler computes requests.

Containers add up; init containers run one at a time, so the pod needs the larger of (sum of
containers, largest init container) - ``computePodResourceRequest``. Exactly one amount form per
container and per pod. Every error names the field, the value and what is accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from extender.catalog import Catalog
from extender.config.presets import GFD
from extender.config.types import ForeignFormsConfig
from extender.errors import RequestError, did_you_mean, join_accepted
from extender.kube import objects
from extender.kube.annotations import decode_assignment
from extender.kube.forms import (
    AMOUNT_FORMS,
    HAMI_RESOURCES,
    Amount,
    count_of,
    gpu_count,
    hami_amount,
    kai_amount,
    memory_amount,
    vram_resource_amount,
)
from extender.kube.labels import LabelMapper
from extender.kube.pod_types import AFFINITY, TypeResolver
from extender.kube.selection import NodeSelection, pinned_values, selection_of
from extender.kube.shape import ShapeError, check_pod
from extender.model import (
    ASSIGNMENT_ANNOTATIONS,
    LABEL_ACCELERATOR,
    RESOURCE_GPU,
    RESOURCE_GPU_MEMORY,
    RESOURCE_GPU_MILLI,
    RESOURCE_GPU_SHARED,
    RESOURCE_MIG_PREFIX,
    GpuRequest,
    PodInfo,
    RequestKind,
)
from extender.quantity import lenient_quantity, quantity_to_mib, quantity_to_milli
from extender.units import MAX_GPUS_PER_POD

TERMINAL_PHASES = ("Succeeded", "Failed")
"""The phases of a pod that holds nothing any more: all ``decode`` reads of ``status``."""


class PodDecoder:
    """Decodes pods against one catalog and label mapping (built once per config)."""

    def __init__(self, catalog: Catalog, labels: LabelMapper,
                 forms: ForeignFormsConfig | None = None) -> None:
        self._catalog = catalog
        self._labels = labels
        self._forms = forms or ForeignFormsConfig()
        self._vram_units = {r.name: r.unit_mib for r in self._forms.vram_resources}
        self._partition_keys = (*labels.partition_keys, GFD.type_key)
        self._types = TypeResolver(catalog, labels, hami=self._forms.hami)

    # -- entry points ----------------------------------------------------------------------

    def decode(self, pod: Mapping[str, Any], *, checked: bool = False) -> PodInfo:
        """Decode a pod; an invalid GPU request is recorded in ``problems``, never raised.

        The watch must never drop a pod because its request is malformed: what it holds (its
        ``assigned`` annotation) still counts. The pod's shape is checked first
        (``kube.shape``, skipped when the caller already did: ``checked``), so every entrance
        (the verbs, the watch, a relist, the cluster file, the shadow) has the same edge: a part
        of the wrong JSON type, or nesting 300 deep, is one problem naming its path; nothing
        below assumes a type the check did not guarantee.
        """
        key = objects.pod_key(pod)
        if not checked:
            try:
                check_pod(pod)
            except ShapeError as exc:
                return PodInfo(key=key, request=None, node_name=objects.node_name(pod),
                               problems=(f"invalid pod: {exc}",))
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        problems: list[str] = []
        try:
            request = self.request(pod)
        except RequestError as exc:
            request, problems = None, [str(exc)]
        assignment = None
        # The node agent's correction (the devices the kubelet really gave) wins over our
        # choice; a malformed one is reported and the choice still counts.
        for annotation in ASSIGNMENT_ANNOTATIONS:
            raw = objects.annotations(pod).get(annotation)
            if raw is None or raw == "":  # "": cleared by the extender's Binding
                continue
            try:
                assignment = decode_assignment(raw)
                break
            except ValueError as exc:
                problems.append(f"metadata.annotations[{annotation}]: {exc}")
        cpu, memory = self._cpu_memory(spec)
        return PodInfo(
            key=key,
            request=request,
            cpu_milli=cpu,
            memory_mib=memory,
            node_name=objects.node_name(pod),
            assignment=assignment,
            terminal=status.get("phase") in TERMINAL_PHASES,
            problems=tuple(problems),
        )

    def request(self, pod: Mapping[str, Any], *, blocked: Sequence[bool] | None = None
                ) -> GpuRequest | None:
        """The pod's GPU request, or ``None`` if it asks for none; raises ``RequestError``.

        ``blocked`` (admission): per catalog type, whether protection keeps this pod's
        namespace's untyped pods off it; an untyped VRAM share that only a protected type is
        large enough for is then refused too (it could never be placed)."""
        spec = pod.get("spec") or {}
        regular = self._container_amounts(spec.get("containers") or [], "spec.containers")
        init = self._container_amounts(spec.get("initContainers") or [], "spec.initContainers")
        amount = _combine(regular, init)
        if self._forms.kai:
            amount = kai_amount(objects.annotations(pod), amount) or amount
        if amount is None:
            return None
        selection = selection_of(spec)
        amount = self._partition_amount(selection, amount)
        types, excluded, source = self._types.types(pod)
        if types is None and amount.kind is RequestKind.MIG:
            # A MIG profile names the GPU types that have it: asking for one is asking for
            # them, so protection does not apply (the pod knows what it wants).
            assert amount.mig_profile is not None
            types = self._catalog.types_with_mig_profile(amount.mig_profile) or None
            source = amount.field
        request = GpuRequest(
            kind=amount.kind,
            count=amount.count,
            vram_mib=amount.vram_mib,
            milli=amount.milli,
            mig_profile=amount.mig_profile,
            types=types,
            excluded=excluded,
            type_source=source,
            selection=None if types is not None or selection.empty else selection,
        )
        self._check_satisfiable(request, amount.field, amount.written)
        if blocked is not None:
            self._check_unprotected(request, amount.field, amount.written, blocked)
        return request

    def _partition_amount(self, selection: NodeSelection, amount: Amount) -> Amount:
        """``nvidia.com/gpu: N`` on nodes the pod pins to one MIG partition (GKE
        ``gke-gpu-partition-size``, Flyte's partition label, a GFD single-strategy product) is N
        instances of that profile: the device plugin advertises each instance as a GPU."""
        if amount.kind is not RequestKind.WHOLE:
            return amount
        for key in self._partition_keys:
            values = pinned_values(selection, key)
            if values is None:
                continue
            profiles = {self._labels.partition_value(key, v) for v in values}
            if None in profiles:
                continue  # an unpartitioned product among the values: whole GPUs
            field = f"spec.nodeSelector[{key}]" if any(k == key for k, _ in selection.selector) \
                else f"{AFFINITY}.nodeSelectorTerms"
            if len(profiles) != 1:
                raise RequestError(field, ", ".join(sorted(str(p) for p in profiles)),
                                   f"{RESOURCE_GPU} on partitioned nodes is one instance of "
                                   "their profile; these nodes have different profiles",
                                   "one partition size per pod")
            profile = str(next(iter(profiles)))
            if profile not in self._catalog.mig.index:
                raise RequestError(field, profile, "not a MIG profile of any known GPU type",
                                   join_accepted(self._catalog.mig.names))
            return replace(amount, kind=RequestKind.MIG, mig_profile=profile)
        return amount

    # -- amount ----------------------------------------------------------------------------

    def _container_amounts(self, containers: Sequence[Mapping[str, Any]],
                           path: str) -> list[Amount]:
        amounts = []
        for i, container in enumerate(containers):
            amount = self._container_amount(container.get("resources") or {}, f"{path}[{i}]")
            if amount is not None:
                if _is_sidecar(container, path):
                    amount = replace(amount, sidecar=True)
                amounts.append(amount)
        return amounts

    def _container_amount(self, resources: Mapping[str, Any], path: str) -> Amount | None:
        # Extended resources: requests default to limits; kube requires them equal if both set.
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        found: list[Amount] = []
        names = {*limits, *requests}
        hami = hami_amount(limits, requests, path) if self._forms.hami else None
        if hami is not None:
            found.append(hami)
            names -= {*HAMI_RESOURCES, RESOURCE_GPU}
        for name in names:
            if not (_is_gpu_resource(name) or name in self._vram_units):
                continue
            where_key = "requests" if name in requests else "limits"
            field = f"{path}.resources.{where_key}[{name}]"
            value = requests.get(name, limits.get(name))
            amount = self._parse_amount(name, value, field)
            if amount is not None:
                found.append(amount)
        if len(found) > 1:
            forms = sorted(a.field.rsplit("[", 1)[1].rstrip("]") for a in found)
            raise RequestError(f"{path}.resources", ", ".join(forms),
                               "a container may use exactly one GPU amount form",
                               AMOUNT_FORMS)
        return found[0] if found else None

    def _parse_amount(self, name: str, value: object, field: str) -> Amount | None:
        unit = self._vram_units.get(name)
        if unit is not None:
            return vram_resource_amount(unit, value, field)
        if name == RESOURCE_GPU_MEMORY:
            return memory_amount(value, field)
        count = count_of(value, field)
        if count == 0:
            return None
        if name == RESOURCE_GPU_MILLI:
            if count >= 1000:
                raise RequestError(field, value, "a fraction must be below one GPU",
                                   f"1..999; ask for whole GPUs with {RESOURCE_GPU}")
            return Amount(RequestKind.FRACTION, 1, 0, None, field, milli=count)
        if name == RESOURCE_GPU:
            return Amount(RequestKind.WHOLE, gpu_count(count, value, field), 0, None, field)
        if name == RESOURCE_GPU_SHARED:
            return Amount(RequestKind.SHARED, gpu_count(count, value, field), 0, None, field)
        profile = _mig_profile_name(name)
        if profile not in self._catalog.mig.index:
            known = [RESOURCE_MIG_PREFIX + p for p in self._catalog.mig.names]
            raise RequestError(field, name, "unknown MIG profile" + did_you_mean(name, known),
                               join_accepted(known))
        return Amount(RequestKind.MIG, gpu_count(count, value, field), 0, profile, field,
                      written=value)

    # -- type ------------------------------------------------------------------------------

    # -- satisfiability ----------------------------------------------------------------------

    def _check_satisfiable(self, request: GpuRequest, field: str,
                           written: object = None) -> None:
        """Reject what no GPU of an accepted type could ever host."""
        catalog = self._catalog
        candidates = set(range(len(catalog))) if request.types is None else set(request.types)
        candidates -= request.excluded
        if request.kind is RequestKind.MIG:
            assert request.mig_profile is not None
            with_profile = catalog.types_with_mig_profile(request.mig_profile)
            if not candidates & with_profile:
                accepts = catalog.describe(candidates) or "none, after its exclusions"
                raise RequestError(field, written if written is not None else request.count,
                                   f"no GPU type the pod accepts ({accepts}) has MIG profile "
                                   f"{request.mig_profile}",
                                   f"a GPU type with MIG profile {request.mig_profile}: "
                                   + (catalog.describe(with_profile) or "none"))
        elif request.kind is RequestKind.VRAM:
            largest = max((catalog.types[t].memory_mib for t in candidates), default=0)
            if request.vram_mib > largest:
                raise RequestError(field,
                                   written if written is not None else f"{request.vram_mib}Mi",
                                   f"larger than any accepted GPU (largest {largest} MiB among "
                                   f"{catalog.describe(candidates)})",
                                   f"at most {largest}Mi")

    def _check_unprotected(self, request: GpuRequest, field: str, written: object,
                           blocked: Sequence[bool]) -> None:
        """An untyped VRAM share larger than every type it may use (the larger ones are
        protected): refused, with the way out (name the type)."""
        if request.kind is not RequestKind.VRAM or request.types is not None:
            return
        catalog = self._catalog
        candidates = set(range(len(catalog))) - request.excluded
        usable = {t for t in candidates if not blocked[t]}
        largest = max((catalog.types[t].memory_mib for t in usable), default=0)
        if request.vram_mib <= largest:
            return
        protected = {t for t in candidates - usable
                     if catalog.types[t].memory_mib >= request.vram_mib}
        raise RequestError(
            field, written if written is not None else f"{request.vram_mib}Mi",
            f"larger than any GPU an untyped pod may use here (largest {largest} MiB among "
            f"{catalog.describe(usable) or 'none'}); only protected types are large enough "
            f"({catalog.describe(protected)}), and protection keeps untyped pods off them",
            f"at most {largest}Mi untyped, or name the type with the label "
            f"{LABEL_ACCELERATOR} (e.g. {catalog.id_of(min(protected))})")

    # -- cpu / memory ------------------------------------------------------------------------

    @staticmethod
    def _cpu_memory(spec: Mapping[str, Any]) -> tuple[int, int]:
        def need(resource: str, convert: Callable[[object], int]) -> int:
            def value(container: Mapping[str, Any]) -> int:
                requests = (container.get("resources") or {}).get("requests") or {}
                return lenient_quantity(convert, requests.get(resource))

            init = spec.get("initContainers") or []
            return _pod_need(
                [value(c) for c in spec.get("containers") or []],
                [(value(c), _is_sidecar(c, "spec.initContainers")) for c in init])

        overhead = spec.get("overhead") or {}
        return (need("cpu", quantity_to_milli)
                + lenient_quantity(quantity_to_milli, overhead.get("cpu")),
                need("memory", quantity_to_mib)
                + lenient_quantity(quantity_to_mib, overhead.get("memory")))


def managed_resources(catalog: Catalog, forms: ForeignFormsConfig) -> dict[str, bool]:
    """Every resource name the decoder reads -> ``ignoredByScheduler`` for kube-scheduler's
    extender ``managedResources``: ``True`` where nodes do not advertise the name (the extender
    alone accounts for it), ``False`` where they do, so in-tree NodeResourcesFit and preemption
    keep counting it. ``scheduler-config/`` must list exactly these (a test compares). The
    extender itself advertises ``gpu-memory`` and ``gpu-milli`` on every GPU node
    (``serve --publish-node-capacity``, ``sync/node_capacity.py``)."""
    out = {RESOURCE_GPU: False, RESOURCE_GPU_SHARED: False,
           RESOURCE_GPU_MEMORY: False, RESOURCE_GPU_MILLI: False}
    out |= {RESOURCE_MIG_PREFIX + name: False for name in catalog.mig.names}
    if forms.hami:
        out |= {name: True for name in HAMI_RESOURCES}
    # A platform's own VRAM resource is advertised by its device plugin, per node.
    out |= {r.name: False for r in forms.vram_resources}
    return out


def _is_gpu_resource(name: str) -> bool:
    return name in (RESOURCE_GPU, RESOURCE_GPU_SHARED, RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI) or \
        name.startswith(RESOURCE_MIG_PREFIX)


def _mig_profile_name(resource: str) -> str:
    """``nvidia.com/mig-1g.10gb`` -> ``1g.10gb`` (the device plugin writes ``+me`` as ``.me``)."""
    return resource[len(RESOURCE_MIG_PREFIX):]


def _combine(regular: list[Amount], init: list[Amount]) -> Amount | None:
    """Sum the containers, take the largest init container, and the larger of the two."""
    everything = regular + init
    if not everything:
        return None
    first = everything[0]
    for other in everything[1:]:
        if (other.kind, other.mig_profile) != (first.kind, first.mig_profile):
            raise RequestError(f"{first.field} and {other.field}",
                               f"{_form(first)} and {_form(other)}",
                               "a pod may use exactly one GPU amount form across its containers",
                               AMOUNT_FORMS)
    def need(value: Callable[[Amount], int]) -> int:
        return _pod_need([value(a) for a in regular], [(value(a), a.sidecar) for a in init])

    anchor = regular[0] if regular else init[0]
    single_gpu = first.kind in (RequestKind.VRAM, RequestKind.FRACTION)
    count = 1 if single_gpu else need(lambda a: a.count)
    if count > MAX_GPUS_PER_POD:  # each container is within bounds, their sum is not
        raise RequestError(anchor.field, count, "the containers add up to more GPUs than any "
                           "node may have", f"a total from 0 to {MAX_GPUS_PER_POD}")
    milli = need(lambda a: a.milli)
    if milli >= 1000:
        raise RequestError(anchor.field, milli, "the containers' fractions add up to a whole GPU "
                           "or more", f"a total below 1000, or {RESOURCE_GPU}: N")
    return Amount(first.kind, count, need(lambda a: a.vram_mib), first.mig_profile,
                   anchor.field, milli,
                   written=first.written if len(everything) == 1 else None)


def _pod_need(regular: Sequence[int], init: Sequence[tuple[int, bool]]) -> int:
    """kube's ``PodRequests`` for one resource: containers and sidecars (restartable init
    containers) add up; every other init container runs alone beside the sidecars started
    before it; the pod needs the larger of the two."""
    total = sum(regular)
    sidecars = peak = 0
    for value, sidecar in init:
        if sidecar:
            sidecars += value
            total += value
            peak = max(peak, sidecars)
        else:
            peak = max(peak, value + sidecars)
    return max(total, peak)


def _is_sidecar(container: Mapping[str, Any], path: str) -> bool:
    return path == "spec.initContainers" and container.get("restartPolicy") == "Always"


def _form(amount: Amount) -> str:
    if amount.kind is RequestKind.MIG:
        return f"MIG {amount.mig_profile}"
    return str(amount.kind)
