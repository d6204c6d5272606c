"""Composition root: config -> catalog, label mapping, decoders, protection, strategy.

The service, the simulator and ``check-config`` all build the same ``Platform``, so a config
that passes ``check-config`` is exactly the config the service runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from extender.catalog import Catalog
from extender.config import PlatformConfig, load_config
from extender.core.request import PlacementRequest, Protection, resolve_request
from extender.core.scoring.base import Strategy, StrategyContext, make_strategy, strategy_names
from extender.core.workload import WorkloadMix
from extender.kube.decode_node import NodeDecoder
from extender.kube.decode_pod import PodDecoder
from extender.kube.labels import LabelMapper
from extender.model import GpuRequest


@dataclass(frozen=True, eq=False)
class Platform:
    config: PlatformConfig
    catalog: Catalog
    labels: LabelMapper
    pods: PodDecoder
    nodes: NodeDecoder
    protection: Protection

    def placement_request(self, request: GpuRequest, *, namespace: str = "",
                          cpu_milli: int = 0, memory_mib: int = 0) -> PlacementRequest:
        return resolve_request(request, self.catalog, self.protection, namespace=namespace,
                               cpu_milli=cpu_milli, memory_mib=memory_mib)

    def strategy(self, name: str | None = None, *, workload: WorkloadMix | None = None,
                 seed: int = 0) -> Strategy:
        context = StrategyContext(self.catalog, self.config.scoring,
                                  workload or WorkloadMix(), np.random.default_rng(seed))
        return make_strategy(name or self.config.scoring.strategy, context)


def build_platform(config: PlatformConfig) -> Platform:
    catalog = Catalog(config.accelerators)
    labels = LabelMapper(config.node_labels, catalog)
    return Platform(
        config=config,
        catalog=catalog,
        labels=labels,
        pods=PodDecoder(catalog, labels),
        nodes=NodeDecoder(catalog, labels),
        protection=Protection(config.protection, catalog),
    )


def load_platform(path: str | Path | None = None) -> Platform:
    """Load and validate a config file (``None``: the shipped defaults); raises ConfigError."""
    return build_platform(load_config(path, strategies=strategy_names()))
