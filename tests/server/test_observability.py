"""Health, readiness, metrics, debug endpoints and structured logs."""

from __future__ import annotations

import logging
import re

import orjson
from flask.testing import FlaskClient

from extender.runtime.logs import JsonFormatter
from extender.server.service import ExtenderService
from tests.server.conftest import fixture_bytes, post


def test_health_and_readiness(client: FlaskClient) -> None:
    assert client.get("/healthz").get_json() == {"status": "ok"}
    assert client.get("/readyz").get_json() == {"status": "ready"}


def test_metrics_cover_latency_decisions_inventory_and_conflicts(client: FlaskClient) -> None:
    post(client, "/filter", fixture_bytes("filter_typed_nodenames.json"))
    post(client, "/prioritize", fixture_bytes("filter_typed_nodenames.json"))
    post(client, "/filter", fixture_bytes("filter_no_gpu.json"))
    text = client.get("/metrics").data.decode()
    expected = [
        'gpu_extender_request_duration_seconds_count{verb="filter"} 2.0',
        'gpu_extender_request_duration_seconds_count{verb="prioritize"} 1.0',
        'gpu_extender_decisions_total{outcome="feasible",verb="filter"} 1.0',
        'gpu_extender_decisions_total{outcome="passthrough",verb="filter"} 1.0',
        'gpu_extender_filter_node_verdicts_total{outcome="unresolvable",reason="type_mismatch"}'
        ' 5.0',
        'gpu_extender_filter_node_verdicts_total{outcome="unresolvable",reason="unknown_node"}'
        ' 1.0',
        'gpu_extender_filter_node_verdicts_total{outcome="fits",reason="fits"} 1.0',
        'gpu_extender_reservations_total{event="placed"} 1.0',
        'gpu_extender_gpus{modelName="t4"} 8.0',
        'gpu_extender_gpus_allocated{modelName="t4"} 5.0',
        'gpu_extender_inventory_synced 1.0',
        'gpu_extender_holdings{state="reserved"} 1.0',
        'gpu_extender_bind_conflicts_total 0.0',
        'gpu_extender_inferred_pods_total 1.0',
        'gpu_extender_untrusted_assignments_total 0.0',
        'gpu_extender_objects_not_applied_total 0.0',
    ]
    for line in expected:
        assert line in text, line
    # the answering thread's CPU, by verb: spent on the calls made, none on bind
    cpu = {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^gpu_extender_request_cpu_seconds_total\{verb="(\w+)"\} (\S+)$', text, re.M)}
    assert cpu["filter"] > 0 and cpu["prioritize"] > 0
    assert cpu["bind"] == 0.0
    # per GPU: dcgm-exporter's label names (Hostname, UUID, gpu, modelName; sorted on output)
    for family in ("gpu_memory_bytes", "gpu_memory_free_bytes", "gpu_pods"):
        assert any(line.startswith(f"gpu_extender_{family}{{Hostname=")
                   and 'gpu="0",modelName="t4"}' in line for line in text.splitlines()), family
    # the values, not only the labels: 8 T4s of 15360 MiB, 5 whole-allocated, 3 idle
    t4_free = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("gpu_extender_gpu_memory_free_bytes{")
               and 'modelName="t4"' in line]
    assert len(t4_free) == 8
    assert sum(t4_free) == 3 * 15360 * 2**20


def test_two_services_do_not_share_metrics(offline_service: ExtenderService,
                                           client: FlaskClient) -> None:
    post(client, "/filter", fixture_bytes("filter_typed_nodenames.json"))
    other = ExtenderService(offline_service.platform, offline_service.api)
    assert b'verb="filter"} 1.0' not in other.metrics.exposition()


def test_debug_inventory_lists_nodes_gpus_and_holdings(client: FlaskClient) -> None:
    report = client.get("/debug/inventory").get_json()
    assert report["synced"] is True
    nodes = {n["name"]: n for n in report["nodes"]}
    assert set(nodes) >= {"gpu-t4-0", "gpu-l4-0", "gpu-a100-mig-0", "cpu-0"}
    t4 = nodes["gpu-t4-0"]
    assert [g["pods"] for g in t4["gpus"]] == [1, 1, 0, 0]
    assert t4["holdings"][0]["pod"] == "ml/trainer-0"
    assert t4["holdings"][0]["state"] == "observed"
    one = client.get("/debug/inventory?node=gpu-l4-0").get_json()
    assert [n["name"] for n in one["nodes"]] == ["gpu-l4-0"]
    mig = nodes["gpu-a100-mig-0"]["gpus"][0]["mig"]
    assert mig["layout"] == "static"


def test_explain_a_posted_pod_without_side_effects(client: FlaskClient,
                                                   offline_service: ExtenderService) -> None:
    args = orjson.loads(fixture_bytes("filter_typed_nodenames.json"))
    holdings = len(offline_service.inventory.holdings())
    version = offline_service.workload.version
    report = client.post("/debug/explain", data=orjson.dumps(args["Pod"])).get_json()
    assert report["pod"] == "ml/infer-l4-7f9c"
    assert report["summary"] == {"fits": 1, "unschedulable": 0, "unresolvable": 6}
    assert report["nodes"][0] == {"node": "gpu-l4-0", "verdict": "fits", "reason": None,
                                  "score": 10}
    assert len(offline_service.inventory.holdings()) == holdings
    assert offline_service.workload.version == version
    subset = client.post("/debug/explain", data=orjson.dumps(
        {"Pod": args["Pod"], "NodeNames": ["gpu-t4-0", "ghost"]})).get_json()
    assert {n["node"]: n["verdict"] for n in subset["nodes"]} == {
        "gpu-t4-0": "unresolvable", "ghost": "unresolvable"}


def test_explain_a_known_pod_by_name(client: FlaskClient) -> None:
    report = client.get("/debug/explain/ml/waiting-0").get_json()
    assert report["request"] == "1 GPU(s)"
    assert report["summary"]["fits"] == 1
    missing = client.get("/debug/explain/ml/nope")
    assert missing.status_code == 404 and "not found" in missing.get_json()["Error"]
    assert client.post("/debug/explain", data=b"[]").status_code == 400


def test_logs_are_json_lines_with_constant_keys() -> None:
    record = logging.LogRecord("extender.test", logging.WARNING, __file__, 1, "bind failed",
                               None, None)
    record.fields = {"pod": "ml/p", "node": "n1", "message": "clash"}
    line = orjson.loads(JsonFormatter().format(record))
    assert list(line)[:5] == ["time", "level", "severity", "logger", "message"]
    assert line["level"] == "warning" and line["message"] == "bind failed"
    assert line["severity"] == "WARNING"  # the key Cloud Logging reads
    assert line["pod"] == "ml/p" and line["field_message"] == "clash"
    assert line["time"].endswith("Z")
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    assert "ValueError: boom" in orjson.loads(JsonFormatter().format(record))["exception"]


def test_nodes_whose_gpus_have_no_known_type_are_counted(
        offline_service: ExtenderService) -> None:
    from tests.builders import make_node

    def gauge() -> str:
        text = offline_service.metrics.exposition().decode()
        return next(line for line in text.splitlines()
                    if line.startswith("gpu_extender_nodes_with_unknown_gpus "))

    assert gauge() == "gpu_extender_nodes_with_unknown_gpus 0.0"
    # 4 GPUs advertised, no type label of any convention
    offline_service.applier.node_event("ADDED", make_node("mystery").allocatable(gpu=4).obj())
    assert gauge() == "gpu_extender_nodes_with_unknown_gpus 1.0"
