"""`genericjob-controller local`: a whole cluster on a laptop, in one process.

localcluster (the in-memory API server) with its `process` pod runner (each container's command
runs as a local process; images are ignored, replicas share the host's network), the CRDs of
manifests/crds/, and the controller reconciling against it. It serves on port 6443, or on a free
port when 6443 is taken and no `--port` was given, always over HTTPS (a self-signed certificate)
and only to requests with a token: pods run as this user, so whoever may create one may run
anything as them. A kubeconfig carrying the certificate and the instance's random admin token is
written so kubectl can look at the cluster while it runs, readable by this user only (0600 in the
0700 `.cache/`): one per instance (`.cache/kubeconfig-PORT`, removed at exit), so a second `local`
never breaks the first one's kubectl session. A `--host` that is not a loopback address prints a
warning naming what it exposes.

With `--apply FILE...` the objects in the files are created, each job's phase and replica states
are printed as they change, and the command exits when every job has finished. An object the server refuses
(or a document that is no object) is reported and the others are still created and followed to their end, as
`kubectl apply` applies the rest of its files and exits 1 (submit.py):

    0    every job applied succeeded (or none was applied), and nothing was refused
    1    a job failed or was deleted, or an object was refused, or a file could not be read (nothing applied),
         or a command the cluster needs (openssl) is missing (one `genericjob-controller local: error:` line
         naming it and how to install it)
    2    --timeout passed first, or a flag is wrong (one `genericjob-controller local: error:` line)
    130  interrupted (SIGINT or SIGTERM)
    141  its output was closed (`| head` has read enough), as a program that SIGPIPE ends

Without `--apply` it serves until SIGINT or SIGTERM, printing the progress of every job that appears
(applied with kubectl, say), then stops cleanly and exits 0. `--logs` prints the replicas' output in
both modes. Stopped by a signal, it says last that the cluster's state is discarded: everything lives in
memory only, and a user who expects to come back to the jobs should know they are gone.

The CLI (controller/cmd/cli.py) calls `add_arguments` for the subcommand's flags and `main` to run it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import functools
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from controller.devtools.local_metrics import LocalMetrics, metrics_address
from controller.devtools.local_metrics import exposure_warning as metrics_exposure_warning
from controller.devtools.local_pod_logs import keep_pod_logs
from controller.devtools.local_webhook import LocalWebhook
from controller.devtools.progress import JobProgress, is_job, plural
from controller.devtools.submit import Manifest, ManifestError, Submitter, create_all, describe, load_manifests
from controller.devtools.terminal import Terminal
from controller.jobs.execution.config import JobConfig
from controller.jobs.schema import crd
from controller.kinds import registry
from controller.runtime import logs
from controller.runtime.flags import BooleanFlag, add_log_level_deps, bind_error, port, positive_int
from controller.runtime.manager import USER_AGENT
from controller.runtime.metrics import RequestMetrics
from kubeclient.loading import load_settings
from kubeclient.rest import RestClient
from localcluster import LocalCluster, ProcessRunner, exposure_warning, private_directory
from localcluster.host import MissingCommand

EXIT_OK, EXIT_FAILED, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_USAGE = 2  # a bad flag, as argparse exits
EXIT_OUTPUT_CLOSED = 128 + signal.SIGPIPE
DEFAULT_PORT = 6443  # kube-apiserver's
KUBECONFIG_DIR = Path(".cache")
SYNC_TIMEOUT = 30.0  # the informers' first list, against a server in the same process
LOCAL_RESTART_BACKOFF = 1.0  # seconds: a short restart back-off, so a crash loop is visible but quick to watch
READY = "ready:"  # starts the line printed once the controller runs (scripts and tests wait for it)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--apply", nargs="+", metavar="FILE",
                        help="create the objects in these YAML files (multi-document; a directory: its YAML files; "
                             "- for stdin), print each job's progress, exit when all have finished "
                             "(0: all succeeded, 1: otherwise); an object the server refuses is reported and the "
                             "others still run (exit code 1, as kubectl apply's); without it, serve until Ctrl-C and "
                             "print the progress of every job that appears")
    parser.add_argument("--timeout", type=_positive_seconds, metavar="SECONDS",
                        help="with --apply: give up after this long (exit code 2) (default: wait for ever)")
    parser.add_argument("--logs", action=BooleanFlag, default=False,
                        help="also print each replica's output, prefixed with its name")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve the Kubernetes API on")
    parser.add_argument("--port", type=port, default=None,
                        help=f"port to serve the Kubernetes API on; 0 picks a free one (default: {DEFAULT_PORT}, or a "
                             f"free one when {DEFAULT_PORT} is taken; a --port given that is taken is an error)")
    parser.add_argument("--kubeconfig-out", type=Path, default=None, metavar="FILE",
                        help=f"where to write the kubeconfig for kubectl (default: {KUBECONFIG_DIR}/kubeconfig-PORT, "
                             "removed at exit)")
    parser.add_argument("--crds", type=_directory, default=None, metavar="DIR",
                        help="directory of the CRDs to install (default: the project's manifests/crds, or generated "
                             "from the models when the project's files are not there)")
    parser.add_argument("--webhook", action=BooleanFlag, default=True, negatable=True,
                        help="serve the controller's validating admission webhook and register it in the cluster, so "
                             "`kubectl apply` of an invalid job is refused as on a cluster; --no-webhook: jobs are "
                             "admitted and the controller fails an invalid one with InvalidSpec")
    parser.add_argument("--webhook-port", type=port, default=None,
                        help="port of 127.0.0.1 to serve the admission webhook on; 0 picks a free one (default: a free "
                             "one; a --webhook-port given that is taken is an error)")
    parser.add_argument("--workers", type=positive_int, default=4, help="concurrent reconciles")
    parser.add_argument("--metrics-address", type=metrics_address, default=None, metavar="ADDR",
                        help="serve the controller's Prometheus /metrics (the page `run` serves) on HOST:PORT, or "
                             ":PORT on 127.0.0.1; plain HTTP, no authentication (default: off)")
    parser.add_argument("--log-level", default="warning", type=str.lower, choices=logs.LEVELS,
                        help="lowest level of the controller's and cluster's logs, on stderr")
    add_log_level_deps(parser)


def validate(args: argparse.Namespace) -> None:
    """Checks across flags; ValueError says what is wrong (the CLI reports it as a usage error)."""
    if args.timeout is not None and not args.apply:
        raise ValueError("--timeout needs --apply (it bounds the wait for the applied jobs)")
    if args.webhook_port is not None and not args.webhook:
        raise ValueError("--webhook-port needs the webhook (--no-webhook turns it off)")


def _directory(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is not a directory")
    return path


def _positive_seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def main(args: argparse.Namespace) -> int:
    logs.configure(args.log_level, "console", deps_level=args.log_level_deps)  # stderr: stdout has the progress
    terminal = Terminal(sys.stdout)
    try:
        with contextlib.redirect_stdout(terminal):  # every line printed goes through it
            code = asyncio.run(run(args, terminal))
    except (asyncio.CancelledError, KeyboardInterrupt):  # a second Ctrl-C cut the clean shutdown short
        code = EXIT_INTERRUPTED
    except MissingCommand as exc:  # openssl: the cluster's certificates and keys cannot be made
        print(f"genericjob-controller local: error: {exc}", file=sys.stderr, flush=True)
        code = EXIT_FAILED
    return EXIT_OUTPUT_CLOSED if terminal.closed else code


def say(text: str) -> None:
    print(text, flush=True)


class UsageError(Exception):
    """A flag the program could only find wrong once running (a port in use, a host not of this machine)."""


def usage_error(message: str) -> int:
    print(f"genericjob-controller local: error: {message}", file=sys.stderr, flush=True)
    return EXIT_USAGE


async def run(args: argparse.Namespace, terminal: Terminal | None = None) -> int:
    try:  # a file that cannot be read is reported before anything starts
        manifests = load_manifests(args.apply) if args.apply else None
    except ManifestError as exc:
        say(f"error: {exc}")
        return EXIT_FAILED
    stop = asyncio.Event()
    signalled = asyncio.Event()  # stopped by Ctrl-C or SIGTERM (not by a closed pipe, not by the jobs' end)
    main_task = asyncio.current_task()
    assert main_task is not None  # (this runs in a coroutine, so in a task)

    def interrupted() -> None:
        if stop.is_set():  # the second signal: stop waiting for a clean shutdown (pods are still killed)
            main_task.cancel()
        signalled.set()
        stop.set()

    signals = _on_signals(interrupted)
    if terminal is not None:
        terminal.on_closed = stop.set  # nobody reads the lines any more: stop as on Ctrl-C, quietly
    unwatch = terminal.watch(asyncio.get_running_loop()) if terminal is not None else None
    try:
        try:
            cluster = await _serve(args)
        except UsageError as exc:
            return usage_error(str(exc))
        try:
            return await _with_cluster(cluster, args, manifests, stop)
        except UsageError as exc:
            return usage_error(str(exc))
        finally:
            if signalled.is_set():  # whoever stops it may expect to come back to the jobs: they will not be there
                say(discarded(cluster))
            await cluster.stop()  # kills every pod process still running
    finally:
        if unwatch is not None:
            unwatch()
        for sig in signals:
            asyncio.get_running_loop().remove_signal_handler(sig)


def discarded(cluster: LocalCluster) -> str:
    """The line that says what stopping throws away: localcluster keeps everything in memory only."""
    jobs = sum(len(cluster.store.objects((kind.api.resource.group, kind.api.resource.plural)))
               for kind in registry.KINDS.values())
    pods = len(cluster.store.objects(("", "pods")))
    return (f"the local cluster's state is discarded: {plural(jobs, 'job')}, {plural(pods, 'pod')} and every other "
            "object (it is kept in memory only; the next `local` starts empty)")


async def _serve(args: argparse.Namespace) -> LocalCluster:
    """The cluster, listening: on --port, else on 6443 or (taken) a free port."""
    cluster = LocalCluster(args.host, DEFAULT_PORT if args.port is None else args.port, runner="process")
    try:
        try:
            await cluster.start()
        except OSError as exc:
            if args.port is not None or exc.errno != errno.EADDRINUSE:
                raise
            say(f"port {DEFAULT_PORT} is in use (another cluster?): serving on a free port instead "
                "(--port chooses one)")
            cluster.port = 0
            await cluster.start()
    except OSError as exc:
        await cluster.stop()
        raise UsageError(bind_error(args.host, cluster.port, exc)) from None
    return cluster


def _on_signals(handler: Callable[[], object]) -> list[int]:
    installed: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(sig, handler)
            installed.append(sig)
    return installed


async def _with_cluster(cluster: LocalCluster, args: argparse.Namespace, manifests: list[Manifest] | None,
                        stop: asyncio.Event) -> int:
    say(f"localcluster listening on {cluster.url} (pods run as local processes: images are ignored)")
    runner = cluster.runner
    assert isinstance(runner, ProcessRunner)  # run() makes the cluster with the process runner
    say(f"pod network: {runner.network.summary()}")
    say(f"installed CRDs: {', '.join(_install_crds(cluster, args.crds))}")
    say(keep_pod_logs(runner, KUBECONFIG_DIR, cluster.port))  # a job's clean-up deletes pods with their logs
    path = args.kubeconfig_out or KUBECONFIG_DIR / f"kubeconfig-{cluster.port}"
    try:
        if args.kubeconfig_out is None:
            private_directory(KUBECONFIG_DIR)  # ours: 0700, whatever made it before
        kubeconfig = cluster.write_kubeconfig(path).resolve()
    except OSError as exc:
        raise UsageError(f"cannot write the kubeconfig to {path}: {exc.strerror or exc} "
                         "(--kubeconfig-out chooses where)") from None
    warning = exposure_warning(args.host, cluster.port, str(kubeconfig))
    if warning:
        say(warning)
    try:
        say(f"kubeconfig for kubectl: export KUBECONFIG={kubeconfig}")
        return await _run_controller(kubeconfig, cluster, args, manifests, stop)
    finally:
        if args.kubeconfig_out is None:  # this instance's own: it would point at a server that is gone
            kubeconfig.unlink(missing_ok=True)


async def _run_controller(kubeconfig: Path, cluster: LocalCluster, args: argparse.Namespace,
                          manifests: list[Manifest] | None, stop: asyncio.Event) -> int:
    # The client reads the file just written: if it works for us, it works for kubectl.
    settings = await load_settings(str(kubeconfig))
    metrics = LocalMetrics()
    # The controller's requests are counted (rest_client_requests_total) as under `run`; the progress lines' and
    # the submitter's go through a client of their own, so the page shows the controller's alone.
    # USER_AGENT: the field manager of every write, as under `run`.
    async with RestClient(settings, user_agent=USER_AGENT) as api_client, \
            RestClient(settings, user_agent=USER_AGENT,
                       observer=RequestMetrics(metrics.registry)) as controller_client:
        controller = registry.make_controller(controller_client, JobConfig(
            workers=args.workers, shutdown_timeout=5.0, restart_backoff=LOCAL_RESTART_BACKOFF), metrics.registry)
        await controller.start(sync_timeout=SYNC_TIMEOUT)
        webhook = LocalWebhook(api_client, metrics.registry, args.webhook_port or 0) if args.webhook else None
        try:
            if webhook is not None:  # before the ready line: whatever is applied from then on is judged
                say(f"admission webhook: https://{await _start_webhook(webhook)} (ValidatingWebhookConfiguration "
                    "genericjob-controller, failurePolicy Fail; --no-webhook turns it off)")
            if args.metrics_address is not None:
                await _serve_metrics(metrics, args.metrics_address, controller.problems)
            if manifests is not None:
                return await _apply_and_follow(api_client, manifests, args, stop)
            return await _serve_and_follow(api_client, cluster, args, stop)
        finally:
            await metrics.stop()
            await controller.stop()
            if webhook is not None:
                await webhook.stop()


async def _start_webhook(webhook: LocalWebhook) -> str:
    try:
        return await webhook.start()
    except OSError as exc:  # only an explicit --webhook-port can be taken (0 picks a free one)
        raise UsageError(bind_error(webhook.host, webhook.port, exc, "--webhook-port")) from None


async def _serve_metrics(metrics: LocalMetrics, address: str, problems) -> None:
    try:
        url = await metrics.start(address, problems)
    except OSError as exc:
        raise UsageError(f"cannot serve metrics on {address}: {os.strerror(exc.errno) if exc.errno else exc} "
                         "(--metrics-address chooses where; port 0 picks a free one)") from None
    warning = metrics_exposure_warning(address)
    if warning:
        say(warning)
    say(f"controller metrics: {url}")


async def _serve_and_follow(api_client: RestClient, cluster: LocalCluster, args: argparse.Namespace,
                            stop: asyncio.Event) -> int:
    """Until stopped: the progress of every job that appears (kubectl apply), and its replicas' output if asked."""
    progress = JobProgress(api_client, follow_logs=args.logs, follow_all=True)
    await progress.start(SYNC_TIMEOUT)
    try:
        say(f"{READY} the controller is running against {cluster.url}{_webhook_words(args)} (Ctrl-C to stop); "
            "following every job")
        await stop.wait()
        say("stopping")
        return EXIT_OK
    finally:
        await progress.stop()


