"""The reconcile rules: bound utility pods go at once, served demand goes at once, unwanted
demand after its cooldown, wanted demand is created once."""

from __future__ import annotations

import pytest

from extender.demand.decide import Existing, Rule, decide, existing_of
from extender.demand.emit import DemandObject, Kind

P = pytest.param
NOW = 1_000_000.0
COOLDOWN = 120.0


def wanted(name: str, pods: tuple[str, ...] = ("d/a",), kind: Kind = Kind.POD) -> DemandObject:
    return DemandObject(kind, name, {}, "t4", 1, pods)


def existing(name: str, *, age: float = 0.0, node: str = "", pods: tuple[str, ...] = ("d/a",),
             kind: Kind = Kind.POD) -> Existing:
    return Existing(kind, name, "t4", pods, NOW - age, node)


@pytest.mark.parametrize(("want", "have", "bound", "present", "expected"), [
    P([wanted("u-0")], [], set(), {"d/a"}, [(Rule.CREATE, "u-0")], id="missing: create"),
    P([wanted("u-0")], [existing("u-0")], set(), {"d/a"}, [(Rule.WANTED, "u-0")],
      id="exists and wanted: keep"),
    # bound at once, even wanted and young; and not re-created in the same pass
    P([wanted("u-0")], [existing("u-0", node="t4-1")], set(), {"d/a"}, [(Rule.BOUND, "u-0")],
      id="utility pod bound: delete"),
    # its pods bound (d/a) or gone (d/b not present): delete though only 10 s old
    P([], [existing("u-0", age=10, pods=("d/a", "d/b"))], {"d/a"}, {"d/a"},
      [(Rule.SERVED, "u-0")], id="served: delete at once"),
    # one pod still waits: 10 s < 120 s cooldown -> keep; 121 s >= 120 s -> delete
    P([], [existing("u-0", age=10, pods=("d/a", "d/b"))], {"d/a"}, {"d/a", "d/b"},
      [(Rule.COOLING, "u-0")], id="unwanted, cooling"),
    P([], [existing("u-0", age=121, pods=("d/a", "d/b"))], {"d/a"}, {"d/a", "d/b"},
      [(Rule.UNWANTED, "u-0")], id="unwanted after cooldown"),
    # a ProvisioningRequest is never 'bound': spec.nodeName is a pod's
    P([], [existing("pr-x1", age=10, kind=Kind.PROVISIONING_REQUEST)], set(), {"d/a"},
      [(Rule.COOLING, "pr-x1")], id="provisioning request cooling"),
    # the plan packed d/b onto the existing object: its pods annotation is refreshed
    P([wanted("u-0", pods=("d/a", "d/b"))], [existing("u-0")], set(), {"d/a", "d/b"},
      [(Rule.REFRESH, "u-0")], id="serves another pod now: refresh"),
    P([wanted("u-1")], [existing("u-0", age=10)], set(), {"d/a"},
      [(Rule.COOLING, "u-0"), (Rule.CREATE, "u-1")], id="replaced: old cools, new created"),
])
def test_rules(want: list[DemandObject], have: list[Existing], bound: set[str],
               present: set[str], expected: list[tuple[Rule, str]]) -> None:
    actions = decide(want, have, bound=bound, present=present, now=NOW, cooldown_s=COOLDOWN)
    assert [(a.rule, a.name) for a in actions] == expected
    assert all(a.rule.deletes == (a.rule in (Rule.BOUND, Rule.SERVED, Rule.UNWANTED))
               for a in actions)
    assert [a.added for a in actions if a.rule is Rule.REFRESH] in ([], [("d/b",)])


def test_held_after_a_bound_deletion() -> None:
    # deleted as bound within the cooldown: its node does not take the real pods; not again
    actions = decide([wanted("u-0"), wanted("u-1")], [], bound=set(), present={"d/a"},
                     now=NOW, cooldown_s=COOLDOWN, held={("Pod", "u-0")})
    assert [(a.rule, a.name) for a in actions] == [(Rule.HELD, "u-0"), (Rule.CREATE, "u-1")]


def test_existing_reads_what_emit_writes() -> None:
    pod = {"metadata": {"name": "gpu-demand-t4-abc-0", "creationTimestamp":
                        "2026-12-01T23:00:00Z",
                        "labels": {"gpu-extender.io/demand": "true",
                                   "gpu-extender.io/demand-type": "t4"},
                        "annotations": {"gpu-extender.io/demand-pods": "d/a,d/b"}},
           "spec": {"nodeName": "t4-1"}}
    item = existing_of(Kind.POD, pod)
    assert (item.name, item.type_id, item.pods, item.node) == \
        ("gpu-demand-t4-abc-0", "t4", ("d/a", "d/b"), "t4-1")
    assert item.created == 1796166000.0  # 2026-12-01T23:00:00Z
    # no creation time: treated as old (an unwanted one goes)
    assert existing_of(Kind.POD, {"metadata": {"name": "x"}}).created is None
