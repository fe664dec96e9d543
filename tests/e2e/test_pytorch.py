"""PyTorchTrainingJob end to end against localcluster: the master's success, failure of any replica for good,
ExitCode restarts, the backoffLimit default (3), the environment and Services on the pods made, elastic
scaling by expectedReplicas (highest ranks first, the master kept, scaled-away replicas deleted, not failed),
the PodGroup's minMember, debug/pause/resume, the TensorBoard, `kubectl get pj` and `kubectl explain
pj.spec.elastic`, and the CRD's rules at apply time."""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from controller.jobs.execution.controller import JobController
from controller.kinds.pytorch.kind import PYTORCH
from localcluster.testing import Kubectl
from tests.builders import PYTORCH as PYTORCH_KIND
from tests.builders import JobBuilder

from .conftest import FOREVER, QUICK, apply_crds, finish_pod, phase, scripts, status, template, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

LABEL = "pytorchtrainingjob.batch.tensorstack.dev/name"
FAIL_137 = {"run_for": 0.05, "exit_code": 137}  # killed by SIGKILL: retryable under ExitCode
FAIL_1 = {"run_for": 0.05, "exit_code": 1}
TORCHRUN = {"enabled": True}


def pt_template(**container) -> dict:
    pod = template()
    pod["spec"]["containers"][0].update({"name": "pytorch", "args": ["train.py"], **container})
    return pod


def pjob(name: str, replicas: dict[str, int], *, restart: str | None = None, **spec) -> dict:
    job = JobBuilder(name, kind=PYTORCH_KIND)
    for replica_type, count in replicas.items():
        job = job.replica(replica_type, count, template=pt_template(), restart_policy=restart)
    return job.spec(**spec).obj()


def records(job: dict) -> dict[str, dict]:
    return {r["name"]: r for t in (job.get("status") or {}).get("tasks") or () for r in t.get("replicas") or ()}


def env_of(pod) -> dict[str, str]:
    return {e.name: e.value for e in pod.spec.containers[0].env or ()}




async def test_ddp_master_success_ends_the_job_with_the_environment_and_services(cluster, pj_controller, pjobs):
    scripts(cluster, "ddp", {"*": FOREVER})  # the master finishes when told, below
    await pjobs.submit(pjob("ddp", {"master": 1, "worker": 2}))
    pods = await pjobs.wait_pods("ddp", lambda found: len(found) == 3)
    by_name = {p.metadata.name: p for p in pods}
    assert env_of(by_name["ddp-worker-1"]) == {"MASTER_ADDR": "ddp-master-0", "MASTER_PORT": "23456",
                                               "PYTHONUNBUFFERED": "1", "WORLD_SIZE": "3", "RANK": "2"}
    assert by_name["ddp-worker-1"].metadata.labels["tensorstack.dev/owner-name"] == "ddp"
    async def all_services():  # made after the pods, in the same reconcile
        found = {s.metadata.name: s for s in await pjobs.services("ddp")}
        return found if len(found) == 3 else None

    services = await until(all_services, what="a Service per replica")
    assert sorted(services) == ["ddp-master-0", "ddp-worker-0", "ddp-worker-1"]
    assert [(p.name, p.port) for p in services["ddp-master-0"].spec.ports] == [("pytorchjob-port", 23456)]
    await pjobs.wait("ddp", lambda j: status(j).get("ready") == "3/3")
    await finish_pod(pjobs, "ddp-master-0", 0)
    done = await pjobs.wait_phase("ddp", "Succeeded")
    completed = next(c for c in done["status"]["conditions"] if c["type"] == "Completed")
    assert "ddp-master-0" in completed["message"]
    assert [t["type"] for t in done["status"]["tasks"]] == ["master", "worker"]
    await pjobs.wait_pods("ddp", lambda found: [p.metadata.name for p in found] == ["ddp-master-0"])  # Unfinished


