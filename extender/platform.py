"""Composition root: config -> catalog, label mapping, decoders, protection, strategy.

The service, the simulator and ``check-config`` all build the same ``Platform``, so a config
that passes ``check-config`` is exactly the config the service runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
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
from extender.kube.selection import NodeSelection, SelectionTyping
from extender.model import GpuRequest, NodeInfo, RequestKind


@dataclass(frozen=True, eq=False)
class Platform:
    config: PlatformConfig
    catalog: Catalog
    labels: LabelMapper
    pods: PodDecoder
    nodes: NodeDecoder
    protection: Protection
    selection_typing: SelectionTyping

    def placement_request(self, request: GpuRequest, *, namespace: str = "",
                          cpu_milli: int = 0, memory_mib: int = 0,
                          nodes: Mapping[str, NodeInfo] | None = None) -> PlacementRequest:
        """``nodes``: the inventory's node map; an untyped pod whose required node selection
        reaches only protected GPU types is typed by it (``kube/selection.py``)."""
        if nodes is not None and request.types is None and \
                isinstance(request.selection, NodeSelection):
            typed = self.selection_typing.types_of(request.selection, nodes)
            if typed is not None:
                request = replace(request, types=typed.types, type_source=typed.rule)
                if typed.mig_profile is not None and request.kind is RequestKind.WHOLE:
                    request = replace(request, kind=RequestKind.MIG,
                                      mig_profile=typed.mig_profile)
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
    protection = Protection(config.protection, catalog)
    return Platform(
        config=config,
        catalog=catalog,
        labels=labels,
        pods=PodDecoder(catalog, labels, config.foreign_forms),
        nodes=NodeDecoder(catalog, labels),
        protection=protection,
        selection_typing=SelectionTyping(catalog, protection.protected),
    )


def load_platform(path: str | Path | None = None) -> Platform:
    """Load and validate a config file (``None``: the shipped defaults); raises ConfigError."""
    return build_platform(load_config(path, strategies=strategy_names()))
