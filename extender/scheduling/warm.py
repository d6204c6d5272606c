"""Ahead of the next pod: the row caches it will read, brought up to date once an answer is out.

A burst's pods share one request (``scheduling.pod_memo``), and each filter reads the
request's fit and the strategy's terms kept per row (``core.fit_cache``, the default
strategy's ``_kept_local``), refreshing the rows the last hold changed before it can answer.
That refresh does not depend on the next pod, only on the request and the snapshot: so once a
filter or prioritize has answered, the worker runs it at once (``runtime.direct``: after the
answer is sent), while kube-scheduler spends the next pod's cycle on its own filters, and the
next filter finds the rows fresh. Nothing is answered from it that would not be answered
without it: the caches are the same caches, keyed the same way, and a filter that finds a row
stale (the warm did not run, or another change came) refreshes it itself.

Only requests a call kept already are warmed (``RowCache.refresh``): a one-off pod never fills
a cache. Failures are logged and dropped: warming is never worth a failed verb.

Then, when filter judged the request on a node list, the request is scored on that list as the
books now are (``Scorer.speculate``, ``speculation.py``): the next pod's filter takes those
scores only if nothing they were computed from has changed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from extender.core.request import PlacementRequest
from extender.inventory.store import Inventory
from extender.scheduling.evaluate import Evaluator
from extender.scheduling.prioritize import Scorer

_log = logging.getLogger(__name__)


class Warmer:
    """The last placement a verb judged, refreshed on request (``run``). Called from the
    thread that answers kube-scheduler's filter and prioritize; a second caller at worst
    warms twice (each refresh is under its cache's lock)."""

    def __init__(self, inventory: Inventory, evaluator: Evaluator, scorer: Scorer) -> None:
        self._inventory = inventory
        self._evaluator = evaluator
        self._scorer = scorer
        self._next: PlacementRequest | None = None
        self._listed: tuple[PlacementRequest, Sequence[str]] | None = None
        """The last request filter judged on a node list, and that list (kube-scheduler's
        next pod of a burst comes with the same nodes)."""
        self.runs = 0
        """Warms that found the request kept (``gpu_extender_rows_warmed_total``; a
        scrape's counters: ``ExtenderService``)."""

    def expect(self, placement: PlacementRequest, names: Sequence[str] | None = None
               ) -> None:
        """The next pod is likely to ask ``placement`` again (a burst's replicas do), on
        ``names`` (filter's node list; ``None``: the last one given for it)."""
        if names is not None:
            self._listed = placement, names
        self._next = placement

    def run(self) -> None:
        placement, self._next = self._next, None
        if placement is None:
            return
        try:
            snapshot = self._inventory.snapshot()
            fit = self._evaluator.fits.refresh(snapshot, placement)
            if fit is None:
                return
            self._scorer.refresh(snapshot, placement, fit)
            self.runs += 1
            listed = self._listed
            if listed is not None and listed[0] is placement:
                names = listed[1]
                self._scorer.speculate(placement, lambda: self._evaluator.evaluate_ahead(
                    snapshot, placement, names))
        except Exception:  # a warm is an optimisation: the next verb refreshes itself
            _log.exception("refreshing the row caches failed; the next call refreshes them")
