"""Start-up failures of `genericjob-controller run` (a subprocess, against a localcluster or a socket): each exits 1
at once, or after visible and bounded retries, with one message that says what to do.

The controller is the program under test, so it runs as users run it; the API server it reaches over HTTPS is a
localcluster served from the test's own process (starting another Python process for it would only cost time).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client, config

from controller.jobs.execution.controller import JobController
from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.controller import ControllerConfig
from controller.runtime.preflight import GRACE
from kubeclient.from_configuration import settings_from_configuration
from kubeclient.rest import RestClient
from localcluster import LocalCluster
from tests.e2e.conftest import FAST

from .inprocess import cluster_with_crds
from .manifests_support import load_file
from .subprocesses import CLI, ROOT, ControllerProcess, until

FLAGS = ["--metrics-address", "127.0.0.1:0", "--no-metrics-secure", "--health-address", "127.0.0.1:0",
         "--log-format", "json", "--webhook-port", "0",
         "--lease-namespace", "default"]
CRDS = ROOT / "manifests" / "crds"


@dataclass
class Exited:
    code: int
    lines: list[str]
    logs: list[dict]

    def first(self, event: str) -> dict:
        return next(r for r in self.logs if r.get("event") == event)

    def level(self, level: str) -> list[dict]:
        return [r for r in self.logs if r.get("level") == level]

    def after_starting(self, record: dict) -> float:
        """Seconds from the `starting` line (the configuration loaded) to `record`."""
        return _time(record) - _time(self.first("starting"))


def _time(record: dict) -> float:
    return datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()


async def run_to_exit(kubeconfig: Path, *flags: str, timeout: float = 60.0) -> Exited:
    process = await asyncio.create_subprocess_exec(str(CLI), "run", "--kubeconfig", str(kubeconfig), *FLAGS, *flags,
                                                   stderr=asyncio.subprocess.PIPE, cwd=ROOT)
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        pytest.fail(f"the controller was still running after {timeout} s")
    lines = stderr.decode(errors="replace").splitlines()
    logs = [json.loads(line) for line in lines if line.startswith("{")]
    return Exited(process.returncode, lines, logs)


@dataclass
class Served:
    """A localcluster serving in this process, and the admin kubeconfig it wrote (what ControllerProcess reads)."""
    cluster: LocalCluster
    kubeconfig: Path

    @property
    def url(self) -> str:
        return self.cluster.url

    def create(self, *objects: dict, namespace: str = "default") -> None:
        """Objects an administrator would `kubectl apply`, made in the server's store (the controller's start-up is
        what these tests watch, not kubectl)."""
        for obj in objects:
            rt = self.cluster.registry.by_kind(obj["apiVersion"], obj["kind"])
            assert rt is not None, obj["kind"]
            where = obj["metadata"].get("namespace", namespace) if rt.namespaced else None
            self.cluster.api.create(rt, where, copy.deepcopy(obj))


@contextlib.asynccontextmanager
async def api_server(directory: Path, crds: Path = CRDS) -> AsyncIterator[Served]:
    """A localcluster with the CRDs of `crds` (the project's by default), its kubeconfig in `directory`."""
    async with LocalCluster(runner="scripted", bookmark_interval=1.0) as cluster:
        cluster.apply_crds(crds)
        yield Served(cluster, cluster.write_kubeconfig(directory / "kubeconfig"))


def token(cluster: Served, user: str) -> str:
    return cluster.cluster.add_token(f"token-of-{user}", user)


def kubeconfig_with(cluster: Served | None, path: Path, token: str | None = None, server: str | None = None
                    ) -> Path:
    """The cluster's kubeconfig with another user token or server address."""
    config = yaml.safe_load(cluster.kubeconfig.read_text()) if cluster else {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {}}], "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    if token is not None:
        config["users"][0]["user"]["token"] = token
    if server is not None:
        config["clusters"][0]["cluster"]["server"] = server
    path.write_text(yaml.safe_dump(config))
    return path


def binding(namespace: str, name: str, kind: str, role: str, user: str = "operator") -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}


def only_error(exited: Exited) -> dict:
    """The run's single error line: the message a user reads (no second, misleading one after it)."""
    errors = exited.level("error")
    assert len(errors) == 1, exited.lines
    return errors[0]


@pytest.mark.slow  # the programs
async def test_a_wrong_kubeconfig_path_is_one_error_line(tmp_path):
    missing = tmp_path / "nowhere" / "kubeconfig"
    exited = await run_to_exit(missing)
    assert exited.code == 1
    assert len(exited.lines) == 1, exited.lines  # not kubernetes_asyncio's "Config not found" and then another
    assert f"kubeconfig {missing} (from --kubeconfig) does not exist" in only_error(exited)["error"]


