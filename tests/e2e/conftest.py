"""End-to-end fixtures: localcluster with the project's CRDs and the scripted pod runner, the controller in-process.

Tests synchronise by polling the API (`jobs.wait*`, `until`) with timeouts, never by sleeping.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections import Counter

import pytest
from kubernetes_asyncio import client

from controller.jobs.children.podgroup import GROUP as PG_GROUP
from controller.jobs.children.podgroup import PLURAL as PG_PLURAL
from controller.jobs.children.podgroup import VERSION as PG_VERSION
from controller.jobs.execution.config import JobConfig
from controller.jobs.execution.controller import JobController
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import GROUP, PLURAL, VERSION
from controller.kinds.pytorch.kind import PYTORCH
from controller.kinds.tensorflow.kind import TENSORFLOW
from informers import BackoffPolicy, InformerOptions
from localcluster import LocalCluster
from localcluster.testing import SCRIPT_ANNOTATION, Kubectl, until
from tests.builders import JobBuilder
from tests.real.cluster import CRDS, RealCluster

FAST = InformerOptions(watch_timeout=(30.0, 60.0), watchdog_timeout=5.0, request_timeout=5.0,
                       backoff=BackoffPolicy(initial=0.02, cap=0.2, reset_after=5.0))
MERGE = "application/merge-patch+json"
LABEL_JOB_NAME = "genericjob.batch.tensorstack.dev/name"
QUICK = {"run_for": 0.05, "exit_code": 0}  # a pod that succeeds at once
FAIL = {"run_for": 0.05, "exit_code": 1}  # a pod that fails at once
FOREVER: dict = {}  # a pod that runs until deleted


def pytest_generate_tests(metafunc):
    """A test (or module) marked `servers("local", "real")` runs once on each: localcluster, and the envtest
    tier's real API server with its test kubelet (tests/real). What passes on one must pass on the other."""
    marker = metafunc.definition.get_closest_marker("servers")
    if marker and "server" in metafunc.fixturenames:
        metafunc.parametrize("server", marker.args, indirect=True)


async def apply_crds(cluster, directory) -> list[str]:
    """Install the CRDs of `directory` on either server (localcluster's apply_crds is synchronous, RealCluster's a
    coroutine, which waits until they are established); the names installed."""
    made = cluster.apply_crds(directory)
    return await made if asyncio.iscoroutine(made) else made


def pytest_collection_modifyitems(config, items):
    """`servers(..., once_on_real=True)`: of a test's parametrizations, only the first runs on the real server. For
    scenarios whose parameters vary only what the controller decides (rules, invalid specs, kinds): the server's
    part is the same in each, and each costs the envtest tier a second (its budget: docs/development.md)."""
    seen: set[tuple[str, str]] = set()
    kept, dropped = [], []
    for item in items:
        marker = item.get_closest_marker("servers")
        callspec = getattr(item, "callspec", None)
        if marker and marker.kwargs.get("once_on_real") and callspec and callspec.params.get("server") == "real":
            key = (item.nodeid.partition("::")[0], item.originalname)
            if key in seen:
                dropped.append(item)
                continue
            seen.add(key)
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture
def server(request) -> str:
    return getattr(request, "param", "local")


@pytest.fixture
async def cluster(request, server):
    """localcluster with the project's CRDs; its pods follow scripts unless the test's `runner` marker names another
    runner (`pytest.mark.runner("process")`: pods as real processes). On the `real` server: the session's envtest
    API server with the CRDs and the test kubelet following the same scripts, reset after the test."""
    if server == "real":
        session = request.getfixturevalue("envtest")
        async with RealCluster(session) as real:
            await real.apply_crds(CRDS)
            yield real
        return
    marker = request.node.get_closest_marker("runner")
    async with LocalCluster(runner=marker.args[0] if marker else "scripted", bookmark_interval=1.0) as running:
        running.apply_crds(CRDS)
        yield running


