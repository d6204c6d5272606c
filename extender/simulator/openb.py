"""openb model names -> catalog types, and trace rows -> the service's domain values.

Details: the trace names five public models and three undisclosed ones::

    T4 -> t4    P100 -> p100    V100M16 -> v100-16gb    V100M32 -> v100-32gb    A10 -> a10
    G1, G2, G3 -> trace-local types ``openb-g1``/``openb-g2``/``openb-g3``

The trace-local types are added through the platform config's ``accelerators`` list (the same
path a platform engineer uses for a model the catalog lacks), so the simulator builds its
``Platform`` exactly as the service does. Their sizes and prices are assumptions: G2 (20 GB,
A10-class, 1.01 $/h), G3 (30 GB, V100-32GB-class, 3.90 $/h), G1 (16 GB, T4-class, 0.53 $/h).

Pods become the requests the service decodes from pod specs: ``gpu_milli < 1000`` is a
``FRACTION`` of one GPU (``gpu-extender.io/gpu-milli``), whole GPUs are ``WHOLE`` requests, and
a CPU-only pod is a ``WHOLE`` request for zero GPUs that accepts every type (it asks for no GPU,
so protection does not apply to it). ``gpu_spec`` becomes the accepted types.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from extender.catalog import Catalog
from extender.config import load_config_text
from extender.config.defaults import DEFAULT_STRATEGY
from extender.core.scoring.registry import strategy_weights
from extender.model import GpuDevice, GpuRequest, NodeInfo, RequestKind
from extender.platform import Platform, build_platform
from extender.simulator.errors import TraceError
from extender.simulator.trace import TraceNode, TracePod
from extender.units import MILLI

CATALOG_MODELS: Mapping[str, str] = {
    "T4": "t4", "P100": "p100", "V100M16": "v100-16gb", "V100M32": "v100-32gb", "A10": "a10",
}


@dataclass(frozen=True)
class LocalType:
    """A trace model the catalog does not know, added as a platform-config accelerator."""

    id: str
    memory_mib: int
    price: float

    def entry(self, model: str) -> dict[str, Any]:
        return {"id": self.id, "family": self.id, "memoryMiB": self.memory_mib,
                "price": self.price, "protected": False, "aliases": [model]}


TRACE_LOCAL_MODELS: Mapping[str, LocalType] = {
    "G1": LocalType("openb-g1", 16_000, 0.53),
    "G2": LocalType("openb-g2", 20_000, 1.01),
    "G3": LocalType("openb-g3", 30_000, 3.90),
}


def platform_for_models(models: Iterable[str], *, extra: Iterable[dict[str, Any]] = (),
                        strategy: str | None = None,
                        weights: Mapping[str, float] | None = None,
                        protected_types: Iterable[str] | None = None) -> Platform:
    """The platform the service would run, plus trace-local types for ``models``.

    ``extra``: further raw accelerator entries (the fleet scenario's types);
    ``strategy``/``weights``: the scoring section; ``protected_types``: the protection
    section's list (``None``: the catalog's flags; empty: nothing protected).
    """
    entries = [TRACE_LOCAL_MODELS[m].entry(m) for m in sorted(set(models))
               if m in TRACE_LOCAL_MODELS]
    raw: dict[str, Any] = {"accelerators": [*entries, *extra]}
    if strategy is not None or weights:
        raw["scoring"] = {"strategy": strategy or DEFAULT_STRATEGY,
                          "weights": dict(weights or {})}
    if protected_types is not None:
        raw["protection"] = {"protectedTypes": list(protected_types)}
    config = load_config_text(yaml.safe_dump(raw), source="simulator platform",
                              strategies=strategy_weights())
    return build_platform(config)


def resolve_model(catalog: Catalog, model: str, source: str, line: int | None = None,
                  column: str = "model") -> int:
    """Catalog index of a trace model name; ``TraceError`` names the accepted names."""
    target = CATALOG_MODELS.get(model)
    found = catalog.resolve(target) if target is not None else catalog.resolve(model)
    if not found or len(found) != 1:
        accepted = ", ".join(sorted({*CATALOG_MODELS, *TRACE_LOCAL_MODELS}))
        raise TraceError(source, f"unknown GPU model (accepted: {accepted}, or a catalog "
                                 "type id)", line=line, column=column, value=model)
    return next(iter(found))


def node_info(node: TraceNode, catalog: Catalog, source: str = "nodes") -> NodeInfo:
    """A trace node as the node decoder would describe it (one ``GpuDevice`` per GPU)."""
    if node.gpus == 0:
        return NodeInfo(name=node.name, gpus=(), cpu_milli=node.cpu_milli,
                        memory_mib=node.memory_mib)
    type_index = resolve_model(catalog, node.model, source)
    memory = int(catalog.memory_mib[type_index])
    gpus = tuple(GpuDevice(index=i, type_index=type_index, memory_mib=memory)
                 for i in range(node.gpus))
    return NodeInfo(name=node.name, gpus=gpus, cpu_milli=node.cpu_milli,
                    memory_mib=node.memory_mib, type_name=node.model)


def pod_request(pod: TracePod, catalog: Catalog, source: str = "pods") -> GpuRequest:
    """The request the pod decoder would produce for this trace pod."""
    if pod.num_gpu == 0:
        return GpuRequest(RequestKind.WHOLE, 0, types=frozenset(range(len(catalog))))
    types = None
    if pod.gpu_spec:
        types = frozenset(resolve_model(catalog, m, source, column="gpu_spec")
                          for m in pod.gpu_spec)
    if pod.gpu_milli < MILLI:
        return GpuRequest(RequestKind.FRACTION, 1, milli=pod.gpu_milli, types=types,
                          type_source="gpu_spec" if types else "")
    return GpuRequest(RequestKind.WHOLE, pod.num_gpu, types=types,
                      type_source="gpu_spec" if types else "")