@pytest.mark.slow  # the programs
async def test_rejected_credentials_exit_1_at_once(tmp_path):
    async with api_server(tmp_path) as cluster:
        exited = await run_to_exit(kubeconfig_with(cluster, tmp_path / "bad", token="not-a-token"))
    assert exited.code == 1
    error = only_error(exited)
    assert f"the API server {cluster.url} rejected the controller's credentials (401 Unauthorized)" in error["event"]
    assert "check the kubeconfig" in error["event"] and "ServiceAccount token" in error["event"]
    # Not retried until --sync-timeout (120 s, past run_to_exit's bound): no retry's warning before the error.
    assert not exited.level("warning"), exited.lines
    assert exited.first("stopped")["reason"] == "start-up check failed"


@pytest.mark.slow  # the programs
async def test_missing_rbac_exits_1_quickly_with_the_servers_message(tmp_path):
    async with api_server(tmp_path) as cluster:
        nobody = kubeconfig_with(cluster, tmp_path / "nobody", token=token(cluster, "nobody"))
        exited = await run_to_exit(nobody)
    assert exited.code == 1
    error = only_error(exited)["event"]
    assert f"the API server {cluster.url} refused to list genericjobs.batch.tensorstack.dev in all namespaces " \
           f"(403 Forbidden)" in error
    # The server's message names the user, verb and resource; then where the RBAC is.
    assert 'User "nobody" cannot list resource "genericjobs" in API group "batch.tensorstack.dev"' in error
    assert "manifests/rbac.yaml" in error and "overlays/namespaced/" in error
    assert not exited.level("warning"), exited.lines  # at once, as above


@pytest.mark.slow  # the programs
async def test_namespaced_rbac_starts_with_namespace_and_names_the_missing_lease_role(tmp_path):
    """The checks list only what the informers will watch: with --namespace, the namespace; under leader
    election they also read the Lease, whose Role is a separate manifest."""
    async with api_server(tmp_path) as cluster:
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        cluster.create(*load_file(ROOT / "manifests" / "rbac.yaml"))  # the ClusterRole (and a binding)
        cluster.create(binding("team", "controller", "ClusterRole", "genericjob-controller"))
        user = kubeconfig_with(cluster, tmp_path / "operator", token=token(cluster, "operator"))

        everywhere = await run_to_exit(user, "--no-leader-elect")
        assert everywhere.code == 1
        assert 'cannot list resource "genericjobs" in API group "batch.tensorstack.dev" at the cluster scope' \
               in only_error(everywhere)["event"]

        no_lease = await run_to_exit(user, "--namespace", "team")
        assert no_lease.code == 1
        error = only_error(no_lease)["event"]
        assert "refused to get the Lease default/genericjob-controller (403 Forbidden)" in error
        assert "manifests/leader-election-rbac.yaml" in error

        lease_role, _ = load_file(ROOT / "manifests" / "leader-election-rbac.yaml")  # the Role, not its binding
        cluster.create(lease_role, binding("default", "lease", "Role", "genericjob-controller-leader-election"))
        async with ControllerProcess(cluster, "--kubeconfig", str(user), "--namespace", "team") as controller:
            passed = await controller.wait_log(lambda r: r.get("event") == "start-up checks passed")
            assert passed["server"] == cluster.url
            await until(controller.leading, what="leading")


@pytest.mark.slow  # the programs
async def test_a_missing_crd_is_named_waited_for_briefly_then_exit_1(tmp_path):
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "podgroup.yaml").write_text((CRDS / "podgroup.yaml").read_text())  # no GenericJob CRD
    async with api_server(tmp_path, crds=crds) as cluster:
        exited = await run_to_exit(cluster.kubeconfig, "--sync-timeout", "4")
    assert exited.code == 1
    missing = f"the CRD genericjobs.batch.tensorstack.dev is not installed on {cluster.url}"
    waits = [r for r in exited.level("warning") if missing in r["event"]]
    assert len(waits) >= 2, exited.lines  # each wait logged
    assert all("install it with kubectl apply -f manifests/crds/" in r["event"] for r in waits)
    error = only_error(exited)
    assert missing in error["event"] and "kubectl apply -f manifests/crds/" in error["event"]
    # Waited for it (each wait logged, above), as long as --sync-timeout: not the default 120 s, past run_to_exit's
    # bound of 60 s. Not how much longer: start-up's own time depends on the machine's load. (The wait gives up with
    # less than GRACE left, no time for another attempt: 3.9957 s was measured once.)
    assert exited.after_starting(error) >= 4 - GRACE


