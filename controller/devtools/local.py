"""`genericjob-controller local`: a whole cluster on a laptop, in one process.

localcluster (the in-memory API server) with its `process` pod runner (each container's command
runs as a local process; images are ignored, replicas share the host's network), the CRDs of
manifests/crds/, and the controller reconciling against it. A kubeconfig is written so kubectl
can look at the cluster while it runs.

With `--apply FILE...` the objects in the files are created, each GenericJob's phase and replica
states are printed as they change, and the command exits when every job has finished:

    0    every GenericJob applied succeeded (or none was applied)
    1    a job failed or was deleted, or a file could not be applied
    2    --timeout passed first
    130  interrupted (SIGINT or SIGTERM)

Without `--apply` it serves until SIGINT or SIGTERM, then stops cleanly and exits 0.

The CLI (controller/cmd/cli.py) calls `add_arguments` for the subcommand's flags and `main` to run it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import tempfile
import time
from pathlib import Path

import yaml
from kubernetes_asyncio import client, config

from controller.devtools.progress import JobProgress, is_job, plural
from controller.devtools.submit import ManifestError, Submitter, describe, load_manifests
from controller.kinds import registry
from controller.kinds.genericjob import crd
from controller.kinds.tensorflow.tensorboard import tensorboard_crd
from controller.runtime import logs
from controller.runtime.client import resolve_proxy_once
from controller.runtime.controller import ControllerConfig
from informers import ApiStatusError
from localcluster import LocalCluster

EXIT_OK, EXIT_FAILED, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 2, 130
SYNC_TIMEOUT = 30.0  # the informers' first list, against a server in the same process
LOCAL_RESTART_BACKOFF = 1.0  # seconds: a short restart back-off, so a crash loop is visible but quick to watch
READY = "ready:"  # starts the line printed once the controller runs (scripts and tests wait for it)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--apply", nargs="+", metavar="FILE",
                        help="create the objects in these YAML files (multi-document; a directory: its YAML files; "
                             "- for stdin), print each GenericJob's progress, exit when all have finished "
                             "(0: all succeeded, 1: otherwise)")
    parser.add_argument("--timeout", type=_positive_seconds, metavar="SECONDS",
                        help="with --apply: give up after this long (exit code 2); default: wait for ever")
    parser.add_argument("--logs", action="store_true",
                        help="with --apply: also print each replica's output, prefixed with its name")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve the Kubernetes API on")
    parser.add_argument("--port", type=int, default=6443,
                        help="port to serve the Kubernetes API on; 0 picks a free one (default: %(default)s)")
    parser.add_argument("--kubeconfig-out", type=Path, default=Path(".cache/kubeconfig"), metavar="FILE",
                        help="where to write the kubeconfig for kubectl (default: %(default)s)")
    parser.add_argument("--crds", type=Path, default=crd.MANIFEST_DIR, metavar="DIR",
                        help="directory of the CRDs to install (default: the project's manifests/crds; "
                             "generated from the models when it is missing)")
    parser.add_argument("--workers", type=int, default=4, help="concurrent reconciles")
    parser.add_argument("--log-level", default="warning", type=str.lower, choices=logs.LEVELS,
                        help="lowest level of the controller's and cluster's logs, on stderr (default: %(default)s)")


def _positive_seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def main(args: argparse.Namespace) -> int:
    logs.configure(args.log_level, "console")  # on stderr: stdout is for the progress lines
    try:
        return asyncio.run(run(args))
    except (asyncio.CancelledError, KeyboardInterrupt):  # a second Ctrl-C cut the clean shutdown short
        return EXIT_INTERRUPTED


def say(text: str) -> None:
    print(text, flush=True)


async def run(args: argparse.Namespace) -> int:
    try:  # a file that cannot be read is reported before anything starts
        objects = load_manifests(args.apply) if args.apply else None
    except ManifestError as exc:
        say(f"error: {exc}")
        return EXIT_FAILED
    stop = asyncio.Event()
    main_task = asyncio.current_task()

    def interrupted() -> None:
        if stop.is_set():  # the second signal: stop waiting for a clean shutdown (pods are still killed)
            main_task.cancel()
        stop.set()

    signals = _on_signals(interrupted)
    try:
        cluster = LocalCluster(args.host, args.port, runner="process")
        try:
            await cluster.start()
        except OSError as exc:
            await cluster.stop()
            say(f"error: cannot serve on {args.host}:{args.port}: {exc.strerror or exc} (--port 0 picks a free port)")
            return EXIT_FAILED
        try:
            return await _with_cluster(cluster, args, objects, stop)
        finally:
            await cluster.stop()  # kills every pod process still running
    finally:
        for sig in signals:
            asyncio.get_running_loop().remove_signal_handler(sig)


def _on_signals(handler) -> list[int]:
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(sig, handler)
            installed.append(sig)
    return installed


async def _with_cluster(cluster: LocalCluster, args: argparse.Namespace, objects: list[dict] | None,
                        stop: asyncio.Event) -> int:
    say(f"localcluster listening on {cluster.url} (pods run as local processes: images are ignored, "
        f"no networking between replicas)")
    say(f"installed CRDs: {', '.join(_install_crds(cluster, args.crds))}")
    try:
        kubeconfig = cluster.write_kubeconfig(args.kubeconfig_out).resolve()
    except OSError as exc:
        say(f"error: cannot write the kubeconfig to {args.kubeconfig_out}: {exc.strerror or exc}")
        return EXIT_FAILED
    say(f"kubeconfig for kubectl: export KUBECONFIG={kubeconfig}")
    configuration = client.Configuration()
    # The client reads the file just written: if it works for us, it works for kubectl.
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with client.ApiClient(configuration) as api_client:
        resolve_proxy_once(api_client)
        controller = registry.make_controller(api_client, ControllerConfig(
            workers=args.workers, shutdown_timeout=5.0, restart_backoff=LOCAL_RESTART_BACKOFF), None)
        await controller.start(sync_timeout=SYNC_TIMEOUT)
        try:
            if objects is not None:
                return await _apply_and_follow(api_client, objects, args, stop)
            say(f"{READY} the controller is running against {cluster.url} (Ctrl-C to stop)")
            await stop.wait()
            say("stopping")
            return EXIT_OK
        finally:
            await controller.stop()


def _install_crds(cluster: LocalCluster, directory: Path) -> list[str]:
    """The job kinds' CRDs (from `directory`, else generated from the models), and a minimal TensorBoard
    API (the platform's, which the default install never claims) so TensorFlowTrainingJobs get theirs."""
    with tempfile.TemporaryDirectory() as generated:
        if not directory.is_dir():  # installed without the repository (a wheel): generated from the models
            for name, text in registry.crd_files().items():
                (Path(generated) / name).write_text(text)
            directory = Path(generated)
        installed = cluster.apply_crds(directory)
    with tempfile.TemporaryDirectory() as extra:
        (Path(extra) / "tensorboard.yaml").write_text(yaml.safe_dump(tensorboard_crd()))
        return [*installed, *cluster.apply_crds(extra)]


async def _apply_and_follow(api_client: client.ApiClient, objects: list[dict], args: argparse.Namespace,
                            stop: asyncio.Event) -> int:
    progress = JobProgress(api_client, follow_logs=args.logs)
    # Watching starts before anything is created, so no phase change is missed.
    await progress.start(SYNC_TIMEOUT)
    try:
        say(f"{READY} the controller is running; applying {plural(len(objects), 'object')}")
        started = time.monotonic()
        submitter = Submitter(api_client)
        for obj in objects:
            try:
                created = await submitter.create(obj)
            except ApiStatusError as exc:
                say(f"error: {describe(obj)}: {exc.message or exc}")
                return EXIT_FAILED
            progress.emit(f"created {describe(created)}")
            if is_job(created):
                progress.track(created)
        progress.submitted_all()
        if not progress.tracked:
            say("no job to follow")
            return EXIT_OK
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
        if outcome == "timeout":
            return EXIT_TIMEOUT
        if outcome == "stop":
            return EXIT_INTERRUPTED
        return EXIT_OK if progress.succeeded() else EXIT_FAILED
    finally:
        await progress.stop()


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
