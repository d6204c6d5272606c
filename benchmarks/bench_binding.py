"""One Binding against the real kube-apiserver: the generated client against the raw POST.

A local control plane (etcd + kube-apiserver, TLS), one node, P pods; the pods are bound one
at a time, alternating between the generated client's ``create_namespaced_pod_binding``
(``_preload_content=False``, what the extender used before issue 22) and
``ApiServerClient.create_binding`` (``apiserver/transport.py``: orjson bytes, one kept-alive
connection). Per call: the calling thread's CPU time (``time.thread_time``) and wall time;
medians printed per kind.

    .venv/bin/python benchmarks/bench_binding.py            # 60 pods
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from kubernetes import client as k8s  # noqa: E402

from extender.apiserver.client import (  # noqa: E402
    ApiServerClient,
    binding_body,
    load_configuration,
)
from localcluster import LocalCluster, find_binaries  # noqa: E402

ANNOTATIONS = {"gpu-extender.io/assigned": '{"node":"n1","gpus":[0]}' + " " * 150,
               "gpu-extender.io/visible-devices": "0"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=60)
    args = parser.parse_args(argv)
    with LocalCluster(None, None, find_binaries()) as cluster:
        cluster.create_node("n1", {"nvidia.com/gpu": 8})
        api = cluster.api()
        for i in range(args.pods):
            api.create_namespaced_pod("default", {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
                "spec": {"containers": [{"name": "main", "image": "registry.example/app:1"}]}})
        uids = {p.metadata.name: p.metadata.uid for p in api.list_namespaced_pod("default").items}
        configuration = load_configuration(str(cluster.kubeconfig()))
        raw = ApiServerClient.from_configuration(configuration)
        generated = k8s.CoreV1Api(k8s.ApiClient(configuration))
        figures: dict[str, list[tuple[float, float]]] = {"generated": [], "raw": []}
        for i in range(args.pods):
            name = f"p{i}"
            wall, cpu = time.perf_counter(), time.thread_time()
            if i % 2:
                raw.create_binding("default", name, uids[name], "n1", ANNOTATIONS)
                kind = "raw"
            else:
                generated.create_namespaced_pod_binding(
                    name, "default", binding_body("default", name, uids[name], "n1",
                                                  ANNOTATIONS), _preload_content=False)
                kind = "generated"
            figures[kind].append((1000 * (time.thread_time() - cpu),
                                  1000 * (time.perf_counter() - wall)))
        for kind, values in figures.items():
            print(f"{kind:9s} calls={len(values)} cpu ms median "
                  f"{statistics.median(v[0] for v in values):.2f}, wall ms median "
                  f"{statistics.median(v[1] for v in values):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
