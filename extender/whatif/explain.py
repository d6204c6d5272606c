"""``gpu-extender explain NAMESPACE/POD``: where a pod is, or why it waits, in a few lines.

Two sources, one document (``ExplainDocument`` as JSON) and one text:

- the cluster (kubeconfig, or a ``--cluster-file`` dump): nodes and pods are listed once and
  the pod is judged offline as the what-if judges it (``scheduling.verdict.judge_pod``:
  kube-scheduler's filters, then the extender's choice, runner-up and terms), with the
  platform config given by ``--config`` (the shipped defaults otherwise);
- ``--url`` of a running extender: its ``/debug/explain`` (its own config, and for a pod it
  bound the breakdown it recorded at bind; kube-scheduler's filters are not applied there).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from extender.errors import ExtenderError
from extender.kube import objects as kobj
from extender.kube.filters.nodes import KubeNodes
from extender.scheduling.explain import assignment_json
from extender.scheduling.verdict import choice_breakdown, judge_pod
from extender.sync.offline import ClusterObjects
from extender.whatif.inputs import WhatIfConfig
from extender.whatif.replay import describe_request

EXAMPLES = 3
NOT_MODELLED = ("volumes, inter-pod affinity, topology spread, scheduling gates, "
                "preemption")


class ExplainError(ExtenderError):
    """The pod or the source cannot be read; the message says what to do."""


def local_report(config: WhatIfConfig, cluster: ClusterObjects, namespace: str, name: str,
                 *, source: str) -> dict[str, Any]:
    from extender.server.service import ExtenderService

    pod = next((p for p in cluster.pods if kobj.namespace(p) == namespace
                and kobj.name(p) == name), None)
    if pod is None:
        raise ExplainError(f"pod {namespace}/{name} not found in {source}")
    service = ExtenderService.from_cluster_objects(config.platform, cluster)
    service.start()
    scheduler = service.scheduler
    doc: dict[str, Any] = {"pod": f"{namespace}/{name}", "source": source,
                           "config": config.source, "nodes": len(cluster.nodes)}
    explanation = scheduler.explain(pod)
    decoded = explanation.cycle.pod
    doc["request"] = describe_request(config.platform, decoded.request)
    bound = explanation.bound
    if bound is not None:
        doc |= {"status": "bound", "node": bound.node, "placedFrom": bound.source,
                "assignment": assignment_json(bound.assignment) if bound.assignment else None,
                "breakdown": None}
        return doc
    if decoded.error:
        return doc | {"status": "invalid", "error": decoded.error}
    if decoded.placement is None:
        return doc | {"status": "no-gpu"}
    kube = KubeNodes.of(cluster.nodes, cluster.pods, ignored=config.ignored)
    verdict = judge_pod(scheduler, kube, pod)
    doc |= {"status": "pending", "passKubeFilters": len(verdict.kube.feasible),
            "reasons": [{"nodes": len(g.nodes), "rule": g.rule, "message": g.message,
                         "examples": list(g.nodes[:EXAMPLES])} for g in verdict.reasons]}
    placement = verdict.judgement.placement
    if placement is not None:
        explained = choice_breakdown(scheduler, verdict.judgement)
        doc["wouldPlace"] = {"assignment": assignment_json(placement.assignment),
                             "breakdown": explained.to_json() if explained else None}
    return doc


def remote_report(url: str, namespace: str, name: str) -> dict[str, Any]:
    """The running extender's ``/debug/explain`` in the same document shape."""
    from extender.runtime.fetch import DEBUG_OFF, fetch_json

    path = f"/debug/explain/{urllib.parse.quote(namespace)}/{urllib.parse.quote(name)}"
    report = fetch_json(url, path,
                        missing=DEBUG_OFF + "; without --url the pod is judged from the "
                                            "cluster itself",
                        unreachable="a port-forward to the chart's extender: kubectl -n "
                                    "kube-system port-forward deploy/gpu-extender 8888")
    if not isinstance(report, dict):
        raise ExplainError(f"--url {url}: {path} did not answer a JSON object")
    return _from_extender(report, url)


def _from_extender(report: Mapping[str, Any], url: str) -> dict[str, Any]:
    doc: dict[str, Any] = {"pod": report.get("pod"), "source": f"extender {url}",
                           "config": "the extender's", "request": report.get("request"),
                           "nodes": len(report.get("nodes") or ())}
    if report.get("status") == "bound":
        placement = report.get("placement") or {}
        return doc | {"status": "bound", "node": placement.get("node"),
                      "placedFrom": placement.get("source"),
                      "assignment": placement.get("assignment"),
                      "breakdown": placement.get("breakdown"),
                      "breakdownMissing": placement.get("breakdownMissing")}
    if report.get("error"):
        return doc | {"status": "invalid", "error": report["error"]}
    if report.get("request") is None:
        return doc | {"status": "no-gpu"}
    nodes = report.get("nodes") or []
    fits = [n for n in nodes if n.get("verdict") == "fits"]
    doc |= {"status": "pending", "kubeFiltersApplied": False,
            "reasons": [{"nodes": g.get("count"), "rule": "extender",
                         "message": g.get("reason"), "examples": g.get("examples")}
                        for g in report.get("reasons") or () if g.get("verdict") != "fits"]}
    if fits:
        doc["wouldPlace"] = {"assignment": {"node": fits[0]["node"]}, "breakdown": None}
    return doc


