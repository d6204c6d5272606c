"""The eviction facts of every bound pod the watch shows (``kube/eviction.py``), by UID: what
the preemption verb needs beyond the inventory's holdings. Fed by ``InventoryApplier`` under its
lock; read by the preemption verb. Thread-safe; a leaf lock."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from extender.kube import objects
from extender.kube.eviction import EvictionFacts, eviction_facts


class PodFacts:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._facts: dict[str, EvictionFacts] = {}

    def observe(self, pod: Mapping[str, Any]) -> None:
        uid = objects.uid(pod)
        if not uid:
            return
        if not objects.node_name(pod):  # the facts' node: a pending pod is never kept
            with self._lock:
                self._facts.pop(uid, None)
            return
        facts = eviction_facts(pod)
        with self._lock:
            self._facts[uid] = facts

    def remove(self, uid: str) -> None:
        with self._lock:
            self._facts.pop(uid, None)

    def replace_all(self, pods: Iterable[Mapping[str, Any]]) -> None:
        fresh = {}
        for pod in pods:
            uid = objects.uid(pod)
            facts = eviction_facts(pod)
            if uid and facts.node:
                fresh[uid] = facts
        with self._lock:
            self._facts = fresh

    def get(self, uid: str) -> EvictionFacts | None:
        with self._lock:
            return self._facts.get(uid)

    def on_nodes(self, nodes: Iterable[str]) -> dict[str, dict[str, EvictionFacts]]:
        """node -> uid -> facts of every known pod bound to one of ``nodes``: one pass over
        the pods (preemption is rare; no per-node index is kept)."""
        out: dict[str, dict[str, EvictionFacts]] = {node: {} for node in nodes}
        with self._lock:
            for uid, facts in self._facts.items():
                on = out.get(facts.node)
                if on is not None:
                    on[uid] = facts
        return out
