"""``Scheduler.judge``: the placement prioritize would hold, computed on one snapshot without a
trace; ``commit`` holds and binds exactly that."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.platform import Platform
from extender.server.service import ExtenderService
from extender.sync.offline import load_cluster_file
from tests.builders import make_pod

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture
def service(platform: Platform) -> ExtenderService:
    service = ExtenderService.from_cluster_objects(platform,
                                                   load_cluster_file(DATA / "cluster.json"))
    service.start()
    return service


@pytest.mark.parametrize("pod", [
    make_pod("whole").uid("u-whole").gpus(1).obj(),
    make_pod("pair").uid("u-pair").gpus(2).obj(),
    make_pod("share").uid("u-share").gpu_memory("6Gi").obj(),
    make_pod("mig").uid("u-mig").mig("1g.10gb").obj(),
])
def test_judge_is_what_prioritize_holds_and_leaves_no_trace(service: ExtenderService,
                                                            pod: dict[str, object]) -> None:
    scheduler = service.scheduler
    names = list(reversed(service.inventory.node_names()))  # any order: ties go by name
    generation = service.inventory.snapshot().generation
    judgement = scheduler.judge(pod, names)
    assert judgement.placement is not None
    assert service.inventory.holding(judgement.explanation.cycle.pod.key.uid) is None
    assert service.inventory.snapshot().generation == generation
    scheduler.filter(pod, names)  # prioritize holds only for a pod this filter passed
    scheduler.prioritize(pod, names)
    held = service.inventory.holding(judgement.explanation.cycle.pod.key.uid)
    assert held is not None and held.assignment == judgement.placement.assignment


def test_commit_binds_the_judged_gpus(service: ExtenderService) -> None:
    pod = make_pod("p").uid("u-p").gpus(1).obj()
    judgement = service.scheduler.judge(pod)
    outcome = service.scheduler.commit(pod, judgement)
    assert outcome.error == ""
    holding = service.inventory.holding("u-p")
    assert holding is not None and judgement.placement is not None
    assert holding.assignment == judgement.placement.assignment
    # judged again, the pod is bound: no new placement
    bound = {**pod, "spec": {**pod["spec"], "nodeName": judgement.node}}  # type: ignore[dict-item]
    assert service.scheduler.judge(bound).placement is None
