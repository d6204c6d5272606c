"""Pod JSON -> ``PodInfo``: the GPU request computed once, as kube-scheduler computes requests.

Containers add up; init containers run one at a time, so the pod needs the larger of (sum of
containers, largest init container) - ``computePodResourceRequest``. Exactly one amount form per
container and per pod. Every error names the field, the value and what is accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from extender.catalog import Catalog
from extender.config.presets import GFD
from extender.config.types import ForeignFormsConfig
from extender.errors import (
    QuantityError,
    QuantityRangeError,
    RequestError,
    did_you_mean,
    join_accepted,
)
from extender.kube import objects
from extender.kube.annotations import decode_assignment
from extender.kube.labels import LabelMapper
from extender.kube.selection import NodeSelection, pinned_values, selection_of
from extender.kube.shape import ShapeError, check_pod
from extender.model import (
    ANNOTATION_ACCELERATORS,
    ANNOTATION_EXCLUDE,
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
from extender.quantity import (
    lenient_quantity,
    parse_quantity,
    quantity_to_mib,
    quantity_to_milli,
)
from extender.units import MAX_GPUS_PER_POD

AMOUNT_FORMS = (f"{RESOURCE_GPU}: N, {RESOURCE_GPU_SHARED}: N, {RESOURCE_MIG_PREFIX}<profile>: N, "
                f"{RESOURCE_GPU_MEMORY}: <bytes, e.g. 4Gi>, {RESOURCE_GPU_MILLI}: 1..999")
_AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"

# Foreign request forms (anchors.md section 2.1, anchors-2026-12.md sections 2-3).
HAMI_GPUMEM = "nvidia.com/gpumem"
HAMI_GPUMEM_PERCENTAGE = "nvidia.com/gpumem-percentage"
HAMI_RESOURCES = (HAMI_GPUMEM, HAMI_GPUMEM_PERCENTAGE)
HAMI_USE_TYPE = "nvidia.com/use-gputype"
HAMI_NOUSE_TYPE = "nvidia.com/nouse-gputype"
KAI_GPU_FRACTION = "gpu-fraction"
KAI_GPU_MEMORY = "gpu-memory"
KAI_ANNOTATIONS = (KAI_GPU_FRACTION, KAI_GPU_MEMORY)


@dataclass(frozen=True)
class _Amount:
    """One container's GPU amount, before adding up."""

    kind: RequestKind
    count: int
    vram_mib: int
    mig_profile: str | None
    field: str
    milli: int = 0
    sidecar: bool = False
    """A restartable init container (``restartPolicy: Always``): runs beside the others."""
    written: object = None
    """The amount as the pod wrote it (``"1Pi"``), for messages; ``None`` once containers are
    added up (the message then shows the total in MiB)."""


