"""LocalCluster: etcd + kube-apiserver (+ the extender) (+ kube-scheduler) as local processes.

There are no kubelets and no kube-controller-manager: nodes are plain API objects and pods bound
to them stay Pending with PodScheduled=True, which is all scheduling tests need.

    serve = ExtenderSpec(lambda port: ["gpu-extender", "serve", "--port", str(port)])
    config = Path("scheduler-config/gpu-scheduler-profile.yaml")
    with LocalCluster(scheduler_config=config, extender=serve) as cluster:
        cluster.create_node("gpu-0", {"nvidia.com/gpu": 8})
        ...
"""

from __future__ import annotations

import os
import shutil
import ssl
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeVar

import yaml
from kubernetes import client, config, utils

from localcluster import components
from localcluster.binaries import REPO_ROOT, ControlPlaneBinaries, find_binaries
from localcluster.errors import ClusterStartupError
from localcluster.kubeconfig import write_kubeconfig
from localcluster.network import free_port, tls_context, wait_until_ready
from localcluster.nodes import fake_node_manifest
from localcluster.pki import CLIENT_IDENTITIES, generate_pki
from localcluster.process import ManagedProcess
from localcluster.scheduler_config import write_scheduler_config

T = TypeVar("T")
Identity = Literal["admin", "kube-scheduler", "gpu-extender"]

DEFAULT_RBAC_MANIFEST = REPO_ROOT / "manifests" / "rbac.yaml"
KEEP_DIR_ENV = "GPU_EXTENDER_KEEP_CLUSTER_DIR"
# Namespaces the apiserver creates shortly *after* /readyz; tests need both.
BOOTSTRAP_NAMESPACES = ("default", "kube-system")
EXTENDER_NAME = "extender"


@dataclass(frozen=True)
class ExtenderSpec:
    """How to run the extender. ``command`` receives the port it must listen on (127.0.0.1);
    KUBECONFIG in its environment points at a kubeconfig with the extender's own identity."""

    command: Callable[[int], Sequence[str]]
    env: Mapping[str, str] = field(default_factory=dict)
    ready_path: str = "/readyz"
    cwd: Path | None = None
    ready_timeout_s: float = 30.0
    ready_context: ssl.SSLContext | None = None
    """Set when the extender serves HTTPS: the client context the readiness poll uses (trusted
    CA, and a client certificate when the extender requires mutual TLS)."""

    @property
    def scheme(self) -> str:
        return "http" if self.ready_context is None else "https"


@dataclass(frozen=True)
class SchedulerPair:
    """One kube-scheduler and the extender it calls (one replica of the chart's pod)."""

    extender: ManagedProcess
    scheduler: ManagedProcess
    extender_port: int

    def is_leader(self) -> bool:
        """The scheduler logged that it holds the leader-election lease."""
        try:
            log = self.scheduler.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return False
        return "successfully acquired lease" in log.lower()

    def kill(self) -> None:
        """Crash both processes (SIGKILL), as a node failure would."""
        self.scheduler.kill()
        self.extender.kill()


@dataclass(frozen=True)
class Timeouts:
    etcd_s: float = 30.0
    apiserver_s: float = 90.0
    scheduler_s: float = 60.0