async def test_any_replica_failing_for_good_fails_the_job(cluster, pj_controller, pjobs):
    scripts(cluster, "anyfail", {"worker-1": FAIL_1, "*": FOREVER})
    await pjobs.submit(pjob("anyfail", {"master": 1, "worker": 2}))
    done = await pjobs.wait_phase("anyfail", "Failed")
    assert done["status"]["reason"] == "ReplicaFailed"
    assert "anyfail-worker-1" in next(c for c in done["status"]["conditions"] if c["type"] == "Failed")["message"]


async def test_exit_code_restarts_137_and_not_1(cluster, pj_controller, pjobs):
    scripts(cluster, "ec", {"master-0": [FAIL_137, QUICK], "*": FOREVER})
    await pjobs.submit(pjob("ec", {"master": 1, "worker": 1}, restart="ExitCode"))
    done = await pjobs.wait_phase("ec", "Succeeded")
    assert done["status"]["backoffCount"] == 1
    scripts(cluster, "ec1", {"master-0": FAIL_1, "*": FOREVER})
    await pjobs.submit(pjob("ec1", {"master": 1, "worker": 1}, restart="ExitCode"))
    done = await pjobs.wait_phase("ec1", "Failed")
    assert done["status"]["backoffCount"] == 0 and done["status"]["reason"] == "ReplicaFailed"


async def test_the_backoff_limit_defaults_to_3(cluster, pj_controller, pjobs):
    scripts(cluster, "budget", {"worker-0": FAIL_1, "*": FOREVER})
    created = await pjobs.submit(pjob("budget", {"master": 1, "worker": 1}, restart="OnFailure"))
    assert created["spec"]["runPolicy"]["backoffLimit"] == 3  # set by the CRD schema
    done = await pjobs.wait_phase("budget", "Failed", timeout=20)
    assert done["status"]["reason"] == "BackoffLimitExceeded" and done["status"]["backoffCount"] == 3
    assert next(c for c in done["status"]["conditions"] if c["type"] == "Failed")["message"].endswith(
        "after 3 of 3 restarts of the job (runPolicy.backoffLimit)")


async def test_elastic_scales_down_highest_ranks_first_keeping_the_master_then_up(cluster, pj_controller, pjobs):
    scripts(cluster, "el", {"*": FOREVER})
    elastic = {"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 4}
    await pjobs.submit(pjob("el", {"master": 1, "worker": 1}, torchrunConfig=TORCHRUN, elastic=elastic))
    running = await pjobs.wait("el", lambda j: status(j).get("ready") == "4/4")
    assert sorted(records(running)) == ["el-master-0", "el-worker-0", "el-worker-1", "el-worker-2"]
    worker = await pjobs.pod("el-worker-2")
    container = worker.spec.containers[0]
    assert container.command == ["torchrun"] and container.args[:2] == ["--nnodes=1:4", "--nproc_per_node=1"]
    assert env_of(worker)["PET_NNODES"] == "1:4" and "PET_NODE_RANK" not in env_of(worker)

    await pjobs.patch("el", {"spec": {"elastic": {"expectedReplicas": 2}}})
    await pjobs.wait_pods("el", lambda found: sorted(p.metadata.name for p in found) == ["el-master-0",
                                                                                         "el-worker-0"])
    scaled = await pjobs.wait("el", lambda j: status(j).get("ready") == "2/2")
    assert phase(scaled) == "Running" and status(scaled).get("backoffCount") == 0  # scaled away, not failed
    assert not any(c["type"] == "Failed" and c["status"] == "True" for c in status(scaled)["conditions"])

    await pjobs.patch("el", {"spec": {"elastic": {"expectedReplicas": 3}}})
    await pjobs.wait_pods("el", lambda found: sorted(p.metadata.name for p in found) == [
        "el-master-0", "el-worker-0", "el-worker-1"])
    await pjobs.wait("el", lambda j: status(j).get("ready") == "3/3")


async def test_the_podgroups_min_member_is_min_replicas(cluster, pj_controller, pjobs):
    scripts(cluster, "gang", {"*": FOREVER})
    await pjobs.submit(pjob("gang", {"worker": 3}, torchrunConfig=TORCHRUN, scheduler={"t9kScheduler": {
        "queue": "default"}}, elastic={"enabled": True, "minReplicas": 2, "maxReplicas": 3}))
    [group] = await until(pjobs.podgroups, 10.0, "the PodGroup")
    assert group["spec"]["minMember"] == 2


async def test_elastic_without_torchrun_is_ignored_with_a_warning_event(cluster, pj_controller, pjobs):
    scripts(cluster, "noel", {"*": FOREVER})
    await pjobs.submit(pjob("noel", {"worker": 2}, elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4,
                                                            "expectedReplicas": 4}))
    await pjobs.wait_event("noel", "ElasticIgnored")
    await pjobs.wait("noel", lambda j: status(j).get("ready") == "2/2")