class PodDecoder:
    """Decodes pods against one catalog and label mapping (built once per config)."""

    def __init__(self, catalog: Catalog, labels: LabelMapper,
                 forms: ForeignFormsConfig | None = None) -> None:
        self._catalog = catalog
        self._labels = labels
        self._forms = forms or ForeignFormsConfig()
        self._vram_units = {r.name: r.unit_mib for r in self._forms.vram_resources}
        self._partition_keys = (*labels.partition_keys, GFD.type_key)

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
            if raw is None:
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
            terminal=status.get("phase") in ("Succeeded", "Failed"),
            problems=tuple(problems),
        )

    def request(self, pod: Mapping[str, Any]) -> GpuRequest | None:
        """The pod's GPU request, or ``None`` if it asks for none; raises ``RequestError``."""
        spec = pod.get("spec") or {}
        regular = self._container_amounts(spec.get("containers") or [], "spec.containers")
        init = self._container_amounts(spec.get("initContainers") or [], "spec.initContainers")
        amount = _combine(regular, init)
        amount = self._kai_amount(pod, amount)
        if amount is None:
            return None
        selection = selection_of(spec)
        amount = self._partition_amount(selection, amount)
        types, excluded, source = self._types(pod)
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
        return request

    def _partition_amount(self, selection: NodeSelection, amount: _Amount) -> _Amount:
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
                else f"{_AFFINITY}.nodeSelectorTerms"
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

    def _kai_amount(self, pod: Mapping[str, Any], amount: _Amount | None) -> _Amount | None:
        """KAI Scheduler's pod annotations ``gpu-fraction: "0.5"`` and ``gpu-memory: "2000"``
        (MiB), read only when the containers ask for no GPU amount themselves."""
        if not self._forms.kai:
            return amount
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        found = [name for name in KAI_ANNOTATIONS if name in annotations]
        if not found:
            return amount
        field = f"metadata.annotations[{found[0]}]"
        if len(found) > 1 or amount is not None:
            other = found[1] if len(found) > 1 else amount.field if amount else ""
            raise RequestError(field, annotations[found[0]],
                               f"a pod may use exactly one GPU amount form (also {other})",
                               AMOUNT_FORMS)
        value = str(annotations[found[0]]).strip()
        if found[0] == KAI_GPU_FRACTION:
            try:
                fraction = float(value)
            except ValueError:
                fraction = -1.0
            if not 0 < fraction < 1:
                raise RequestError(field, value, "must be a fraction of one GPU",
                                   "a number between 0 and 1, e.g. 0.5")
            return _Amount(RequestKind.FRACTION, 1, 0, None, field,
                           milli=max(1, round(fraction * 1000)))
        if not value.isdigit() or int(value) == 0:
            raise RequestError(field, value, "must be MiB of GPU memory", "a whole number > 0")
        return _Amount(RequestKind.VRAM, 1, int(value), None, field)

    # -- amount ----------------------------------------------------------------------------

    def _container_amounts(self, containers: Sequence[Mapping[str, Any]],
                           path: str) -> list[_Amount]:
        amounts = []
        for i, container in enumerate(containers):
            amount = self._container_amount(container.get("resources") or {}, f"{path}[{i}]")
            if amount is not None:
                if _is_sidecar(container, path):
                    amount = replace(amount, sidecar=True)
                amounts.append(amount)
        return amounts

    def _container_amount(self, resources: Mapping[str, Any], path: str) -> _Amount | None:
        # Extended resources: requests default to limits; kube requires them equal if both set.
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        found: list[_Amount] = []
        names = {*limits, *requests}
        if self._forms.hami and names & set(HAMI_RESOURCES):
            found.append(self._hami_amount(limits, requests, path))
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

    def _hami_amount(self, limits: Mapping[str, Any], requests: Mapping[str, Any],
                     path: str) -> _Amount:
        """HAMi's ``nvidia.com/gpu: 1`` with ``nvidia.com/gpumem: <MiB>`` (a VRAM share) or
        ``nvidia.com/gpumem-percentage: <1..100>`` (a share of one GPU)."""
        def value(name: str) -> tuple[object, str]:
            where = "requests" if name in requests else "limits"
            return requests.get(name, limits.get(name)), f"{path}.resources.{where}[{name}]"

        present = [n for n in HAMI_RESOURCES if n in limits or n in requests]
        if len(present) > 1:
            raise RequestError(f"{path}.resources", ", ".join(present),
                               "a container may use exactly one GPU amount form",
                               AMOUNT_FORMS)
        if RESOURCE_GPU in limits or RESOURCE_GPU in requests:
            raw, gpu_field = value(RESOURCE_GPU)
            if _count(raw, gpu_field) != 1:
                raise RequestError(gpu_field, raw, f"with {present[0]} the extender places a "
                                   "share of one GPU", f"{RESOURCE_GPU}: 1")
        raw, field = value(present[0])
        amount = _count(raw, field)
        if present[0] == HAMI_GPUMEM:
            if amount == 0:
                raise RequestError(field, raw, "must be MiB of GPU memory", "a whole number > 0")
            return _Amount(RequestKind.VRAM, 1, amount, None, field)
        if not 1 <= amount <= 100:
            raise RequestError(field, raw, "must be a percentage of one GPU", "1..100")
        if amount == 100:
            return _Amount(RequestKind.WHOLE, 1, 0, None, field)
        return _Amount(RequestKind.FRACTION, 1, 0, None, field, milli=amount * 10)

    def _parse_amount(self, name: str, value: object, field: str) -> _Amount | None:
        unit = self._vram_units.get(name)
        if unit is not None:
            if unit == 0:
                return self._parse_amount(RESOURCE_GPU_MEMORY, value, field)
            count = _count(value, field)
            return _Amount(RequestKind.VRAM, 1, count * unit, None, field) if count else None
        if name == RESOURCE_GPU_MEMORY:
            try:
                negative = parse_quantity(value) < 0  # "-1" rounds up to 0 MiB
                mib = quantity_to_mib(value)
            except QuantityError as exc:
                raise RequestError(field, value, "not a memory quantity",
                                   "bytes with a suffix, e.g. 4Gi or 4096Mi") from exc
            if negative:
                raise RequestError(field, value, "must not be negative", "a positive size")
            _refuse_unitless_vram(value, field)
            return _Amount(RequestKind.VRAM, 1, mib, None, field, written=value) if mib else None
        count = _count(value, field)
        if count == 0:
            return None
        if name == RESOURCE_GPU_MILLI:
            if count >= 1000:
                raise RequestError(field, value, "a fraction must be below one GPU",
                                   f"1..999; ask for whole GPUs with {RESOURCE_GPU}")
            return _Amount(RequestKind.FRACTION, 1, 0, None, field, milli=count)
        if name == RESOURCE_GPU:
            return _Amount(RequestKind.WHOLE, _gpu_count(count, value, field), 0, None, field)
        if name == RESOURCE_GPU_SHARED:
            return _Amount(RequestKind.SHARED, _gpu_count(count, value, field), 0, None, field)
        profile = _mig_profile_name(name)
        if profile not in self._catalog.mig.index:
            known = [RESOURCE_MIG_PREFIX + p for p in self._catalog.mig.names]
            raise RequestError(field, name, "unknown MIG profile" + did_you_mean(name, known),
                               join_accepted(known))
        return _Amount(RequestKind.MIG, _gpu_count(count, value, field), 0, profile, field)

    # -- type ------------------------------------------------------------------------------

    def _types(self, pod: Mapping[str, Any]) -> tuple[frozenset[int] | None, frozenset[int], str]:
        """Accepted types (intersection of every place the pod names one) and excluded ones."""
        spec = pod.get("spec") or {}
        labels = objects.labels(pod)
        annotations = objects.annotations(pod)
        constraints: list[tuple[frozenset[int], str]] = []
        excluded: set[int] = set()

        if LABEL_ACCELERATOR in labels:
            field = f"metadata.labels[{LABEL_ACCELERATOR}]"
            constraints.append((self._resolve(labels[LABEL_ACCELERATOR], field), field))
        if ANNOTATION_ACCELERATORS in annotations:
            field = f"metadata.annotations[{ANNOTATION_ACCELERATORS}]"
            constraints.append((self._resolve_list(annotations[ANNOTATION_ACCELERATORS], field),
                                field))
        if ANNOTATION_EXCLUDE in annotations:
            field = f"metadata.annotations[{ANNOTATION_EXCLUDE}]"
            excluded |= self._resolve_list(annotations[ANNOTATION_EXCLUDE], field)
        if self._forms.hami:
            # HAMi matches these by substring of the device name; here each entry is a type
            # name matched exactly ("A100" is the family, never "A100-80GB" by accident).
            if HAMI_USE_TYPE in annotations:
                field = f"metadata.annotations[{HAMI_USE_TYPE}]"
                constraints.append((self._resolve_list(annotations[HAMI_USE_TYPE], field),
                                    field))
            if HAMI_NOUSE_TYPE in annotations:
                field = f"metadata.annotations[{HAMI_NOUSE_TYPE}]"
                excluded |= self._resolve_list(annotations[HAMI_NOUSE_TYPE], field)
        for key, value in (spec.get("nodeSelector") or {}).items():
            if key in self._labels.type_label_keys:
                field = f"spec.nodeSelector[{key}]"
                constraints.append((self._resolve_label(key, str(value), field), field))
        affinity_types, affinity_excluded = self._affinity_types(spec)
        excluded |= affinity_excluded
        if affinity_types is not None:
            constraints.append(affinity_types)

        if not constraints:
            return None, frozenset(excluded), ""
        accepted = constraints[0][0]
        for types, _ in constraints[1:]:
            accepted = accepted & types
        sources = " and ".join(field for _, field in constraints)
        if not accepted:
            named = "; ".join(f"{f} = {self._catalog.describe(t)}" for t, f in constraints)
            raise RequestError(sources, named, "these type constraints have no type in common",
                               "constraints that agree on at least one type")
        if not accepted - excluded:
            raise RequestError(f"metadata.annotations[{ANNOTATION_EXCLUDE}]",
                               self._catalog.describe(excluded),
                               f"excludes every type the pod accepts "
                               f"({self._catalog.describe(accepted)})",
                               "an exclusion that leaves at least one accepted type")
        return accepted, frozenset(excluded), sources

    def _affinity_types(self, spec: Mapping[str, Any]
                        ) -> tuple[tuple[frozenset[int], str] | None, set[int]]:
        """Required node affinity: a pod is typed when *every* term constrains a type label
        with ``In`` (terms are OR-ed, so one unconstrained term admits any type). ``NotIn``
        removes types from its own term only: a type is excluded when no term admits it."""
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        terms = required.get("nodeSelectorTerms") or []
        every_type = frozenset(range(len(self._catalog)))
        union: set[int] = set()
        all_typed = bool(terms)
        for t, term in enumerate(terms):
            term_types: frozenset[int] | None = None
            term_excluded: set[int] = set()
            for e, expr in enumerate(term.get("matchExpressions") or []):
                key = expr.get("key")
                if key not in self._labels.type_label_keys:
                    continue
                field = f"{_AFFINITY}.nodeSelectorTerms[{t}].matchExpressions[{e}]"
                values = [str(v) for v in expr.get("values") or []]
                resolved: set[int] = set()
                for v, value in enumerate(values):
                    resolved |= self._resolve_label(key, value, f"{field}.values[{v}]")
                operator = expr.get("operator")
                if operator == "In":
                    term_types = frozenset(resolved) if term_types is None \
                        else term_types & resolved
                elif operator == "NotIn":
                    term_excluded |= resolved
            if term_types is None:
                all_typed = False
            union |= (every_type if term_types is None else term_types) - term_excluded
        if all_typed:
            return (frozenset(union), f"{_AFFINITY}.nodeSelectorTerms"), set()
        return None, set(every_type - union) if terms else set()

    def _resolve(self, name: object, field: str) -> frozenset[int]:
        resolved = self._catalog.resolve(str(name)) if isinstance(name, str) else None
        if not resolved:
            accepted = self._catalog.accepted_names()
            raise RequestError(field, name, "unknown GPU type" + did_you_mean(name, accepted),
                               join_accepted(accepted))
        return resolved

    def _resolve_list(self, text: object, field: str) -> frozenset[int]:
        if not isinstance(text, str) or not text.strip():
            raise RequestError(field, text, "must be a comma-separated list of GPU types",
                               join_accepted(self._catalog.accepted_names()))
        out: set[int] = set()
        for name in text.split(","):
            out |= self._resolve(name.strip(), field)
        return frozenset(out)

    def _resolve_label(self, key: str, value: str, field: str) -> frozenset[int]:
        resolved = self._labels.resolve_value(key, value)
        if not resolved:
            raise RequestError(field, value, f"no known GPU type has {key}={value}",
                               join_accepted(self._catalog.accepted_names()))
        return resolved

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
                raise RequestError(field, RESOURCE_MIG_PREFIX + request.mig_profile,
                                   f"no accepted GPU type has MIG profile {request.mig_profile} "
                                   f"(accepted types: {catalog.describe(candidates)})",
                                   "types with that profile: "
                                   + (catalog.describe(with_profile) or "none"))
        elif request.kind is RequestKind.VRAM:
            largest = max((catalog.types[t].memory_mib for t in candidates), default=0)
            if request.vram_mib > largest:
                raise RequestError(field,
                                   written if written is not None else f"{request.vram_mib}Mi",
                                   f"larger than any accepted GPU (largest {largest} MiB among "
                                   f"{catalog.describe(candidates)})",
                                   f"at most {largest}Mi")

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


