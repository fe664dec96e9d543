"""MPIJob end to end against localcluster (the spec's "MPIJob"): the objects it keeps (its headless Service, the
hostfile ConfigMap, the SSH Secret, each re-made if deleted), the start order (the launcher made once every worker
is Ready, the status saying how many are), success judged by the launcher, the group restart (a failed worker
takes the launcher with it, one restart counted, its cause in the status), a launcher restarted alone, a scale that
rewrites the hostfile and leaves mpirun running, restart policy Never, and the backoff limit."""

from __future__ import annotations

import base64

import pytest

from controller.jobs.decisions.group import START_ORDER
from controller.jobs.execution.controller import JobController
from controller.kinds.mpi.kind import MPIJOB

from .conftest import MERGE, Jobs, finish_pod, replicas, status, task, template, until

GROUP, VERSION = "batch.tensorstack.dev", "v1beta1"
LABEL = "mpijob.batch.tensorstack.dev/name"
pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)
PENDING = {"start_after": 3600}  # scheduled, its container never started (the test plays the kubelet)
FAIL_SOON = {"run_for": 0.3, "exit_code": 1}


@pytest.fixture
def mjobs(api_client) -> Jobs:
    return Jobs(api_client, plural="mpijobs", label_job_name=LABEL)


@pytest.fixture
async def mj_controller(rest_client, config):
    made = JobController(MPIJOB, rest_client, config)
    await made.start(sync_timeout=10)
    yield made
    await made.stop()


def mpijob(name: str, workers: int = 2, *, launcher=None, worker=None, restart: str | None = None,
           **spec) -> dict:
    worker_spec: dict = {"replicas": workers, "template": template(worker)}
    launcher_spec: dict = {"template": template(launcher)}
    if restart is not None:
        worker_spec["restartPolicy"] = launcher_spec["restartPolicy"] = restart
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "MPIJob", "metadata": {"name": name},
            "spec": {"launcher": launcher_spec, "worker": worker_spec, **spec}}


async def run_ready(jobs: Jobs, name: str) -> None:
    """Play the kubelet: a Pending pod starts, Running and Ready."""
    body = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "main", "image": "busybox:1.36", "imageID": "", "ready": True,
                                              "restartCount": 0, "state": {"running": {}}}]}}
    await jobs.core.patch_namespaced_pod_status(name, "default", body, _content_type=MERGE)


def uid_of(pods: list, name: str) -> str | None:
    return next((p.metadata.uid for p in pods if p.metadata.name == name), None)


async def running(jobs: Jobs, name: str, workers: int) -> dict:
    """The job once its launcher and every worker run (Ready)."""
    return await jobs.wait(name, lambda j: status(j).get("ready") == f"{workers + 1}/{workers + 1}")