@pytest.mark.slow  # the programs
async def test_a_missing_kinds_crd_names_both_ways_out(tmp_path):
    """The TensorFlowTrainingJob CRD missing (an install of the other kinds' and the PodGroup's only): the error
    names the CRD, how to install it, and how to run without it (`--kinds` the other kinds), which then starts."""
    crds = tmp_path / "crds"
    crds.mkdir()
    for served in ("genericjob.yaml", "pytorchtrainingjob.yaml", "mpijob.yaml", "podgroup.yaml"):
        (crds / served).write_text((CRDS / served).read_text())
    async with api_server(tmp_path, crds=crds) as cluster:
        exited = await run_to_exit(cluster.kubeconfig, "--sync-timeout", "3")
        assert exited.code == 1
        error = only_error(exited)["event"]
        assert f"the CRD tensorflowtrainingjobs.batch.tensorstack.dev is not installed on {cluster.url}" in error
        assert "install it with kubectl apply -f manifests/crds/" in error
        assert "or serve only the other kinds: --kinds GenericJob,MPIJob,PyTorchTrainingJob;" in error, error
        async with ControllerProcess(cluster, "--kinds", "GenericJob,PyTorchTrainingJob,MPIJob") as controller:
            await controller.wait_log(lambda r: r.get("event") == "start-up checks passed")


@pytest.mark.slow  # the programs
async def test_a_crd_applied_while_waiting_for_it_is_picked_up(tmp_path):
    crds = tmp_path / "crds"
    crds.mkdir()
    for served in ("genericjob.yaml", "tensorflowtrainingjob.yaml", "pytorchtrainingjob.yaml",
                   "mpijob.yaml"):  # no PodGroup CRD
        (crds / served).write_text((CRDS / served).read_text())
    async with api_server(tmp_path, crds=crds) as cluster:
        controller = ControllerProcess(cluster)
        try:
            await controller.start(ready=False)
            await controller.wait_log(lambda r: r.get("level") == "warning" and
                                      "the CRD podgroups.scheduler.tensorstack.dev is not installed" in r["event"])
            later = tmp_path / "later"
            later.mkdir()
            (later / "podgroup.yaml").write_text((CRDS / "podgroup.yaml").read_text())
            cluster.cluster.apply_crds(later)
            await until(lambda: controller.get_status("/readyz", 200), timeout=30, what="/readyz 200")
            assert not [r for r in controller.logs if r.get("level") == "error"]
        finally:
            await controller.close()


@pytest.mark.slow  # the programs
async def test_a_server_that_never_answers_is_retried_visibly_then_named(tmp_path):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        exited = await run_to_exit(kubeconfig_with(None, tmp_path / "silent", server=url), "--sync-timeout", "5")
    assert exited.code == 1
    retries = [r for r in exited.level("warning") if r["event"] == "API server not answering; retrying"]
    assert len(retries) >= 2, exited.lines
    assert (retries[0]["request_timeout"], retries[0]["error"]) == (1.7, "no answer within 1.7 s")
    assert all(r["server"] == url and r["error"] == f"no answer within {r['request_timeout']:g} s" for r in retries)
    error = only_error(exited)["event"]
    assert f"the API server {url} did not answer a request to list genericjobs.batch.tensorstack.dev" in error
    assert "within --sync-timeout" in error and "each allowed 1.7 s" in error and "server address" in error
    assert exited.after_starting(only_error(exited)) >= 5  # --sync-timeout's wait, not the default's (see above)


async def test_credentials_revoked_while_running_show_in_the_informers_warnings(caplog):
    """After start-up, a 401 (the ServiceAccount deleted, its token with it) is retried by the informers, as
    client-go's are; each retry's warning carries the server's answer and what it means."""
    async with cluster_with_crds() as cluster:
        token = cluster.service_account_token("default", "ctl")
        cluster.api.create(cluster.registry.get("rbac.authorization.k8s.io", "v1", "clusterrolebindings"), None, {
            "metadata": {"name": "ctl"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "default"}]})
        configuration = client.Configuration()
        await config.load_kube_config_from_dict(cluster.kubeconfig(token=token), client_configuration=configuration)
        async with RestClient(settings_from_configuration(configuration)) as rest:
            controller = JobController(GENERICJOB, rest, ControllerConfig(informer_options=FAST))
            controller.start_informers()
            try:
                await controller.wait_for_sync(10)
                cluster.api.delete(cluster.registry.get("", "v1", "serviceaccounts"), "default", "ctl")
                cluster.drop_watches()  # the watches re-open, now without valid credentials

                def refused() -> list[str]:
                    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and
                            "401 Unauthorized" in r.getMessage()]

                messages = await until(refused, what="a warning naming the 401")
            finally:
                await controller.stop()
    assert "the server rejects this client's credentials: an expired or revoked token?" in messages[0]
