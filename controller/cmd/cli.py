"""Command line: `genericjob-controller run|local [flags]`.

Every flag of `run` can also be set by an environment variable, GENERICJOB_ plus the flag's name
in capitals with dashes as underscores (`--lease-duration` is GENERICJOB_LEASE_DURATION); a flag
on the command line wins over its variable. Booleans take true/false, 1/0, yes/no or on/off, on the
command line too (`--leader-elect=false`, as Go controllers' manifests pass them; controller/runtime/flags.py).
`local` is defined by `controller.devtools.local` (its own flags, its own main); if that module cannot be
imported, `run` still works and `local` says why it is unavailable.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from collections.abc import Mapping
from importlib import metadata
from types import ModuleType

from controller.jobs.decisions.backoff import DEFAULT_BASE as DEFAULT_RESTART_BACKOFF
from controller.jobs.decisions.stuck import STUCK_TERMINATING_AFTER
from controller.jobs.execution.config import JobConfig
from controller.jobs.schema.admission import make_webhook
from controller.kinds import registry as kinds
from controller.runtime.controller import INFORMER_STALE_AFTER
from controller.runtime.flags import BooleanFlag, HelpFormatter, add_log_level_deps, non_negative, port, positive_int
from controller.runtime.leader import LeaderElectionConfig
from controller.runtime.logs import FORMATS, LEVELS
from controller.runtime.manager import ManagerConfig, pod_namespace
from controller.runtime.server import parse_address, same_address_error, shares_listener
from controller.runtime.webhook_certs import CertKeeperConfig
from controller.runtime.webhook_server import DEFAULT_PORT as DEFAULT_WEBHOOK_PORT
from controller.runtime.webhook_server import WebhookConfig

ENV_PREFIX = "GENERICJOB_"
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # a namespace's name
PACKAGE = "genericjob-controller"
DEFAULT_NAMESPACE = "genericjob-system"  # the install's namespace (manifests/, the chart's default)


def _kinds(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    try:
        kinds.select(names)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return names


def _address(text: str) -> str:
    parse_address(text)
    return text


def _namespaces(text: str) -> tuple[str, ...]:
    """"a,b" -> ("a", "b"); "" -> () (every namespace)."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not all(DNS_LABEL.fullmatch(name) for name in names):
        raise ValueError(text)
    return names


