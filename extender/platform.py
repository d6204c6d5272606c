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
from extender.core.scoring.base import PLACEMENTS, Strategy, StrategyContext
from extender.core.scoring.registry import REGISTRY, strategy_class, strategy_weights
from extender.core.workload import WorkloadMix
from extender.errors import ConfigError, FieldError
from extender.kube.decode_node import NodeDecoder
from extender.kube.decode_pod import PodDecoder
from extender.kube.labels import LabelMapper
from extender.model import GpuRequest

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

    def placement_request(self, request: GpuRequest, *, namespace: str = "",
                          cpu_milli: int = 0, memory_mib: int = 0) -> PlacementRequest:
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
    return Platform(
        config=config,
        catalog=catalog,
        labels=labels,
        pods=PodDecoder(catalog, labels),
        nodes=NodeDecoder(catalog, labels),
        protection=Protection(config.protection, catalog),
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
