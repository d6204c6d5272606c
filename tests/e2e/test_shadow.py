"""Shadow mode end to end: the real kube-scheduler, *without* the extender and blind to VRAM
shares, places a burst; ``gpu-extender shadow``, running with a token of its own read-only
ServiceAccount, reports the invariants that burst broke and where it would have put each pod.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import urllib3
import yaml
from kubernetes import client, utils

from localcluster import ControlPlaneBinaries, LocalCluster
from localcluster.binaries import REPO_ROOT
from localcluster.network import free_port
from tests.e2e.demand_harness import account_kubeconfig
from tests.e2e.gpu_helpers import NAMESPACE, create_pods, gpu_pod, wait_bound

pytestmark = pytest.mark.e2e
E2E_DATA = Path(__file__).parent / "data"
SHADOW_RBAC = REPO_ROOT / "manifests" / "shadow-rbac.yaml"
SHADOW_SA = "gpu-extender-shadow"
SHADOW_USER = f"system:serviceaccount:kube-system:{SHADOW_SA}"
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


def shadow_kubeconfig(cluster: LocalCluster, path: Path) -> Path:
    """A kubeconfig holding a freshly minted token of the shadow's ServiceAccount."""
    return account_kubeconfig(cluster, SHADOW_SA, path)


@contextmanager
def running_shadow(kubeconfig: Path, state: Path) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (state.parent / "shadow.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "extender", "shadow", "--kubeconfig", str(kubeconfig),
         "--port", str(port), "--state-file", str(state)],
        cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
    http = urllib3.PoolManager()
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, (state.parent / "shadow.log").read_text()
            try:
                if http.request("GET", url + "/readyz", timeout=1.0).status == 200:
                    break
            except urllib3.exceptions.HTTPError:
                pass
            assert time.monotonic() < deadline, "shadow never became ready"
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def report_when(url: str, judged: int, timeout_s: float = 60.0) -> dict[str, Any]:
    http = urllib3.PoolManager()
    deadline = time.monotonic() + timeout_s
    while True:
        report: dict[str, Any] = orjson.loads(http.request("GET", url + "/report").data)
        if report["totals"]["judged"] >= judged or time.monotonic() > deadline:
            return report
        time.sleep(0.3)


