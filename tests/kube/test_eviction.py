"""What preemption reads from a pod's JSON (``kube/eviction.py``), field by field."""

from __future__ import annotations

from typing import Any

import pytest

from extender.kube.eviction import EvictionFacts, eviction_facts

# 2026-12-01T10:00:00Z = 1796119200 s since the epoch
T10 = 1796119200.0


@pytest.mark.parametrize(("pod", "expected"), [
    ({"spec": {"nodeName": "n1", "priority": 100},
      "status": {"startTime": "2026-12-01T10:00:00Z", "phase": "Running"}},
     EvictionFacts("n1", 100, T10)),
    # no startTime yet: the creation time; no priority: 0 (kube's PodPriority)
    ({"metadata": {"creationTimestamp": "2026-12-01T10:00:00Z"}, "spec": {"nodeName": "n1"}},
     EvictionFacts("n1", 0, T10)),
    # a bool is no priority (JSON true is not an int to Kubernetes)
    ({"spec": {"nodeName": "n1", "priority": True}}, EvictionFacts("n1", 0, 0.0)),
    ({"metadata": {"deletionTimestamp": "2026-12-01T10:00:00Z"}, "spec": {"nodeName": "n1"}},
     EvictionFacts("n1", terminating=True)),
    ({"spec": {"nodeName": "n1"}, "status": {"phase": "Succeeded"}},
     EvictionFacts("n1", finished=True)),
    ({"metadata": {"ownerReferences": [{"kind": "ReplicaSet"}, {"kind": "DaemonSet"}]},
      "spec": {"nodeName": "n1"}}, EvictionFacts("n1", daemon_set=True)),
    ({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}},
      "spec": {"nodeName": "n1"}}, EvictionFacts("n1", static=True)),
    # unreadable times read as 0 (oldest), never raise
    ({"spec": {"nodeName": "n1"}, "status": {"startTime": "yesterday"}}, EvictionFacts("n1")),
    ({"metadata": None, "spec": None}, EvictionFacts("")),
])
def test_eviction_facts(pod: dict[str, Any], expected: EvictionFacts) -> None:
    assert eviction_facts(pod) == expected
