"""The per-GPU series, rendered row by row and kept across scrapes (``server/gpu_series.py``),
against the naive reference: the eight families built as ``prometheus_client`` metric families
from the whole snapshot at every scrape (what the extender did before), through
``generate_latest``. Same bytes, on the first scrape and after the inventory changed."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
from flask.testing import FlaskClient
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from extender.inventory.snapshot import ClusterSnapshot
from extender.platform import Platform, build_platform
from extender.server.gpu_series import FAMILIES, GPU_LABELS, MIB, GpuSeries
from extender.server.service import ExtenderService
from extender.sync.offline import load_cluster_file
from tests.server.conftest import DATA, fixture_bytes, post


def reference(snapshot: ClusterSnapshot) -> bytes:
    """Every family rebuilt from the snapshot, one sample per GPU (the old collector)."""
    class Collector:
        def collect(self) -> Iterator[GaugeMetricFamily]:
            families = [GaugeMetricFamily(f.name, f.help, labels=list(GPU_LABELS))
                        for f in FAMILIES]
            memory, memory_free, pods, healthy, mig, mig_used, replicas, replicas_free = families
            valid = snapshot.node_valid[:, None] & snapshot.present
            rows, slots = np.nonzero(valid)
            used = np.unpackbits(snapshot.mig_used[rows, slots][:, None], axis=1).sum(axis=1)
            for i, (row, slot) in enumerate(zip(rows.tolist(), slots.tolist(), strict=True)):
                name = snapshot.node_names[row]
                index = int(snapshot.gpu_index[row, slot])
                info = snapshot.nodes.get(name)
                uuid = next((d.uuid or "" for d in info.gpus if d.index == index), "") \
                    if info else ""
                labels = [name, str(index), uuid,
                          snapshot.catalog.id_of(int(snapshot.gpu_type[row, slot]))]
                memory.add_metric(labels, float(snapshot.total_mib[row, slot]) * MIB)
                memory_free.add_metric(labels,
                                       float(max(int(snapshot.free_mib[row, slot]), 0)) * MIB)
                pods.add_metric(labels, float(snapshot.pods[row, slot]))
                healthy.add_metric(labels, 1.0 if snapshot.healthy[row, slot] else 0.0)
                partitioned = int(snapshot.mig_layout[row, slot]) >= 0
                mig.add_metric(labels, 1.0 if partitioned else 0.0)
                if partitioned:
                    mig_used.add_metric(labels, float(used[i]))
                if int(snapshot.replicas[row, slot]) > 1:
                    replicas.add_metric(labels, float(snapshot.replicas[row, slot]))
                    replicas_free.add_metric(labels, float(snapshot.replicas_free[row, slot]))
            yield from families

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())  # type: ignore[arg-type]
    return generate_latest(registry)


def test_the_series_are_the_reference_bytes_and_a_change_renders_only_its_row(
        offline_service: ExtenderService, client: FlaskClient) -> None:
    inventory = offline_service.inventory
    series = GpuSeries()
    snapshot = inventory.snapshot()
    first = series.exposition(snapshot)
    assert first == reference(snapshot)
    # every kind of series is there: whole GPUs, a MIG-partitioned A100, time-sliced A10Gs
    text = first.decode()
    for family in ("gpu_mig_slots_used", "gpu_replicas_free"):
        assert f"\ngpu_extender_{family}{{Hostname=" in text, family
    assert series.rows_rendered == snapshot.n_nodes
    # nothing changed: nothing rendered again
    assert series.exposition(inventory.snapshot()) == first
    assert series.rows_rendered == snapshot.n_nodes
    # a placement (filter + prioritize hold one T4) changes one row: one row rendered
    post(client, "/filter", fixture_bytes("filter_typed_nodenames.json"))
    post(client, "/prioritize", fixture_bytes("filter_typed_nodenames.json"))
    changed = inventory.snapshot()
    rows = int((changed.node_version != snapshot.node_version).sum())
    assert rows == 1
    after = series.exposition(changed)
    assert after == reference(changed) and after != first
    assert series.rows_rendered == snapshot.n_nodes + 1
    # a node updated (the same name tuple): its row alone is rendered again
    info = changed.nodes["gpu-l4-0"]
    inventory.upsert_node(dataclasses.replace(info, gpus=tuple(
        dataclasses.replace(gpu, uuid=f"GPU-{gpu.index:04d}") for gpu in info.gpus)))
    updated = inventory.snapshot()
    assert updated.node_names is changed.node_names
    text = series.exposition(updated)
    assert text == reference(updated) and 'UUID="GPU-0003"' in text.decode()
    assert series.rows_rendered == snapshot.n_nodes + 2
    # a node gone and back in its row between two scrapes (a new name tuple, equal): its row
    # alone again
    assert inventory.remove_node("gpu-l4-0")
    inventory.upsert_node(info)
    returned = inventory.snapshot()
    assert returned.node_names is not updated.node_names
    assert returned.node_names == updated.node_names
    text = series.exposition(returned)
    assert text == reference(returned) and 'UUID="GPU-0003"' not in text.decode()
    assert series.rows_rendered == snapshot.n_nodes + 3
    # a node gone: the rows may hold other nodes now, all are rendered again
    assert inventory.remove_node("gpu-t4-1")
    smaller = inventory.snapshot()
    assert series.exposition(smaller) == reference(smaller)
    assert "gpu-t4-1" not in series.exposition(smaller).decode()


def test_the_metrics_endpoint_serves_them_after_the_registrys_families(
        client: FlaskClient) -> None:
    text = client.get("/metrics").data.decode()
    assert text.index("# TYPE gpu_extender_inventory_synced gauge") < \
        text.index("# TYPE gpu_extender_gpu_memory_bytes gauge")
    assert text.count("# TYPE gpu_extender_gpu_pods gauge") == 1


def test_with_gpu_series_off_only_the_per_type_totals_are_served(platform: Platform) -> None:
    # service.gpuSeries: false keeps a large fleet's scrape small; the totals by type stay
    quiet = build_platform(dataclasses.replace(
        platform.config, service=dataclasses.replace(platform.config.service,
                                                     gpu_series=False)))
    service = ExtenderService.from_cluster_objects(quiet, load_cluster_file(DATA / "cluster.json"))
    service.start()
    try:
        text = service.metrics.exposition().decode()
    finally:
        service.stop()
    assert 'gpu_extender_gpus{modelName="t4"} 8.0' in text
    assert not any(f.name in text for f in FAMILIES)
