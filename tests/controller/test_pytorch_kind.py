"""PyTorchTrainingJob's own parts, without a server: its model and defaults, global ranks, the environment
per replica and per mode (exact values), the torchrun command line (extraOptions replacing flags, procPerNode
gpu), elastic counts and their split, the PodGroup's gang, restart rule, verdict, validation, run modes and
the generated CRD (its columns, short name and rules)."""

from __future__ import annotations

import pytest
import yaml

from controller.jobs.children.podgroup import desired_podgroup
from controller.jobs.children.pods import desired_pod
from controller.jobs.schema.api import CleanUpPolicy, JobPhase, Outcome
from controller.jobs.training.restart import RestartPolicyType
from controller.kinds.pytorch import crd
from controller.kinds.pytorch.kind import PYTORCH
from controller.kinds.pytorch.models import PyTorchTrainingJob
from tests.builders import PYTORCH as PYTORCH_KIND
from tests.builders import JobBuilder


def pod(*names: str, **container) -> dict:
    return {"spec": {"containers": [{"name": name, "image": "pytorch/pytorch:2.0.0", **(container if i == 0 else {})}
                                    for i, name in enumerate(names or ("pytorch",))]}}


def pjob(*replicas: tuple, **spec) -> dict:
    job = JobBuilder("pj", kind=PYTORCH_KIND, namespace="ns", uid="u-1", generation=1)
    for entry in replicas:
        replica_type, count, *template = entry
        job = job.replica(replica_type, count, template=template[0] if template else pod(args=["train.py"]))
    return job.spec(**spec).obj()


def parsed(*replicas, **spec) -> PyTorchTrainingJob:
    job = PYTORCH.parse(pjob(*replicas, **spec))
    assert isinstance(job, PyTorchTrainingJob), job
    return job


def env(p: dict, container: int = 0) -> dict[str, str]:
    return {e["name"]: e["value"] for e in p["spec"]["containers"][container].get("env") or ()}


TORCHRUN = {"enabled": True}


def test_defaults_and_t9ks_spellings():
    job = parsed(("worker", 2), runPolicy={"cleanUpPolicy": "all"}, torchrunConfig={"enable": True, "minNodes": 1},
                 elastic={"enable": True, "enabled": False}, runMode={"debug": {"enable": True}})
    [worker] = job.spec.replica_specs
    assert worker.restart_policy == RestartPolicyType.NEVER and job.spec.clean_up_policy == CleanUpPolicy.ALL
    assert job.spec.torchrun and not job.spec.elastic.enabled  # enabled wins
    assert job.spec.run_mode.debugging
    plain = parsed(("worker", 1))
    assert plain.spec.run_policy.backoff_limit == 3 and plain.spec.clean_up_policy == CleanUpPolicy.UNFINISHED
    assert parsed(("worker", 1), runPolicy={"activeDeadlineSeconds": 5}).spec.run_policy.backoff_limit == 3
    assert parsed(("worker", 1), runPolicy={"backoffLimit": 0}).spec.run_policy.backoff_limit == 0


def test_ddp_environment_exact_values_master_first():
    job = parsed(("worker", 2), ("master", 1))  # the master ranks first wherever it is listed
    pods = {(t, r): desired_pod(PYTORCH, job, t, r) for t, r in (("master", 0), ("worker", 0), ("worker", 1))}
    assert env(pods["master", 0]) == {"MASTER_ADDR": "pj-master-0", "MASTER_PORT": "23456", "PYTHONUNBUFFERED": "1",
                                      "WORLD_SIZE": "3", "RANK": "0"}
    assert env(pods["worker", 0])["RANK"] == "1" and env(pods["worker", 1])["RANK"] == "2"
    assert pods["worker", 1]["spec"]["containers"][0]["args"] == ["train.py"]  # untouched without torchrun
    assert pods["worker", 1]["metadata"]["labels"]["tensorstack.dev/owner-name"] == "pj"


def test_without_a_master_type_rank_0_is_the_first_listed_and_ps_ranks_first():
    job = parsed(("ps", 1), ("worker", 4))
    assert env(desired_pod(PYTORCH, job, "ps", 0))["RANK"] == "0"
    assert [env(desired_pod(PYTORCH, job, "worker", r))["RANK"] for r in range(4)] == ["1", "2", "3", "4"]
    assert env(desired_pod(PYTORCH, job, "worker", 3))["MASTER_ADDR"] == "pj-ps-0"