@pytest.fixture
def kubectl(cluster, tmp_path) -> Kubectl:
    """The real kubectl against the cluster, its kubeconfig and cache in tmp_path."""
    return Kubectl(cluster, tmp_path)


@pytest.fixture
def config(server) -> JobConfig:
    # The real API server sends a watch's bookmarks about once a minute (localcluster here: every second), so a
    # quiet watch is no dead one for the default watchdog's 70 s
    options = dataclasses.replace(FAST, watchdog_timeout=InformerOptions().watchdog_timeout) if server == "real" \
        else FAST
    return JobConfig(workers=4, qps=0, informer_options=options, shutdown_timeout=5.0, restart_backoff=0)


class Controllers:
    """Controllers run in-process against one cluster; a test may stop one and start another, as
    a crash and a restart (or a leader change) would."""

    def __init__(self, rest_client, config: JobConfig) -> None:
        self.rest_client = rest_client
        self.config = config
        self.running: list[JobController] = []
        self.reconciles: Counter[str] = Counter()  # by job key, over every controller started here

    async def start(self) -> JobController:
        made = JobController(GENERICJOB, self.rest_client, self.config)
        self._count_reconciles(made)
        await made.start(sync_timeout=10)
        self.running.append(made)
        return made

    async def stop(self, which: JobController | None = None) -> None:
        which = which or self.running[-1]
        self.running.remove(which)
        await which.stop()

    async def restart(self) -> JobController:
        await self.stop()
        return await self.start()

    async def close(self) -> None:
        while self.running:
            await self.stop()

    def _count_reconciles(self, made: JobController) -> None:
        reconcile = made.reconciler.reconcile

        async def counted(key: str):
            self.reconciles[key] += 1
            return await reconcile(key)

        made.reconciler.reconcile = counted

    def idle(self) -> bool:
        """Nothing queued, waiting for a delay (a requeue after a conflict) or being worked on by any
        running controller, and every Event recorded has been sent."""
        return all(len(c.queue) == 0 and c.queue.delayed == 0 and not c.queue._processing
                   and c.recorder._idle.is_set()
                   for c in self.running)


@pytest.fixture
async def controllers(rest_client, config):
    made = Controllers(rest_client, config)
    yield made
    await made.close()


@pytest.fixture
async def controller(controllers):
    return await controllers.start()


def template(script=None, command=None, **pod_spec) -> dict:
    annotations = {SCRIPT_ANNOTATION: json.dumps(script)} if script is not None else {}
    container = {"name": "main", "image": "busybox:1.36",
                 "command": command or ["sh", "-c", "echo $(type) $(rank)"]}
    return {"metadata": {"annotations": annotations}, "spec": {"containers": [container], **pod_spec}}


def genericjob(name: str, replicas: dict[str, int] | None = None, script=None, restart=None, **spec) -> dict:
    """A GenericJob whose pods follow `script` (localcluster's scripted runner), `{type: count}` replicas.

    `script` may be one script for every pod, or `{type: script}`; without one, pods follow the
    scripts set with `cluster.runner.set_script` (see `scripts`), else run until deleted.
    `restart` is a `restartPolicy` for every type, or `{type: restartPolicy}`."""
    job = JobBuilder(name)
    for replica_type, count in (replicas or {"worker": 1}).items():
        own = script.get(replica_type) if _by_type(script, replicas) else script
        policy = restart.get(replica_type) if _by_type(restart, replicas) else restart
        job = job.replica(replica_type, count, template=template(own), restart_policy=policy)
    return job.spec(**spec).obj()


def _by_type(value, replicas) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= set(replicas or {"worker": 1})


def scripts(cluster, job: str, per_pod: dict[str, dict | list], namespace: str = "default") -> None:
    """Scripts by pod-name suffix (fnmatch), e.g. `{"worker-0": QUICK, "worker-*": FOREVER}`: the first
    pattern that matches a pod wins, and these win over scripts set before."""
    for suffix, script in reversed(per_pod.items()):
        cluster.runner.set_script(f"{namespace}/{job}-{suffix}", script)


