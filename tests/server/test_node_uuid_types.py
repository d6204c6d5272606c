"""A node's gpus annotation with a non-string UUID (issue 19, finding 7): the GPU that carries
it is dropped with a problem when the node is decoded, so a share bound on the node's other GPU
gets a normal answer, never "internal error" (the list used to reach the pod's
visible-devices value and raise in bind)."""

from __future__ import annotations

import orjson

from extender.model import ANNOTATION_ASSIGNED, ANNOTATION_NODE_GPUS
from extender.platform import Platform
from extender.server.service import ExtenderService
from extender.sync.offline import ClusterObjects
from tests.builders import gpu_entry, make_node, make_pod


def test_a_list_uuid_drops_its_gpu_and_the_share_binds_on_the_other(platform: Platform) -> None:
    gpus = [gpu_entry(0, "t4") | {"uuid": ["x"]}, gpu_entry(1, "t4")]
    node = (make_node("n").allocatable(gpu=2, cpu="8", memory="32Gi")
            .annotation(ANNOTATION_NODE_GPUS,
                        orjson.dumps({"version": 1, "gpus": gpus}).decode()).obj())
    pod = make_pod("share").gpu_memory("4Gi").obj()
    service = ExtenderService.from_cluster_objects(platform, ClusterObjects(nodes=[node],
                                                                            pods=[]))
    service.start()
    try:
        args = {"Pod": pod, "NodeNames": ["n"], "Nodes": None}
        filtered = orjson.loads(service.verbs.filter(args).body)
        assert filtered["NodeNames"] == ["n"], filtered
        service.verbs.prioritize(args)
        meta = pod["metadata"]
        bound = orjson.loads(service.verbs.bind({
            "PodName": meta["name"], "PodNamespace": meta["namespace"],
            "PodUID": meta["uid"], "Node": "n"}).body)
        assert "internal error" not in str(bound), bound
        assert not bound.get("Error"), bound
        [placed] = [p for p in service.api.pods() if p["metadata"]["name"] == "share"]
        assigned = orjson.loads(placed["metadata"]["annotations"][ANNOTATION_ASSIGNED])
        # 4 GiB on the GPU whose UUID is a string; GPU 0 was dropped by the node decoder
        assert [(g["index"], g.get("uuid")) for g in assigned["gpus"]] == [(1, "GPU-0001")]
    finally:
        service.stop()
