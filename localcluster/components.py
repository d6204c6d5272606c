"""Command lines of etcd, kube-apiserver and kube-scheduler for a kubelet-less local cluster.

Flag choices follow what kwokctl and controller-runtime's envtest run, plus the gotchas of a
cluster without kubelets or kube-controller-manager (docs: /work/shared/reference, section 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localcluster.pki import ClusterPki

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

# Health endpoints plus /metrics are served without authentication so tests and benchmarks can
# scrape the scheduler (it has no authentication/authorization kubeconfig of its own here).
SCHEDULER_UNAUTHENTICATED_PATHS = "/healthz,/readyz,/livez,/metrics"


@dataclass(frozen=True)
class EtcdPorts:
    client: int
    peer: int

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client}"


def etcd_command(binary: Path, data_dir: Path, ports: EtcdPorts) -> list[str]:
    peer_url = f"http://127.0.0.1:{ports.peer}"
    return [
        str(binary),
        "--name=node0",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={ports.client_url}",
        f"--advertise-client-urls={ports.client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=node0={peer_url}",
        # Throwaway data: durability is worthless here and fsync dominates write latency.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def apiserver_command(
    binary: Path, pki: ClusterPki, etcd_url: str, port: int, extra_args: list[str]
) -> list[str]:
    return [
        str(binary),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        # Without a default route the apiserver cannot pick an address and refuses to start;
        # with a loopback address it must not try to publish itself in the kubernetes Endpoints.
        "--advertise-address=127.0.0.1",
        "--endpoint-reconciler-type=none",
        f"--tls-cert-file={pki.apiserver.cert}",
        f"--tls-private-key-file={pki.apiserver.key}",
        f"--client-ca-file={pki.ca_cert}",
        "--authorization-mode=RBAC",
        # ServiceAccount admission rejects pods until kube-controller-manager creates the
        # `default` ServiceAccount; TaintNodesByCondition adds a not-ready taint to every new
        # Node that only the (absent) node lifecycle controller would remove.
        "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki.service_account_public_key}",
        f"--service-account-signing-key-file={pki.service_account_private_key}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        "--allow-privileged=true",
        *extra_args,
    ]


def scheduler_command(
    binary: Path, config_file: Path, port: int, extra_args: list[str], leader_elect: bool = False
) -> list[str]:
    # Honoured even together with --config (unlike --kubeconfig): one local replica needs no
    # Lease, and a restarted scheduler would otherwise wait for the old lease to expire. With
    # leader_elect the config's leaderElection section decides.
    election = [] if leader_elect else ["--leader-elect=false"]
    return [
        str(binary),
        f"--config={config_file}",
        *election,
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--authorization-always-allow-paths={SCHEDULER_UNAUTHENTICATED_PATHS}",
        *extra_args,
    ]