class _NamespacesAction(argparse.Action):
    """--namespace a,b --namespace c: the lists add up; the first flag replaces the default (its variable)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        current = getattr(namespace, self.dest, None)
        seen = f"_{self.dest}_given"
        if not getattr(namespace, seen, False):
            current = ()
            setattr(namespace, seen, True)
        setattr(namespace, self.dest, tuple(dict.fromkeys((*(current or ()), *values))))


# argparse names a failed conversion after the type function.
_address.__name__ = "address (host:port, :port, or 0 for off)"
_namespaces.__name__ = "namespace list (comma-separated namespace names)"


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then in-cluster config, then ~/.kube/config)")
    add("--namespace", type=_namespaces, action=_NamespacesAction, default=(), metavar="NS[,NS...]",
        help="namespaces to watch, comma-separated; the flag may be repeated (default: all namespaces)")
    add("--kinds", type=_kinds, default=(), metavar="KIND[,KIND...]",
        help=f"the job kinds to serve (default: every one this build knows: {', '.join(kinds.KINDS)})")
    add("--workers", type=positive_int, default=4, help="concurrent reconciles (per kind)")
    add("--qps", type=non_negative, default=20.0,
        help="API writes per second, client side (0: no limit); Events get a budget of their own of the same size")
    add("--burst", type=positive_int, default=30, help="API writes allowed in a burst above --qps")
    add("--leader-elect", action=BooleanFlag, negatable=True, default=True,
        help="take a Lease before reconciling, so that only one replica works at a time")
    add("--lease-name", default="genericjob-controller", help="name of the leader election Lease")
    add("--lease-namespace", default=None,
        help="namespace of the Lease (default: the pod's namespace, else 'default')")
    add("--lease-duration", type=non_negative, default=15.0,
        help="seconds (whole) a standby waits after the lease last changed before taking it over")
    add("--renew-deadline", type=non_negative, default=10.0,
        help="seconds the leader keeps retrying a renewal before it gives up and exits")
    add("--retry-period", type=non_negative, default=2.0, help="seconds between leader election attempts")
    add("--metrics-address", type=_address, default=":8443", help="where /metrics listens (0: off)")
    add("--metrics-secure", action=BooleanFlag, negatable=True, default=True,
        help="serve /metrics over HTTPS to callers the API server authenticates (TokenReview) and authorises "
             "(SubjectAccessReview: get on /metrics, as the genericjob-metrics-reader ClusterRole grants); "
             "--no-metrics-secure: plain HTTP for anyone")
    add("--metrics-cert-dir", default=None,
        help="directory with tls.crt and tls.key for secure metrics (default: a self-signed certificate made at start)")
    add("--health-address", type=_address, default=":8081",
        help="where /healthz and /readyz listen, plain HTTP (0: off; with --no-metrics-secure, the metrics address: "
             "one listener for all)")
    add("--webhook-port", type=port, default=DEFAULT_WEBHOOK_PORT,
        help="where the validating admission webhook listens, HTTPS, on every replica (0: not served)")
    add("--webhook-host", default="", help="the address the webhook listens on (default: every address)")
    add("--webhook-cert-dir", default=None,
        help="directory with tls.crt and tls.key for the webhook, re-read when they change (cert-manager's mode); "
             "default: the controller keeps its own CA and certificate in --webhook-secret-name and sets the "
             "caBundle of --webhook-configuration-name")
    add("--webhook-secret-name", default=CertKeeperConfig.secret_name,
        help="the Secret (in --webhook-namespace) holding the webhook's own CA and certificate")
    add("--webhook-namespace", default=None,
        help="the namespace of that Secret and of the webhook Service (default: $POD_NAMESPACE, else the pod's "
             f"service account's namespace, else {DEFAULT_NAMESPACE})")
    add("--webhook-service-name", default=CertKeeperConfig.service_name,
        help="the webhook Service: the certificate names <service>.<namespace>.svc")
    add("--webhook-configuration-name", default=CertKeeperConfig.configuration_name,
        help="the ValidatingWebhookConfiguration whose caBundle the controller sets (with its own certificates)")
    add("--log-level", choices=LEVELS, default="info", help="lowest level logged")
    add_log_level_deps(parser)
    add("--log-format", choices=FORMATS, default=None,
        help="json or console (default: json in a cluster, console elsewhere)")
    add("--sync-timeout", type=non_negative, default=120.0,
        help="seconds to wait at start for the API server (start-up checks) and the caches to fill; exit 1 after "
             "that")
    add("--shutdown-timeout", type=non_negative, default=10.0,
        help="seconds in-flight reconciles get to finish on SIGTERM (keep it below lease duration - retry period)")
    add("--stuck-terminating-after", type=non_negative, default=STUCK_TERMINATING_AFTER,
        help="seconds past its grace period after which a terminating pod (on a lost node) is force-deleted")
    add("--restart-backoff", type=non_negative, default=DEFAULT_RESTART_BACKOFF,
        help="seconds a replica's first replacement waits after a quick failure, doubling with each one more, at "
             "most 300; a pod that ran 10 minutes resets it, as the kubelet's CrashLoopBackOff (0: no wait)")
    add("--informer-stale-after", type=non_negative, default=INFORMER_STALE_AFTER,
        help="seconds without a completed list, a watch opened or a watch event (bookmarks come every minute) "
             "after which an informer that has synced fails /healthz, so the kubelet restarts a controller "
             "that cannot see the cluster any more (0: off)")


def version() -> str:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def env_name(action: argparse.Action) -> str:
    return ENV_PREFIX + action.option_strings[0].lstrip("-").replace("-", "_").upper()


def apply_environment(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """Make each flag's variable, if set, its default (so the flag still wins); name it in --help."""
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        name = env_name(action)
        action.help = f"{action.help} [env {name}]" if action.help else f"[env {name}]"
        raw = environ.get(name)
        if raw is None:
            continue
        try:
            value = _from_text(action, raw)
        except (TypeError, ValueError):
            parser.error(f"environment variable {name}: invalid value {raw!r}")
        if action.choices is not None and value not in action.choices:
            parser.error(f"environment variable {name}: {raw!r} is not one of {', '.join(map(str, action.choices))}")
        parser.set_defaults(**{action.dest: value})


def _from_text(action: argparse.Action, raw: str):
    return action.type(raw) if callable(action.type) else raw


def load_local() -> tuple[ModuleType | None, str]:
    """`controller.devtools.local`, or None and why not: `run` must not depend on it."""
    try:
        from controller.devtools import local
    except Exception as exc:  # missing, or broken: either way only `local` is affected
        return None, f"{type(exc).__name__}: {exc}"
    return local, ""


class Parser(argparse.ArgumentParser):
    """The program's parser, knowing its commands' parsers: validate() reports an error as its command's."""

    commands: dict[str, argparse.ArgumentParser]