class LocalCluster:
    """A throwaway control plane in a fresh temporary directory.

    Startup failures stop every process, keep the directory, print the log tails and raise
    ClusterStartupError. A clean exit removes the directory unless ``keep_dir`` or
    $GPU_EXTENDER_KEEP_CLUSTER_DIR is set; an exception inside the ``with`` block keeps it.

    ``scheduler_config`` is deployed as written except for clientConnection.kubeconfig and, when
    ``extender`` is given, the host:port of every extender urlPrefix. Without it no scheduler
    runs. ``apiserver_args``/``scheduler_args`` are appended to the harness's flags, e.g.
    ``["--max-requests-inflight=0", "--max-mutating-requests-inflight=0",
    "--enable-priority-and-fairness=false"]`` to lift apiserver throttling in load tests.
    """

    def __init__(
        self,
        scheduler_config: Path | None = None,
        extender: ExtenderSpec | None = None,
        binaries: ControlPlaneBinaries | None = None,
        *,
        rbac_manifest: Path = DEFAULT_RBAC_MANIFEST,
        apiserver_args: Sequence[str] = (),
        scheduler_args: Sequence[str] = ("--v=2",),
        timeouts: Timeouts = Timeouts(),
        keep_dir: bool = False,
        leader_elect: bool = False,
    ) -> None:
        self._scheduler_config_source = scheduler_config
        self._extender_spec = extender
        self._binaries = binaries
        self._rbac_manifest = rbac_manifest
        self._apiserver_args = list(apiserver_args)
        self._scheduler_args = list(scheduler_args)
        self._timeouts = timeouts
        self._keep_dir = keep_dir or bool(os.environ.get(KEEP_DIR_ENV))
        self._leader_elect = leader_elect
        self._scheduler_process: ManagedProcess | None = None
        self._extra_pairs: list[SchedulerPair] = []

        self._workdir: Path | None = None
        self._apiserver_port = 0
        self._extender_port = 0
        self._scheduler_port = 0
        self._kubeconfigs: dict[str, Path] = {}
        self._api_clients: dict[str, client.ApiClient] = {}
        # In start order; stopped in reverse. The extender lives separately because it can be
        # stopped and restarted while the rest keeps running.
        self._processes: list[ManagedProcess] = []
        self._extender_process: ManagedProcess | None = None
        self.started_pids: list[int] = []  # every pid ever started, for orphan checks in tests
        self.startup_seconds = 0.0

    # ----------------------------------------------------------------------------- lifecycle

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop(keep_dir=exc is not None)

    def start(self, attempts: int = 3) -> LocalCluster:
        """Start everything; a start that failed because a picked port was taken meanwhile
        is retried with new ports (up to ``attempts`` times)."""
        began = time.monotonic()
        for attempt in range(1, attempts + 1):
            self._workdir = Path(tempfile.mkdtemp(prefix="localcluster-"))
            try:
                self._start_all()
            except KeyboardInterrupt:
                self.stop(keep_dir=True)
                raise
            except Exception as error:
                workdir = self._workdir
                if attempt < attempts and self._port_taken():
                    print(f"localcluster: a port was taken, retrying ({error})",
                          file=sys.stderr)
                    self.stop()
                    continue
                self._report_failure(error)
                self.stop(keep_dir=True)
                raise ClusterStartupError(
                    f"local cluster failed to start: {error}\n(all logs kept in {workdir})",
                    workdir,
                ) from error
            break
        self.startup_seconds = time.monotonic() - began
        return self

    def _port_taken(self) -> bool:
        """Did a component fail to bind its port? (read from the logs of this attempt)"""
        for log in self.workdir.glob("*.log"):
            if "address already in use" in log.read_text(errors="replace"):
                return True
        return False

    def stop(self, keep_dir: bool = False) -> None:
        """Stop everything (idempotent). Keeps the work directory if asked or configured."""
        for api_client in self._api_clients.values():
            api_client.close()
        self._api_clients.clear()
        self.stop_extender()
        for process in reversed(self._processes):
            process.stop()
        self._processes.clear()
        if self._workdir is None:
            return
        if keep_dir or self._keep_dir:
            print(f"localcluster: logs and state kept in {self._workdir}", file=sys.stderr)
        else:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._workdir = None

    def _start_all(self) -> None:
        workdir = self.workdir
        binaries = self._binaries = self._binaries or find_binaries()
        pki = generate_pki(workdir / "pki")

        self._apiserver_port = free_port()
        for identity in CLIENT_IDENTITIES:
            self._kubeconfigs[identity.file_stem] = write_kubeconfig(
                workdir / f"{identity.file_stem}.kubeconfig",
                self.apiserver_url,
                pki.ca_cert,
                pki.clients[identity.file_stem],
                identity.user,
            )

        etcd_ports = components.EtcdPorts(client=free_port(), peer=free_port())
        etcd = self._launch(
            "etcd", components.etcd_command(binaries.etcd, workdir / "etcd-data", etcd_ports)
        )
        wait_until_ready(etcd, f"{etcd_ports.client_url}/health", self._timeouts.etcd_s)

        apiserver = self._launch(
            "kube-apiserver",
            components.apiserver_command(
                binaries.kube_apiserver,
                pki,
                etcd_ports.client_url,
                self._apiserver_port,
                self._apiserver_args,
            ),
        )
        wait_until_ready(
            apiserver,
            f"{self.apiserver_url}/readyz",
            self._timeouts.apiserver_s,
            tls_context(pki.ca_cert),
        )
        self._wait_for_bootstrap_namespaces()
        self._apply_rbac()

        if self._extender_spec is not None:
            self._extender_port = free_port()
            self.start_extender()

        if self._scheduler_config_source is not None:
            self._start_scheduler(binaries)

    def _start_scheduler(self, binaries: ControlPlaneBinaries) -> None:
        if self._leader_elect:
            self._grant_scheduler_lease()
        self._scheduler_port = free_port()
        self._scheduler_process = self._launch_scheduler(
            binaries, "kube-scheduler", self._extender_port, self._scheduler_port)

    def _launch_scheduler(self, binaries: ControlPlaneBinaries, name: str, extender_port: int,
                          port: int) -> ManagedProcess:
        assert self._scheduler_config_source is not None
        config_file = write_scheduler_config(
            self._scheduler_config_source,
            self.workdir / f"{name}-config.yaml",
            self.kubeconfig("kube-scheduler"),
            f"127.0.0.1:{extender_port}" if self._extender_spec is not None else None,
        )
        scheduler = self._launch(
            name,
            components.scheduler_command(
                binaries.kube_scheduler, config_file, port, self._scheduler_args,
                leader_elect=self._leader_elect,
            ),
        )
        # /healthz, then /readyz so the informer caches are synced before tests create pods
        # (a follower waiting for the lease is ready too).
        for path in ("/healthz", "/readyz"):
            wait_until_ready(
                scheduler,
                f"https://127.0.0.1:{port}{path}",
                self._timeouts.scheduler_s,
                tls_context(None),
            )
        return scheduler

    def _grant_scheduler_lease(self) -> None:
        """What the chart's leader-election Role grants its ServiceAccount, for the harness's
        kube-scheduler user: system:kube-scheduler only covers the default lease name."""
        assert self._scheduler_config_source is not None
        election = (yaml.safe_load(self._scheduler_config_source.read_text())
                    .get("leaderElection") or {})
        namespace = election.get("resourceNamespace", "kube-system")
        lease = election.get("resourceName", "kube-scheduler")
        rbac = client.RbacAuthorizationV1Api(self.api_client())
        rbac.create_namespaced_role(namespace, {
            "metadata": {"name": f"localcluster-{lease}-lease"},
            "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                       "verbs": ["create"]},
                      {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                       "resourceNames": [lease], "verbs": ["get", "update"]}]})
        rbac.create_namespaced_role_binding(namespace, {
            "metadata": {"name": f"localcluster-{lease}-lease"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": f"localcluster-{lease}-lease"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": "system:kube-scheduler"}]})

    def primary_pair(self) -> SchedulerPair:
        """The scheduler and extender started with the cluster."""
        if self._scheduler_process is None or self._extender_process is None:
            raise RuntimeError("this cluster runs no scheduler + extender pair")
        return SchedulerPair(self._extender_process, self._scheduler_process,
                             self._extender_port)

    def add_scheduler_pair(self) -> SchedulerPair:
        """Start one more kube-scheduler + extender pair (a second replica of the chart's pod).
        Needs ``leader_elect=True``: without a lease both schedulers would schedule."""
        spec = self._extender_spec
        if spec is None or self._scheduler_config_source is None or not self._leader_elect:
            raise RuntimeError("add_scheduler_pair needs an extender, a scheduler config "
                               "and leader_elect=True")
        number = len(self._extra_pairs) + 2
        extender_port = free_port()
        env = {**os.environ, **spec.env, "KUBECONFIG": str(self.kubeconfig("gpu-extender"))}
        extender = self._launch(f"extender-{number}", spec.command(extender_port), env, spec.cwd)
        scheme = spec.scheme
        wait_until_ready(extender, f"{scheme}://127.0.0.1:{extender_port}{spec.ready_path}",
                         spec.ready_timeout_s, spec.ready_context)
        scheduler = self._launch_scheduler(self._binaries or find_binaries(),
                                           f"kube-scheduler-{number}", extender_port,
                                           free_port())
        pair = SchedulerPair(extender, scheduler, extender_port)
        self._extra_pairs.append(pair)
        return pair

    def _launch(
        self,
        name: str,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> ManagedProcess:
        """Start a process logging to <workdir>/<name>.log. Control-plane processes are tracked
        in start order for shutdown; the extender is tracked by start_extender()."""
        process = ManagedProcess(name, command, self.workdir / f"{name}.log", env, cwd)
        self.started_pids.append(process.pid)
        if name != EXTENDER_NAME:
            self._processes.append(process)
        return process

    def _wait_for_bootstrap_namespaces(self) -> None:
        core = self.api()

        def all_exist() -> bool:
            existing = {ns.metadata.name for ns in core.list_namespace().items}
            return all(name in existing for name in BOOTSTRAP_NAMESPACES)

        self.wait_for(all_exist, timeout_s=30, description="bootstrap namespaces")

    def _apply_rbac(self) -> None:
        """Install manifests/rbac.yaml exactly as shipped. The extender's client certificate
        carries the ServiceAccount identity those bindings name, so it gets no more rights than
        a deployed extender would."""
        utils.create_from_yaml(self.api_client(), yaml_file=str(self._rbac_manifest))

    def _report_failure(self, error: Exception) -> None:
        """Print every component's log tail: the cause is often in a component other than the
        one that failed its readiness check (etcd for the apiserver, the apiserver for RBAC)."""
        print(f"localcluster: startup failed: {error}", file=sys.stderr)
        processes = [*self._processes]
        if self._extender_process is not None:
            processes.append(self._extender_process)
        for process in processes:
            print(
                f"----- last lines of {process.log_path} -----\n{process.log_tail()}",
                file=sys.stderr,
            )

    def start_process(
        self,
        name: str,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> ManagedProcess:
        """Start one more process (an admission webhook, say) logging to <workdir>/<name>.log;
        the cluster stops it on exit unless the caller stops it first (``stop`` is
        idempotent)."""
        if name == EXTENDER_NAME:
            raise ValueError(f"{name!r} is reserved for the extender (use start_extender)")
        return self._launch(name, command, env, cwd)

    # ------------------------------------------------------------------------------ extender

    def start_extender(self) -> None:
        """Start the extender on its fixed port and wait for its readiness endpoint."""
        spec = self._extender_spec
        if spec is None:
            raise RuntimeError("this cluster was created without an ExtenderSpec")
        if self._extender_process is not None:
            raise RuntimeError("the extender is already running")
        env = {**os.environ, **spec.env, "KUBECONFIG": str(self.kubeconfig("gpu-extender"))}
        process = self._launch(EXTENDER_NAME, spec.command(self._extender_port), env, spec.cwd)
        self._extender_process = process
        wait_until_ready(process, f"{self.extender_url}{spec.ready_path}", spec.ready_timeout_s,
                         spec.ready_context)

    def stop_extender(self) -> None:
        if self._extender_process is not None:
            self._extender_process.stop()
            self._extender_process = None

    def restart_extender(self) -> None:
        """Stop and start the extender on the same port (the scheduler's urlPrefix stays valid)."""
        self.stop_extender()
        self.start_extender()

    # ------------------------------------------------------------------------------- access

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            raise RuntimeError("the cluster is not running")
        return self._workdir

    @property
    def apiserver_url(self) -> str:
        return f"https://127.0.0.1:{self._apiserver_port}"

    @property
    def extender_url(self) -> str:
        scheme = self._extender_spec.scheme if self._extender_spec is not None else "http"
        return f"{scheme}://127.0.0.1:{self._extender_port}"

    @property
    def extender_pid(self) -> int | None:
        return self._extender_process.pid if self._extender_process is not None else None

    @property
    def scheduler_url(self) -> str:
        """kube-scheduler's secure port; /metrics and health endpoints need no credentials."""
        return f"https://127.0.0.1:{self._scheduler_port}"

    def kubeconfig(self, identity: Identity = "admin") -> Path:
        return self._kubeconfigs[identity]

    def api_client(self, identity: Identity = "admin") -> client.ApiClient:
        """A shared ApiClient authenticated as ``identity``; closed when the cluster stops."""
        if identity not in self._api_clients:
            self._api_clients[identity] = config.new_client_from_config(
                config_file=str(self.kubeconfig(identity))
            )
        return self._api_clients[identity]

    def api(self, identity: Identity = "admin") -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client(identity))

    # ------------------------------------------------------------------------------ helpers

    def create_node(
        self,
        name: str,
        extended_resources: Mapping[str, int | str] | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        cpu: str = "64",
        memory: str = "512Gi",
    ) -> client.V1Node:
        """Create a Ready fake node with cpu/memory/pods and the given extended resources
        (e.g. ``{"nvidia.com/gpu": 8}``) as both capacity and allocatable."""
        manifest = fake_node_manifest(
            name,
            extended_resources=extended_resources or {},
            labels=labels or {},
            annotations=annotations or {},
            taints=taints,
            cpu=cpu,
            memory=memory,
        )
        node: client.V1Node = self.api().create_node(manifest)
        return node

    def delete_node(self, name: str) -> None:
        self.api().delete_node(name)

    def wait_for(
        self,
        predicate: Callable[[], T | None],
        timeout_s: float = 30.0,
        interval_s: float = 0.2,
        description: str = "condition",
    ) -> T:
        """Poll ``predicate`` until it returns something truthy and return that value.
        Exceptions from the predicate (a 404 for an object not created yet) propagate."""
        deadline = time.monotonic() + timeout_s
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {description}")
            time.sleep(interval_s)

    def events_for_pod(self, namespace: str, name: str) -> list[client.CoreV1Event]:
        """Events about a pod, oldest first. kube-scheduler writes events.k8s.io/v1 events;
        the core/v1 view shows them with ``note`` as ``message``."""
        events = (
            self.api()
            .list_namespaced_event(
                namespace, field_selector=f"involvedObject.kind=Pod,involvedObject.name={name}"
            )
            .items
        )

        def sort_key(event: client.CoreV1Event) -> float:
            stamp = event.event_time or event.last_timestamp or event.metadata.creation_timestamp
            return stamp.timestamp() if stamp else 0.0

        return sorted(events, key=sort_key)