def test_every_container_gets_the_environment_and_user_values_stay_and_the_port_comes_from_the_master():
    template = pod("sidecar", "pytorch")
    template["spec"]["containers"][1]["ports"] = [{"name": "pytorchjob-port", "containerPort": 30000}]
    template["spec"]["containers"][0]["env"] = [{"name": "RANK", "value": "mine"}]
    job = parsed(("master", 1, template), ("worker", 1))
    master = desired_pod(PYTORCH, job, "master", 0)
    assert env(master, 0)["RANK"] == "mine" and env(master, 1)["RANK"] == "0"
    assert env(desired_pod(PYTORCH, job, "worker", 0))["MASTER_PORT"] == "30000"
    assert PYTORCH.service_ports(job, "master") == [
        {"name": "pytorchjob-port", "port": 30000, "targetPort": 30000, "protocol": "TCP"}]
    assert PYTORCH.service_ports(job, "worker")[0]["port"] == 23456


def test_torchrun_command_line_and_pet_variables():
    job = parsed(("master", 1), ("worker", 2), torchrunConfig={"enabled": True, "maxRestarts": 3, "procPerNode": "gpu"})
    worker = desired_pod(PYTORCH, job, "worker", 1)
    container = worker["spec"]["containers"][0]
    assert container["command"] == ["torchrun"]
    assert container["args"] == ["--nnodes=3", "--nproc_per_node=gpu", "--rdzv_backend=c10d",
                                 "--rdzv_endpoint=pj-master-0:23456", "--rdzv_id=u-1", "--max_restarts=3", "train.py"]
    assert env(worker) == {
        "MASTER_ADDR": "pj-master-0", "MASTER_PORT": "23456", "PYTHONUNBUFFERED": "1", "PET_NNODES": "3",
        "PET_NPROC_PER_NODE": "gpu", "PET_NODE_RANK": "2", "PET_MASTER_ADDR": "pj-master-0",
        "PET_MASTER_PORT": "23456", "PET_RDZV_BACKEND": "c10d", "PET_RDZV_ENDPOINT": "pj-master-0:23456",
        "PET_RDZV_ID": "u-1", "PET_MAX_RESTARTS": "3"}


def test_extra_options_replace_the_controllers_flags_and_the_pet_variables_follow():
    job = parsed(("worker", 2), torchrunConfig={"enabled": True, "rdzvBackend": "etcd", "extraOptions": [
        "--rdzv-endpoint", "etcd.ns:2379", "--nproc_per_node=2", "--monitor_interval=1"]})
    worker = desired_pod(PYTORCH, job, "worker", 0)
    assert worker["spec"]["containers"][0]["args"] == [
        "--nnodes=2", "--rdzv_backend=etcd", "--rdzv_id=u-1", "--rdzv-endpoint", "etcd.ns:2379",
        "--nproc_per_node=2", "--monitor_interval=1", "train.py"]
    values = env(worker)
    assert values["PET_RDZV_ENDPOINT"] == "etcd.ns:2379" and values["PET_NPROC_PER_NODE"] == "2"
    assert (values["PET_MASTER_ADDR"], values["PET_MASTER_PORT"]) == ("pj-worker-0", "23456")  # still the master
    assert values["PET_RDZV_BACKEND"] == "etcd" and "PET_MAX_RESTARTS" not in values


def test_elastic_counts_split_by_weight_clamped_and_nnodes_min_max():
    job = parsed(("master", 1), ("worker", 1), ("node", 1, pod(args=["x.py"])), torchrunConfig=TORCHRUN,
                 elastic={"enabled": True, "minReplicas": 2, "maxReplicas": 8, "expectedReplicas": 6})
    assert PYTORCH.replica_counts(job) == {"master": 1, "worker": 3, "node": 2}  # the kind's, not a rewritten spec
    assert [s.replicas for s in job.spec.replica_specs] == [1, 1, 1]  # as written
    worker = desired_pod(PYTORCH, job, "worker", 2)
    assert worker["spec"]["containers"][0]["args"][0] == "--nnodes=2:8"
    assert "PET_NODE_RANK" not in env(worker) and env(worker)["PET_NNODES"] == "2:8"
    weighted = pjob(("worker", 1), ("node", 1), torchrunConfig=TORCHRUN,
                    elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 10, "expectedReplicas": 4})
    weighted["spec"]["replicaSpecs"][1]["scalingWeight"] = 3
    assert PYTORCH.replica_counts(PYTORCH.parse(weighted)) == {"worker": 1, "node": 3}
    clamped = parsed(("worker", 1), torchrunConfig=TORCHRUN, elastic={"enabled": True, "maxReplicas": 3,
                                                                       "expectedReplicas": 9})
    assert PYTORCH.replica_counts(clamped) == {"worker": 3} and clamped.spec.bounds() == (3, 3)
    default = parsed(("worker", 4), torchrunConfig=TORCHRUN, elastic={"enabled": True, "minReplicas": 1,
                                                                       "maxReplicas": 6})
    assert PYTORCH.replica_counts(default) == {"worker": 4}  # expectedReplicas defaults to the written total


