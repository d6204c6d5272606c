"""The Grafana dashboard the chart ships queries only series the extender exports."""

from __future__ import annotations

import json
import re

from flask.testing import FlaskClient

from localcluster.binaries import REPO_ROOT
from tests.server.conftest import fixture_bytes, post

DASHBOARD = REPO_ROOT / "charts" / "gpu-extender" / "dashboards" / "gpu-extender.json"
METRIC = re.compile(r"\bgpu_extender_[a-z0-9_]+")
# Counters of rare events: the family is exported from the start, a labelled series only once
# the event happened (a watch restart needs a failing API server).
EVENT_FAMILIES = {"gpu_extender_watch_restarts_total"}


def _queried() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    names = set()
    for panel in dashboard["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names |= set(METRIC.findall(target["expr"]))
    return names


def test_every_series_the_dashboard_queries_exists_in_metrics(client: FlaskClient) -> None:
    post(client, "/filter", fixture_bytes("filter_typed_nodenames.json"))
    post(client, "/prioritize", fixture_bytes("filter_typed_nodenames.json"))
    text = client.get("/metrics").data.decode()
    families = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    samples = {re.split(r"[{ ]", line, maxsplit=1)[0] for line in text.splitlines()
               if line and not line.startswith("#")}
    queried = _queried()
    assert len(queried) >= 15
    missing = sorted(name for name in queried if name not in samples
                     and not (name in EVENT_FAMILIES and name in families))
    assert missing == [], f"the dashboard queries series /metrics does not have: {missing}"


def test_metric_names_carry_units_and_suffixes(client: FlaskClient) -> None:
    text = client.get("/metrics").data.decode()
    for line in text.splitlines():
        if not line.startswith("# TYPE gpu_extender_"):
            continue
        _, _, name, kind = line.split()
        assert "_mib" not in name, name  # base units: bytes, seconds
        if kind == "counter":
            assert name.endswith("_total"), name
        if kind == "histogram":
            assert name.endswith("_seconds"), name