def status(job: dict) -> dict:
    return job.get("status") or {}


def phase(job: dict) -> str | None:
    return status(job).get("phase")


def condition(job: dict, kind: str) -> dict | None:
    return next((c for c in status(job).get("conditions") or () if c["type"] == kind), None)


def replicas(job: dict) -> dict[str, dict]:
    """The replica records of the status, by pod name."""
    return {r["name"]: r for t in status(job).get("tasks") or () for r in t.get("replicas") or ()}


def task(job: dict, replica_type: str) -> dict:
    """The status task of a type; {} before the controller has written one."""
    return next((t for t in status(job).get("tasks") or () if t["type"] == replica_type), {})


class Jobs:
    """Submit jobs and wait on their status through the API, as a user with kubectl would."""

    def __init__(self, api_client, plural: str = PLURAL, label_job_name: str = LABEL_JOB_NAME):
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.plural = plural  # the job kind: genericjobs, or tensorflowtrainingjobs
        self.label_job_name = label_job_name

    async def submit(self, job: dict, namespace: str = "default") -> dict:
        return await self.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, self.plural, job)

    async def get(self, name: str, namespace: str = "default") -> dict:
        return await self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, self.plural, name)

    async def patch(self, name: str, body: dict, namespace: str = "default") -> dict:
        return await self.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, self.plural, name, body,
                                                                _content_type=MERGE)

    async def delete(self, name: str, namespace: str = "default") -> None:
        await self.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, self.plural, name)

    async def wait(self, name: str, predicate, timeout: float = 30.0, namespace: str = "default") -> dict:
        """Poll the job until `predicate(job)` holds; on timeout, fail showing the last status. The timeout bounds a
        wait for an event, not its speed: generous, for a machine the suite's parallel workers load."""
        job: dict = {}
        try:
            async with asyncio.timeout(timeout):
                while True:
                    job = await self.get(name, namespace)
                    if predicate(job):
                        return job
                    await asyncio.sleep(0.02)
        except TimeoutError:
            pytest.fail(f"job {name} did not reach the expected state in {timeout}s; status: "
                        f"{json.dumps(job.get('status'), indent=1)}")

    async def wait_phase(self, name: str, wanted: str, timeout: float = 30.0, namespace: str = "default") -> dict:
        return await self.wait(name, lambda j: phase(j) == wanted, timeout, namespace)

    async def wait_replica(self, name: str, pod: str, predicate, timeout: float = 30.0,
                           namespace: str = "default") -> dict:
        """Poll the job until the record of replica `pod` (a pod name) satisfies `predicate`."""
        return await self.wait(name, lambda j: pod in replicas(j) and predicate(replicas(j)[pod]), timeout,
                               namespace)

    async def pods(self, name: str, namespace: str = "default") -> list:
        listed = await self.core.list_namespaced_pod(namespace, label_selector=f"{self.label_job_name}={name}")
        return sorted(listed.items, key=lambda p: p.metadata.name)

    async def pod(self, name: str, namespace: str = "default"):
        return await self.core.read_namespaced_pod(name, namespace)

    async def wait_pods(self, name: str, predicate, timeout: float = 30.0, namespace: str = "default") -> list:
        """Poll the job's pods until `predicate(pods)` holds; return them."""
        found: list = []

        async def check():
            nonlocal found
            found = await self.pods(name, namespace)
            return predicate(found)

        await until(check, timeout, f"pods of {name}")
        return found

    async def services(self, name: str, namespace: str = "default") -> list:
        listed = await self.core.list_namespaced_service(namespace, label_selector=f"{self.label_job_name}={name}")
        return sorted(listed.items, key=lambda s: s.metadata.name)

    async def podgroups(self, namespace: str = "default") -> list[dict]:
        listed = await self.custom.list_namespaced_custom_object(PG_GROUP, PG_VERSION, namespace, PG_PLURAL)
        return listed["items"]

    async def objects(self, group: str, version: str, plural: str, namespace: str = "default") -> dict[str, dict]:
        """Any custom resource's objects by name, read over the API (either server)."""
        listed = await self.custom.list_namespaced_custom_object(group, version, namespace, plural)
        return {item["metadata"]["name"]: item for item in listed["items"]}

    async def events(self, name: str, namespace: str = "default") -> list:
        listed = await self.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
        return listed.items

    async def wait_event(self, name: str, reason: str, timeout: float = 30.0, namespace: str = "default",
                         count: int = 1) -> list:
        """Poll until the job has at least `count` Events with `reason`; return those Events. (Events are
        sent in the background after the status write they describe, so they may trail it.)"""
        async def check():
            found = [e for e in await self.events(name, namespace) if e.reason == reason]
            return found if len(found) >= count else None

        return await until(check, timeout, f"{count} event(s) {reason} on {name}")


