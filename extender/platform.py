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
from extender.core.scoring.base import PLACEMENTS, Strategy, StrategyContext
from extender.core.scoring.registry import REGISTRY, strategy_class, strategy_weights
from extender.core.workload import WorkloadMix
from extender.errors import ConfigError, FieldError
from extender.kube.decode_node import NodeDecoder
from extender.kube.decode_pod import PodDecoder
from extender.kube.labels import LabelMapper
from extender.kube.selection import NodeSelection, SelectionTyping
from extender.model import GpuRequest, NodeInfo, RequestKind

NEED_TEXT = {PLACEMENTS: "the classes of the pods on each node, which only the simulator "
                         "feeds; the service does not"}
"""Why a need cannot be met, for the refusal message."""


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
                 seed: int = 0, feeds: frozenset[str] = frozenset()) -> Strategy:
        """Build the named strategy (default: the config's). ``feeds``: what the caller
        gives strategies beyond snapshots (the service: nothing; the simulator's replay:
        ``PLACEMENTS``); a strategy that needs more is refused with a ``ConfigError``."""
        chosen = name or self.config.scoring.strategy
        cls = strategy_class(chosen)
        refuse_unmet_needs(chosen, feeds, "platform config")
        context = StrategyContext(self.catalog, self.config.scoring,
                                  workload or WorkloadMix(), np.random.default_rng(seed))
        return cls(context)


def refuse_unmet_needs(strategy: str, feeds: frozenset[str], source: str) -> None:
    """``ConfigError`` (at ``scoring.strategy``) if ``strategy`` needs what the caller does not
    feed; ``KeyError`` if it is not registered."""
    missing = strategy_class(strategy).NEEDS - feeds
    if missing:
        usable = sorted(n for n, c in REGISTRY.items() if feeds >= c.NEEDS)
        raise ConfigError([FieldError(
            "scoring.strategy",
            f"strategy {strategy!r} needs {', '.join(sorted(missing))} "
            f"({NEED_TEXT.get(min(missing), 'not provided here')}); accepted here: "
            f"{', '.join(usable)}")], source)


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


def load_platform(path: str | Path | None = None, *,
                  feeds: frozenset[str] = frozenset()) -> Platform:
    """Load and validate a config file (``None``: the shipped defaults) for a caller that
    feeds strategies ``feeds`` (the service, ``check-config``: nothing beyond snapshots);
    raises ConfigError, also for a strategy that needs more."""
    config = load_config(path, strategies=strategy_weights())
    refuse_unmet_needs(config.scoring.strategy, feeds,
                       "(defaults)" if path is None else str(path))
    return build_platform(config)