def _webhook_words(args: argparse.Namespace) -> str:
    return ", its admission webhook on" if args.webhook else ", its admission webhook off (--no-webhook)"


def _install_crds(cluster: LocalCluster, directory: Path | None) -> list[str]:
    """The job kinds' CRDs (from `directory`, else generated from the models), and a minimal CRD of each
    dependent API that is another's (registry.local_crds: the platform's TensorBoard, which the default
    install never claims), so the jobs get their dependents."""
    with tempfile.TemporaryDirectory() as generated:
        if directory is None:
            directory = crd.MANIFEST_DIR
        if not directory.is_dir():  # installed without the repository (a wheel): generated from the models
            for name, text in registry.crd_files().items():
                (Path(generated) / name).write_text(text)
            directory = Path(generated)
        installed = cluster.apply_crds(directory)
    missing = sorted(_needed_crds() - set(installed))
    if missing:
        raise UsageError(f"--crds {directory}: no CustomResourceDefinition {', '.join(missing)} in it")
    with tempfile.TemporaryDirectory() as extra:
        for name, definition in registry.local_crds().items():
            (Path(extra) / name).write_text(yaml.safe_dump(definition))
        return [*installed, *cluster.apply_crds(extra)]


@functools.cache
def _needed_crds() -> frozenset[str]:
    """The names of the CRDs the job kinds need (theirs and the PodGroup's), read once: with libyaml's parser when
    there is one, as localcluster reads CRDs (the pure-Python one takes seconds over these, which embed a pod
    template's schema)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return frozenset(doc["metadata"]["name"] for text in registry.crd_files().values()
                     for doc in yaml.load_all(text, loader) if doc)


async def _apply_and_follow(api_client: RestClient, manifests: list[Manifest], args: argparse.Namespace,
                            stop: asyncio.Event) -> int:
    progress = JobProgress(api_client, follow_logs=args.logs)
    # Watching starts before anything is created, so no phase change is missed.
    await progress.start(SYNC_TIMEOUT)
    try:
        say(f"{READY} the controller is running{_webhook_words(args)}; applying {plural(len(manifests), 'object')}")
        started = time.monotonic()

        def created(obj: dict) -> None:
            progress.emit(f"created {describe(obj)}")
            if is_job(obj):
                progress.track(obj)

        refusals = await create_all(Submitter(api_client), manifests, created, lambda text: say(f"error: {text}"))
        progress.submitted_all()
        if not progress.tracked:
            say("no job to follow")
            _say_refused(refusals)
            return EXIT_FAILED if refusals else EXIT_OK
        outcome = await _first_of(progress.wait(), stop.wait(), _deadline(args.timeout, started))
        took = time.monotonic() - started
        if outcome == "timeout":
            say(f"timed out after {args.timeout:g}s:")
        elif outcome == "stop":
            say(f"interrupted after {took:.1f}s:")
        else:
            say(f"finished in {took:.1f}s:")
        for line in progress.summary():
            say(line)
        _say_refused(refusals)
        if outcome == "timeout":
            return EXIT_TIMEOUT
        if outcome == "stop":
            return EXIT_INTERRUPTED
        return EXIT_OK if progress.succeeded() and not refusals else EXIT_FAILED
    finally:
        await progress.stop()


def _say_refused(refusals: list[str]) -> None:
    """Each refusal again, last: said as it came, it may be far above, among the progress lines."""
    if refusals:
        say(f"{plural(len(refusals), 'object')} not applied:")
        for text in refusals:
            say(f"  {text}")


async def _deadline(timeout: float | None, started: float) -> None:
    if timeout is None:
        await asyncio.Event().wait()  # no deadline
    else:
        await asyncio.sleep(max(0.0, started + timeout - time.monotonic()))


async def _first_of(done, stopped, deadline) -> str:
    """"done", "stop" or "timeout": whichever of the three awaitables finishes first."""
    tasks = {asyncio.ensure_future(done): "done", asyncio.ensure_future(stopped): "stop",
             asyncio.ensure_future(deadline): "timeout"}
    try:
        finished, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    # Finished together: the jobs' outcome wins over a deadline or a signal that came with it.
    return next(name for task, name in tasks.items() if task in finished)
