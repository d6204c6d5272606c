"""One agent pass, and the loop that repeats it (with an owner and a stop).

A pass: NVML snapshot -> the gpus annotation (published when it changed) -> the pods on the node
-> the kubelet's devices -> corrections of our assignments -> usage vs declared -> overuse
episodes (Event, policy) -> metrics. A failing step is logged and counted; the pass goes on
with what it has, and the loop never dies of one bad pass.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from extender.agent.cgroup import PidMapper
from extender.agent.config import AgentConfig, OverusePolicy
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
from extender.kube.annotations import encode_assignment
from extender.model import ANNOTATION_OBSERVED, PodKey

log = logging.getLogger(__name__)

OVERUSE_REASON = "GPUMemoryOveruse"


@dataclass(frozen=True)
class PassResult:
    inventory: Inventory
    usage: list[Usage] = field(default_factory=list)
    overuse: list[Overuse] = field(default_factory=list)
    corrections: list[Correction] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

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

    def run_pass(self) -> PassResult:
        problems: list[str] = []
        snapshot = self._backend.snapshot()  # no NVML, no pass: AgentError to the caller
        node = self._step("read node", problems, lambda: self._api.node(self._node)) or {}
        labels = (node.get("metadata") or {}).get("labels") or {}
        sharing = self._config.sharing or Sharing.from_node_labels(labels)
        inventory = build_inventory(snapshot, self._catalog, sharing)
        problems += inventory.problems
        published = self._write and node and self._step(
            "publish", problems, lambda: self._publisher.publish(node, inventory.document()))
        if published:
            self._metrics.publishes.inc()
        raw_pods = self._step("list pods", problems, lambda: self._api.node_pods(self._node))
        pods = node_pods(raw_pods or [], self._node)
        for pod in pods.values():
            problems += [f"pod {pod.key}: {p}" for p in pod.problems]
        devices = DeviceMap(snapshot)
        fixes = self._corrections(pods, devices, problems)
        for fix in fixes:
            pods[fix.pod.key.uid] = replace(fix.pod, observed=fix.assignment)
        usage = measure(devices, pods, self._mapper)
        problems += self.handoff.check(pods, devices, usage)[1]
        over = overuses(usage, self._config.overuse_tolerance_mib)
        for episode in self._episodes.update(over):
            self._start_episode(episode, problems)
        self._metrics.observe(self._view(pods, devices, usage, inventory))
        return PassResult(inventory, usage, over, fixes, problems)

    def _step(self, stage: str, problems: list[str], action: Any) -> Any:
        try:
            return action()
        except ExtenderError as exc:
            self._metrics.errors.labels(stage).inc()
            problems.append(f"{stage}: {exc}")
            log.warning("node %s: %s failed: %s", self._node, stage, exc)
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
            log.warning("node %s: pod %s: %s; recording the truth in %s", self._node, pod.key,
                        fix.summary, ANNOTATION_OBSERVED)
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
        log.warning("node %s: pod %s/%s: %s", self._node, episode.namespace, episode.pod,
                    message)
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
    """Runs ``Agent.run_pass`` every ``interval_s`` on its own thread until ``stop``."""

    def __init__(self, agent: Agent, interval_s: float) -> None:
        self._agent = agent
        self._interval = interval_s
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="gpu-extender-agent",
                                        daemon=True)
        self._thread.start()

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                result = self._agent.run_pass()
                for problem in result.problems:
                    log.info("%s", problem)
            except ExtenderError as exc:  # AgentError, or KubeError from the API server
                log.error("pass failed: %s", exc)
            self._stopping.wait(self._interval)

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