def test_elastic_without_torchrun_is_ignored_with_a_warning():
    job = parsed(("worker", 2), elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 4})
    assert PYTORCH.replica_counts(job) == {"worker": 2}
    assert env(desired_pod(PYTORCH, job, "worker", 1))["WORLD_SIZE"] == "2"
    assert PYTORCH.dependent_status(job, {}, {})["elastic"]["reason"] == "ElasticIgnored"
    assert "elastic" not in PYTORCH.dependent_status(parsed(("worker", 1)), {}, {})


def test_the_podgroups_min_member_is_min_replicas_in_elastic_mode():
    scheduler = {"t9kScheduler": {"queue": "q"}}
    elastic = parsed(("worker", 4), torchrunConfig=TORCHRUN, scheduler=scheduler,
                     elastic={"enabled": True, "minReplicas": 2, "maxReplicas": 4})
    assert desired_podgroup(PYTORCH, elastic)["spec"]["minMember"] == 2
    assert desired_podgroup(PYTORCH, parsed(("worker", 4), scheduler=scheduler))["spec"]["minMember"] == 4


def test_debug_skips_torchrun_but_keeps_the_environment_and_resume_uses_its_args():
    debug = parsed(("worker", 1), torchrunConfig=TORCHRUN, runMode={"debug": {"enabled": True}})
    container = desired_pod(PYTORCH, debug, "worker", 0, mode="debug")["spec"]["containers"][0]
    assert container["command"] == ["sleep", "inf"] and "args" not in container
    assert {e["name"] for e in container["env"]} >= {"PET_NNODES", "PET_RDZV_ENDPOINT", "MASTER_ADDR"}
    resume = parsed(("worker", 1), torchrunConfig=TORCHRUN, runMode={"pause": {"enabled": False, "resumeSpecs": [
        {"type": "worker", "command": ["ignored"], "args": ["train.py", "--resume"]}]}})
    container = desired_pod(PYTORCH, resume, "worker", 0, mode="resume")["spec"]["containers"][0]
    assert container["command"] == ["torchrun"] and container["args"][-2:] == ["train.py", "--resume"]


def test_exit_code_restart_judges_the_training_container():
    job = parsed(("worker", 1, pod("sidecar", "python")))
    rule = PYTORCH.restart_rule(job, "worker")
    assert rule.container == "python" and rule.limit == 3
    exit_code = parsed(("worker", 1)).spec.replica_specs[0].model_copy(update={"restart_policy": "ExitCode"})
    assert exit_code.restart_policy == "ExitCode"
    rule = PYTORCH.restart_rule(parsed(("worker", 1)), "worker")
    assert rule.container == "pytorch"


def test_success_by_the_master_and_failure_by_any_replica():
    job = parsed(("master", 1), ("worker", 2))
    ok = PYTORCH.verdict(job, {("master", 0): Outcome.SUCCEEDED, ("worker", 0): None, ("worker", 1): None})
    assert ok.phase == JobPhase.SUCCEEDED and "pj-master-0" in ok.message
    assert PYTORCH.verdict(job, {("master", 0): None, ("worker", 0): Outcome.SUCCEEDED}) is None
    failed = PYTORCH.verdict(job, {("master", 0): Outcome.SUCCEEDED, ("worker", 1): Outcome.FAILED})
    assert failed.phase == JobPhase.FAILED and "pj-worker-1" in failed.message  # failure wins a tie


@pytest.mark.parametrize(("replicas", "spec", "field"), [
    ((("master", 2), ("worker", 1)), {}, "spec.replicaSpecs[0].replicas"),
    ((("worker", 0),), {}, "spec.replicaSpecs"),
    ((("worker", 1),), {"elastic": {"enabled": True, "minReplicas": 3, "maxReplicas": 2}}, "spec.elastic"),
    ((("Worker", 1),), {}, "spec.replicaSpecs[0].type"),
    ((("worker", 1),), {"torchrunConfig": {"rdzvBackend": "zookeeper"}}, "spec.torchrunConfig.rdzvBackend"),
    ((("worker", 1),), {"torchrunConfig": {"procPerNode": "many"}}, "spec.torchrunConfig.procPerNode"),
])
def test_validation_names_the_field(replicas, spec, field):
    problems = PYTORCH.parse(pjob(*replicas, **spec))
    assert isinstance(problems, list) and field in [p.field for p in problems], problems


