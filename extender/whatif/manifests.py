"""Pod manifests for a what-if replay, as users have them: YAML or JSON files (several YAML
documents per file), ``kind: List`` (what ``kubectl get -o yaml`` prints), and workloads whose
pod template is expanded into replicas (Deployment, ReplicaSet, StatefulSet, Job, and a
CronJob's Job template: one run of it).

Everything is checked before the replay starts; a problem names the file, the document and the
field, and every problem is reported at once (``ManifestError.problems``).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from extender.errors import ExtenderError, shown, yaml_problem
from extender.kube import objects
from extender.kube.shape import ShapeError, check_pod

SUFFIXES = (".yaml", ".yml", ".json")
WORKLOADS = {"Deployment": "replicas", "ReplicaSet": "replicas", "StatefulSet": "replicas",
             "Job": "parallelism", "CronJob": "parallelism"}
KNOWN_KINDS = "Pod, List, Deployment, ReplicaSet, StatefulSet, Job or CronJob"
MAX_REPLICAS = 100_000
PODLESS_KINDS = frozenset({
    "Service", "ConfigMap", "Secret", "Namespace", "ServiceAccount", "Role", "RoleBinding",
    "ClusterRole", "ClusterRoleBinding", "Ingress", "IngressClass", "PersistentVolumeClaim",
    "PersistentVolume", "StorageClass", "NetworkPolicy", "PodDisruptionBudget",
    "HorizontalPodAutoscaler", "PriorityClass", "LimitRange", "ResourceQuota", "Endpoints",
    "EndpointSlice", "CustomResourceDefinition", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate"})
"""Kinds that create no pods: skipped without a note (``kubectl apply -f`` of a directory
creates them beside the pods). Any other kind the what-if does not expand (a DaemonSet, a
PyTorchJob, a RayCluster...) may well run GPU pods, so skipping it is said."""


class ManifestError(ExtenderError):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:20]
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(f"{len(problems)} problem(s) in the pod manifests:\n  "
                         + "\n  ".join(shown) + more)


@dataclass(frozen=True)
class PodManifest:
    pod: dict[str, Any]
    source: str
    """``file#document`` (and ``[replica]``) it came from, for messages."""
    owner: str = ""
    """``Kind namespace/name`` of the workload it is a replica of ('' for a bare Pod)."""


def manifest_files(path: str | Path) -> list[Path]:
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        if not files:
            raise ManifestError([f"{path}: no {', '.join(SUFFIXES)} files in this directory"])
        return files
    if not path.exists():
        raise ManifestError([f"{path}: no such file or directory"])
    return [path]


def load_pod_manifests(path: str | Path, *, default_namespace: str = "default",
                       unexpanded: list[str] | None = None) -> list[PodManifest]:
    """Every pod the manifests describe, in file order then document order. ``unexpanded``,
    if given, receives ``Kind (file#document)`` for every document of a kind that may run
    pods but is not expanded (not in ``PODLESS_KINDS``): its pods are not in the replay."""
    problems: list[str] = []
    pods: list[PodManifest] = []
    skipped: dict[str, str] = {}
    for file in manifest_files(path):
        for index, document in _documents(file, problems):
            where = f"{file}#{index}"
            _expand(document, where, default_namespace, pods, problems=problems, skipped=skipped)
    seen: dict[tuple[str, str], str] = {}
    for manifest in pods:
        key = (objects.namespace(manifest.pod), objects.name(manifest.pod))
        if key in seen:
            problems.append(f"{manifest.source}: pod {key[0]}/{key[1]} is also defined at "
                            f"{seen[key]}; names must be unique")
        seen[key] = manifest.source
    if problems:
        raise ManifestError(problems)
    if not pods:
        found = f" (found only: {', '.join(sorted(set(skipped.values())))}, which the what-if " \
            "does not expand)" if skipped else ""
        raise ManifestError([f"{path}: no {KNOWN_KINDS} found{found}"])
    if unexpanded is not None:
        unexpanded.extend(f"{kind} ({where})" for where, kind in skipped.items()
                          if kind not in PODLESS_KINDS)
    return pods


def _documents(file: Path, problems: list[str]) -> list[tuple[int, Any]]:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        problems.append(f"{file}: cannot read ({exc.strerror})")
        return []
    if file.suffix == ".json":
        try:
            return [(0, orjson.loads(raw))]
        except orjson.JSONDecodeError as exc:
            problems.append(f"{file}: not JSON ({exc})")
            return []
    try:
        return [(i, d) for i, d in enumerate(yaml.safe_load_all(raw)) if d is not None]
    except yaml.YAMLError as exc:
        problems.append(f"{file}: not YAML ({yaml_problem(exc)})")
        return []


