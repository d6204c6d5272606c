"""The agent's own config file (``--config``), its defaults and validation: every error with its
field path, nothing accepted silently.

    platformConfig: /etc/gpu-extender/config.yaml  # the extender's platform config (catalog);
                                                   # default: the shipped catalog
    overusePolicy: warn          # warn | evict
    overuseToleranceMiB: 0       # use above declared + this is overuse
    intervalSeconds: 10          # one pass every N seconds
    metricsPort: 9401            # Prometheus /metrics; 0: off
    metricsHost: 0.0.0.0
    timeSlicing:                 # overrides the GFD labels nvidia.com/gpu.replicas & co.
      replicas: 4
      resource: nvidia.com/gpu   # or nvidia.com/gpu.shared (renameByDefault)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from extender.agent.inventory import Sharing
from extender.errors import ConfigError, FieldError
from extender.model import RESOURCE_GPU, RESOURCE_GPU_SHARED


class OverusePolicy(StrEnum):
    WARN = "warn"
    """A Warning Event on the pod, once per episode, and the metric."""
    EVICT = "evict"
    """The same, then the overusing pod is evicted (Eviction API: PodDisruptionBudgets hold)."""


@dataclass(frozen=True)
class AgentConfig:
    platform_config: str | None = None
    overuse_policy: OverusePolicy = OverusePolicy.WARN
    overuse_tolerance_mib: int = 0
    interval_s: float = 10.0
    metrics_port: int = 9401
    metrics_host: str = "0.0.0.0"
    sharing: Sharing | None = None


_KEYS = {"platformConfig", "overusePolicy", "overuseToleranceMiB", "intervalSeconds",
         "metricsPort", "metricsHost", "timeSlicing"}


def load_agent_config(path: str | Path | None) -> AgentConfig:
    if path is None:
        return AgentConfig()
    source = str(path)
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise ConfigError([FieldError("<file>", f"cannot read ({exc.strerror})")], source) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([FieldError("<file>", f"not YAML ({exc})")], source) from exc
    return parse_agent_config(doc, source)


def parse_agent_config(doc: Any, source: str = "agent config") -> AgentConfig:
    if not isinstance(doc, dict):
        raise ConfigError([FieldError("<document>", f"{doc!r}: must be a mapping")], source)
    errors: list[FieldError] = [FieldError(k, f"unknown key (accepted: {', '.join(sorted(_KEYS))})")
                                for k in doc if k not in _KEYS]

    def integer(key: str, default: int, minimum: int, maximum: int = 1 << 31) -> int:
        value = doc.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            errors.append(FieldError(key, f"{value!r}: must be an integer in "
                                     f"[{minimum}, {maximum}]"))
            return default
        return value

    policy = doc.get("overusePolicy", "warn")
    if policy not in {p.value for p in OverusePolicy}:
        errors.append(FieldError("overusePolicy", f"{policy!r} (accepted: warn, evict)"))
        policy = "warn"
    interval = doc.get("intervalSeconds", 10)
    if isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0:
        errors.append(FieldError("intervalSeconds", f"{interval!r}: must be a number > 0"))
        interval = 10
    platform = doc.get("platformConfig")
    if platform is not None and not isinstance(platform, str):
        errors.append(FieldError("platformConfig", f"{platform!r}: must be a file path"))
        platform = None
    host = doc.get("metricsHost", "0.0.0.0")
    if not isinstance(host, str) or not host:
        errors.append(FieldError("metricsHost", f"{host!r}: must be an address"))
        host = "0.0.0.0"
    sharing = None
    if "timeSlicing" in doc:
        raw = doc["timeSlicing"]
        if not isinstance(raw, dict):
            errors.append(FieldError("timeSlicing", f"{raw!r}: must be a mapping"))
        else:
            replicas = raw.get("replicas")
            resource = raw.get("resource", RESOURCE_GPU)
            if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
                errors.append(FieldError("timeSlicing.replicas",
                                         f"{replicas!r}: must be an integer >= 0"))
                replicas = 0
            if resource not in (RESOURCE_GPU, RESOURCE_GPU_SHARED):
                errors.append(FieldError("timeSlicing.resource", f"{resource!r} (accepted: "
                                         f"{RESOURCE_GPU}, {RESOURCE_GPU_SHARED})"))
                resource = RESOURCE_GPU
            sharing = Sharing(replicas if replicas > 1 else 0, resource)
    config = AgentConfig(
        platform_config=platform,
        overuse_policy=OverusePolicy(policy),
        overuse_tolerance_mib=integer("overuseToleranceMiB", 0, 0),
        interval_s=float(interval),
        metrics_port=integer("metricsPort", 9401, 0, 65535),
        metrics_host=host,
        sharing=sharing,
    )
    if errors:
        raise ConfigError(errors, source)
    return config
