"""What-if against the live thing: the demo fleet is created in a real cluster, dumped as
`kubectl get nodes,pods -A -o json` would, and the example manifests are (1) scheduled by the
real kube-scheduler + gpu-extender and (2) replayed by `gpu-extender what-if --cluster-file`
on the dump. Same node, same GPUs, same pods waiting."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from demo.fleet import create_fleet
from localcluster.binaries import REPO_ROOT
from tests.e2e.gpu_helpers import NAMESPACE, gpu_cluster, pending_message
from tests.e2e.gpu_helpers import assignment as assigned_gpus

pytestmark = pytest.mark.e2e
EXAMPLES = REPO_ROOT / "manifests" / "examples"


def example_pods() -> list[dict[str, Any]]:
    import yaml

    pods = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        pods += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return pods


def test_what_if_on_the_dump_places_the_examples_as_the_live_cluster_did(
        controlplane_binaries: object, tmp_path: Path) -> None:
    live: dict[str, tuple[str, list[int]] | None] = {}
    with gpu_cluster() as cluster:
        create_fleet(cluster)
        api = cluster.api()
        client = cluster.api_client()
        cluster.wait_for(lambda: len(api.list_node().items) >= 6, timeout_s=10,
                         description="the fleet")
        items = [{"kind": "Node", "apiVersion": "v1", **client.sanitize_for_serialization(n)}
                 for n in api.list_node().items]
        dump = tmp_path / "cluster.json"
        dump.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        time.sleep(1.0)  # the extender's node watch sees the fleet before the first pod
        for pod in example_pods():  # one at a time: the replay's order is the manifests'
            name = pod["metadata"]["name"]
            api.create_namespaced_pod(NAMESPACE, pod)
            cluster.wait_for(lambda n=name: api.read_namespaced_pod(n, NAMESPACE).spec.node_name
                             or pending_message(cluster, n), timeout_s=60,
                             description=f"{name} bound or rejected")
            node = api.read_namespaced_pod(name, NAMESPACE).spec.node_name
            live[name] = (node, list(assigned_gpus(api, name).gpu_indices)) if node else None
    out = tmp_path / "whatif.json"
    result = subprocess.run(
        [sys.executable, "-m", "extender", "what-if", "--cluster-file", str(dump),
         "--pods", str(EXAMPLES), "-o", "json", "--output", str(out)],
        check=False, cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    print(result.stdout)
    replayed = {p["pod"].split("/")[1]: (p["node"], p["gpus"]) if p["node"] else None
                for p in orjson.loads(out.read_bytes())["policies"][0]["pods"]}
    assert replayed == live
    assert any(v is None for v in live.values())  # the example that cannot fit waits in both
