"""``gpu-extender agent``: the NVML node agent's command line.

    gpu-extender agent --node-name NODE [--kubeconfig F] [--config F]
        [--nvml-fixture FILE.json] [--proc-root DIR] [--pod-resources-socket PATH]
        [--pods-file PODS.json] [--once] [--print]

``--once --print`` does one pass and prints ``{"annotation", "usage", "overuse"}`` as JSON,
writing nothing; with ``--pods-file`` no API server is needed at all.

Running, it serves ``/metrics``, ``/healthz`` (passes keep ending) and ``/readyz`` (the last
pass completed) on ``metricsHost:metricsPort`` through the runtime's side listener.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import orjson

from extender.errors import ExtenderError
from extender.runtime.command import (
    EXIT_ERROR,
    EXIT_OK,
    add_common_flags,
    configure_logging,
    wait_for_signal,
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "agent", help="NVML node agent: publish the node's GPUs, usage vs declared VRAM",
        description="The node agent (one per GPU node, a DaemonSet): reads the node's GPUs "
                    "through NVML (or a JSON fixture), publishes them and their health for "
                    "the extender, compares what each pod really uses with what it declared, "
                    "and hands each share pod the GPU it was given (docs/agent.md).")
    parser.add_argument("--node-name", required=True,
                        help="this node's name (the DaemonSet passes spec.nodeName)")
    parser.add_argument("--config", help="agent config YAML (see docs/agent.md)")
    add_common_flags(parser, config=False, kube=True)
    parser.add_argument("--nvml-fixture", metavar="FILE.json",
                        help="read GPUs from a JSON fixture instead of NVML "
                             "(docs/agent-fixture.md)")
    parser.add_argument("--proc-root", default="/proc",
                        help="the host's /proc, for PID -> pod mapping (default: /proc)")
    parser.add_argument("--pod-resources-socket", metavar="PATH",
                        help="kubelet PodResources socket (default with an API server: "
                             "/var/lib/kubelet/pod-resources/kubelet.sock; with "
                             "--pods-file: not read unless given)")
    parser.add_argument("--pods-file", metavar="PODS.json",
                        help="a `kind: List` of pods (and optionally the Node) instead of the "
                             "API server; nothing is written")
    parser.add_argument("--once", action="store_true", help="one pass, then exit")
    parser.add_argument("--print", action="store_true",
                        help="print the pass as JSON; with --once nothing is written")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    configure_logging(args)
    try:
        return _run(args)
    except ExtenderError as exc:
        print(f"gpu-extender agent: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _run(args: argparse.Namespace) -> int:
    from extender.agent.cgroup import PidMapper
    from extender.agent.config import load_agent_config
    from extender.agent.kubelet import DEFAULT_SOCKET, PodResourcesClient
    from extender.agent.loop import Agent
    from extender.agent.metrics import AgentMetrics
    from extender.agent.nodeapi import AgentApi, FileAgentApi
    from extender.agent.nvml import NvmlBackend
    from extender.apiserver.node_agent import ApiServerAgentApi
    from extender.platform import load_platform

    config = load_agent_config(args.config)
    platform = load_platform(config.platform_config)
    backend: NvmlBackend
    if args.nvml_fixture:
        from extender.agent.nvml_fixture import FixtureBackend

        backend = FixtureBackend(args.nvml_fixture)
    else:
        from extender.agent.nvml_pynvml import PynvmlBackend

        backend = PynvmlBackend()
    api: AgentApi = (FileAgentApi(Path(args.pods_file)) if args.pods_file
                     else ApiServerAgentApi(args.kubeconfig))
    socket_path = args.pod_resources_socket or (None if args.pods_file else DEFAULT_SOCKET)
    kubelet = PodResourcesClient(socket_path) if socket_path else None
    metrics = AgentMetrics(args.node_name)
    write = not (args.once and args.print) and not args.pods_file
    agent = Agent(node=args.node_name, backend=backend, api=api, catalog=platform.catalog,
                  config=config, metrics=metrics, mapper=PidMapper(args.proc_root),
                  kubelet=kubelet, write=write)
    try:
        if args.once:
            result = agent.run_pass()
            if args.print:
                sys.stdout.write(orjson.dumps(result.to_json(),
                                              option=orjson.OPT_INDENT_2).decode() + "\n")
            for problem in result.problems:
                logging.getLogger("extender.agent").warning(
                    "pass problem", extra={"fields": {"error": problem}})
            if result.api_unreachable:
                print("gpu-extender agent: the API server could not be read ("
                      + ", ".join(result.failed_stages) + " failed); see the log",
                      file=sys.stderr)
                return EXIT_ERROR
            return EXIT_OK
        return _serve(agent, metrics, config.interval_s, config.metrics_host,
                      config.metrics_port)
    finally:
        backend.close()
        if kubelet is not None:
            kubelet.close()


def _serve(agent: Any, metrics: Any, interval_s: float, host: str, port: int) -> int:
    from prometheus_client import CONTENT_TYPE_LATEST

    from extender.agent.loop import AgentLoop
    from extender.runtime.listener import SideListener, health_route

    loop = AgentLoop(agent, interval_s, metrics)
    listener = None
    if port:
        listener = SideListener({
            "/metrics": lambda: (200, metrics.render(), CONTENT_TYPE_LATEST),
            "/healthz": health_route(loop.health),
            "/readyz": health_route(loop.ready, ok="ready"),
        }, host, port, name="agent-listener")
        listener.start()
    loop.start()
    signum = wait_for_signal()
    logging.getLogger("extender.agent").info("stopping", extra={"fields": {"signal": signum}})
    loop.stop()
    if listener is not None:
        listener.stop()
    return EXIT_OK
