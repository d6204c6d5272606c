"""The warm after an answer (``scheduling/warm.py``): a burst answered with it is answered
exactly as without it, and its filters find the rows the last hold changed already fresh;
a failing warm costs nothing but itself; the WSGI path runs it once the body is sent."""

from __future__ import annotations

import io
import logging
from typing import Any

import numpy as np
import pytest

from extender.core import fit_cache
from extender.core.fit import FitResult, fit
from extender.core.request import PlacementRequest
from extender.inventory import ClusterSnapshot
from extender.inventory import snapshot as snapshot_module
from extender.platform import Platform
from extender.server import verb_routes
from extender.server.answers import Answer
from extender.server.limits import RequestLimits
from extender.server.service import ExtenderService
from extender.server.wire import ExtenderArgs
from extender.sync.score_facts import ScoreFacts
from tests.builders import make_pod
from tests.server.conftest import online_service
from tests.sync.clusters import t4_node
from tests.sync.fake_api import FakeApiServer

NAMES = [f"t4-{i}" for i in range(6)]
REPLICAS = 14


def _service(platform: Platform, *, cut: bool) -> tuple[ExtenderService, FakeApiServer]:
    pods = [make_pod(f"r{i}").namespace("ml").uid(f"uid-r{i}").gpus(1).obj()
            for i in range(REPLICAS)]
    api = FakeApiServer([t4_node(n, gpus=2 + i % 3) for i, n in enumerate(NAMES)], pods)
    return online_service(platform, api, facts=ScoreFacts() if cut else None), api


def _burst(service: ExtenderService, api: FakeApiServer, *, warm: bool,
           fitted: list[int], per_filter: list[int] | None = None,
           repeat: int = 1) -> list[Any]:
    """Every replica through filter, prioritize (when more than one node is answered) and
    bind to the best, as kube-scheduler drives them; what each answered. ``fitted``: where
    the fit kernel records the rows of each call; ``per_filter``: the rows it computed
    inside each filter; ``repeat``: each order listed for that many replicas in a row (kube
    sends the same list again for most pods of a burst)."""
    verbs, answers = service.verbs, []
    for i in range(REPLICAS):
        pod = api.get_pod("ml", f"r{i}")
        turn = i // repeat % len(NAMES)
        order = NAMES[turn:] + NAMES[:turn]  # any order, as kube sends
        before = len(fitted)
        feasible = verbs.filter(ExtenderArgs(Pod=pod, Nodes=None, NodeNames=order)).document()
        if per_filter is not None:
            per_filter.append(sum(fitted[before:]))
        if warm:
            verbs.warm_next()
        names = feasible["NodeNames"]
        answers.append(feasible)
        if not names:
            continue
        best = names[0]
        if len(names) > 1:
            priorities = verbs.prioritize(ExtenderArgs(Pod=pod, Nodes=None,
                                                       NodeNames=names)).document()
            if warm:
                verbs.warm_next()
            answers.append(priorities)
            best = max(priorities, key=lambda p: (p["Score"], p["Host"]))["Host"]
        bound = verbs.bind({"PodName": f"r{i}", "PodNamespace": "ml",
                            "PodUID": f"uid-r{i}", "Node": best}).document()
        answers.append(bound)
    return answers


@pytest.mark.parametrize("by_content", [False, True], ids=["computed", "by-content"])
@pytest.mark.parametrize("cut", [True, False])
def test_a_burst_is_answered_the_same_with_the_warm_and_its_filters_fit_no_row(
        platform: Platform, cut: bool, by_content: bool, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    if not by_content:  # every changed row computed: what the warm saves the filter shows
        monkeypatch.setattr(snapshot_module, "CONTENT_ROWS", 0)
    fitted: list[int] = []

    def counting_fit(snap: ClusterSnapshot, req: PlacementRequest, rows: np.ndarray,
                     **kw: bool) -> FitResult:
        fitted.append(len(rows))
        return fit(snap, req, rows, **kw)

    monkeypatch.setattr(fit_cache, "fit", counting_fit)
    warm_service, warm_api = _service(platform, cut=cut)
    warm_fitted: list[int] = []
    warmed = _burst(warm_service, warm_api, warm=True, fitted=fitted, per_filter=warm_fitted)
    cold_service, cold_api = _service(platform, cut=cut)
    cold_fitted: list[int] = []
    cold = _burst(cold_service, cold_api, warm=False, fitted=fitted, per_filter=cold_fitted)
    assert warmed == cold
    assert [a for a in warmed if isinstance(a, dict) and a.get("Error")] == []
    assert warm_service.scheduler.warm.runs >= REPLICAS - 2
    # the request is kept from its second filter on: without the warm each later filter
    # fits the row the last hold changed (unless another node was fitted in that state
    # before: then it is found by content), with it none
    assert cold_fitted[2:]
    if not by_content:
        assert all(rows >= 1 for rows in cold_fitted[2:-1])
    assert all(rows == 0 for rows in warm_fitted[2:])
    assert cold_service.scheduler.warm.runs == 0
    # nodes of equal size reach each other's states: found by content, and counted
    found = _counter(warm_service, "gpu_extender_rows_found_by_content_total")
    assert found > 0 if by_content else found == 0


def _counter(service: ExtenderService, name: str) -> float:
    for line in service.metrics.exposition().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not exposed")


def test_a_failing_warm_is_logged_and_the_next_filter_refreshes_itself(
        platform: Platform, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    service, api = _service(platform, cut=True)
    cold_service, cold_api = _service(platform, cut=True)
    fits = service.scheduler.evaluator.fits

    def broken(snapshot: ClusterSnapshot, req: PlacementRequest) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(fits, "refresh", broken)
    with caplog.at_level(logging.ERROR):
        warmed = _burst(service, api, warm=True, fitted=[])
    assert warmed == _burst(cold_service, cold_api, warm=False, fitted=[])
    assert "refreshing the row caches failed" in caplog.text
    assert service.scheduler.warm.runs == 0


def test_the_wsgi_path_runs_the_work_after_the_body_is_sent(platform: Platform) -> None:
    service, _ = _service(platform, cut=False)
    done: list[str] = []
    route = verb_routes.VerbRoute(
        "filter", lambda body: body, lambda args: Answer(b"{}"),
        lambda args, message: Answer(b"{}"), metrics=service.metrics,
        limits=RequestLimits(), after=lambda: done.append("after"))
    routes = verb_routes.VerbRoutes(lambda environ, start: [b""], [route])
    environ = {"PATH_INFO": "/filter", "REQUEST_METHOD": "POST", "CONTENT_LENGTH": "2",
               "wsgi.input": io.BytesIO(b"{}")}
    body = routes(environ, lambda status, headers: None)
    assert list(body) == [b"{}"] and done == []  # not before the server sent it
    body.close()  # what a WSGI server calls once the body is written (PEP 3333)
    assert done == ["after"]
