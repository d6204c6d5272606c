"""A pod's ``GpuRequest`` resolved against the catalog and the protection policy, once per
scheduling call: the arrays every kernel reads."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.catalog import Catalog
from extender.config.types import ProtectionConfig
from extender.model import GpuRequest, RequestKind


class Protection:
    """Which types an untyped pod may not use, per namespace."""

    def __init__(self, config: ProtectionConfig, catalog: Catalog) -> None:
        if config.protected_types is None:
            protected = {i for i, t in enumerate(catalog.types) if t.protected}
        else:
            protected = set()
            for name in config.protected_types:
                protected |= catalog.resolve(name) or set()
        protected.add(catalog.unknown_index)
        self.protected = catalog.mask(protected)
        self._by_namespace: dict[str, npt.NDArray[np.bool_]] = {}
        for namespace, names in config.namespaces.items():
            allowed: set[int] = set()
            for name in names:
                allowed |= set(range(len(catalog))) if name == "*" else \
                    set(catalog.resolve(name) or ())
            self._by_namespace[namespace] = self.protected & ~catalog.mask(allowed)

    def blocked(self, namespace: str) -> npt.NDArray[np.bool_]:
        """(n_types + 1,) bool: protected types this namespace's untyped pods may not use."""
        return self._by_namespace.get(namespace, self.protected)


@dataclass(frozen=True, eq=False)
class PlacementRequest:
    """Everything a kernel needs about one pod; built by ``resolve_request``."""

    request: GpuRequest
    namespace: str
    accepted: npt.NDArray[np.bool_]
    """(n_types + 1,) bool: types the pod accepts (before protection)."""
    allowed: npt.NDArray[np.bool_]
    """(n_types + 1,) bool: accepted and not protected from this pod."""
    mig_index: int
    """Index into ``catalog.mig.names`` (-1 unless MIG)."""
    cpu_milli: int = 0
    memory_mib: int = 0

    @property
    def kind(self) -> RequestKind:
        return self.request.kind

    @property
    def count(self) -> int:
        return self.request.count


def resolve_request(request: GpuRequest, catalog: Catalog, protection: Protection, *,
                    namespace: str = "", cpu_milli: int = 0,
                    memory_mib: int = 0) -> PlacementRequest:
    n = len(catalog)
    if request.types is None:
        accepted = np.ones(n + 1, dtype=bool)
        accepted[catalog.unknown_index] = False
        accepted &= ~catalog.mask(request.excluded)
        allowed = accepted & ~protection.blocked(namespace)
    else:
        accepted = catalog.mask(request.types - request.excluded)
        allowed = accepted.copy()  # a typed pod may use the protected types it names
    mig_index = catalog.mig.index.get(request.mig_profile, -1) if request.mig_profile else -1
    accepted.flags.writeable = False
    allowed.flags.writeable = False
    return PlacementRequest(request, namespace, accepted, allowed, mig_index,
                            cpu_milli, memory_mib)