# -- text ------------------------------------------------------------------------------------

def render_report(doc: Mapping[str, Any]) -> str:
    pod, status = doc.get("pod"), doc.get("status")
    lines = [f"pod {pod}: {status}; asks {doc.get('request') or 'no GPU'}"]
    if status == "bound":
        lines.append("  " + _where(doc.get("assignment"), doc.get("node")))
        breakdown = doc.get("breakdown")
        if breakdown:
            lines += _breakdown_lines(breakdown)
        else:
            lines.append("  why this node: recorded by the extender that bound it: explain "
                         "--url, or the pod's GpuAssigned event (kubectl describe pod)")
    elif status == "invalid":
        lines.append(f"  the request is invalid: {doc.get('error')}")
    elif status == "no-gpu":
        lines.append("  it asks for no GPU: kube-scheduler places it without the extender")
    else:
        lines += _pending_lines(doc)
    lines.append(f"  (judged from {doc.get('source')}, config {doc.get('config')})")
    return "\n".join(lines)


def _where(assignment: Mapping[str, Any] | None, node: object) -> str:
    if not assignment or not assignment.get("gpus"):
        return f"on node {node}" + ("" if assignment else " (no GPU assignment recorded)")
    gpus = ",".join(str(g) for g in assignment["gpus"])
    kind = assignment.get("kind") or ""
    return (f"on node {assignment.get('node') or node}, GPU {gpus} "
            f"({assignment.get('type') or 'unknown type'}{', ' + kind if kind else ''})")


def _pending_lines(doc: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    if "passKubeFilters" in doc:
        lines.append(f"  kube-scheduler's filters pass {doc['passKubeFilters']} of "
                     f"{doc.get('nodes')} nodes")
    would = doc.get("wouldPlace")
    if would:
        lines.append(f"  the extender would place it {_where(would.get('assignment'), '')}")
        if would.get("breakdown"):
            lines += _breakdown_lines(would["breakdown"])
        lines.append(f"  it fits now: kube-scheduler has not retried it yet, or a check this "
                     f"view does not model holds it ({NOT_MODELLED}); see its events")
    else:
        lines.append("  it waits: no node takes it")
    if doc.get("kubeFiltersApplied") is False:
        lines.append("  (the extender's own view: kube-scheduler's filters are not applied; "
                     "without --url they are)")
    for group in doc.get("reasons") or ():
        n = group.get("nodes") or 0
        examples = ", ".join(group.get("examples") or ())
        lines.append(f"  {n} node{'s' if n != 1 else ''}: {group.get('message')}"
                     + (f"  [{examples}{', ...' if n > len(group.get('examples') or ()) else ''}]"
                        if examples else ""))
    return lines


def _breakdown_lines(breakdown: Mapping[str, Any]) -> list[str]:
    chosen, runner = breakdown.get("chosen") or {}, breakdown.get("runnerUp")
    lines = [f"  why: {breakdown.get('reason')} (strategy {breakdown.get('strategy')}, "
             f"{breakdown.get('candidates')} candidate nodes)"]
    if runner:
        lines.append(f"  runner-up: {runner.get('node')} (score {runner.get('score')} "
                     f"against {chosen.get('score')})")
    lines += _terms_table(chosen, runner)
    return lines


def _terms_table(chosen: Mapping[str, Any], runner: Mapping[str, Any] | None) -> list[str]:
    terms: Sequence[Mapping[str, Any]] = chosen.get("terms") or ()
    if not terms:
        return []
    rival = {t["name"]: t for t in (runner or {}).get("terms") or ()}
    width = max(len(str(t["name"])) for t in terms)
    head = f"    {'term':<{width}}  {chosen.get('node')!s:>14}"
    if runner:
        head += f"  {runner.get('node')!s:>14}"
    lines = [head]
    for term in terms:
        line = f"    {term['name']:<{width}}  {_value(term):>14}"
        if runner:
            other = rival.get(term["name"])
            line += f"  {_value(other) if other else '-':>14}"
        lines.append(line)
    return lines


def _value(term: Mapping[str, Any]) -> str:
    value = float(term.get("value") or 0.0)
    unit = term.get("unit") or ""
    if unit == "$/h":
        return f"${value:.2f}/h"
    if unit == "GPU":
        return f"{value:+.2f} GPU"
    return str(int(value)) if value.is_integer() else f"{value:g}"