# A GPU-memory request below this, written without a unit, is a unit left out: "4" is 4 bytes.
UNITLESS_VRAM_FLOOR_BYTES = 64 * 1024 * 1024


def _refuse_unitless_vram(value: object, field: str) -> None:
    """``gpu-memory: 4`` means 4 bytes, which no one means: refuse it with the likely intent
    (``4Gi`` for small numbers, ``4096Mi`` for ones that look like MiB)."""
    text = str(value).strip()
    if not text.replace(".", "", 1).isdigit():
        return  # it has a suffix (or an exponent): the unit was written on purpose
    number = parse_quantity(text)
    if 0 < number < UNITLESS_VRAM_FLOOR_BYTES:
        digits = f"{number.normalize():f}"
        guess = f"{digits}Gi" if number < 1024 else f"{digits}Mi"
        raise RequestError(field, value, f"a number without a unit is bytes ({digits} B); "
                           f"did you mean {guess}?", "bytes with a suffix, e.g. 4Gi or 4096Mi")


def _is_gpu_resource(name: str) -> bool:
    return name in (RESOURCE_GPU, RESOURCE_GPU_SHARED, RESOURCE_GPU_MEMORY, RESOURCE_GPU_MILLI) or \
        name.startswith(RESOURCE_MIG_PREFIX)


