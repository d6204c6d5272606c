"""The shadow's object graph: a read-only watch (``ClusterSync`` with a ``ShadowApplier``), the
extender's own verbs for the judgement, a ledger, and a small HTTP server for the report.

Nothing here can write to the API: the client is used only as a ``ResourceLister`` (list and
watch), and no binder or event recorder is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.apiserver.binder import Binder
from extender.apiserver.client import ResourceLister
from extender.apiserver.errors import KubeError
from extender.core.workload import WorkloadMix
from extender.inventory.store import Inventory
from extender.model import PodKey
from extender.platform import Platform
from extender.runtime.command import DEFAULT_HEAD_TIMEOUT_S
from extender.runtime.listener import (
    PROMETHEUS,
    Route,
    SideListener,
    always_ok,
    health_route,
    json_answer,
)
from extender.scheduling.cycle import NullHoldEvents
from extender.scheduling.scheduler import Scheduler
from extender.shadow.applier import ShadowApplier
from extender.shadow.judge import ShadowJudge
from extender.shadow.ledger import ShadowLedger
from extender.sync.cluster import ClusterSync


class ShadowService:
    def __init__(self, platform: Platform, api: ResourceLister, *,
                 state_file: str | None = None, watch_timeout_seconds: int = 300) -> None:
        self.platform = platform
        self.inventory = Inventory(platform.catalog)
        self.ledger = ShadowLedger(state_file=state_file)
        writes = _NoWrites()
        scheduler = Scheduler(platform, self.inventory, WorkloadMix(), writes, NullHoldEvents(),
                              binder=Binder(writes),
                              reservation_ttl=platform.config.service.reservation_ttl_seconds,
                              check_cpu_memory=platform.config.service.check_cpu_memory)
        self.scheduler = scheduler
        self.applier = ShadowApplier(platform, self.inventory,
                                     ShadowJudge(platform, self.inventory, scheduler),
                                     self.ledger.add, on_placed=scheduler.observed_placed)
        self.sync = ClusterSync(
            api, self.applier, self.inventory,
            reconcile_interval_seconds=platform.config.service.reconcile_interval_seconds,
            watch_timeout_seconds=watch_timeout_seconds, on_synced=self._synced)

    def _synced(self) -> None:
        self.ledger.synced = True
        self.ledger.save()

    def start(self) -> None:
        self.sync.start()

    def stop(self) -> None:
        self.sync.stop()


class _NoWrites:
    """The shadow's ``PodWriter``: the judge only explains, so nothing may ever reach the API;
    a write attempt is a bug, refused as the shadow's RBAC would refuse it."""

    def _refuse(self, what: str) -> None:
        raise KubeError(f"the shadow never writes ({what})", status=403)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        self._refuse(f"get pod {namespace}/{name} for a bind")
        return {}

    def patch_pod_annotations(self, namespace: str, name: str, uid: str,
                              annotations: Mapping[str, str]) -> None:
        self._refuse(f"annotate pod {namespace}/{name}")

    def create_binding(self, namespace: str, name: str, uid: str, node: str,
                       annotations: Mapping[str, str] | None = None) -> None:
        self._refuse(f"bind pod {namespace}/{name}")

    def record_event(self, pod: PodKey, *, reason: str, message: str,
                     event_type: str = "Normal") -> None:
        self._refuse(f"event on pod {pod}")


def report_routes(ledger: ShadowLedger) -> dict[str, Route]:
    """``GET /report`` (JSON), ``/metrics`` (Prometheus), ``/healthz``, ``/readyz`` (200 once
    the first lists are applied), served by the runtime's ``SideListener``."""
    return {
        "/report": lambda: json_answer(ledger.to_json()),
        "/metrics": lambda: (200, ledger.exposition(), PROMETHEUS),
        "/healthz": health_route(always_ok),
        "/readyz": health_route(lambda: None if ledger.synced else "not synced", ok="ready"),
    }


class ReportServer(SideListener):
    """The shadow's listener; one thread (and its reaper), owned here; ``stop`` ends them."""

    def __init__(self, ledger: ShadowLedger, host: str, port: int, *,
                 head_timeout_s: float = DEFAULT_HEAD_TIMEOUT_S) -> None:
        super().__init__(report_routes(ledger), host, port, name="shadow-report",
                         head_timeout_s=head_timeout_s)
