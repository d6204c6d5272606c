"""The capacity publisher's Lease election (``sync/leader.py``) against an in-memory Lease API
with resourceVersion checks: one leader at a time, take-over after the lease expires, a lost
race stays a follower."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from extender.apiserver.errors import Conflict, Unavailable
from extender.sync.leader import LeaderLease


class Leases:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0
        self.down = False

    def _stored(self, body: Mapping[str, Any]) -> dict[str, Any]:
        self.version += 1
        doc = copy.deepcopy(dict(body))
        doc["metadata"]["resourceVersion"] = str(self.version)
        return doc

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        if self.down:
            raise Unavailable("get lease: 503")
        found = self.objects.get((namespace, name))
        return copy.deepcopy(found) if found else None

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        key = (namespace, body["metadata"]["name"])
        if key in self.objects:
            raise Conflict("create lease: 409 AlreadyExists")
        self.objects[key] = self._stored(body)
        return self.objects[key]

    def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]
                      ) -> dict[str, Any]:
        current = self.objects[(namespace, name)]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict("replace lease: 409 the object has been modified")
        self.objects[(namespace, name)] = self._stored(body)
        return self.objects[(namespace, name)]


def test_one_leader_then_take_over_after_expiry() -> None:
    now = [1000.0]
    api = Leases()
    a = LeaderLease(api, "ns", identity="a", duration_s=15, renew_s=2, clock=lambda: now[0])
    b = LeaderLease(api, "ns", identity="b", duration_s=15, renew_s=2, clock=lambda: now[0])
    assert a.leading() and not b.leading()
    for _ in range(10):  # a keeps renewing: b never takes it
        now[0] += 2
        assert a.leading() and not b.leading()
    api.down = True  # a cannot renew any more ...
    now[0] += 16
    assert not a.leading()  # ... and steps down once its lease would have expired
    api.down = False
    assert b.leading()  # the lease was not renewed for 16 s > 15: b takes it
    holder = api.objects[("ns", "gpu-extender-node-capacity")]["spec"]
    assert holder["holderIdentity"] == "b" and holder["leaseTransitions"] == 1
    now[0] += 2
    assert not a.leading()  # a sees b's fresh renewal


def test_a_lost_race_stays_a_follower() -> None:
    api = Leases()
    a = LeaderLease(api, "ns", identity="a", clock=lambda: 0.0)
    b = LeaderLease(api, "ns", identity="b", clock=lambda: 0.0)
    original = api.get_lease
    api.get_lease = lambda namespace, name: None  # type: ignore[method-assign]
    assert a.leading()
    assert not b.leading()  # both saw no lease; b's create conflicts
    api.get_lease = original  # type: ignore[method-assign]
