"""The scheduling core the controller judges pods with: the extender's own (``Scheduler``), on
the controller's inventory. It never binds; the client is there because the core's bind step
wants one (``binder``); this is the one place the controller builds it."""

from __future__ import annotations

from extender.apiserver.binder import Binder
from extender.apiserver.client import PodWriter
from extender.core.workload import WorkloadMix
from extender.inventory.store import Inventory
from extender.platform import Platform
from extender.scheduling.cycle import HoldEvents
from extender.scheduling.scheduler import Scheduler


def judging_scheduler(platform: Platform, inventory: Inventory, api: PodWriter,
                      events: HoldEvents) -> Scheduler:
    service = platform.config.service
    return Scheduler(platform, inventory, WorkloadMix(), api, events,
                     binder=Binder(api),
                     reservation_ttl=service.reservation_ttl_seconds,
                     check_cpu_memory=service.check_cpu_memory)