async def test_debug_pause_and_resume(cluster, pj_controller, pjobs):
    scripts(cluster, "dbg", {"*": FOREVER})
    await pjobs.submit(pjob("dbg", {"worker": 1}, torchrunConfig=TORCHRUN, runMode={"debug": {"enable": True}}))
    [pod] = await pjobs.wait_pods("dbg", lambda found: len(found) == 1)
    assert pod.spec.containers[0].command == ["sleep", "inf"] and "PET_RDZV_ENDPOINT" in env_of(pod)

    scripts(cluster, "pz", {"*": FOREVER})
    resume = [{"type": "worker", "command": ["ignored"], "args": ["train.py", "--resume"]}]
    await pjobs.submit(pjob("pz", {"worker": 2}, torchrunConfig=TORCHRUN))
    await pjobs.wait_phase("pz", "Running")
    await pjobs.patch("pz", {"spec": {"runMode": {"pause": {"enable": True, "resumeSpecs": resume}}}})
    await pjobs.wait_phase("pz", "Paused")
    await pjobs.wait_pods("pz", lambda found: found == [])
    await pjobs.patch("pz", {"spec": {"runMode": {"pause": {"enable": False}}}})
    await pjobs.wait_phase("pz", "Running")
    resumed = await pjobs.pod("pz-worker-0")
    assert resumed.spec.containers[0].command == ["torchrun"]
    assert resumed.spec.containers[0].args[-2:] == ["train.py", "--resume"]


async def test_the_tensorboard_is_made(cluster, rest_client, config, pjobs, tmp_path):
    import yaml

    from controller.jobs.training.tensorboard import tensorboard_crd

    (tmp_path / "tensorboard.yaml").write_text(yaml.safe_dump(tensorboard_crd()))
    await apply_crds(cluster, tmp_path)
    made = JobController(PYTORCH, rest_client, config)
    await made.start(sync_timeout=10)
    try:
        await _made_and_reported(cluster, pjobs)
    finally:
        await made.stop()


async def _made_and_reported(cluster, pjobs):
    board_spec = {"image": "tensorflow/tensorflow:2.11.0", "trainingLogFilesets": ["t9k://pvc/logs/run1"]}
    scripts(cluster, "board", {"*": FOREVER})
    await pjobs.submit(pjob("board", {"worker": 1}, tensorboardSpec=board_spec))
    async def boards() -> dict[str, dict]:
        return await pjobs.objects("tensorstack.dev", "v1beta1", "tensorboards")

    async def made() -> bool:
        return "board" in await boards()

    await until(made, 20.0, "the TensorBoard")  # once the controller sees the new API
    job = await pjobs.wait("board", lambda j: (status(j).get("tensorboard") or {}).get("reason") == "DependentNotReady")
    boards = await boards()
    assert boards["board"]["spec"] == board_spec
    assert boards["board"]["metadata"]["ownerReferences"][0]["kind"] == "PyTorchTrainingJob"
    assert status(job)["tensorboard"]["dependent"]["name"] == "board"