def test_shadow_reports_what_a_vram_blind_scheduler_broke_and_never_writes(
        controlplane_binaries: ControlPlaneBinaries, tmp_path: Path) -> None:
    with LocalCluster(scheduler_config=E2E_DATA / "vram-blind-scheduler.yaml",
                      binaries=controlplane_binaries) as cluster:
        utils.create_from_yaml(cluster.api_client(), yaml_file=str(SHADOW_RBAC))
        # Two T4 nodes (one 16 GiB GPU each) for the burst, an A100 node (protected) aside.
        for name in ("t4-0", "t4-1"):
            cluster.create_node(name, {"nvidia.com/gpu": 1},
                                labels={"nvidia.com/gpu.product": "Tesla-T4", "pool": "burst"})
        cluster.create_node("a100-0", {"nvidia.com/gpu": 1},
                            labels={"cloud.google.com/gke-accelerator": "nvidia-a100-80gb",
                                    "pool": "big"})
        # A T4 in the same pool, kept full by a filler pod: the untyped pod's selection admits
        # an unprotected node (so it stays untyped, issue 9), yet only the A100 has room.
        cluster.create_node("t4-2", {"nvidia.com/gpu": 1},
                            labels={"nvidia.com/gpu.product": "Tesla-T4", "pool": "big",
                                    "slot": "filler"})
        state = tmp_path / "shadow-report.json"
        with running_shadow(shadow_kubeconfig(cluster, tmp_path / "shadow.kubeconfig"),
                            state) as url:
            filler = gpu_pod("filler-0", {"nvidia.com/gpu": 1}, node_selector={"slot": "filler"},
                             scheduler="default-scheduler")
            create_pods(cluster, [filler])
            wait_bound(cluster, "filler-0")
            burst = [gpu_pod("whole-0", {"nvidia.com/gpu": 1}, node_selector={"pool": "burst"},
                             scheduler="default-scheduler")]
            burst += [gpu_pod(f"share-{i}", {"gpu-extender.io/gpu-memory": "8Gi"},
                              node_selector={"pool": "burst"}, scheduler="default-scheduler")
                      for i in range(5)]
            burst.append(gpu_pod("untyped-0", {"nvidia.com/gpu": 1},
                                 node_selector={"pool": "big"}, scheduler="default-scheduler"))
            create_pods(cluster, burst)
            burst.append(filler)
            api = cluster.api()
            cluster.wait_for(lambda: all(p.spec.node_name for p in
                                         api.list_namespaced_pod(NAMESPACE).items)
                             and len(api.list_namespaced_pod(NAMESPACE).items) == len(burst),
                             timeout_s=60, description="kube-scheduler to bind the burst")
            report = report_when(url, len(burst))
            text = subprocess.run(
                [sys.executable, "-m", "extender", "shadow", "--report", "--url", url],
                cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
        print(text)
        records = {r["pod"].split("/")[1]: r for r in report["records"]}
        assert set(records) == {str(p["metadata"]["name"]) for p in burst}  # type: ignore[index]
        placed = {p.metadata.name: p.spec.node_name
                  for p in api.list_namespaced_pod(NAMESPACE).items}
        for name, record in records.items():
            assert record["node"] == placed[name]
            assert record["scheduler"] == "default-scheduler"
        # 16 GiB + 5 x 8 GiB = 56 GiB asked of two 16 GiB GPUs: at most 4 of the 6 burst pods
        # can be held without over-commit, so at least 2 placements broke an invariant.
        over = [r for n, r in records.items() if n not in ("untyped-0", "filler-0") and any(
            v["invariant"] in ("vram-over-memory", "whole-gpu-shared") for v in r["violations"])]
        assert len(over) >= 2, text
        assert {v["invariant"] for v in records["untyped-0"]["violations"]} == \
            {"untyped-on-protected"}
        # gpu-extender would have kept the untyped pod off the protected A100 (it waits, saying
        # why), and placed at least the first burst pods, with their GPUs.
        assert records["untyped-0"]["would"]["node"] is None
        assert records["filler-0"]["violations"] == []
        alternatives = [r["would"] for r in records.values() if r["would"]["node"]]
        assert alternatives and all(a["gpus"] and a["node"] in ("t4-0", "t4-1", "t4-2")
                                    for a in alternatives)
        # every over-committing placement is one gpu-extender would not have made there
        assert all(r["would"]["node"] != r["node"] for r in over)
        assert report["totals"]["judged"] == len(burst)
        assert report["violations"]["untyped-on-protected"] == 1
        assert "untyped-on-protected" in text
        assert "vram-over-memory" in text or "whole-gpu-shared" in text
        assert orjson.loads(state.read_bytes())["totals"]["judged"] == len(burst)
        # It never wrote: no pod carries an annotation of ours, and its identity may not write.
        for pod in api.list_namespaced_pod(NAMESPACE).items:
            assert not any(k.startswith("gpu-extender.io/")
                           for k in (pod.metadata.annotations or {}))
        assert_read_only(cluster)


def assert_read_only(cluster: LocalCluster) -> None:
    """The shipped shadow RBAC has no write verb, and the apiserver agrees."""
    for document in yaml.safe_load_all(SHADOW_RBAC.read_text()):
        for rule in document.get("rules", []) if document["kind"] == "ClusterRole" else []:
            assert set(rule["verbs"]) <= {"get", "list", "watch"}
    authz = client.AuthorizationV1Api(cluster.api_client())
    groups = ["system:serviceaccounts", "system:serviceaccounts:kube-system"]
    for resource, subresource in (("pods", ""), ("pods", "binding"), ("events", ""),
                                  ("nodes", "")):
        for verb in WRITE_VERBS:
            review = authz.create_subject_access_review(client.V1SubjectAccessReview(
                spec=client.V1SubjectAccessReviewSpec(
                    user=SHADOW_USER, groups=groups,
                    resource_attributes=client.V1ResourceAttributes(
                        verb=verb, resource=resource, subresource=subresource or None,
                        namespace=NAMESPACE))))
            assert not review.status.allowed, (verb, resource, subresource)
    for verb in ("list", "watch"):
        review = authz.create_subject_access_review(client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=SHADOW_USER, groups=groups,
                resource_attributes=client.V1ResourceAttributes(verb=verb, resource="pods"))))
        assert review.status.allowed