async def test_the_launcher_waits_for_ready_workers_the_objects_are_kept_and_the_launcher_judges(
        cluster, mj_controller, mjobs):
    cluster.runner.set_script("default/hello-worker-1", PENDING)
    await mjobs.submit(mpijob("hello", 2))
    held = await mjobs.wait("hello", lambda j: "1 of 2 worker replicas Ready" in str(
        (replicas(j).get("hello-launcher-0") or {}).get("waiting")))
    assert replicas(held)["hello-launcher-0"]["waiting"]["reason"] == START_ORDER
    waiting = next(c for c in status(held)["conditions"] if c["type"] == "ReplicasWaiting")
    assert waiting["status"] == "True" and waiting["reason"] == START_ORDER
    assert [p.metadata.name for p in await mjobs.pods("hello")] == ["hello-worker-0", "hello-worker-1"]

    # What the job keeps: its Service, the hostfile, the keys; each pod's host name under the Service.
    service = await mjobs.core.read_namespaced_service("hello", "default")
    assert service.spec.cluster_ip == "None" and service.spec.publish_not_ready_addresses
    assert service.spec.selector == {"mpijob.batch.tensorstack.dev/uid": held["metadata"]["uid"]}
    config = await mjobs.core.read_namespaced_config_map("hello-config", "default")
    assert config.data["hostfile"] == ("hello-worker-0.hello.default.svc slots=1\n"
                                       "hello-worker-1.hello.default.svc slots=1\n")
    # discover_hosts.sh names only the workers Running: worker-1 is still Pending.
    async def discover() -> str:
        return (await mjobs.core.read_namespaced_config_map("hello-config", "default")).data["discover_hosts.sh"]
    await until(lambda: _has(discover(), "echo hello-worker-0.hello.default.svc:1"), what="worker-0 discovered")
    assert "hello-worker-1" not in await discover()
    secret = await mjobs.core.read_namespaced_secret("hello-ssh", "default")
    assert secret.type == "kubernetes.io/ssh-auth"
    assert base64.b64decode(secret.data["ssh-privatekey"]).startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----")
    assert secret.data["authorized_keys"] == secret.data["ssh-publickey"]
    worker = await mjobs.pod("hello-worker-0")
    assert (worker.spec.hostname, worker.spec.subdomain) == ("hello-worker-0", "hello")
    assert {e.name: e.value for e in worker.spec.containers[0].env}["K_MPI_JOB_ROLE"] == "worker"
    assert ("/root/.ssh", True) in [(m.mount_path, m.read_only) for m in worker.spec.containers[0].volume_mounts]
    assert "/etc/mpi" not in [m.mount_path for m in worker.spec.containers[0].volume_mounts]  # the launcher's only
    # Deleted, each is made again: the Secret with the same name (its key is the job's from now on).
    await mjobs.core.delete_namespaced_config_map("hello-config", "default")
    await mjobs.core.delete_namespaced_secret("hello-ssh", "default")
    await until(lambda: _exists(mjobs.core.read_namespaced_config_map("hello-config", "default")),
                what="the ConfigMap made again")
    await until(lambda: _exists(mjobs.core.read_namespaced_secret("hello-ssh", "default")),
                what="the Secret made again")

    await run_ready(mjobs, "hello-worker-1")
    pods = await mjobs.wait_pods("hello", lambda found: len(found) == 3)
    launcher = next(p for p in pods if p.metadata.name == "hello-launcher-0")
    env = {e.name: e.value for e in launcher.spec.containers[0].env}
    assert env["K_MPI_JOB_ROLE"] == "launcher" and env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert env["OMPI_MCA_plm_rsh_args"] == "-o ConnectionAttempts=10"
    assert "/etc/mpi" in [m.mount_path for m in launcher.spec.containers[0].volume_mounts]

    await running(mjobs, "hello", 2)
    await finish_pod(mjobs, "hello-launcher-0", 0)
    done = await mjobs.wait_phase("hello", "Succeeded")
    assert "hello-launcher-0" in next(c for c in done["status"]["conditions"] if c["type"] == "Completed")["message"]
    # cleanUpPolicy Unfinished: the workers, still running their sshd, go; the launcher stays.
    await mjobs.wait_pods("hello", lambda found: [p.metadata.name for p in found] == ["hello-launcher-0"])


async def _exists(read) -> bool:
    try:
        await read
    except Exception:  # (404 until it is made again)
        return False
    return True


async def test_at_startup_makes_the_launcher_with_the_workers(cluster, mj_controller, mjobs):
    cluster.runner.set_script("default/early-worker-1", PENDING)
    await mjobs.submit(mpijob("early", 2, launcherCreationPolicy="AtStartup"))
    await mjobs.wait_pods("early", lambda found: len(found) == 3)


async def test_a_failed_worker_restarts_the_group_counted_once(cluster, mj_controller, mjobs):
    await mjobs.submit(mpijob("group", 2))
    await running(mjobs, "group", 2)
    pods = await mjobs.pods("group")
    launcher, worker_0 = uid_of(pods, "group-launcher-0"), uid_of(pods, "group-worker-0")
    await finish_pod(mjobs, "group-worker-1", 1)
    restarted = await mjobs.wait("group", lambda j: (status(j).get("groupRestart") or {}).get("replica")
                                 == "group-worker-1")
    assert "exited with code 1" in status(restarted)["groupRestart"]["message"]
    await mjobs.wait_pods("group", lambda found: len(found) == 3 and uid_of(found, "group-launcher-0")
                          not in (None, launcher))
    back = await running(mjobs, "group", 2)
    assert status(back)["backoffCount"] == 1  # one group restart, whichever pods it replaced
    assert task(back, "launcher")["restartCount"] == 0 and task(back, "worker")["restartCount"] == 1
    assert uid_of(await mjobs.pods("group"), "group-worker-0") == worker_0  # the workers that ran are kept
    assert [e for e in await mjobs.events("group") if e.reason == "GroupRestart"]