async def test_kubectl_get_pj_shows_the_columns_and_explain_documents_elastic(cluster, pj_controller, pjobs,
                                                                             tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    scripts(cluster, "cols", {"*": FOREVER})
    await pjobs.submit(pjob("cols", {"master": 1, "worker": 2}))
    await pjobs.wait("cols", lambda j: phase(j) == "Running" and status(j).get("ready") == "3/3")
    row = (await kubectl.ok("get", "pj")).table()["cols"]
    assert list(row) == ["NAME", "PHASE", "READY", "RESTARTS", "REASON", "AGE"]
    assert (row["PHASE"], row["READY"], row["RESTARTS"], row["REASON"]) == ("Running", "3/3", "0", "")
    name = await kubectl.ok("get", "pj", "cols", "-o", "jsonpath={.status.tasks[0].replicas[0].name}")
    assert name.out == "cols-master-0"
    out = (await kubectl.ok("explain", "pj.spec.elastic")).out
    for field in ("enabled", "minReplicas", "maxReplicas", "expectedReplicas"):
        assert field in out
    assert "Immutable." in out and "scalingWeight" in out


@pytest.mark.parametrize(("spec", "words"), [
    ({"replicaSpecs": [{"type": "master", "replicas": 2, "template": pt_template()}]}, "exactly one replica"),
    ({"replicaSpecs": [{"type": "Worker", "template": pt_template()}]}, "type"),
    ({"replicaSpecs": [{"type": "worker", "template": pt_template()}],
      "elastic": {"minReplicas": 3, "maxReplicas": 2}}, "minReplicas must be at most maxReplicas"),
    ({"replicaSpecs": [{"type": "worker", "template": pt_template()}],
      "elastic": {"minReplicas": 1, "maxReplicas": 2, "expectedReplicas": 5}}, "at most maxReplicas"),
    ({"replicaSpecs": [{"type": "worker", "template": pt_template()}],
      "torchrunConfig": {"rdzvBackend": "zookeeper"}}, "rdzvBackend"),
    ({"replicaSpecs": [{"type": "worker", "restartPolicy": "Sometimes", "template": pt_template()}]},
     "restartPolicy"),
])
async def test_invalid_specs_are_refused_at_apply(cluster, pjobs, spec, words):
    with pytest.raises(ApiException) as refused:
        await pjobs.submit(JobBuilder("bad", kind=PYTORCH_KIND).spec(**spec).obj())
    assert refused.value.status == 422 and words in refused.value.body


async def test_min_and_max_replicas_are_immutable(cluster, pjobs):
    await pjobs.submit(pjob("imm", {"worker": 2}, torchrunConfig=TORCHRUN,
                            elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4}))
    for change in ({"minReplicas": 2}, {"maxReplicas": 3}):
        with pytest.raises(ApiException) as refused:
            await pjobs.patch("imm", {"spec": {"elastic": change}})
        assert refused.value.status == 422 and "immutable" in refused.value.body
    await pjobs.patch("imm", {"spec": {"elastic": {"expectedReplicas": 3}}})  # expectedReplicas is not


async def test_a_removed_rank_keeps_its_restarts_in_the_budget(cluster, pj_controller, pjobs):
    """The "Live jobs" section: restarts of ranks scaled away still count against backoffLimit."""
    scripts(cluster, "keep", {"worker-2": [FAIL_1, FOREVER], "*": FOREVER})
    elastic = {"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 4}
    await pjobs.submit(pjob("keep", {"master": 1, "worker": 1}, restart="OnFailure", torchrunConfig=TORCHRUN,
                            elastic=elastic))
    await pjobs.wait("keep", lambda j: status(j).get("backoffCount") == 1 and status(j).get("ready") == "4/4")
    await pjobs.patch("keep", {"spec": {"elastic": {"expectedReplicas": 2}}})
    scaled = await pjobs.wait("keep", lambda j: status(j).get("ready") == "2/2")
    assert status(scaled)["backoffCount"] == 1 and phase(scaled) == "Running"


async def test_the_active_deadline_fails_the_job(cluster, pj_controller, pjobs):
    scripts(cluster, "late", {"*": FOREVER})
    await pjobs.submit(pjob("late", {"master": 1, "worker": 1}, runPolicy={"activeDeadlineSeconds": 1}))
    done = await pjobs.wait_phase("late", "Failed", timeout=15)
    assert done["status"]["reason"] == "DeadlineExceeded"