def test_the_checked_in_crd_is_up_to_date_with_short_name_and_columns():
    definition = crd.pytorch_crd()
    assert (crd.generic.MANIFEST_DIR / crd.FILE).read_text() == crd.manifests()[crd.FILE]
    assert definition["spec"]["names"]["shortNames"] == ["pj"]
    columns = definition["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"].upper() for c in columns if not c.get("priority")] == ["PHASE", "READY", "RESTARTS", "REASON",
                                                                           "AGE"]
    elastic = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "elastic"]
    for field in ("enabled", "minReplicas", "maxReplicas", "expectedReplicas"):
        assert elastic["properties"][field]["description"]
    assert yaml.safe_load(crd.manifests()[crd.FILE]) == definition


def test_every_container_of_a_torchrun_pod_gets_the_environment():
    job = parsed(("worker", 2, pod("pytorch", "sidecar", args=["train.py"])), torchrunConfig=TORCHRUN)
    worker = desired_pod(PYTORCH, job, "worker", 1)
    assert env(worker, 1)["PET_NODE_RANK"] == "1" and env(worker, 1) == env(worker, 0)


def test_a_torchrun_resume_that_skips_init_containers_drops_them_and_needs_none():
    resume = {"pause": {"enabled": False, "resumeSpecs": [
        {"type": "worker", "args": ["train.py", "--resume"], "skipInitContainer": True}]}}
    with_init = pod(args=["train.py"])
    with_init["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    for template in (with_init, pod(args=["train.py"])):
        job = parsed(("worker", 1, template), torchrunConfig=TORCHRUN, runMode=resume)
        made = desired_pod(PYTORCH, job, "worker", 0, mode="resume")["spec"]
        assert "initContainers" not in made and made["containers"][0]["args"][-1] == "--resume"
    assert "initContainers" in desired_pod(PYTORCH, parsed(("worker", 1, with_init), torchrunConfig=TORCHRUN),
                                           "worker", 0)["spec"]


def test_elastic_ignored_is_reported_whole_and_warned_once():
    from controller.jobs.decisions import plan as engine

    job = parsed(("worker", 2), elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4})
    report = {"type": "Warning", "reason": "ElasticIgnored",
              "note": "spec.elastic is ignored: elastic training needs torchrun (spec.torchrunConfig.enabled)"}
    assert PYTORCH.dependent_status(job, {}, {})["elastic"] == report
    first = engine.plan(PYTORCH, job, {}, [], "2024-01-01T00:00:00Z", dependents={})
    assert first.status["elastic"] == report
    assert [e for e in first.events if e.type == "Warning"] == [("Warning", "ElasticIgnored", report["note"])]


def test_the_status_records_each_types_template_hash_as_its_pods_are_annotated_with_it():
    # (edits.template_changes hashes the template with the kind's labels, as children/pods.py annotates the pods)
    from controller.jobs.decisions import plan as engine

    job = parsed(("master", 1), ("worker", 2))
    status = engine.plan(PYTORCH, job, {}, [], "2024-01-01T00:00:00Z").status
    for replica_type in ("master", "worker"):
        annotations = desired_pod(PYTORCH, job, replica_type, 0)["metadata"]["annotations"]
        [pod_hash] = [v for k, v in annotations.items() if k.endswith("/template-hash")]
        assert status["templateHashes"][replica_type] == pod_hash


def test_a_pod_without_a_pytorch_or_python_container_trains_in_its_first_one():
    """PyTorch's training container is the one named pytorch or python, else the pod's first (`any_container`):
    torchrun runs there, its port is read there, and ExitCode judges its exit code."""
    trainer = {"spec": {"containers": [
        {"name": "trainer", "image": "t:1", "args": ["train.py"], "ports": [{"name": "pytorchjob-port",
                                                                           "containerPort": 29500}]},
        {"name": "sidecar", "image": "s:1"}]}}
    job = parsed(("master", 1, trainer), ("worker", 1, trainer), torchrunConfig=TORCHRUN)
    first, sidecar = desired_pod(PYTORCH, job, "worker", 0)["spec"]["containers"]
    assert first["command"] == ["torchrun"]
    assert first["args"] == ["--nnodes=2", "--nproc_per_node=1", "--rdzv_backend=c10d",
                             "--rdzv_endpoint=pj-master-0:29500", "--rdzv_id=u-1", "train.py"]
    assert "command" not in sidecar and "args" not in sidecar
    assert PYTORCH.restart_rule(job, "worker").container == "trainer"
