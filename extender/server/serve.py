"""``gpu-extender serve``: the scheduler extender under gunicorn.

Everything that can be wrong with the invocation (config, cluster file, cluster credentials) is
checked here, in the master, and reported with a plain message and a non-zero exit before
gunicorn starts; the service itself is built in the worker.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from extender.errors import ConfigError
from extender.runtime.certificates import warn_if_expiring
from extender.runtime.command import (
    EXIT_OK,
    EXIT_USAGE,
    add_common_flags,
    configure_logging,
    fail,
    flag_error,
    kube_or_exit,
    platform_or_exit,
    positive_int,
    positive_seconds,
)
from extender.runtime.gunicorn import KEEPALIVE_SECONDS
from extender.runtime.listener import check_bindable, parse_address
from extender.runtime.tls import TlsFiles
from extender.server.gunicorn_conf import DEFAULT_THREADS, ServerOptions, gunicorn_settings
from extender.server.limits import DEFAULT_LIMITS, RequestLimits


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "serve", help="run the scheduler extender (filter, prioritize, bind)",
        description="Serve POST /filter, /prioritize, /bind at the server root for "
                    "kube-scheduler, plus /healthz, /readyz, /metrics and /debug/*. Connects "
                    "to the API server with the in-cluster service account, or $KUBECONFIG "
                    "(or --kubeconfig); with --cluster-file it runs offline on a dump instead.")
    # --host defaults to loopback, for a sidecar of kube-scheduler; 0.0.0.0 serves other pods
    add_common_flags(parser, kube=True, listen=("127.0.0.1", 8888))
    parser.add_argument("--cluster-file", metavar="FILE",
                        help="run offline on a `kubectl get nodes,pods -A -o json` dump; binds "
                             "are recorded in memory, nothing is written to any cluster")
    parser.add_argument("--threads", type=positive_int, default=DEFAULT_THREADS,
                        help=f"request threads of the single worker (default: "
                             f"{DEFAULT_THREADS}); binds run concurrently")
    parser.add_argument("--keepalive", type=positive_int, default=KEEPALIVE_SECONDS,
                        help=f"idle keep-alive seconds (default: {KEEPALIVE_SECONDS}, longer "
                             "than kube-scheduler's 90 s idle timeout)")
    parser.add_argument("--access-log", action="store_true",
                        help="also log every HTTP request")
    parser.add_argument("--watch-timeout", type=positive_int, default=300, metavar="SECONDS",
                        help="server-side timeout of each watch request before it is renewed "
                             "(default: 300)")
    parser.add_argument("--publish-node-capacity", action="store_true",
                        help="keep status.capacity/allocatable gpu-extender.io/gpu-memory "
                             "(bytes) and gpu-extender.io/gpu-milli of every GPU node equal to "
                             "what the inventory offers for shares, while this replica holds "
                             "the Lease gpu-extender-node-capacity (needs nodes/status patch, "
                             "leases get/create/update)")
    parser.add_argument("--leader-namespace", metavar="NAMESPACE",
                        help="namespace of that Lease (default: $POD_NAMESPACE, else the "
                             "service account's namespace, else default)")
    parser.add_argument("--no-debug-endpoints", action="store_true",
                        help="do not serve /debug/inventory and /debug/explain")
    tls = parser.add_argument_group(
        "TLS", "serve HTTPS (kube-scheduler's enableHTTPS + tlsConfig); the files are "
               "re-read when they change, so a rotated Secret needs no restart")
    tls.add_argument("--tls-cert-file", metavar="FILE", type=Path,
                     help="PEM serving certificate (chain); enables HTTPS")
    tls.add_argument("--tls-private-key-file", metavar="FILE", type=Path,
                     help="PEM private key of --tls-cert-file")
    tls.add_argument("--client-ca-file", metavar="FILE", type=Path,
                     help="PEM CA bundle: require a client certificate signed by it "
                          "(mutual TLS; kube-scheduler's tlsConfig.certFile/keyFile)")
    limits = parser.add_argument_group(
        "limits", "what one request may cost (see extender/server/limits.py)")
    limits.add_argument("--max-body-bytes", type=positive_int,
                        default=DEFAULT_LIMITS.max_body_bytes,
                        metavar="BYTES", help="refuse larger bodies with 413 (default: "
                        f"{DEFAULT_LIMITS.max_body_bytes}, 16 MiB)")
    limits.add_argument("--body-read-timeout", type=positive_seconds,
                        default=DEFAULT_LIMITS.body_read_timeout_s, metavar="SECONDS",
                        help="answer 408 to a body that has not arrived in time, freeing the "
                             f"thread (default: {DEFAULT_LIMITS.body_read_timeout_s:g})")
    parser.add_argument("--monitoring-address", metavar="HOST:PORT",
                        help="also serve /healthz, /readyz and /metrics over plain HTTP here "
                             "(e.g. 0.0.0.0:9090: kubelet probes and Prometheus reach the pod "
                             "IP while the verbs stay on loopback or behind TLS)")
    parser.set_defaults(run=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    configure_logging(args)
    build = prepare(args)
    from extender.server import runner

    try:
        tls = tls_files(args)
        if tls is not None:
            tls.check()
            warn_if_expiring([tls.cert_file])
        monitoring = (parse_address(args.monitoring_address)
                      if args.monitoring_address else None)
        if monitoring is not None:
            check_bindable(*monitoring)
    except ConfigError as exc:
        raise fail(exc, EXIT_USAGE) from exc
    options = ServerOptions(host=args.host, port=args.port, threads=args.threads,
                            keepalive=args.keepalive, log_level=args.log_level,
                            log_format=args.log_format, access_log=args.access_log, tls=tls)
    runner.run(gunicorn_settings(options), build, debug_endpoints=not args.no_debug_endpoints,
               monitoring=monitoring,
               limits=RequestLimits(max_body_bytes=args.max_body_bytes,
                                    body_read_timeout_s=args.body_read_timeout),
               head_timeout_s=args.head_timeout,
               certificates=(tls.cert_file,) if tls is not None else ())
    return EXIT_OK


def tls_files(args: argparse.Namespace) -> TlsFiles | None:
    """The TLS flags as one value; raises ConfigError when they do not go together."""
    cert, key, client_ca = args.tls_cert_file, args.tls_private_key_file, args.client_ca_file
    if cert is None and key is None:
        if client_ca is not None:
            raise flag_error("--client-ca-file", "needs --tls-cert-file and "
                             "--tls-private-key-file (mutual TLS is TLS first)")
        return None
    if cert is None or key is None:
        missing = "--tls-cert-file" if cert is None else "--tls-private-key-file"
        other = "--tls-private-key-file" if cert is None else "--tls-cert-file"
        raise flag_error(missing, f"is required together with {other}")
    return TlsFiles(cert, key, client_ca)


def leader_namespace(flag: str | None) -> str:
    """--leader-namespace, else $POD_NAMESPACE, else the in-cluster service account's, else
    ``default`` (``runtime.namespace``)."""
    from extender.runtime.namespace import own_namespace

    return flag or own_namespace()


def prepare(args: argparse.Namespace) -> Callable[[], Any]:
    """Validate the invocation; return the worker's service factory (or ``CommandExit``)."""
    from extender.server.service import ExtenderService
    from extender.sync.offline import ClusterFileError, load_cluster_file

    platform = platform_or_exit(args.config)
    if args.cluster_file:
        try:
            objects = load_cluster_file(args.cluster_file)
        except ClusterFileError as exc:
            raise fail(exc, EXIT_USAGE) from exc
        return lambda: ExtenderService.from_cluster_objects(platform, objects)

    from extender.apiserver.client import ApiServerClient

    configuration = kube_or_exit(args.kubeconfig)

    def build_online() -> ExtenderService:
        api = ApiServerClient.from_configuration(configuration)
        if not args.publish_node_capacity:
            return ExtenderService.online(platform, api,
                                          watch_timeout_seconds=args.watch_timeout)
        from extender.apiserver.leases import ApiServerLeases
        from extender.sync.leader import LeaderLease

        lease = LeaderLease(ApiServerLeases.from_configuration(configuration),
                            leader_namespace(args.leader_namespace))
        return ExtenderService.online(platform, api, watch_timeout_seconds=args.watch_timeout,
                                      publish_capacity=api, leader=lease.leading)

    return build_online
