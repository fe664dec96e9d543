"""`python -m localcluster serve ...`: run the in-memory API server until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal

import orjson

from .audit import DEFAULT_SIZE as AUDIT_SIZE
from .cluster import LocalCluster


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="localcluster", description="An in-memory Kubernetes API server.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the Kubernetes API on a local port")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=6443, help="0 picks a free port")
    serve.add_argument("--kubeconfig-out", help="write a kubeconfig for kubectl and clients here")
    serve.add_argument("--runner", choices=["none", "scripted", "process"], default="none",
                       help="none: pods stay Pending; scripted: pods follow scripts (see localcluster/runner.py); "
                            "process: containers run as local processes (see localcluster/process_runner.py)")
    serve.add_argument("--default-script", help="JSON script for pods without one (scripted runner)")
    serve.add_argument("--crds", help="directory of CustomResourceDefinition YAML files to install at start")
    serve.add_argument("--history-size", type=int, default=10_000, help="watch events kept for re-watching")
    serve.add_argument("--audit-size", type=int, default=AUDIT_SIZE, help="writes kept for GET /_localcluster/audit")
    serve.add_argument("--bookmark-interval", type=float, default=60.0, help="seconds between watch bookmarks")
    serve.add_argument("--disable-admission-plugins", default="",
                       help="comma-separated admission plugins to switch off (OwnerReferencesPermissionEnforcement)")
    serve.add_argument("--tls", action="store_true",
                       help="serve HTTPS with a self-signed certificate (in the kubeconfig): kubectl sends tokens "
                            "only over TLS")
    serve.add_argument("--require-token", action="store_true",
                       help="answer 401 to plain-HTTP requests without a token too (by default they are served as "
                            "the old insecure port served them, with no authorization)")
    serve.add_argument("--service-account-token", action="append", default=[], metavar="NAMESPACE/NAME",
                       help="issue a token for this ServiceAccount (created if missing) and print it; repeatable")
    serve.add_argument("--log-level", default="WARNING")
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    default_script = orjson.loads(args.default_script) if args.default_script else None
    disabled = tuple(p for p in args.disable_admission_plugins.split(",") if p)
    cluster = LocalCluster(args.host, args.port, args.runner, args.history_size, args.bookmark_interval,
                           default_script=default_script, disable_admission_plugins=disabled, tls=args.tls,
                           require_token=args.require_token)
    cluster.audit.resize(args.audit_size)
    await cluster.start()
    for account in args.service_account_token:
        namespace, _, name = account.partition("/")
        print(f"token for serviceaccount {namespace}/{name}: {cluster.service_account_token(namespace, name)}",
              flush=True)
    if args.crds:
        for name in cluster.apply_crds(args.crds):
            print(f"installed CRD {name}", flush=True)
    if args.kubeconfig_out:
        cluster.write_kubeconfig(args.kubeconfig_out)
    where = f" (kubeconfig: {args.kubeconfig_out})" if args.kubeconfig_out else ""
    print(f"localcluster listening on {cluster.url}{where}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await cluster.stop()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # The level asked for is localcluster's own; other libraries (the CEL library's debug output is a flood)
    # stay at warning, as the controller's commands keep them unless told otherwise.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("localcluster").setLevel(args.log_level.upper())
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
