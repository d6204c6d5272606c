"""Holds whose TTL passed: released at the start of filter and prioritize, at most every
``EXPIRE_EVERY`` seconds.

``Inventory.expire`` looks only at the holds that have a TTL (the hold budget keeps them few),
but it takes the inventory's lock, which the watches and binds wait for: so it does not run on
every call, and a hold outlives its TTL by ``EXPIRE_EVERY`` at most.
"""

from __future__ import annotations

from collections.abc import Callable

from extender.inventory.store import Inventory
from extender.scheduling.cycle import HoldEvents

EXPIRE_EVERY = 0.25


class Expiry:
    def __init__(self, inventory: Inventory, events: HoldEvents,
                 clock: Callable[[], float]) -> None:
        self._inventory = inventory
        self._events = events
        self._clock = clock
        self._next_check = 0.0
        """Unlocked: two threads may both check once, which is harmless."""

    def tick(self) -> None:
        now = self._clock()
        if now < self._next_check:
            return
        self._next_check = now + EXPIRE_EVERY
        self._events.reservation("expired", len(self._inventory.expire()))
