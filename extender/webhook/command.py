"""``gpu-extender webhook`` (the admission webhook server) and ``gpu-extender webhook-certs``
(its serving certificate without cert-manager)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from extender.errors import ConfigError
from extender.runtime.command import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    add_common_flags,
    configure_logging,
    fail,
    kube_or_exit,
    platform_or_exit,
    positive_int,
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "webhook", help="run the admission webhook (validate and mutate GPU pods)",
        description="Serve AdmissionReview v1 over TLS: POST /validate refuses pods whose GPU "
                    "request the extender would reject, POST /mutate writes the scheduler "
                    "name, the platform's node affinity and tolerations and the "
                    "visible-devices env (admission: section of the platform config); plus "
                    "GET /healthz and /metrics.")
    add_common_flags(parser, kube=True, listen=("0.0.0.0", 8443))
    parser.add_argument("--tls-cert-file", required=True, metavar="FILE",
                        help="serving certificate (PEM); reloaded when it changes on disk")
    parser.add_argument("--tls-private-key-file", required=True, metavar="FILE",
                        help="its private key (PEM)")
    parser.add_argument("--threads", type=positive_int, default=4,
                        help="request threads (default: 4)")
    parser.add_argument("--access-log", action="store_true", help="log every request")
    parser.add_argument("--trusted-user", action="append", default=[], metavar="NAME",
                        help="an identity (userInfo.username) that may write the GPU "
                             "annotations gpu-extender.io/assigned, assigned-observed, "
                             "visible-devices and nvidia.cdi.k8s.io/* (repeatable; default: "
                             "system:serviceaccount:kube-system:gpu-extender)")
    parser.add_argument("--dra-extended-resource", action="append", default=[], metavar="NAME",
                        help="an extended resource a DeviceClass maps to DRA devices, e.g. "
                             "nvidia.com/gpu (repeatable): pods mixing it with "
                             "gpu-extender.io/gpu-memory and the like are refused (docs/dra.md)")
    parser.add_argument("--dra-first-available", action="store_true",
                        help="rewrite untyped requests of the gpu.nvidia.com DeviceClass in "
                             "ResourceClaims and ResourceClaimTemplates into firstAvailable "
                             "alternatives, cheapest unprotected type first (docs/dra.md)")
    parser.add_argument("--watch-nodes", action="store_true",
                        help="watch the cluster's nodes (get/list/watch nodes) and refuse, at "
                             "creation, VRAM shares and fractions that only pools with "
                             "handoff: none could hold (docs/handoff.md); uses the in-cluster "
                             "service account or --kubeconfig")
    parser.add_argument("--agent-user", action="append", default=[], metavar="NAME",
                        help="the node agent's identity (repeatable): its Evictions are "
                             "refused unless the pod they name is bound to the node in its "
                             "pod-bound token (get pods; the webhook configuration sends them "
                             "with failurePolicy: Fail)")
    parser.set_defaults(run=run_webhook)

    certs = commands.add_parser(
        "webhook-certs", help="create the webhook's CA and serving certificate (no cert-manager)",
        description="Write ca.crt, tls.crt, tls.key for the webhook Service into --out-dir; "
                    "with --manifest also webhook.yaml (the webhook configurations with "
                    "caBundle set) and secret.yaml (the kubernetes.io/tls Secret).")
    certs.add_argument("--service", default="gpu-extender-webhook",
                       help="the webhook Service's name: the certificate holds <service>, "
                            "<service>.<namespace>[.svc[.cluster.local]] (default: %(default)s)")
    certs.add_argument("--namespace", default="kube-system",
                       help="the Service's and the Secret's namespace (default: %(default)s)")
    certs.add_argument("--secret-name", default="gpu-extender-webhook-tls",
                       help="the kubernetes.io/tls Secret's name in secret.yaml, with "
                            "--manifest (default: %(default)s)")
    certs.add_argument("--dns", action="append", default=[], metavar="NAME",
                       help="extra DNS name (repeatable)")
    certs.add_argument("--ip", action="append", default=[], metavar="ADDRESS",
                       help="extra IP address (repeatable), e.g. 127.0.0.1 for a local test")
    certs.add_argument("--days", type=int, default=365,
                       help="validity in days (default: %(default)s)")
    certs.add_argument("--manifest", metavar="FILE",
                       help="webhook manifest to fill in (e.g. manifests/webhook.yaml)")
    certs.add_argument("--out-dir", required=True, metavar="DIR",
                       help="where the files go (created if missing)")
    certs.set_defaults(run=run_certs)


def run_webhook(args: argparse.Namespace) -> int:
    from extender.runtime.tls import TlsFiles

    platform = platform_or_exit(args.config)
    configuration = kube_or_exit(args.kubeconfig) \
        if args.watch_nodes or args.agent_user else None
    try:
        TlsFiles(Path(args.tls_cert_file), Path(args.tls_private_key_file)).check(
            "gpu-extender webhook")
        from extender.runtime.certificates import warn_if_expiring

        warn_if_expiring([Path(args.tls_cert_file)])
    except ConfigError as exc:
        # "gpu-extender webhook: --tls-cert-file '/x' is not a readable file"
        raise fail("\n".join(f"gpu-extender webhook: {error.path} {error.message}"
                             for error in exc.errors), EXIT_ERROR) from exc
    from extender.webhook import server
    from extender.webhook.trust import DEFAULT_TRUSTED_USERS

    configure_logging(args)  # only once the invocation is known to be good
    server.run(server.WebhookOptions(host=args.host, port=args.port,
                                     cert_file=args.tls_cert_file,
                                     key_file=args.tls_private_key_file,
                                     threads=args.threads, log_level=args.log_level,
                                     log_format=args.log_format, access_log=args.access_log,
                                     head_timeout_s=args.head_timeout,
                                     trusted_users=tuple(args.trusted_user) or
                                     DEFAULT_TRUSTED_USERS,
                                     dra_extended_resources=frozenset(
                                         args.dra_extended_resource),
                                     dra_first_available=args.dra_first_available,
                                     kube_configuration=configuration,
                                     watch_nodes=args.watch_nodes,
                                     agent_users=frozenset(args.agent_user)), platform)
    return EXIT_OK


def run_certs(args: argparse.Namespace) -> int:
    import ipaddress

    from extender.webhook import certs

    try:
        for ip in args.ip:
            ipaddress.ip_address(ip)
    except ValueError as exc:
        print(f"gpu-extender webhook-certs: --ip: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.days <= 0:
        print(f"gpu-extender webhook-certs: --days must be > 0, got {args.days}",
              file=sys.stderr)
        return EXIT_USAGE
    manifest = None
    if args.manifest:
        try:
            manifest = Path(args.manifest).read_text(encoding="utf-8")
        except OSError as exc:
            print(f"gpu-extender webhook-certs: --manifest {args.manifest}: {exc.strerror}",
                  file=sys.stderr)
            return EXIT_USAGE
        except UnicodeDecodeError as exc:
            print(f"gpu-extender webhook-certs: --manifest {args.manifest}: not UTF-8 text "
                  f"(byte {exc.start})", file=sys.stderr)
            return EXIT_USAGE
    issued = certs.issue([*certs.service_dns_names(args.service, args.namespace), *args.dns],
                         args.ip, days=args.days)
    filled = None
    if manifest is not None:  # checked before anything is written
        try:
            filled = certs.with_ca_bundle(manifest, issued.ca_pem)
        except certs.WebhookManifestError as exc:
            print(f"gpu-extender webhook-certs: --manifest {args.manifest}: {exc}",
                  file=sys.stderr)
            return EXIT_USAGE
    out = Path(args.out_dir)
    try:
        written = certs.write(out, issued)
        if filled is not None:
            (out / "webhook.yaml").write_text(filled)
            (out / "secret.yaml").write_text(certs.tls_secret(args.secret_name, args.namespace,
                                                              issued))
            written += [out / "webhook.yaml", out / "secret.yaml"]
    except OSError as exc:
        print(f"gpu-extender webhook-certs: --out-dir {args.out_dir}: {exc.strerror}"
              + (f" ({exc.filename})" if exc.filename else ""), file=sys.stderr)
        return EXIT_USAGE
    for path in written:
        print(path)
    return EXIT_OK
