"""Reading openb-format node and pod lists: values, model mapping, and errors that name the
file, line, column and value."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.model import RequestKind
from extender.simulator.errors import TraceError
from extender.simulator.scenario import openb_scenario
from extender.simulator.trace import load_nodes, load_pods, load_trace

NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,96000,393216,8,G2
n1,104000,524288,2,T4
n2,32000,65536,0,
"""
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,\
deletion_time,scheduled_time
p0,12000,16384,1,1000,,LS,Running,0,10,0
p1,6000,12288,1,460,V100M16|V100M32,LS,Running,1,10,1
p2,4000,0,0,0,,BE,Failed,2,3,2
p3,88000,327680,8,1000,G2,LS,Running,3,9,3
"""
MULTIGPU_PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli
p0,12000,16384,2,1000
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_loads_nodes_and_pods(tmp_path: Path) -> None:
    nodes = load_nodes(write(tmp_path, "n.csv", NODES))
    assert [(n.name, n.gpus, n.model) for n in nodes] == [("n0", 8, "G2"), ("n1", 2, "T4"),
                                                          ("n2", 0, "")]
    pods = load_pods(write(tmp_path, "p.csv", PODS))
    assert [(p.num_gpu, p.gpu_milli, p.gpu_spec) for p in pods] == [
        (1, 1000, ()), (1, 460, ("V100M16", "V100M32")), (0, 0, ()), (8, 1000, ("G2",))]
    assert [p.total_milli for p in pods] == [1000, 460, 0, 8000]
    # the multigpu files stop after gpu_milli
    assert load_pods(write(tmp_path, "m.csv", MULTIGPU_PODS))[0].total_milli == 2000


def test_trace_pods_become_the_requests_the_decoder_would_produce(tmp_path: Path) -> None:
    trace = load_trace(write(tmp_path, "n.csv", NODES), write(tmp_path, "p.csv", PODS))
    scenario = openb_scenario(trace)
    catalog = scenario.platform.catalog
    requests = [scenario.kinds[int(k)].request for k in scenario.pod_kind]
    assert requests[0].kind is RequestKind.WHOLE and requests[0].count == 1
    assert requests[0].types is None
    assert requests[1].kind is RequestKind.FRACTION and requests[1].milli == 460
    assert requests[1].types == frozenset({catalog.index_of("v100-16gb"),
                                           catalog.index_of("v100-32gb")})
    assert requests[2].count == 0  # CPU-only
    assert requests[3].types == frozenset({catalog.index_of("openb-g2")})  # trace-local
    g2 = scenario.nodes[0]
    assert len(g2.gpus) == 8 and catalog.id_of(g2.gpus[0].type_index) == "openb-g2"
    assert scenario.gpu_count == 10 and scenario.capacity_milli == 10_000


@pytest.mark.parametrize(("text", "fragment"), [
    pytest.param("sn,cpu_milli,gpu,model\nn0,1,2,T4\n", "missing column(s) memory_mib",
                 id="missing column"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,abc,1,2,T4\n",
                 ":2: column 'cpu_milli' = 'abc': must be an integer", id="not a number"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,1,-5,2,T4\n",
                 ":2: column 'memory_mib' = '-5': must be >= 0", id="negative"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,\n",
                 "column 'model' = '': a node with GPUs needs a model", id="no model"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,T4\nn0,1,1,2,T4\n",
                 ":3: column 'sn' = 'n0': duplicate node name", id="duplicate"),
    pytest.param("", "file is empty", id="empty"),
    pytest.param("sn,cpu_milli,memory_mib,gpu,model\n", "no nodes", id="header only"),
])
def test_bad_node_lists(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path, "nodes.csv", text)
    with pytest.raises(TraceError) as info:
        load_nodes(path)
    assert str(path) in str(info.value)
    assert fragment in str(info.value)


HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"


@pytest.mark.parametrize(("row", "fragment"), [
    pytest.param("p,1,1,1,1200", "column 'gpu_milli' = '1200': must be 0..1000", id="milli"),
    pytest.param("p,1,1,2,500", "only single-GPU pods may share a GPU", id="shared multi"),
    pytest.param("p,1,1,0,500", "CPU-only pod (num_gpu 0) must have gpu_milli 0", id="cpu"),
    pytest.param("p,1,1,1,0", "a GPU pod needs gpu_milli 1..1000", id="zero share"),
    pytest.param("p,1.5,1,1,1000", "column 'cpu_milli' = '1.5': must be an integer",
                 id="fraction"),
])
def test_bad_pod_lists(tmp_path: Path, row: str, fragment: str) -> None:
    path = write(tmp_path, "pods.csv", HEADER + row + "\n")
    with pytest.raises(TraceError) as info:
        load_pods(path)
    assert f"{path}:2:" in str(info.value)
    assert fragment in str(info.value)


def test_a_float_written_integer_is_accepted(tmp_path: Path) -> None:
    pods = load_pods(write(tmp_path, "pods.csv", HEADER + "p,1000.0,1,1,1000\n"))
    assert pods[0].cpu_milli == 1000


def test_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"nope\.csv: cannot read"):
        load_nodes(tmp_path / "nope.csv")


def test_unknown_models_are_named(tmp_path: Path) -> None:
    nodes = write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,1,K80\n")
    pods = write(tmp_path, "p.csv", PODS)
    with pytest.raises(TraceError, match=r"column 'model' = 'K80': unknown GPU model"):
        openb_scenario(load_trace(nodes, pods))
    bad_spec = write(tmp_path, "q.csv", HEADER.strip() + ",gpu_spec\np9,1,1,1,500,K80|T4\n")
    with pytest.raises(TraceError, match=r"pod p9: unknown GPU model") as info:
        openb_scenario(load_trace(write(tmp_path, "n2.csv", NODES), bad_spec))
    assert "'K80'" in str(info.value)
