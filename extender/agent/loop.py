"""One agent pass, and the loop that repeats it (with an owner and a stop).

A pass: NVML snapshot -> the gpus annotation (published when it changed) -> the pods on the node
-> the kubelet's devices -> corrections of our assignments -> usage vs declared -> overuse
episodes (Event, policy) -> metrics. A failing step (whatever it raises: a hostile
annotation, a non-UTF-8 cgroup file, a bug) is logged and counted; the pass goes on with what
it has. A pass that fails as a whole (no NVML) is logged and counted too, and the loop goes on
(issue 19, finding 7). ``AgentLoop.health`` fails when passes stop ending (a hung NVML call, a
dead thread), ``ready`` also until a pass has completed and while the last one failed: the
DaemonSet's liveness and readiness probes read them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from extender.agent.cgroup import PidMapper
from extender.agent.config import AgentConfig, OverusePolicy, sharing_of
from extender.agent.corrections import Correction, correction
from extender.agent.devices import DeviceMap
from extender.agent.episodes import EpisodeTracker
from extender.agent.handoff import HandoffCheck
from extender.agent.inventory import Inventory, Sharing, build_inventory
from extender.agent.kubelet import PodResourcesClient
from extender.agent.metrics import AgentMetrics, PassView
from extender.agent.nodeapi import AgentApi
from extender.agent.nvml import NvmlBackend
from extender.agent.pods import NodePod, node_pods
from extender.agent.publisher import AnnotationPublisher
from extender.agent.usage import Overuse, Usage, declared_by_device, measure, overuses
from extender.catalog import Catalog
from extender.errors import ExtenderError
from extender.kube import objects
from extender.kube.annotations import encode_assignment
from extender.model import ANNOTATION_OBSERVED, PodKey

log = logging.getLogger(__name__)

OVERUSE_REASON = "GPUMemoryOveruse"
API_STAGES = ("read node", "list pods")
"""The steps that read the API server: when one fails, ``agent --once`` exits 1."""


@dataclass(frozen=True)
class PassResult:
    inventory: Inventory
    usage: list[Usage] = field(default_factory=list)
    overuse: list[Overuse] = field(default_factory=list)
    corrections: list[Correction] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    failed_stages: list[str] = field(default_factory=list)
    """Steps of the pass that raised (``Agent._step``), in order."""

    @property
    def api_unreachable(self) -> bool:
        """The API server could not be read: the pass saw neither the node nor its pods."""
        return any(stage in API_STAGES for stage in self.failed_stages)

    def to_json(self) -> dict[str, Any]:
        import orjson

        return {"annotation": orjson.loads(self.inventory.document()),
                "usage": [u.to_json() for u in self.usage],
                "overuse": [o.to_json() for o in self.overuse],
                "corrections": [{"namespace": c.pod.key.namespace, "pod": c.pod.key.name,
                                 "summary": c.summary} for c in self.corrections],
                "problems": self.problems}


class Agent:
    def __init__(self, *, node: str, backend: NvmlBackend, api: AgentApi, catalog: Catalog,
                 config: AgentConfig, metrics: AgentMetrics, mapper: PidMapper,
                 kubelet: PodResourcesClient | None, write: bool) -> None:
        self._node = node
        self._backend = backend
        self._api = api
        self._catalog = catalog
        self._config = config
        self._metrics = metrics
        self._mapper = mapper
        self._kubelet = kubelet
        self._write = write
        self._publisher = AnnotationPublisher(api, node)
        self._episodes = EpisodeTracker()
        self.handoff = HandoffCheck(api, metrics.registry, write=write)
        self._failed: list[str] = []  # the steps of the current pass that raised

    def run_pass(self) -> PassResult:
        problems: list[str] = []
        self._failed = []
        snapshot = self._backend.snapshot()  # no NVML, no pass: AgentError to the caller
        node = self._step("read node", problems, lambda: self._api.node(self._node))
        node = node if isinstance(node, Mapping) else {}
        sharing = sharing_of(self._config) or Sharing.from_node_labels(
            {k: v for k, v in objects.labels(node).items() if isinstance(v, str)})
        inventory = build_inventory(snapshot, self._catalog, sharing)
        problems += inventory.problems
        published = self._write and node and self._step(
            "publish", problems, lambda: self._publisher.publish(node, inventory.document()))
        if published:
            self._metrics.publishes.inc()
        raw_pods = self._step("list pods", problems, lambda: self._api.node_pods(self._node))
        pods: dict[str, NodePod] = self._step(
            "read pods", problems, lambda: node_pods(raw_pods or [], self._node)) or {}
        for pod in pods.values():
            problems += [f"pod {pod.key}: {p}" for p in pod.problems]
        devices = DeviceMap(snapshot)
        fixes = self._step("corrections", problems,
                           lambda: self._corrections(pods, devices, problems)) or []
        for fix in fixes:
            pods[fix.pod.key.uid] = replace(fix.pod, observed=fix.assignment)
        usage = self._step("measure usage", problems,
                           lambda: measure(devices, pods, self._mapper)) or []
        problems += self._step("handoff", problems,
                               lambda: self.handoff.check(pods, devices, usage)[1]) or []
        over = overuses(usage, self._config.overuse_tolerance_mib)
        for episode in self._episodes.update(over):
            self._step("overuse", problems, lambda e=episode: self._start_episode(e, problems))
        self._step("metrics", problems, lambda: self._metrics.observe(
            self._view(pods, devices, usage, inventory)))
        return PassResult(inventory, usage, over, fixes, problems, list(self._failed))

    def _step(self, stage: str, problems: list[str], action: Callable[..., Any]) -> Any:
        """``action()``, or ``None`` when it raises anything: logged, counted by stage, a
        problem of the pass."""
        try:
            return action()
        except Exception as exc:  # one bad input or bug never ends the pass (issue 19.7)
            self._metrics.errors.labels(stage).inc()
            self._failed.append(stage)
            problems.append(f"{stage}: {exc}")
            log.warning("agent step failed", exc_info=not isinstance(exc, ExtenderError),
                        extra={"fields": {"node": self._node, "stage": stage,
                                          "error": f"{type(exc).__name__}: {exc}"}})
            return None

    def _corrections(self, pods: dict[str, NodePod], devices: DeviceMap,
                     problems: list[str]) -> list[Correction]:
        if self._kubelet is None:
            return []
        answers = self._step("kubelet PodResources", problems, self._kubelet.list)
        if not answers:
            return []
        out = []
        for pod in pods.values():
            given = answers.get((pod.key.namespace, pod.key.name))
            if given is None:
                continue
            fix, trouble = correction(pod, given, devices)
            problems += [f"pod {pod.key}: {t}" for t in trouble]
            if fix is None:
                continue
            out.append(fix)
            self._metrics.corrections.labels(self._node).inc()
            log.warning("assignment corrected from the kubelet's devices", extra={"fields": {
                "node": self._node, "pod": str(pod.key), "summary": fix.summary,
                "annotation": ANNOTATION_OBSERVED}})
            if self._write:
                text = encode_assignment(fix.assignment)
                self._step("record correction", problems, lambda t=text, p=pod:
                           self._api.patch_pod_annotations(p.key, {ANNOTATION_OBSERVED: t}))
        return out

    def _start_episode(self, episode: Overuse, problems: list[str]) -> None:
        device = episode.device
        self._metrics.overuse(UUID=episode.uuid, modelName=device.model,
                              GPU_I_PROFILE=device.mig_profile or "",
                              namespace=episode.namespace, pod=episode.pod)
        where = f"GPU {device.gpu_index} ({episode.uuid})"
        message = (f"container {episode.container} uses {episode.used_mib} MiB of VRAM on "
                   f"{where}; the pod declared {episode.declared_mib} MiB there "
                   f"(policy: {self._config.overuse_policy})")
        log.warning("GPU memory overuse", extra={"fields": {
            "node": self._node, "pod": f"{episode.namespace}/{episode.pod}",
            "reason": OVERUSE_REASON, "error": message}})
        if not self._write:
            return
        key = PodKey(episode.namespace, episode.pod, episode.pod_uid)
        self._step("overuse event", problems,
                   lambda: self._api.warn(key, OVERUSE_REASON, message))
        if self._config.overuse_policy is OverusePolicy.EVICT:
            result = self._step("evict", problems, lambda: self._api.evict(key))
            self._metrics.evictions.labels(result or "failed").inc()

    def _view(self, pods: dict[str, NodePod], devices: DeviceMap, usage: list[Usage],
              inventory: Inventory) -> PassView:
        declared = []
        for pod in pods.values():
            for uuid, mib in (declared_by_device(pod, devices) or {}).items():
                declared.append((pod.key.namespace, pod.key.name, devices.by_uuid[uuid], mib))
        health = []
        for device in devices:
            if device.mig_profile is None:
                health.append((device, device.uuid not in inventory.unhealthy))
        return PassView(usage, declared, health, self._episodes.open_episodes)


class AgentLoop:
    """Runs ``Agent.run_pass`` every ``interval_s`` on its own thread until ``stop``; whatever
    a pass raises is logged and counted, and the next pass runs."""

    def __init__(self, agent: Agent, interval_s: float, metrics: AgentMetrics | None = None,
                 *, clock: Callable[[], float] = time.monotonic) -> None:
        self._agent = agent
        self._interval = interval_s
        self._metrics = metrics
        self._clock = clock
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = clock()
        self._last_end: float | None = None
        self._last_ok: float | None = None
        self._last_error: str | None = None
        self.stale_after_s = 3 * interval_s + 60
        """``health`` fails when no pass ended for this long (a pass may take a while: NVML,
        the API server, the kubelet, each with its own timeout)."""

    def start(self) -> None:
        self._started = self._clock()
        self._thread = threading.Thread(target=self.run, name="gpu-extender-agent",
                                        daemon=True)
        self._thread.start()

    def run(self) -> None:
        while not self._stopping.is_set():
            self.run_once()
            self._stopping.wait(self._interval)

    def run_once(self) -> None:
        error = None
        try:
            result = self._agent.run_pass()
            for problem in result.problems:
                log.info("pass problem", extra={"fields": {"error": problem}})
        except Exception as exc:  # AgentError (no NVML), KubeError, or anything else
            error = f"{type(exc).__name__}: {exc}"
            log.error("pass failed", exc_info=not isinstance(exc, ExtenderError),
                      extra={"fields": {"error": error}})
        now = self._clock()
        self._last_end = now
        self._last_error = error
        if error is None:
            self._last_ok = now
        if self._metrics is not None:
            self._metrics.passes.labels("failed" if error else "ok").inc()
            if error:
                self._metrics.errors.labels("pass").inc()

    def health(self) -> str | None:
        """``None`` while passes keep ending (successful or not), else why not."""
        if self._thread is not None and not self._thread.is_alive():
            return "the pass loop is not running"
        since = self._clock() - (self._last_end if self._last_end is not None
                                 else self._started)
        if since > self.stale_after_s:
            return (f"no pass ended in the last {since:.0f} s (one every {self._interval:g} s "
                    "expected)")
        return None

    def ready(self) -> str | None:
        """``None`` once a pass completed and the last one did not fail."""
        problem = self.health()
        if problem is not None:
            return problem
        if self._last_ok is None:
            return "no pass has completed yet" if self._last_error is None \
                else f"no pass has completed yet; the last failed: {self._last_error}"
        if self._last_error is not None:
            return f"the last pass failed: {self._last_error}"
        return None

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
