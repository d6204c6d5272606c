"""A real local Kubernetes control plane (etcd, kube-apiserver, kube-scheduler built from source
by hack/build-controlplane.sh) for the gpu-extender end-to-end tests and demo."""

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