def build_parser(environ: Mapping[str, str] | None = None, with_local: bool = True) -> Parser:
    """The whole command line; without `with_local`, `local` is listed but its module (and with it
    localcluster, an API server) is not imported, as `run` needs none of it."""
    parser = Parser(
        prog="genericjob-controller",
        description=f"Kubernetes controller for the T9k job kinds of batch.tensorstack.dev: {', '.join(kinds.KINDS)}.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    # Not `required`: argparse would answer `genericjob-controller --bogus` with the missing command and not name
    # the bad flag; parse_args says which is wrong.
    commands = parser.add_subparsers(dest="command", metavar="{run,local}")
    run = commands.add_parser("run", help="run the controller against a cluster", formatter_class=HelpFormatter,
                              description="Run the controller against a cluster (in-cluster config or a kubeconfig).")
    add_run_arguments(run)
    apply_environment(run, os.environ if environ is None else environ)
    local = commands.add_parser("local", help="run a local cluster and the controller in this process",
                                formatter_class=HelpFormatter,
                                description="Start localcluster with the process pod runner and the controller, "
                                            "optionally submit jobs and follow them.")
    parser.commands = {"run": run, "local": local}
    if not with_local:
        return parser
    module, why = load_local()
    if module is not None:
        module.add_arguments(local)
    else:
        local.set_defaults(local_unavailable=why)  # its flags are unknown: parse_args lets them through
    return parser


def validate(parser: Parser, args: argparse.Namespace) -> None:
    """Checks across flags, reported as usage errors of the command (`genericjob-controller run: error: ...`)."""
    command = parser.commands[args.command]
    try:
        if args.command == "run":
            manager_config(args)
        elif not getattr(args, "local_unavailable", None):
            module, _why = load_local()
            assert module is not None  # it loaded for build_parser, else local_unavailable says why not
            module.validate(args)
    except ValueError as err:
        command.error(str(err))


def parse_args(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    words = sys.argv[1:] if argv is None else argv
    command = next((word for word in words if not word.startswith("-")), None)
    parser = build_parser(environ, with_local=command == "local")
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "local_unavailable", None):
        # One line naming the flag, as the command's other usage errors end: no usage dump of the whole program.
        prog = parser.commands[args.command].prog if args.command else parser.prog
        parser.exit(2, f"{prog}: error: unrecognized arguments: {' '.join(unknown)}\n")
    if args.command is None:
        parser.error("the following arguments are required: {run,local}")
    validate(parser, args)
    return args


def log_format(args: argparse.Namespace) -> str:
    return args.log_format or ("json" if os.environ.get("KUBERNETES_SERVICE_HOST") else "console")


def manager_config(args: argparse.Namespace) -> ManagerConfig:
    """The program's configuration from parsed `run` flags; ValueError for inconsistent timings."""
    if args.metrics_secure and shares_listener(args.metrics_address, args.health_address):
        raise ValueError(same_address_error(args.metrics_address))
    controller = JobConfig(namespaces=tuple(args.namespace or ()), workers=args.workers, qps=args.qps,
                                  burst=args.burst, shutdown_timeout=args.shutdown_timeout,
                                  stuck_terminating_after=args.stuck_terminating_after,
                                  restart_backoff=args.restart_backoff, informer_stale_after=args.informer_stale_after)
    election = None
    if args.leader_elect:
        election = LeaderElectionConfig(args.lease_name, args.lease_namespace or pod_namespace(),
                                        lease_duration=args.lease_duration, renew_deadline=args.renew_deadline,
                                        retry_period=args.retry_period)
    served = kinds.select(args.kinds)
    serve = functools.partial(kinds.make_controller, kinds=served)
    return ManagerConfig(controller=controller, make_controller=serve, leader_election=election,
                         metrics_address=args.metrics_address,
                         health_address=args.health_address, sync_timeout=args.sync_timeout,
                         metrics_secure=args.metrics_secure, metrics_cert_dir=args.metrics_cert_dir or None,
                         webhook=webhook_config(args), make_webhook=functools.partial(make_webhook, kinds=served))


def webhook_config(args: argparse.Namespace) -> WebhookConfig | None:
    """The webhook's port and certificates from `run`'s flags; None with --webhook-port 0."""
    if not args.webhook_port:
        return None
    if args.webhook_cert_dir:
        return WebhookConfig(port=args.webhook_port, host=args.webhook_host, cert_dir=args.webhook_cert_dir)
    keeper = CertKeeperConfig(namespace=args.webhook_namespace or webhook_namespace(),
                              secret_name=args.webhook_secret_name, service_name=args.webhook_service_name,
                              configuration_name=args.webhook_configuration_name)
    return WebhookConfig(port=args.webhook_port, host=args.webhook_host, keeper=keeper)


def webhook_namespace(environ: Mapping[str, str] | None = None) -> str:
    """$POD_NAMESPACE (the Deployment sets it from the downward API), else the service account's namespace,
    else genericjob-system."""
    environ = os.environ if environ is None else environ
    return environ.get("POD_NAMESPACE") or pod_namespace(DEFAULT_NAMESPACE)


__all__ = ["ENV_PREFIX", "apply_environment", "build_parser", "log_format", "manager_config", "parse_args"]