def _expand(document: Any, where: str, namespace: str, out: list[PodManifest], *,
            problems: list[str], skipped: dict[str, str]) -> None:
    if not isinstance(document, dict):
        problems.append(f"{where}: expected an object with a kind, got {type(document).__name__}")
        return
    kind = document.get("kind")
    if kind in ("List", "PodList"):
        items = document.get("items")
        if not isinstance(items, list):
            problems.append(f"{where}: items: must be a list")
            return
        for i, item in enumerate(items):
            implied = {"kind": "Pod", **item} if isinstance(item, dict) and kind == "PodList" \
                else item
            _expand(implied, f"{where}.items[{i}]", namespace, out, problems=problems,
                    skipped=skipped)
    elif kind == "Pod":
        pod = _checked_pod(document, where, namespace, problems)
        if pod is not None:
            out.append(PodManifest(pod, where))
    elif kind in WORKLOADS:
        _expand_workload(document, str(kind), where, namespace, out=out, problems=problems)
    elif kind is None:
        problems.append(f"{where}: kind: required ({KNOWN_KINDS})")
    else:
        skipped[where] = str(kind)
    # any other kind is skipped (a Service beside the pods, as kubectl apply -f of a
    # directory would create it); one that may run pods is named (``PODLESS_KINDS``)


def _expand_workload(document: dict[str, Any], kind: str, where: str, namespace: str, *,
                     out: list[PodManifest], problems: list[str]) -> None:
    name = objects.name(document)
    if not name:
        problems.append(f"{where}: metadata.name: required")
        return
    spec = _object_at(document, "spec", "spec", where, problems)
    prefix = "spec"
    if spec is not None and kind == "CronJob":  # one run: the Job template's pods
        job = _object_at(spec, "jobTemplate", "spec.jobTemplate", where, problems)
        prefix = "spec.jobTemplate.spec"
        spec = _object_at(job, "spec", prefix, where, problems) if job is not None else None
    if spec is None:
        return
    field = WORKLOADS[kind]
    count = spec.get(field)
    if count is None:
        count = 1  # the API server's default
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_REPLICAS:
        problems.append(f"{where}: {prefix}.{field}: must be an integer 0..{MAX_REPLICAS}, "
                        f"got {count!r}")
        return
    template = spec.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        problems.append(f"{where}: {prefix}.template.spec: required (the pod template)")
        return
    if _object_at(template, "metadata", f"{prefix}.template.metadata", where,
                  problems) is None:
        return
    ns = objects.namespace(document) or namespace
    suffix = hashlib.sha256(f"{ns}/{name}".encode()).hexdigest()[:5]
    for i in range(count):
        pod = copy.deepcopy(template)
        pod["kind"] = "Pod"
        pod["apiVersion"] = "v1"
        # StatefulSets name pods <name>-<ordinal>; the others get a generated suffix
        pod["metadata"] = {**objects.meta(pod), "namespace": ns,
                           "name": f"{name}-{i}" if kind == "StatefulSet"
                           else f"{name}-{suffix}-{i}"}
        checked = _checked_pod(pod, f"{where}[{i}]", namespace, problems)
        if checked is None:
            return  # the template is wrong: once is enough
        out.append(PodManifest(checked, f"{where}[{i}]", owner=f"{kind} {ns}/{name}"))


def _object_at(parent: dict[str, Any], key: str, path: str, where: str,
               problems: list[str]) -> dict[str, Any] | None:
    """``parent[key]`` when it is an object (missing or null: an empty one, as the API server
    reads it); else the problem, naming ``path``, and ``None``."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f"{where}: {path}={shown(value)}: must be an object")
        return None
    return value


def _checked_pod(pod: dict[str, Any], where: str, namespace: str, problems: list[str]
                 ) -> dict[str, Any] | None:
    name = objects.name(pod)
    spec = pod.get("spec")
    if not name:
        problems.append(f"{where}: metadata.name: required")
        return None
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list) \
            or not spec["containers"]:
        problems.append(f"{where}: pod {name}: spec.containers: at least one container "
                        "required")
        return None
    ns = objects.namespace(pod) or namespace
    pod = copy.deepcopy(pod)
    pod["metadata"]["namespace"] = ns
    uid = hashlib.sha256(f"{ns}/{name}".encode()).hexdigest()
    pod["metadata"]["uid"] = f"whatif-{uid[:24]}"
    pod["metadata"].setdefault("resourceVersion", "1")
    pod["spec"].pop("nodeName", None)  # replayed as new pods, wherever they are now
    pod.pop("status", None)
    try:  # what the API server would refuse at apply, before any decoder reads it
        check_pod(pod)
    except ShapeError as exc:
        problems.append(f"{where}: pod {name}: {exc}")
        return None
    return pod
