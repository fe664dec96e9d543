"""`python -m localcluster serve ...`: run the in-memory API server until interrupted.

It always serves HTTPS (a self-signed certificate) and lets in only requests with a token: its
random admin token is in the kubeconfig it writes (0600; `.cache/localcluster-PORT.kubeconfig`,
removed at exit, unless `--kubeconfig-out` names a file to keep), the only way to obtain it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

import orjson

from .auth.host_commands import MissingCommand
from .auth.kubeconfig_file import private_directory
from .cluster import LocalCluster
from .endpoints.exposure import exposure_warning
from .kubelet.process_runner import ProcessRunner
from .storage.audit import DEFAULT_SIZE as AUDIT_SIZE

KUBECONFIG_DIR = Path(".cache")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="localcluster", description="An in-memory Kubernetes API server.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the Kubernetes API on a local port")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=6443, help="0 picks a free port")
    serve.add_argument("--kubeconfig-out",
                       help="write the kubeconfig (server, CA, admin token; mode 0600) here and keep it (default: "
                            f"{KUBECONFIG_DIR}/localcluster-PORT.kubeconfig, removed at exit)")
    serve.add_argument("--runner", choices=["none", "scripted", "process"], default="none",
                       help="none: pods stay Pending; "
                            "scripted: pods follow scripts (see localcluster/kubelet/runner.py); "
                            "process: containers run as local processes (see localcluster/kubelet/process_runner.py)")
    serve.add_argument("--default-script", help="JSON script for pods without one (scripted runner)")
    serve.add_argument("--crds", help="directory of CustomResourceDefinition YAML files to install at start")
    serve.add_argument("--history-size", type=int, default=10_000, help="watch events kept for re-watching")
    serve.add_argument("--audit-size", type=int, default=AUDIT_SIZE, help="writes kept for GET /_localcluster/audit")
    serve.add_argument("--bookmark-interval", type=float, default=60.0, help="seconds between watch bookmarks")
    serve.add_argument("--disable-admission-plugins", default="",
                       help="comma-separated admission plugins to switch off (OwnerReferencesPermissionEnforcement)")
    serve.add_argument("--service-account-token", action="append", default=[], metavar="NAMESPACE/NAME",
                       help="issue a token for this ServiceAccount (created if missing) and print it; repeatable")
    serve.add_argument("--endpoint-controllers", choices=["auto", "on", "off"], default="auto",
                       help="keep Endpoints and EndpointSlices of Services with a selector (auto: with the process "
                            "runner only)")
    serve.add_argument("--log-level", default="WARNING")
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    default_script = orjson.loads(args.default_script) if args.default_script else None
    disabled = tuple(p for p in args.disable_admission_plugins.split(",") if p)
    cluster = LocalCluster(args.host, args.port, args.runner, args.history_size, args.bookmark_interval,
                           default_script=default_script, disable_admission_plugins=disabled,
                           endpoint_controllers={"auto": None, "on": True, "off": False}[args.endpoint_controllers])
    cluster.audit.resize(args.audit_size)
    await cluster.start()
    for account in args.service_account_token:
        namespace, _, name = account.partition("/")
        print(f"token for serviceaccount {namespace}/{name}: {cluster.service_account_token(namespace, name)}",
              flush=True)
    if args.crds:
        for name in cluster.apply_crds(args.crds):
            print(f"installed CRD {name}", flush=True)
    try:
        if args.kubeconfig_out:
            kubeconfig = cluster.write_kubeconfig(args.kubeconfig_out).resolve()
        else:
            kubeconfig = cluster.write_kubeconfig(private_directory(KUBECONFIG_DIR) /
                                                  f"localcluster-{cluster.port}.kubeconfig").resolve()
    except OSError as exc:  # a directory others may write (auth/kubeconfig_file.py), or no room
        await cluster.stop()
        raise SystemExit(f"localcluster: cannot write the kubeconfig: {exc.strerror or exc}") from None
    warning = exposure_warning(args.host, cluster.port, str(kubeconfig))
    if warning:
        print(warning, file=sys.stderr, flush=True)
    if isinstance(cluster.runner, ProcessRunner):  # `--runner process`
        print(f"pod network: {cluster.runner.network.summary()}", flush=True)
    print(f"localcluster listening on {cluster.url} (kubeconfig: {kubeconfig})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await cluster.stop()
        if not args.kubeconfig_out:  # this instance's own: its token dies with it
            kubeconfig.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # The level asked for is localcluster's own; other libraries (the CEL library's debug output is a flood)
    # stay at warning, as the controller's commands keep them unless told otherwise.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("localcluster").setLevel(args.log_level.upper())
    try:
        asyncio.run(serve(args))
    except MissingCommand as exc:  # openssl: one line that says how to install it, not a traceback
        raise SystemExit(f"localcluster: {exc}") from None


if __name__ == "__main__":
    main()
