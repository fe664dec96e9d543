"""TensorFlowTrainingJob end to end against localcluster: the master's success, failure of any replica
for good, ExitCode restarts, one restart budget for the job, the active deadline (also across a
controller restart), TF_CONFIG and the Services it names."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from controller.jobs.execution.controller import JobController
from controller.kinds.tensorflow.kind import TENSORFLOW
from tests.builders import TENSORFLOW as TENSORFLOW_KIND
from tests.builders import JobBuilder

from .conftest import FOREVER, QUICK, apply_crds, phase, scripts, template, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

LABEL = "tensorflowtrainingjob.batch.tensorstack.dev/name"
FAIL_137 = {"run_for": 0.05, "exit_code": 137}  # killed by SIGKILL: retryable under ExitCode
FAIL_1 = {"run_for": 0.05, "exit_code": 1}


def tf_template(script=None, **container) -> dict:
    pod = template(script)
    pod["spec"]["containers"][0].update({"name": "tensorflow", **container})
    return pod


def tfjob(name: str, replicas: dict[str, int], *, restart: str | dict | None = None, run_policy=None,
          **spec) -> dict:
    """A TensorFlowTrainingJob of `{type: count}` replicas (their pods follow the scripts set with
    `scripts`); `restart` a restartPolicy for every type, or `{type: restartPolicy}`."""
    job = JobBuilder(name, kind=TENSORFLOW_KIND)
    for replica_type, count in replicas.items():
        policy = restart.get(replica_type) if isinstance(restart, dict) else restart
        job = job.replica(replica_type, count, template=tf_template(), restart_policy=policy or None)
    if run_policy is not None:
        job = job.spec(runPolicy=run_policy)
    return job.spec(**spec).obj()


def records(job: dict) -> dict[str, dict]:
    return {r["name"]: r for t in (job.get("status") or {}).get("tasks") or () for r in t.get("replicaStatus") or ()}




async def test_the_chief_succeeding_ends_the_job_and_the_ps_are_cleaned_up(cluster, tf_controller, tfjobs):
    scripts(cluster, "ps", {"chief-0": QUICK, "*": FOREVER})
    await tfjobs.submit(tfjob("ps", {"chief": 1, "ps": 2, "worker": 4}))
    done = await tfjobs.wait_phase("ps", "Succeeded")
    completed = next(c for c in done["status"]["conditions"] if c["type"] == "Completed")
    assert completed["status"] == "True" and "ps-chief-0" in completed["message"]
    # Default clean-up Unfinished: the parameter servers and workers still running are deleted.
    await tfjobs.wait_pods("ps", lambda pods: [p.metadata.name for p in pods] == ["ps-chief-0"])
    assert {r["phase"] for name, r in records(done).items() if name != "ps-chief-0"} <= {"Deleted", "Running"}


async def test_replicas_removed_by_clean_up_say_so_in_their_records(cluster, tf_controller, tfjobs):
    scripts(cluster, "gone", {"chief-0": QUICK, "*": FOREVER})
    await tfjobs.submit(tfjob("gone", {"chief": 1, "worker": 2}))
    cleaned = await tfjobs.wait("gone", lambda j: phase(j) == "Succeeded" and all(
        r["phase"] == "Deleted" for n, r in records(j).items() if n != "gone-chief-0"))
    found = records(cleaned)
    assert found["gone-chief-0"]["containers"] == [{"name": "tensorflow", "state": "terminated", "exitCode": 0}]
    for name in ("gone-worker-0", "gone-worker-1"):  # deleted while running: neither running nor waiting now
        assert found[name]["containers"] == [{"name": "tensorflow", "state": "deleted"}]
    assert all("lastRestartUid" not in r for r in found.values())  # no pod was ever retired: no empty uid


async def test_without_a_chief_worker_zero_decides(cluster, tf_controller, tfjobs):
    scripts(cluster, "mw", {"worker-0": QUICK, "*": FOREVER})
    await tfjobs.submit(tfjob("mw", {"worker": 4}))
    await tfjobs.wait_phase("mw", "Succeeded")


async def test_any_replica_failing_for_good_fails_the_job(cluster, tf_controller, tfjobs):
    scripts(cluster, "bad", {"ps-1": FAIL_1, "*": FOREVER})
    await tfjobs.submit(tfjob("bad", {"chief": 1, "ps": 2}))
    done = await tfjobs.wait_phase("bad", "Failed")
    failed = next(c for c in done["status"]["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "True" and "bad-ps-1" in failed["message"]
    # The seed's message, then the cause (controller/jobs/decisions/cause.py); the reason says which way it failed.
    assert failed["message"] == ("Replica bad-ps-1 has failed: replica ps-1 failed with exit code 1 (Error) "
                                 "under restart policy Never")
    assert failed["reason"] == done["status"]["reason"] == "ReplicaFailed"


async def test_exit_code_restarts_137_and_not_1(cluster, tf_controller, tfjobs, history):
    scripts(cluster, "ec", {"worker-0": [FAIL_137, QUICK], "*": FOREVER})
    await tfjobs.submit(tfjob("ec", {"worker": 2}, restart="ExitCode"))
    done = await tfjobs.wait_phase("ec", "Succeeded")
    assert done["status"]["backoffCount"] == 1 and len(history.uids("ec-worker-0")) == 2
    scripts(cluster, "ec1", {"worker-0": FAIL_1, "*": FOREVER})
    await tfjobs.submit(tfjob("ec1", {"worker": 2}, restart="ExitCode"))
    done = await tfjobs.wait_phase("ec1", "Failed")
    assert done["status"]["backoffCount"] == 0 and len(history.uids("ec1-worker-0")) == 1
    assert done["status"]["reason"] == "ReplicaFailed" and next(
        c for c in done["status"]["conditions"] if c["type"] == "Failed")["message"].endswith(
        "failed with exit code 1 (Error) under restart policy ExitCode (its exit code is not retryable)")


async def test_the_backoff_limit_is_one_budget_for_every_replica(cluster, tf_controller, tfjobs, history):
    # Two replicas of two types fail once each; a budget of one restarts the first and fails the job on the
    # second, whichever types they are.
    scripts(cluster, "budget", {"worker-1": [FAIL_1, FOREVER], "ps-0": [FAIL_1, FOREVER], "*": FOREVER})
    await tfjobs.submit(tfjob("budget", {"worker": 2, "ps": 1}, restart="OnFailure", run_policy={"backoffLimit": 1}))
    done = await tfjobs.wait_phase("budget", "Failed")
    assert done["status"]["backoffCount"] <= 1
    failed = next(c for c in done["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == done["status"]["reason"] == "BackoffLimitExceeded"
    assert failed["message"].endswith("failed with exit code 1 (Error) after 1 of 1 restarts of the job "
                                      "(runPolicy.backoffLimit)"), failed
    assert len(history.uids("budget-worker-1")) + len(history.uids("budget-ps-0")) <= 3


async def test_the_deadline_fails_a_running_job_on_time_across_a_controller_restart(cluster, rest_client, config,
                                                                                      tfjobs):
    scripts(cluster, "late", {"*": FOREVER})
    first = JobController(TENSORFLOW, rest_client, config)
    await first.start(sync_timeout=10)
    await tfjobs.submit(tfjob("late", {"worker": 2}, run_policy={"activeDeadlineSeconds": 2}))
    running = await tfjobs.wait_phase("late", "Running")
    await first.stop()  # the controller goes away mid-way; the deadline counts from the status's startTime
    second = JobController(TENSORFLOW, rest_client, config)
    await second.start(sync_timeout=10)
    try:
        done = await tfjobs.wait_phase("late", "Failed", timeout=6.0)
    finally:
        await second.stop()
    failed = next(c for c in done["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "DeadlineExceeded"
    from controller.jobs.decisions.backoff import epoch

    assert epoch(failed["lastTransitionTime"]) - epoch(running["status"]["startTime"]) >= 2
    await tfjobs.wait_pods("late", lambda pods: pods == [])  # its running pods are deleted


async def test_tf_config_of_the_parameter_server_example(cluster, tf_controller, tfjobs):
    scripts(cluster, "dist", {"*": FOREVER})
    job = tfjob("dist", {"chief": 1, "ps": 2, "worker": 4, "evaluator": 1})
    job["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "tfjob-port", "containerPort": 3333}]
    await tfjobs.submit(job)
    pods = await tfjobs.wait_pods("dist", lambda found: len(found) == 8)
    cluster_spec = {
        "chief": ["dist-chief-0.default.svc:2222"],
        "worker": [f"dist-worker-{i}.default.svc:2222" for i in range(4)],
        "ps": ["dist-ps-0.default.svc:3333", "dist-ps-1.default.svc:3333"],
    }
    for pod in pods:
        replica_type, rank = pod.metadata.name.split("-")[1], int(pod.metadata.name.split("-")[2])
        [container] = [c for c in pod.spec.containers if c.name == "tensorflow"]
        [value] = [e.value for e in container.env if e.name == "TF_CONFIG"]
        assert value == json.dumps({"cluster": cluster_spec, "task": {"type": replica_type, "index": rank},
                                    "environment": "cloud"})
    from .conftest import until

    services = await until(lambda: _all_services(tfjobs, "dist", 8), 10.0, "8 Services")
    assert sorted(s.metadata.name for s in services) == sorted(p.metadata.name for p in pods)
    ps = next(s for s in services if s.metadata.name == "dist-ps-0")
    assert ps.spec.cluster_ip == "None" and [p.port for p in ps.spec.ports] == [3333]


async def _all_services(tfjobs, name: str, count: int):
    found = await tfjobs.services(name)
    return found if len(found) == count else None


async def test_a_tf_config_the_user_set_is_left_alone(cluster, tf_controller, tfjobs):
    scripts(cluster, "own", {"*": FOREVER})
    job = tfjob("own", {"worker": 1})
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["env"] = [{"name": "TF_CONFIG",
                                                                                    "value": "{}"}]
    await tfjobs.submit(job)
    [pod] = await tfjobs.wait_pods("own", lambda found: len(found) == 1)
    assert [e.value for e in pod.spec.containers[0].env if e.name == "TF_CONFIG"] == ["{}"]


async def test_pause_and_resume(cluster, tf_controller, tfjobs):
    scripts(cluster, "pz", {"*": FOREVER})
    await tfjobs.submit(tfjob("pz", {"worker": 2}))
    await tfjobs.wait_phase("pz", "Running")
    await tfjobs.patch("pz", {"spec": {"runMode": {"pause": {"enable": True}}}})  # 003's spelling
    await tfjobs.wait_phase("pz", "Paused")
    await tfjobs.wait_pods("pz", lambda pods: pods == [])
    await tfjobs.patch("pz", {"spec": {"runMode": {"pause": {"enable": False}}}})
    await tfjobs.wait_phase("pz", "Running")


@pytest.mark.parametrize(("change", "field"), [
    ({"replicaSpecs": [{"type": "master", "template": tf_template()}]}, "type"),
    ({"replicaSpecs": [{"type": "chief", "replicas": 2, "template": tf_template()}]}, "chief"),
    ({"replicaSpecs": [{"type": "worker", "template": template()}]}, "tensorflow"),
    ({"replicaSpecs": [{"type": "worker", "restartPolicy": "Sometimes", "template": tf_template()}]},
     "restartPolicy"),
    ({"replicaSpecs": [{"type": "worker", "template": tf_template()}], "runPolicy": {"activeDeadlineSeconds": 0}},
     "activeDeadlineSeconds"),
])
async def test_invalid_specs_are_refused_at_apply_naming_the_field(cluster, tfjobs, change, field):
    from kubernetes_asyncio.client.exceptions import ApiException

    job = JobBuilder("bad", kind=TENSORFLOW_KIND).spec(**change).obj()
    with pytest.raises(ApiException) as refused:
        await tfjobs.submit(job)
    assert refused.value.status == 422 and field in refused.value.body


async def test_phase_helper_reads_tf_status(cluster, tf_controller, tfjobs):
    scripts(cluster, "one", {"*": QUICK})
    await tfjobs.submit(tfjob("one", {"worker": 1}))
    done = await tfjobs.wait_phase("one", "Succeeded")
    assert phase(done) == "Succeeded" and list(records(done)) == ["one-worker-0"]


# --- TensorBoard ------------------------------------------------------------------------------------

TENSORBOARD_SPEC = {"image": "tensorflow/tensorflow:2.11.0", "trainingLogFilesets": ["t9k://pvc/logs/run1"]}


async def install_tensorboard_api(cluster, tmp_path) -> None:
    import yaml

    from controller.jobs.training.tensorboard import tensorboard_crd

    (tmp_path / "tensorboard.yaml").write_text(yaml.safe_dump(tensorboard_crd()))
    assert await apply_crds(cluster, tmp_path) == ["tensorboards.tensorstack.dev"]


async def boards(tfjobs) -> dict[str, dict]:
    return await tfjobs.objects("tensorstack.dev", "v1beta1", "tensorboards")


def board_is(tfjobs, name: str, check=lambda board: True):
    """For until(): the TensorBoard `name` once it exists and passes `check`."""
    async def found():
        board = (await boards(tfjobs)).get(name)
        return board if board is not None and check(board) else None
    return found


async def test_the_tensorboard_is_made_kept_in_step_reported_and_left_after_the_job(cluster, rest_client, config,
                                                                                   tfjobs, tmp_path):
    from .conftest import until

    await install_tensorboard_api(cluster, tmp_path)
    made = JobController(TENSORFLOW, rest_client, config)
    await made.start(sync_timeout=10)
    try:
        scripts(cluster, "board", {"*": FOREVER})
        created = await tfjobs.submit(tfjob("board", {"worker": 1}, tensorboardSpec=TENSORBOARD_SPEC))
        board = await until(board_is(tfjobs, "board"), 10.0, "the TensorBoard")
        assert board["spec"] == TENSORBOARD_SPEC
        [owner] = board["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("TensorFlowTrainingJob",
                                                                      created["metadata"]["uid"], True)
        reported = await tfjobs.wait("board", lambda j: ((j.get("status") or {}).get("tensorboard") or {}).get(
            "reason") == "DependentNotReady" and j["status"]["tensorboard"]["dependent"].get("uid"))
        assert reported["status"]["tensorboard"]["note"] == "TensorBoard [board] is not ready"
        # The platform's TensorBoard controller says it is ready.
        await tfjobs.custom.patch_namespaced_custom_object_status(
            "tensorstack.dev", "v1beta1", "default", "tensorboards", "board", {"status": {"ready": True}},
            _content_type="application/merge-patch+json")
        ready = await tfjobs.wait("board", lambda j: j["status"]["tensorboard"]["ready"] is True)
        assert ready["status"]["tensorboard"] | {"dependent": None} == {
            "dependent": None, "ready": True, "action": "NOP", "reason": "DependentReady",
            "note": "TensorBoard [board] is ready", "type": "Normal"}
        # An edit of tensorboardSpec is followed, a removed key removed.
        await tfjobs.patch("board", {"spec": {"tensorboardSpec": {"image": "tensorflow/tensorflow:2.12.0",
                                                                  "trainingLogFilesets": None}}})
        await until(board_is(tfjobs, "board", lambda b: b["spec"] == {"image": "tensorflow/tensorflow:2.12.0"}),
                    10.0, "the TensorBoard's spec follows the edit")
        # The job ends: its TensorBoard stays (users read the results afterwards).
        scripts(cluster, "board", {"*": QUICK})
        await tfjobs.core.delete_namespaced_pod("board-worker-0", "default")
        await tfjobs.wait_phase("board", "Succeeded")  # its lost pod recreated (Never), and that one succeeds
        async def settled() -> bool:
            return not [p for p in (await tfjobs.core.list_namespaced_pod("default")).items
                        if p.metadata.name == "board-worker-0" and p.status.phase != "Succeeded"]

        await until(settled, 10.0, "settled")
        assert "board" in await boards(tfjobs)
    finally:
        await made.stop()


async def test_a_pod_template_under_tensorboard_spec_never_reaches_the_tensorboard(cluster, rest_client, config,
                                                                                    tfjobs, tmp_path):
    """tensorboardSpec has T9k's TensorBoardSpec fields only: the API server prunes a privileged pod template
    (fieldValidation Warn, a client's default), and the TensorBoard gets the documented fields as given."""
    from tests.controller.test_tensorflow_kind import DOCUMENTED_BOARD, HOST_NETWORK

    from .conftest import until

    await install_tensorboard_api(cluster, tmp_path)
    made = JobController(TENSORFLOW, rest_client, config)
    await made.start(sync_timeout=10)
    try:
        scripts(cluster, "hostnet", {"*": FOREVER})
        created = await tfjobs.submit(tfjob("hostnet", {"worker": 1},
                                            tensorboardSpec={**DOCUMENTED_BOARD, **HOST_NETWORK}))
        assert created["spec"]["tensorboardSpec"] == DOCUMENTED_BOARD
        board = await until(board_is(tfjobs, "hostnet"), 10.0, "the TensorBoard")
        assert board["spec"] == DOCUMENTED_BOARD
        # Under fieldValidation=Strict (kubectl's default) it is refused, naming the field.
        with pytest.raises(ApiException) as refused:
            await tfjobs.custom.create_namespaced_custom_object(
                "batch.tensorstack.dev", "v1beta1", "default", "tensorflowtrainingjobs",
                tfjob("strict", {"worker": 1}, tensorboardSpec=HOST_NETWORK), field_validation="Strict")
        assert refused.value.status == 400
        assert 'unknown field "spec.tensorboardSpec.template"' in json.loads(refused.value.body)["message"]
    finally:
        await made.stop()


# localcluster only: the session's real API server keeps a CRD once a test installed it (RealCluster.apply_crds),
# so there the TensorBoard API may be present from the start.
@pytest.mark.servers("local")
async def test_without_the_tensorboard_api_the_job_runs_and_says_so_then_the_api_is_noticed(
        cluster, rest_client, config, tfjobs, tmp_path):
    import dataclasses

    from .conftest import until

    made = JobController(TENSORFLOW, rest_client, dataclasses.replace(config, dependent_recheck=0.2))
    await made.start(sync_timeout=10)
    try:
        scripts(cluster, "noapi", {"*": FOREVER})
        await tfjobs.submit(tfjob("noapi", {"worker": 1}, tensorboardSpec=TENSORBOARD_SPEC))
        warned = await tfjobs.wait("noapi", lambda j: ((j.get("status") or {}).get("tensorboard") or {}).get(
            "type") == "Warning")
        assert warned["status"]["tensorboard"]["reason"] == "DependentAPIMissing"
        [event] = await tfjobs.wait_event("noapi", "DependentAPIMissing")
        assert event.type == "Warning" and "no TensorBoard API" in event.message
        await tfjobs.wait_phase("noapi", "Running")  # the job runs anyway
        await install_tensorboard_api(cluster, tmp_path)
        await until(board_is(tfjobs, "noapi"), 10.0, "the TensorBoard, once its API is installed")
        await tfjobs.wait("noapi", lambda j: j["status"]["tensorboard"]["type"] == "Normal")
    finally:
        await made.stop()


async def test_debug_mode_makes_the_pods_with_their_tf_config_and_decides_nothing(cluster, tf_controller, tfjobs,
                                                                                  history):
    # The first pods end at once: in debug mode that decides nothing and counts nothing, and each debug pod that
    # ended is replaced as it was (the spec's "Debug pods decide nothing and count nothing").
    scripts(cluster, "dbg", {"*": [QUICK, FOREVER]})
    await tfjobs.submit(tfjob("dbg", {"chief": 1, "worker": 1}, runMode={"debug": {"enable": True}}))
    await until(lambda: all(len(history.uids(name)) == 2 for name in ("dbg-chief-0", "dbg-worker-0")),
                what="each debug pod replaced once")
    pods = await tfjobs.wait_pods("dbg", lambda found: len(found) == 2 and all(
        p.status.phase == "Running" and p.metadata.deletion_timestamp is None for p in found))
    for pod in pods:
        [container] = pod.spec.containers
        assert container.command == ["sleep", "inf"] and not container.args
        assert [e.name for e in container.env] == ["TF_CONFIG"]
    job = await tfjobs.get("dbg")
    assert phase(job) not in ("Succeeded", "Failed") and int(job["status"].get("backoffCount") or 0) == 0
