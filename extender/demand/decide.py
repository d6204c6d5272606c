"""The reconcile rules (pure): what to create and what to delete, given the objects wanted now,
the ones that exist, and which real pods are bound or gone.

For every existing demand object, the first rule that applies:

1. a utility pod that is **bound** goes at once (``BOUND``): the node it asked for exists, and a
   bound whole-GPU pod would hold the GPU the real pods need (nothing in-tree evicts it);
2. an object still wanted stays (``WANTED``); when the pods it serves changed, its pods
   annotation is brought up to date (``REFRESH``: the plan packed a new pod onto it);
3. an object whose real pods all **bound or went away** goes at once (``SERVED``);
4. any other goes once it is ``cooldown`` old (``UNWANTED``), and stays until then
   (``COOLING``): a pod that flips between fitting and not does not flap its demand.

A wanted object that does not exist is created, unless one of that name was just deleted as
bound in this pass (the next pass decides again, on the view without it) or within the
cooldown before (``HELD``): its node exists and still does not take the real pods (a taint
they do not tolerate), so asking again would only bind it there again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from extender.demand.clock import epoch
from extender.demand.emit import DemandObject, Kind
from extender.demand.labels import LABEL_TYPE, served_pods
from extender.kube import objects


class Rule(StrEnum):
    CREATE = "create"
    BOUND = "bound"
    WANTED = "wanted"
    REFRESH = "refresh"
    SERVED = "served"
    UNWANTED = "unwanted"
    COOLING = "cooling"
    HELD = "held"

    @property
    def deletes(self) -> bool:
        return self in (Rule.BOUND, Rule.SERVED, Rule.UNWANTED)


@dataclass(frozen=True)
class Existing:
    kind: Kind
    name: str
    type_id: str
    pods: tuple[str, ...]
    created: float | None
    """Epoch seconds of ``metadata.creationTimestamp`` (``None``: unknown, treated as old)."""
    node: str = ""
    """A utility pod's ``spec.nodeName``."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind.value, self.name)


@dataclass(frozen=True)
class Action:
    rule: Rule
    kind: Kind
    name: str
    type_id: str
    wanted: DemandObject | None = None
    """The object to create (``CREATE``) or whose annotations to refresh (``REFRESH``)."""
    added: tuple[str, ...] = ()
    """``REFRESH``: the pods it serves now and did not before."""


def existing_of(kind: Kind, obj: Mapping[str, Any]) -> Existing:
    return Existing(kind, objects.name(obj), str(objects.labels(obj).get(LABEL_TYPE) or ""),
                    served_pods(obj), epoch(objects.meta(obj).get("creationTimestamp")),
                    objects.node_name(obj) if kind is Kind.POD else "")


def decide(wanted: Sequence[DemandObject], existing: Iterable[Existing], *,
           bound: Collection[str], present: Collection[str], now: float,
           cooldown_s: float, held: Collection[tuple[str, str]] = ()) -> list[Action]:
    """The actions, deletions first, then creations in ``wanted`` order. ``held``: keys of
    utility pods deleted as bound within the cooldown."""
    by_key = {w.key: w for w in wanted}
    actions: list[Action] = []
    seen: set[tuple[str, str]] = set()
    for item in sorted(existing, key=lambda e: e.key):
        seen.add(item.key)
        if item.kind is Kind.POD and item.node:
            rule = Rule.BOUND
        elif item.key in by_key:
            now_serves = by_key[item.key].pods
            if set(now_serves) != set(item.pods):
                added = tuple(p for p in now_serves if p not in item.pods)
                actions.append(Action(Rule.REFRESH, item.kind, item.name, item.type_id,
                                      by_key[item.key], added))
                continue
            rule = Rule.WANTED
        elif all(p in bound or p not in present for p in item.pods):
            rule = Rule.SERVED
        elif item.created is None or now - item.created >= cooldown_s:
            rule = Rule.UNWANTED
        else:
            rule = Rule.COOLING
        actions.append(Action(rule, item.kind, item.name, item.type_id))
    actions += [Action(Rule.HELD if w.key in held else Rule.CREATE, w.kind, w.name, w.type_id,
                       w) for w in wanted if w.key not in seen]
    return actions
