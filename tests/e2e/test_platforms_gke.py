"""A GKE-style fleet under the real kube-scheduler, with pods written exactly as GKE's
documentation writes them.

Node labels as GKE sets them:
- MIG pool (``gcloud container node-pools create ... --accelerator
  type=nvidia-tesla-a100,count=1,gpu-partition-size=1g.5gb``): ``cloud.google.com/
  gke-gpu-partition-size: 1g.5gb``, ``nvidia.com/gpu: 7`` allocatable
  (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus-multi);
- time-sharing pool (``gpu-sharing-strategy=time-sharing,max-shared-clients-per-gpu=10``):
  ``cloud.google.com/gke-gpu-sharing-strategy: time-sharing``,
  ``cloud.google.com/gke-max-shared-clients-per-gpu: "10"``, ``nvidia.com/gpu: 10`` for one GPU
  (https://cloud.google.com/kubernetes-engine/docs/concepts/timesharing-gpus);
- ``cloud.google.com/gke-accelerator`` and ``gke-accelerator-count`` on every GPU node
  (kubernetes/autoscaler cluster-autoscaler/cloudprovider/gce, anchors.md section 4.4).
"""

from __future__ import annotations

import pytest

from tests.e2e.gpu_helpers import (
    all_assignments,
    assignment,
    create_pods,
    gpu_cluster,
    gpu_pod,
    over_commitments,
    wait_bound,
    wait_rejected,
)

pytestmark = pytest.mark.e2e

GKE_A100 = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
            "cloud.google.com/gke-accelerator-count": "1"}
PARTITION = {"cloud.google.com/gke-gpu-partition-size": "1g.5gb"}
SHARING = {"cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
           "cloud.google.com/gke-max-shared-clients-per-gpu": "10"}


def test_a_gke_fleet_places_the_pods_gke_documents(controlplane_binaries: object) -> None:
    with gpu_cluster() as cluster:
        cluster.create_node("mig-0", {"nvidia.com/gpu": 7},
                            labels={**GKE_A100, **PARTITION,
                                    "cloud.google.com/gke-nodepool": "a100-mig"})
        cluster.create_node("ts-0", {"nvidia.com/gpu": 10},
                            labels={**GKE_A100, **SHARING,
                                    "cloud.google.com/gke-nodepool": "a100-ts"})
        cluster.create_node("whole-0", {"nvidia.com/gpu": 2},
                            labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
                                    "cloud.google.com/gke-accelerator-count": "2",
                                    "cloud.google.com/gke-nodepool": "a100-whole"})
        cluster.create_node("t4-0", {"nvidia.com/gpu": 1},
                            labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
                                    "cloud.google.com/gke-accelerator-count": "1"})
        # A node with no GPU label at all, known only by its AWS instance type.
        cluster.create_node("g4dn-0", {"nvidia.com/gpu": 1},
                            labels={"node.kubernetes.io/instance-type": "g4dn.xlarge"})

        # Seven 1g.5gb instances on one A100: seven partition pods bind there, the eighth waits.
        partition_pods = [gpu_pod(f"mig-{i}", {"nvidia.com/gpu": 1}, node_selector=PARTITION)
                          for i in range(8)]
        create_pods(cluster, partition_pods[:7])
        for i in range(7):
            assert wait_bound(cluster, f"mig-{i}") == "mig-0"
            result = assignment(cluster.api(), f"mig-{i}")
            assert result.grants[0].mig_profile == "1g.5gb"
        create_pods(cluster, partition_pods[7:])
        # kube-scheduler's own count (7 advertised, 7 used) refuses it before the extender.
        assert "Insufficient nvidia.com/gpu" in wait_rejected(cluster, "mig-7")

        # Ten clients per GPU on the time-sharing node, the eleventh waits.
        sharing_pods = [gpu_pod(f"ts-{i}", {"nvidia.com/gpu": 1}, node_selector=SHARING)
                        for i in range(11)]
        create_pods(cluster, sharing_pods[:10])
        for i in range(10):
            assert wait_bound(cluster, f"ts-{i}") == "ts-0"
            assert assignment(cluster.api(), f"ts-{i}").grants[0].replica
        create_pods(cluster, sharing_pods[10:])
        assert "Insufficient nvidia.com/gpu" in wait_rejected(cluster, "ts-10")

        # A pod typed "a whole A100" never takes a 5 GB partition: only the whole node.
        create_pods(cluster, [gpu_pod("whole-a100", {"nvidia.com/gpu": 1},
                                      labels={"gpu-extender.io/accelerator": "a100-40gb"})])
        assert wait_bound(cluster, "whole-a100") == "whole-0"
        assert assignment(cluster.api(), "whole-a100").grants[0].whole

        # The instance-type-only node takes many small VRAM shares on its one T4 (16 GiB).
        shares = [gpu_pod(f"share-{i}", {"gpu-extender.io/gpu-memory": "2Gi"},
                          node_selector={"node.kubernetes.io/instance-type": "g4dn.xlarge"})
                  for i in range(6)]
        create_pods(cluster, shares)
        for i in range(6):
            assert wait_bound(cluster, f"share-{i}") == "g4dn-0"
        assert {assignment(cluster.api(), f"share-{i}").type_id for i in range(6)} == {"t4"}

        # A HAMi-style pod: 3000 MiB of a T4, by HAMi's own resource and annotation.
        create_pods(cluster, [gpu_pod("hami", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000},
                                      annotations={"nvidia.com/use-gputype": "T4"})])
        assert wait_bound(cluster, "hami") in ("t4-0", "g4dn-0")
        hami = assignment(cluster.api(), "hami")
        assert hami.type_id == "t4" and hami.grants[0].vram_mib == 3000

        memory = {"mig-0": 40960, "ts-0": 40960, "whole-0": 40960, "t4-0": 16384,
                  "g4dn-0": 16384}
        assert over_commitments(all_assignments(cluster.api()), memory) == []
