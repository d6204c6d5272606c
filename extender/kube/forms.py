"""GPU amount forms: the ``Amount`` one container (or the pod) asks for, the number and memory
readers every form shares, and the foreign forms the platform may accept besides ours.

The foreign forms (anchors.md section 2.1, anchors-2026-12.md sections 2-3), one function each,
``None`` when the pod does not use that form:

- HAMi: ``nvidia.com/gpu: 1`` with ``nvidia.com/gpumem`` (MiB) or ``nvidia.com/gpumem-percentage``
  in a container's resources (``hami_amount``);
- KAI Scheduler: the pod annotations ``gpu-fraction`` / ``gpu-memory`` (``kai_amount``);
- a platform's own VRAM resource counted in units of N MiB, or a memory quantity when its unit
  is 0 (``vram_resource_amount``).

Every error names the field, the value and what is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extender.errors import QuantityError, QuantityRangeError, RequestError
from extender.model import (
    RESOURCE_GPU,
    RESOURCE_GPU_MEMORY,
    RESOURCE_GPU_MILLI,
    RESOURCE_GPU_SHARED,
    RESOURCE_MIG_PREFIX,
    RequestKind,
)
from extender.quantity import parse_quantity, quantity_to_mib
from extender.units import MAX_GPUS_PER_POD

AMOUNT_FORMS = (f"{RESOURCE_GPU}: N, {RESOURCE_GPU_SHARED}: N, {RESOURCE_MIG_PREFIX}<profile>: N, "
                f"{RESOURCE_GPU_MEMORY}: <bytes, e.g. 4Gi>, {RESOURCE_GPU_MILLI}: 1..999")

HAMI_GPUMEM = "nvidia.com/gpumem"
HAMI_GPUMEM_PERCENTAGE = "nvidia.com/gpumem-percentage"
HAMI_RESOURCES = (HAMI_GPUMEM, HAMI_GPUMEM_PERCENTAGE)
HAMI_USE_TYPE = "nvidia.com/use-gputype"
HAMI_NOUSE_TYPE = "nvidia.com/nouse-gputype"
KAI_GPU_FRACTION = "gpu-fraction"
KAI_GPU_MEMORY = "gpu-memory"
KAI_ANNOTATIONS = (KAI_GPU_FRACTION, KAI_GPU_MEMORY)

# A GPU-memory request below this, written without a unit, is a unit left out: "4" is 4 bytes.
UNITLESS_VRAM_FLOOR_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Amount:
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


# -- the foreign forms ---------------------------------------------------------------------


def hami_amount(limits: Mapping[str, Any], requests: Mapping[str, Any],
                path: str) -> Amount | None:
    """HAMi's ``nvidia.com/gpu: 1`` with ``nvidia.com/gpumem: <MiB>`` (a VRAM share) or
    ``nvidia.com/gpumem-percentage: <1..100>`` (a share of one GPU); ``None`` when the
    container at ``path`` names neither."""
    def value(name: str) -> tuple[object, str]:
        where = "requests" if name in requests else "limits"
        return requests.get(name, limits.get(name)), f"{path}.resources.{where}[{name}]"

    present = [n for n in HAMI_RESOURCES if n in limits or n in requests]
    if not present:
        return None
    if len(present) > 1:
        raise RequestError(f"{path}.resources", ", ".join(present),
                           "a container may use exactly one GPU amount form", AMOUNT_FORMS)
    if RESOURCE_GPU in limits or RESOURCE_GPU in requests:
        raw, gpu_field = value(RESOURCE_GPU)
        if count_of(raw, gpu_field) != 1:
            raise RequestError(gpu_field, raw, f"with {present[0]} the extender places a "
                               "share of one GPU", f"{RESOURCE_GPU}: 1")
    raw, field = value(present[0])
    amount = count_of(raw, field)
    if present[0] == HAMI_GPUMEM:
        if amount == 0:
            raise RequestError(field, raw, "must be MiB of GPU memory", "a whole number > 0")
        return Amount(RequestKind.VRAM, 1, amount, None, field)
    if not 1 <= amount <= 100:
        raise RequestError(field, raw, "must be a percentage of one GPU", "1..100")
    if amount == 100:
        return Amount(RequestKind.WHOLE, 1, 0, None, field)
    return Amount(RequestKind.FRACTION, 1, 0, None, field, milli=amount * 10)


def kai_amount(annotations: Mapping[str, Any], containers: Amount | None) -> Amount | None:
    """KAI Scheduler's pod annotations ``gpu-fraction: "0.5"`` and ``gpu-memory: "2000"``
    (MiB); ``None`` when the pod has neither. Refused when the containers ask for a GPU amount
    themselves (``containers``)."""
    found = [name for name in KAI_ANNOTATIONS if name in annotations]
    if not found:
        return None
    field = f"metadata.annotations[{found[0]}]"
    if len(found) > 1 or containers is not None:
        other = found[1] if len(found) > 1 else containers.field if containers else ""
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
        return Amount(RequestKind.FRACTION, 1, 0, None, field,
                      milli=max(1, round(fraction * 1000)))
    if not value.isdigit() or int(value) == 0:
        raise RequestError(field, value, "must be MiB of GPU memory", "a whole number > 0")
    return Amount(RequestKind.VRAM, 1, int(value), None, field)


def vram_resource_amount(unit_mib: int, value: object, field: str) -> Amount | None:
    """A platform's VRAM resource: ``value`` units of ``unit_mib`` MiB each, or a memory
    quantity like ``gpu-memory`` when ``unit_mib`` is 0; ``None`` for zero."""
    if unit_mib == 0:
        return memory_amount(value, field)
    count = count_of(value, field)
    return Amount(RequestKind.VRAM, 1, count * unit_mib, None, field) if count else None


# -- readers every form shares ---------------------------------------------------------------


def memory_amount(value: object, field: str) -> Amount | None:
    """A GPU-memory quantity (``4Gi``) as a VRAM amount; ``None`` for zero."""
    try:
        negative = parse_quantity(value) < 0  # "-1" rounds up to 0 MiB
        mib = quantity_to_mib(value)
    except QuantityError as exc:
        raise RequestError(field, value, "not a memory quantity",
                           "bytes with a suffix, e.g. 4Gi or 4096Mi") from exc
    if negative:
        raise RequestError(field, value, "must not be negative", "a positive size")
    refuse_unitless_vram(value, field)
    return Amount(RequestKind.VRAM, 1, mib, None, field, written=value) if mib else None


def refuse_unitless_vram(value: object, field: str) -> None:
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


def count_of(value: object, field: str) -> int:
    """A whole, non-negative count written as a Kubernetes quantity."""
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


def gpu_count(count: int, value: object, field: str) -> int:
    """A count of GPUs, replicas or MIG instances: at most what one node may have."""
    if count > MAX_GPUS_PER_POD:
        raise RequestError(field, value, "more than any node may have (a pod's GPUs must be "
                           "on one node)", f"a whole number from 0 to {MAX_GPUS_PER_POD}")
    return count
