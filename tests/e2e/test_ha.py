"""Two scheduler + extender pairs with leader election (the chart with replicas: 2): the
leader is killed in the middle of a burst of 200 GPU pods; the follower takes the lease with
its extender's inventory already in sync, every pod is bound and no GPU is over-committed."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import LocalCluster
from tests.e2e.gpu_helpers import (
    GPU_PROFILE_CONFIG,
    NAMESPACE,
    all_assignments,
    create_pods,
    extender_spec,
    over_commitments,
)
from tests.e2e.test_gpu_burst import burst_pods, make_fleet

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PODS = 200
KILL_AFTER_BOUND = 50


def _fast_failover_config(directory: Path) -> Path:
    """The shipped profile with leader election on short timers (the chart's values keys)."""
    config: dict[str, Any] = yaml.safe_load(GPU_PROFILE_CONFIG.read_text())
    config["leaderElection"] |= {"leaseDuration": "4s", "renewDeadline": "3s",
                                 "retryPeriod": "1s"}
    path = directory / "ha-profile.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _bound_count(cluster: LocalCluster) -> int:
    return sum(1 for pod in cluster.api().list_namespaced_pod(NAMESPACE).items
               if pod.spec.node_name)


def test_leader_killed_mid_burst_every_pod_bound_no_gpu_twice(
        controlplane_binaries: object, tmp_path: Path) -> None:
    with LocalCluster(_fast_failover_config(tmp_path), extender_spec(), leader_elect=True,
                      apiserver_args=["--max-requests-inflight=0",
                                      "--max-mutating-requests-inflight=0",
                                      "--enable-priority-and-fairness=false"]) as cluster:
        pairs = [cluster.primary_pair(), cluster.add_scheduler_pair()]
        leader = cluster.wait_for(lambda: next((p for p in pairs if p.is_leader()), None),
                                  timeout_s=30, description="a leader")
        [follower] = [p for p in pairs if p is not leader]
        memory = make_fleet(cluster, 60)  # 240 GPUs for the mix of 200 pods

        creator = threading.Thread(target=create_pods, args=(cluster, burst_pods(PODS)))
        creator.start()
        cluster.wait_for(lambda: _bound_count(cluster) >= KILL_AFTER_BOUND, timeout_s=120,
                         description=f"{KILL_AFTER_BOUND} pods bound by the first leader")
        leader.kill()
        killed_at = time.monotonic()
        bound_at_kill = _bound_count(cluster)
        # mid-burst: the follower has pods left to place (it would be a restart test otherwise)
        assert bound_at_kill < PODS
        creator.join()

        cluster.wait_for(lambda: _bound_count(cluster) == PODS, timeout_s=240,
                         interval_s=1.0, description=f"all {PODS} pods bound after failover")
        failover_s = time.monotonic() - killed_at
        assert follower.is_leader()
        assignments = all_assignments(cluster.api())
        assert len(assignments) == PODS, "every bound pod carries its device assignment"
        assert over_commitments(assignments, memory) == []
        print(f"\nleader killed with {bound_at_kill}/{PODS} pods bound; all bound "
              f"{failover_s:.1f}s later")