async def test_a_failed_launcher_restarts_alone_counted_once(cluster, mj_controller, mjobs):
    await mjobs.submit(mpijob("alone", 2))
    await running(mjobs, "alone", 2)
    pods = await mjobs.pods("alone")
    workers = [uid_of(pods, "alone-worker-0"), uid_of(pods, "alone-worker-1")]
    launcher = uid_of(pods, "alone-launcher-0")
    await finish_pod(mjobs, "alone-launcher-0", 1)
    await mjobs.wait_pods("alone", lambda found: uid_of(found, "alone-launcher-0") not in (None, launcher))
    back = await running(mjobs, "alone", 2)
    assert status(back)["backoffCount"] == 1 and task(back, "launcher")["restartCount"] == 1
    pods = await mjobs.pods("alone")
    assert [uid_of(pods, "alone-worker-0"), uid_of(pods, "alone-worker-1")] == workers


async def test_a_scale_rewrites_the_hostfile_and_leaves_the_launcher_running(cluster, mj_controller, mjobs):
    await mjobs.submit(mpijob("scaled", 2, slotsPerWorker=2, mpiImplementation="MPICH"))
    await running(mjobs, "scaled", 2)
    launcher = uid_of(await mjobs.pods("scaled"), "scaled-launcher-0")

    async def hostfile() -> str:
        return (await mjobs.core.read_namespaced_config_map("scaled-config", "default")).data["hostfile"]

    assert await hostfile() == "scaled-worker-0.scaled.default.svc:2\nscaled-worker-1.scaled.default.svc:2\n"
    await mjobs.patch("scaled", {"spec": {"worker": {"replicas": 3}}})
    await until(lambda: _has(hostfile(), "scaled-worker-2.scaled.default.svc:2"), what="the hostfile scaled up")
    await running(mjobs, "scaled", 3)
    await mjobs.patch("scaled", {"spec": {"worker": {"replicas": 1}}})
    await until(lambda: _lacks(hostfile(), "scaled-worker-1"), what="the hostfile scaled down")
    down = await mjobs.wait("scaled", lambda j: replicas(j).get("scaled-worker-2", {}).get("phase") == "Deleted")
    assert status(down)["backoffCount"] == 0  # ranks scaled away are no failures, and no restart
    assert uid_of(await mjobs.pods("scaled"), "scaled-launcher-0") == launcher


async def _has(text, part: str) -> bool:
    return part in await text


async def _lacks(text, part: str) -> bool:
    return part not in await text


async def test_under_never_a_failed_worker_fails_the_job(cluster, mj_controller, mjobs):
    await mjobs.submit(mpijob("never", 2, restart="Never"))
    await running(mjobs, "never", 2)
    await finish_pod(mjobs, "never-worker-0", 1)
    done = await mjobs.wait_phase("never", "Failed")
    assert status(done)["reason"] == "ReplicaFailed" and status(done)["backoffCount"] == 0


async def test_under_never_a_lost_worker_fails_the_job_saying_which_and_why(cluster, mj_controller, mjobs):
    await mjobs.submit(mpijob("lost", 2, restart="Never"))
    await running(mjobs, "lost", 2)
    await mjobs.core.delete_namespaced_pod("lost-worker-1", "default", grace_period_seconds=0)
    done = await mjobs.wait_phase("lost", "Failed")
    assert status(done)["reason"] == "ReplicaFailed" and status(done)["backoffCount"] == 0
    failed = next(c for c in status(done)["conditions"] if c["type"] == "Failed")
    assert "lost-worker-1" in failed["message"] and "Never" in failed["message"], failed["message"]
    assert not replicas(done)["lost-worker-1"].get("restartCount")


async def test_the_backoff_limit_fails_the_job_after_its_restarts(cluster, mj_controller, mjobs):
    cluster.runner.set_script("default/limited-worker-0", FAIL_SOON)  # every attempt fails
    await mjobs.submit(mpijob("limited", 1, runPolicy={"backoffLimit": 1}))
    done = await mjobs.wait_phase("limited", "Failed")
    assert status(done)["reason"] == "BackoffLimitExceeded" and status(done)["backoffCount"] == 1
