"""``gpu-extender inspect``: golden table of a dump with whole, MIG, time-slice and VRAM
holdings; stable under input order; the same document from /debug/inventory; 404s."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from extender.cli import main
from tests.builders import make_pod
from tests.views.golden_files import assert_golden

DATA = Path(__file__).resolve().parent.parent / "data"


def dump_with_holdings() -> dict[str, Any]:
    """tests/data/cluster.json plus pods bound by another scheduler on the MIG, time-sliced and
    L4 nodes (their GPUs are inferred, as for any pod the extender did not bind)."""
    document: dict[str, Any] = orjson.loads((DATA / "cluster.json").read_bytes())
    extra = [
        make_pod("mig-a").namespace("ml").uid("u-mig-a").mig("1g.10gb").node_name(
            "gpu-a100-mig-0").phase("Running").obj(),
        make_pod("mig-b").namespace("ml").uid("u-mig-b").mig("1g.10gb").node_name(
            "gpu-a100-mig-0").phase("Running").obj(),
        make_pod("slice-a").namespace("web").uid("u-slice-a").shared_gpus(1).node_name(
            "gpu-a10g-shared-0").phase("Running").obj(),
        make_pod("share-a").namespace("web").uid("u-share-a").gpu_memory("6Gi").node_name(
            "gpu-l4-0").phase("Running").obj(),
        make_pod("share-b").namespace("web").uid("u-share-b").gpu_memory("4Gi").node_name(
            "gpu-l4-0").phase("Running").obj(),
    ]
    document["items"] += [{"apiVersion": "v1", "kind": "Pod", **p} for p in extra]
    return document


def inspect(tmp_path: Path, document: dict[str, Any], *args: str,
            capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    path = tmp_path / "cluster.json"
    path.write_bytes(orjson.dumps(document))
    code = main(["inspect", "--cluster-file", str(path), *args])
    captured = capsys.readouterr()
    return code, captured.out.rstrip("\n"), captured.err


def test_the_table_matches_its_golden_text_whatever_the_input_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = dump_with_holdings()
    code, text, _ = inspect(tmp_path, document, "-d", capsys=capsys)
    assert code == 0
    assert_golden("inspect.txt", text)
    nodes = [i for i in document["items"] if i["kind"] == "Node"]
    random.Random(7).shuffle(nodes)
    document["items"] = nodes + [i for i in document["items"] if i["kind"] != "Node"]
    assert inspect(tmp_path, document, "-d", capsys=capsys)[1] == text


def test_the_default_is_one_row_per_node_with_its_status(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One row per node: a cordoned node says SchedulingDisabled, a NotReady one NotReady
    (kubectl's STATUS column)."""
    document = dump_with_holdings()
    for item in document["items"]:
        name = item["metadata"]["name"]
        if name == "gpu-t4-1":
            item["spec"]["unschedulable"] = True
        if name == "gpu-l4-0":
            item["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    code, text, _ = inspect(tmp_path, document, capsys=capsys)
    assert code == 0
    assert_golden("inspect-summary.txt", text)
    code, text, _ = inspect(tmp_path, document, "--type", "t4", "-l", "nvidia.com/gpu.count=4",
                            capsys=capsys)
    assert [line.split()[0] for line in text.splitlines()[1:]] == ["gpu-t4-0", "gpu-t4-1"]
    code, _, err = inspect(tmp_path, document, "-l", "=x", capsys=capsys)
    assert code == 2 and "has no key" in err


def test_one_node_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _ = inspect(tmp_path, dump_with_holdings(), "--node", "gpu-a100-mig-0", "-d",
                            capsys=capsys)
    assert code == 0
    assert_golden("inspect-mig-node.txt", text)
    code, out, _ = inspect(tmp_path, dump_with_holdings(), "--node", "gpu-a100-mig-0", "-o",
                           "json", capsys=capsys)
    report = orjson.loads(out)
    gpus = report["nodes"][0]["gpus"]
    # GPU 1 is a static 7x 1g.10gb layout: two instances held, five left
    assert gpus[1]["mig"]["profiles"] == {"1g.10gb": {"used": 2, "free": 5}}


def test_an_unknown_node_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = inspect(tmp_path, dump_with_holdings(), "--node", "nope", capsys=capsys)
    assert code == 1 and "--node 'nope'" in err


def test_debug_inventory_answers_404_for_an_unknown_node(client: FlaskClient) -> None:
    answer = client.get("/debug/inventory?node=nope")
    assert answer.status_code == 404
    assert "node 'nope' is not in the inventory" in answer.get_json()["Error"]
    assert client.get("/debug/inventory?node=gpu-l4-0").status_code == 200


def test_kubectl_plugin_runs_inspect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from extender.cli import kubectl_main

    path = tmp_path / "cluster.json"
    path.write_bytes(orjson.dumps(dump_with_holdings()))
    assert kubectl_main(["inspect", "--cluster-file", str(path), "--node", "gpu-t4-0",
                         "-d"]) == 0
    assert "ml/trainer-0" in capsys.readouterr().out
    assert kubectl_main(["nonsense"]) == 2


def test_url_source_reads_a_running_extender_the_same_way(
        server: tuple[int, object, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    port = server[0]
    assert main(["inspect", "--url", f"http://127.0.0.1:{port}", "-d"]) == 0
    from_url = capsys.readouterr().out
    assert main(["inspect", "--cluster-file", str(DATA / "cluster.json"), "-d"]) == 0
    assert capsys.readouterr().out == from_url
    assert main(["inspect", "--url", f"http://127.0.0.1:{port}", "--node", "nope"]) == 1
    assert "404 node 'nope' is not in the inventory" in capsys.readouterr().err


def test_url_that_answers_nothing_is_a_plain_error(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.server.test_serve_offline import free_port

    assert main(["inspect", "--url", f"http://127.0.0.1:{free_port()}"]) == 1
    assert "cannot reach the extender" in capsys.readouterr().err
