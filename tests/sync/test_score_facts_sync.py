"""The exact cut's cluster facts through the online service's watches (``ClusterSync`` with
``ScoreFacts``): known once nodes, pods and Services have listed; later events move them."""

from __future__ import annotations

from extender.platform import Platform
from extender.server.service import ExtenderService
from tests.builders import make_pod
from tests.sync.clusters import t4_node
from tests.sync.fake_api import FakeApiServer
from tests.waiting import eventually


def test_facts_follow_the_watches(platform: Platform) -> None:
    affine = make_pod("affine").namespace("ml").gpus(1).obj()
    affine["spec"]["affinity"] = {"podAffinity": {"requiredDuringScheduling"
                                                  "IgnoredDuringExecution": []}}
    api = FakeApiServer([t4_node("t4-0")], [affine])
    api.add_service({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}}})
    service = ExtenderService.online(platform, api, watch_timeout_seconds=1)
    facts = service.facts
    assert facts is not None and not facts.known()
    service.start()
    try:
        eventually(facts.known)
        assert facts.selectors("default") == [{"app": "web"}]
        assert facts.pods_with_affinity() == 1
        tainted = t4_node("t4-1")
        tainted["spec"] = {"taints": [{"key": "spot", "effect": "PreferNoSchedule"}]}
        api.add_node(tainted)
        api.add_service({"metadata": {"name": "db"}, "spec": {"selector": {"app": "db"}}})
        eventually(lambda: len(facts.tainted_among(["t4-0", "t4-1"])) == 1 and
                   len(facts.selectors("default")) == 2)
    finally:
        service.stop()