@pytest.fixture
def jobs(api_client) -> Jobs:
    return Jobs(api_client)


class PodHistory:
    """Every pod the cluster ever stored, seen from inside localcluster's store (not through the
    controller's eyes): the uids created under each name, in order, and the uids deleted."""

    def __init__(self) -> None:
        self.created: dict[str, list[str]] = {}
        self.deleted: set[str] = set()

    def on_event(self, ev) -> None:
        if ev.key != ("", "pods"):
            return
        meta = ev.obj["metadata"]
        if ev.type == "ADDED":
            self.created.setdefault(meta["name"], []).append(meta["uid"])
        elif ev.type == "DELETED":
            self.deleted.add(meta["uid"])

    def uids(self, name: str) -> list[str]:
        return self.created.get(name, [])

    def total(self) -> int:
        return sum(len(uids) for uids in self.created.values())


@pytest.fixture
def history(cluster) -> PodHistory:
    made = PodHistory()
    cluster.store.subscribe(made.on_event)
    return made


async def finish_pod(jobs: Jobs, name: str, exit_code: int, namespace: str = "default") -> None:
    """Play the kubelet: end a running pod with `exit_code` (for pods whose script runs forever)."""
    terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}
    body = {"status": {"phase": "Succeeded" if exit_code == 0 else "Failed",
                       "containerStatuses": [{"name": "main", "image": "busybox:1.36", "imageID": "", "ready": False,
                                              "restartCount": 0, "state": {"terminated": terminated}}]}}
    await jobs.core.patch_namespaced_pod_status(name, namespace, body, _content_type=MERGE)


# --- the training kinds: their jobs and a controller of each, for the tests that need them --------------

TF_PLURAL, TF_LABEL = "tensorflowtrainingjobs", "tensorflowtrainingjob.batch.tensorstack.dev/name"
PJ_PLURAL, PJ_LABEL = "pytorchtrainingjobs", "pytorchtrainingjob.batch.tensorstack.dev/name"


@pytest.fixture
def tfjobs(api_client) -> Jobs:
    return Jobs(api_client, plural=TF_PLURAL, label_job_name=TF_LABEL)


@pytest.fixture
def pjobs(api_client) -> Jobs:
    return Jobs(api_client, plural=PJ_PLURAL, label_job_name=PJ_LABEL)


async def _kind_controller(kind, rest_client, config):
    made = JobController(kind, rest_client, config)
    await made.start(sync_timeout=10)
    return made


@pytest.fixture
async def tf_controller(rest_client, config):
    made = await _kind_controller(TENSORFLOW, rest_client, config)
    yield made
    await made.stop()


@pytest.fixture
async def pj_controller(rest_client, config):
    made = await _kind_controller(PYTORCH, rest_client, config)
    yield made
    await made.stop()

