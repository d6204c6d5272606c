"""``gpu-extender explain NAMESPACE/POD``: a pending pod judged with kube-scheduler's filters
then the extender (choice, runner-up, terms, reasons grouped), a bound pod, the formats, the
running extender (--url) and its debug endpoints off, bad input and exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from extender.cli import kubectl_main, main

DATA = Path(__file__).resolve().parent.parent / "data"


def dump(tmp_path: Path, *pods: dict[str, Any]) -> str:
    document = orjson.loads((DATA / "cluster.json").read_bytes())
    document["items"] += list(pods)
    path = tmp_path / "cluster.json"
    path.write_bytes(orjson.dumps(document))
    return str(path)


def pending(name: str, limits: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": "ml", "uid": f"u-{name}"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": limits}}], **spec},
            "status": {"phase": "Pending"}}


def test_a_waiting_pod_names_kube_schedulers_filters_and_the_extenders_reasons(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """2 T4s asked with 100 cores on the T4 pool: gpu-t4-0 has 2 GPUs free but 62 cores
    (trainer-0 holds 2 of 64), gpu-t4-1 1 GPU free; the other 5 nodes are not T4s."""
    path = dump(tmp_path, pending("big", {"nvidia.com/gpu": "2", "cpu": "100"},
                                  nodeSelector={"nvidia.com/gpu.product": "Tesla-T4"}))
    assert main(["explain", "ml/big", "--cluster-file", path]) == 0
    out = capsys.readouterr().out
    assert "kube-scheduler's filters pass 0 of 7 nodes" in out
    assert "it waits: no node takes it" in out
    assert "5 nodes: node affinity/selector (spec.nodeSelector[nvidia.com/gpu.product]=" \
           "Tesla-T4)" in out
    assert "1 node: insufficient cpu (cpu: needs 100 cores, 62 cores free)  [gpu-t4-0]" in out


def test_a_pod_that_fits_shows_the_choice_the_runner_up_and_the_terms(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = dump(tmp_path, pending("one", {"nvidia.com/gpu": "1"}))
    assert main(["explain", "ml/one", "--cluster-file", path, "-o", "json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["status"] == "pending" and doc["passKubeFilters"] == 4
    breakdown = doc["wouldPlace"]["breakdown"]
    chosen, runner = breakdown["chosen"], breakdown["runnerUp"]
    assert doc["wouldPlace"]["assignment"]["node"] == chosen["node"]
    assert runner is not None and runner["node"] != chosen["node"]
    assert chosen["score"] > runner["score"]
    assert [t["name"] for t in chosen["terms"]][:3] == ["fragmentation", "stranded memory",
                                                        "typed claim"]
    assert main(["explain", "ml/one", "--cluster-file", path]) == 0
    text = capsys.readouterr().out
    assert f"runner-up: {runner['node']}" in text and "it fits now" in text


def test_a_bound_pod_says_where_it_is(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert kubectl_main(["explain", "ml/trainer-0", "--cluster-file",
                         str(DATA / "cluster.json"), "-o", "yaml"]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert (doc["status"], doc["node"], doc["assignment"]["gpus"]) == ("bound", "gpu-t4-0",
                                                                        [0, 1])


def test_bad_input_and_missing_pods_exit_2_and_1(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cluster = str(DATA / "cluster.json")
    assert main(["explain", "trainer-0", "--cluster-file", cluster]) == 2
    assert "expected NAMESPACE/POD" in capsys.readouterr().err
    assert main(["explain", "ml/x", "--cluster-file", cluster, "--url", "http://x"]) == 2
    assert "choose one source" in capsys.readouterr().err
    assert main(["explain", "ml/nope", "--cluster-file", cluster]) == 1
    assert "pod ml/nope not found" in capsys.readouterr().err


def test_url_reads_the_running_extenders_explain(server: tuple[int, object, Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{server[0]}"
    assert main(["explain", "ml/trainer-0", "--url", url]) == 0
    out = capsys.readouterr().out
    assert "bound" in out and "gpu-t4-0" in out
    assert main(["explain", "ml/nope", "--url", url]) == 1
    assert "pod ml/nope not found" in capsys.readouterr().err