def _mig_profile_name(resource: str) -> str:
    """``nvidia.com/mig-1g.10gb`` -> ``1g.10gb`` (the device plugin writes ``+me`` as ``.me``)."""
    return resource[len(RESOURCE_MIG_PREFIX):]


def _count(value: object, field: str) -> int:
    try:
        quantity = parse_quantity(value)
    except QuantityRangeError as exc:
        raise RequestError(field, value, "more than any node may have (the magnitude of a "
                           "Kubernetes quantity is below 2^63)", "a whole number >= 0") from exc
    except QuantityError as exc:
        raise RequestError(field, value, "not a number", "a whole number >= 0") from exc
    if quantity < 0:
        raise RequestError(field, value, "must not be negative", "a whole number >= 0")
    if quantity != quantity.to_integral_value():
        raise RequestError(field, value, "must be a whole number",
                           "a whole number >= 0; ask for a fraction with "
                           f"{RESOURCE_GPU_MEMORY} or a MIG profile")
    return int(quantity)


def _gpu_count(count: int, value: object, field: str) -> int:
    """A count of GPUs, replicas or MIG instances: at most what one node may have."""
    if count > MAX_GPUS_PER_POD:
        raise RequestError(field, value, "more than any node may have (a pod's GPUs must be "
                           "on one node)", f"a whole number from 0 to {MAX_GPUS_PER_POD}")
    return count


def _combine(regular: list[_Amount], init: list[_Amount]) -> _Amount | None:
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
    def need(value: Callable[[_Amount], int]) -> int:
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
    return _Amount(first.kind, count, need(lambda a: a.vram_mib), first.mig_profile,
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


def _form(amount: _Amount) -> str:
    if amount.kind is RequestKind.MIG:
        return f"MIG {amount.mig_profile}"
    return str(amount.kind)
