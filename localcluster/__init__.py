"""A real local Kubernetes control plane (etcd, kube-apiserver, kube-scheduler built from source
by hack/build-controlplane.sh) for the gpu-extender end-to-end tests and demo.

    from localcluster import ExtenderSpec, LocalCluster

    extender = ExtenderSpec(lambda port: [".venv/bin/gpu-extender", "serve", "--port", str(port)])
    with LocalCluster(Path("scheduler-config/gpu-scheduler-profile.yaml"), extender) as cluster:
        cluster.create_node("gpu-0", {"nvidia.com/gpu": 8}, labels={...})
        cluster.api().create_namespaced_pod("default", {...})
        cluster.wait_for(lambda: ..., timeout_s=30)

Identities: "admin" (system:masters), "kube-scheduler" (system:kube-scheduler, built-in RBAC) and
"gpu-extender" (the ServiceAccount kube-system/gpu-extender, rights from manifests/rbac.yaml only).
Debug: `python -m localcluster up [--scheduler-config FILE]`; GPU_EXTENDER_KEEP_CLUSTER_DIR=1 keeps
logs; GPU_EXTENDER_CONTROLPLANE_BIN=DIR uses prebuilt binaries.
"""

from localcluster.binaries import ControlPlaneBinaries, find_binaries
from localcluster.cluster import ExtenderSpec, LocalCluster, Timeouts
from localcluster.errors import ClusterStartupError

__all__ = [
    "ClusterStartupError",
    "ControlPlaneBinaries",
    "ExtenderSpec",
    "LocalCluster",
    "Timeouts",
    "find_binaries",
]
