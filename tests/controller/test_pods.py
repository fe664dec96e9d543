"""desired_pod and desired_podgroup as pure functions, and what they make is accepted by the API."""

from __future__ import annotations

import copy

import pytest

from controller.jobs.children.podgroup import (
    API_VERSION as PODGROUP_API_VERSION,
)
from controller.jobs.children.podgroup import (
    GROUP_NAME_KEY,
    SCHEDULER_NAME,
    desired_podgroup,
)
from controller.jobs.children.pods import PodMode, desired_pod, run_mode_override, template_hash
from controller.jobs.schema.api import SchedulePolicy, T9kScheduler
from controller.jobs.schema.naming import owner_reference
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import LABEL_JOB_NAME, LABEL_JOB_UID, LABEL_RANK, LABEL_REPLICA_TYPE, GenericJob
from controller.kinds.genericjob.substitution import SubstitutionError
from controller.kinds.genericjob.validation import validate
from localcluster import LocalCluster
from tests.builders import JobBuilder

GUIDE_CONTAINER = {"command": ["sleep", "365"], "image": "nginx:latest", "name": "sleep"}

RUN_MODE = "genericjob.batch.tensorstack.dev/run-mode"  # the annotation of the mode a pod was made in
TEMPLATE_HASH = "genericjob.batch.tensorstack.dev/template-hash"  # and of the template it was made from


def make_job(spec: dict, name: str = "generic-example") -> GenericJob:
    return JobBuilder(name, namespace="ns", uid="uid-1", generation=2).spec(**spec).model()


def with_t9k_scheduler(job: GenericJob, queue: str = "default", priority: int = 50) -> GenericJob:
    # Built in Python, not from JSON: models.py parses `t9KScheduler`, not `t9kScheduler` (see test_crd).
    scheduler = SchedulePolicy(t9k_scheduler=T9kScheduler(queue=queue, priority=priority))
    return job.model_copy(update={"spec": job.spec.model_copy(update={"scheduler": scheduler})})


def worker_job(template_spec: dict | None = None, replicas: int = 4, **spec) -> GenericJob:
    template = {"spec": template_spec or {"containers": [dict(GUIDE_CONTAINER)]}}
    return make_job({"replicaSpecs": [{"type": "worker", "replicas": replicas, "template": template}], **spec})


def debugged_job(run_mode: dict) -> GenericJob:
    return worker_job({
        "initContainers": [{"name": "init", "image": "busybox", "command": ["prepare", "$(rank)"]}],
        "containers": [{"name": "main", "image": "trainer", "command": ["train"], "args": ["--rank", "$(rank)"]},
                       {"name": "sidecar", "image": "logger", "args": ["--follow"]}],
    }, runMode=run_mode)


# --- immediate mode ---------------------------------------------------------------------------


def test_the_user_guides_first_example():
    job = make_job({"successRules": [{"worker": [0]}], "failureRules": [{"worker": [0]}, {"worker": [1]}],
                    "replicaSpecs": [{"type": "worker", "replicas": 4,
                                      "template": {"spec": {"containers": [GUIDE_CONTAINER]}}}]})
    pods = [desired_pod(GENERICJOB, job, "worker", rank, mode="immediate") for rank in range(4)]
    assert [p["metadata"]["name"] for p in pods] == [f"generic-example-worker-{r}" for r in range(4)]
    assert pods[2] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "generic-example-worker-2",
            "namespace": "ns",
            "labels": {LABEL_JOB_NAME: "generic-example", LABEL_JOB_UID: "uid-1", LABEL_REPLICA_TYPE: "worker",
                       LABEL_RANK: "2"},
            "ownerReferences": [owner_reference(GENERICJOB.api, "generic-example", "uid-1")],
            # The mode and the template the pod was made from.
            "annotations": {RUN_MODE: "immediate",
                            TEMPLATE_HASH: template_hash({"spec": {"containers": [GUIDE_CONTAINER]}})},
        },
        "spec": {"containers": [GUIDE_CONTAINER], "restartPolicy": "Never"},
    }
    ref = pods[0]["metadata"]["ownerReferences"][0]
    assert ref["controller"] is True and ref["blockOwnerDeletion"] is True and ref["kind"] == "GenericJob"


def test_restart_policy_is_always_never():
    # The controller replaces finished pods itself, whatever the template or the replica's policy says.
    for policy in ("Always", "OnFailure", "Never"):
        job = make_job({"replicaSpecs": [{
            "type": "worker", "restartPolicy": {"policy": policy, "limit": 3},
            "template": {"spec": {"containers": [GUIDE_CONTAINER], "restartPolicy": policy}}}]})
        assert desired_pod(GENERICJOB, job, "worker", 0)["spec"]["restartPolicy"] == "Never"


def test_every_template_field_passes_through():
    """The guide's resources, shared-memory and env examples, plus fields the controller never reads."""
    template_spec = {
        "containers": [{
            "name": "main", "image": "trainer",
            "resources": {"limits": {"cpu": 4, "memory": "4Gi"}, "requests": {"cpu": 2, "memory": "2Gi"}},
            "volumeMounts": [{"mountPath": "/dev/shm", "name": "dshm"}],
            "env": [{"name": "ENV_DIRECT", "value": "env-value"},
                    {"name": "ENV_REFERENCED", "valueFrom": {"secretKeyRef": {"name": "secret-name",
                                                                             "key": "key-in-secret"}}}],
            "ports": [{"containerPort": 2222}],
        }],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}],
        "hostname": "custom-host", "subdomain": "custom-subdomain",
        "nodeSelector": {"gpu": "a100"}, "tolerations": [{"key": "k", "operator": "Exists"}],
        "schedulerName": "my-scheduler", "serviceAccountName": "trainer", "priorityClassName": "high",
    }
    pod = desired_pod(GENERICJOB, worker_job(template_spec), "worker", 1)
    assert pod["spec"] == {**template_spec, "restartPolicy": "Never"}


def test_template_metadata_is_merged_and_controller_labels_win():
    job = make_job({"replicaSpecs": [{"type": "worker", "template": {
        "metadata": {"name": "ignored", "namespace": "ignored", "generateName": "ignored-",
                     "labels": {"team": "ml", LABEL_RANK: "99"}, "annotations": {"note": "keep"},
                     "finalizers": ["example.com/keep"]},
        "spec": {"containers": [GUIDE_CONTAINER]}}}]})
    meta = desired_pod(GENERICJOB, job, "worker", 0)["metadata"]
    assert meta["name"] == "generic-example-worker-0" and meta["namespace"] == "ns"
    assert "generateName" not in meta
    assert meta["labels"] == {"team": "ml", LABEL_JOB_NAME: "generic-example", LABEL_JOB_UID: "uid-1",
                              LABEL_REPLICA_TYPE: "worker", LABEL_RANK: "0"}
    assert meta["annotations"] == {"note": "keep", RUN_MODE: "immediate",
                                   TEMPLATE_HASH: template_hash(job.spec.replica("worker").template)}
    assert meta["finalizers"] == ["example.com/keep"]


def test_the_model_is_never_mutated():
    job = debugged_job({"debug": {"enabled": True, "replicaSpecs": [{"type": "worker", "skipInitContainer": True}]}})
    before = job.model_dump()
    for mode in PodMode:
        pod = desired_pod(GENERICJOB, job, "worker", 3, mode=mode)
        pod["spec"]["containers"][0]["env"] = ["mutated"]
        pod["metadata"]["labels"]["x"] = "y"
    assert job.model_dump() == before
    again = desired_pod(GENERICJOB, job, "worker", 3)
    assert "env" not in again["spec"]["containers"][0] and "x" not in again["metadata"]["labels"]


def test_two_replica_types_get_their_own_templates_and_variables():
    job = make_job({"replicaSpecs": [
        {"type": "master", "template": {"spec": {"containers": [{"name": "m", "image": "m", "args": ["$(type)"]}]}}},
        {"type": "worker", "replicas": 2, "template": {"spec": {"containers": [
            {"name": "w", "image": "w", "args": ["$(type)-$(rank)-of-$(replicas[worker])"]}]}}},
    ]})
    assert desired_pod(GENERICJOB, job, "master", 0)["spec"]["containers"][0]["args"] == ["master"]
    assert desired_pod(GENERICJOB, job, "worker", 1)["spec"]["containers"][0]["args"] == ["worker-1-of-2"]


def test_unknown_type_and_unknown_mode_are_caller_errors():
    with pytest.raises(KeyError, match='replica type "ps"'):
        desired_pod(GENERICJOB, worker_job(), "ps", 0)
    with pytest.raises(ValueError, match="unknown pod mode"):
        desired_pod(GENERICJOB, worker_job(), "worker", 0, mode="sideways")


def test_unresolvable_variables_raise():
    job = worker_job({"containers": [{"name": "c", "image": "i", "args": ["$(service.port[http])"]}]})
    with pytest.raises(SubstitutionError) as caught:
        desired_pod(GENERICJOB, job, "worker", 0)
    assert caught.value.field == "spec.replicaSpecs[0].template.spec.containers[0].args[0]"


def test_a_template_without_spec_still_gives_a_pod_object():
    # validate() reports it; desired_pod must not crash on it.
    job = make_job({"replicaSpecs": [{"type": "worker", "template": {}}]})
    assert desired_pod(GENERICJOB, job, "worker", 0)["spec"] == {"restartPolicy": "Never"}


# --- debug mode -------------------------------------------------------------------------------


def test_debug_defaults_sleep_inf_for_every_container_and_keeps_init_containers():
    """The guide's debug example 2: `enabled: true` alone."""
    pod = desired_pod(GENERICJOB, debugged_job({"debug": {"enabled": True}}), "worker", 1, mode=PodMode.DEBUG)
    spec = pod["spec"]
    assert [c["command"] for c in spec["containers"]] == [["sleep", "inf"], ["sleep", "inf"]]
    assert all("args" not in c for c in spec["containers"])
    assert spec["initContainers"] == [{"name": "init", "image": "busybox", "command": ["prepare", "1"]}]
    assert [c["image"] for c in spec["containers"]] == ["trainer", "logger"]


def test_debug_replica_spec_command_and_skip_init_container():
    """The guide's debug example 1: worker skips its init containers and runs /usr/bin/sshd."""
    job = debugged_job({"debug": {"enabled": True, "replicaSpecs": [
        {"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}]}})
    spec = desired_pod(GENERICJOB, job, "worker", 0, mode="debug")["spec"]
    assert "initContainers" not in spec
    assert [c["command"] for c in spec["containers"]] == [["/usr/bin/sshd"], ["/usr/bin/sshd"]]
    assert all("args" not in c for c in spec["containers"])


def test_debug_entry_for_another_type_leaves_the_default():
    job = make_job({"runMode": {"debug": {"enabled": True, "replicaSpecs": [{"type": "master", "command": ["x"]}]}},
                    "replicaSpecs": [{"type": "master", "template": {"spec": {"containers": [GUIDE_CONTAINER]}}},
                                     {"type": "worker", "template": {"spec": {"containers": [GUIDE_CONTAINER]}}}]})
    debug_pod = desired_pod(GENERICJOB, job, "worker", 0, mode="debug")
    assert debug_pod["spec"]["containers"][0]["command"] == ["sleep", "inf"]
    assert desired_pod(GENERICJOB, job, "master", 0, mode="debug")["spec"]["containers"][0]["command"] == ["x"]


def test_debug_command_gets_variables_too():
    job = debugged_job({"debug": {"enabled": True, "replicaSpecs": [
        {"type": "worker", "command": ["sh", "-c", "echo $(type) $(rank); sleep inf"]}]}})
    assert desired_pod(GENERICJOB, job, "worker", 2, mode="debug")["spec"]["containers"][0]["command"] == [
        "sh", "-c", "echo worker 2; sleep inf"]


# --- resume mode ------------------------------------------------------------------------------


def test_resume_without_resume_specs_is_the_template():
    """The guide's pause example 2: resuming uses the template's commands."""
    job = debugged_job({"pause": {"enabled": False}})
    resumed = desired_pod(GENERICJOB, job, "worker", 1, mode="resume")
    immediate = desired_pod(GENERICJOB, job, "worker", 1, mode="immediate")
    assert resumed["metadata"]["annotations"].pop(RUN_MODE) == "resume"  # the one difference: the mode it says
    assert immediate["metadata"]["annotations"].pop(RUN_MODE) == "immediate"
    assert resumed == immediate
    assert run_mode_override(job, "worker", "resume") is None


def test_resume_spec_command_and_skip_init_container():
    """The guide's pause example 1: worker resumes with /usr/bin/sshd, no init containers."""
    job = debugged_job({"pause": {"enabled": False, "resumeSpecs": [
        {"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}]}})
    spec = desired_pod(GENERICJOB, job, "worker", 1, mode="resume")["spec"]
    assert "initContainers" not in spec
    assert [c["command"] for c in spec["containers"]] == [["/usr/bin/sshd"], ["/usr/bin/sshd"]]
    assert [c.get("args") for c in spec["containers"]] == [["--rank", "1"], ["--follow"]]  # args kept


def test_resume_spec_args_only():
    job = debugged_job({"pause": {"enabled": False, "resumeSpecs": [{"type": "worker", "args": ["--resume"]}]}})
    spec = desired_pod(GENERICJOB, job, "worker", 0, mode="resume")["spec"]
    assert [c.get("command") for c in spec["containers"]] == [["train"], None]
    assert [c["args"] for c in spec["containers"]] == [["--resume"], ["--resume"]]
    assert spec["initContainers"][0]["command"] == ["prepare", "0"]


def test_resume_spec_command_and_args_with_variables():
    job = debugged_job({"pause": {"enabled": True, "resumeSpecs": [
        {"type": "worker", "command": ["train", "--resume"], "args": ["--rank=$(rank)"]}]}})
    spec = desired_pod(GENERICJOB, job, "worker", 3, mode="resume")["spec"]
    assert spec["containers"][0]["command"] == ["train", "--resume"]
    assert spec["containers"][0]["args"] == ["--rank=3"]


def test_override_variable_errors_name_the_override_field():
    job = debugged_job({"pause": {"resumeSpecs": [{"type": "worker", "args": ["$(replicas[ps])"]}]}})
    with pytest.raises(SubstitutionError) as caught:
        desired_pod(GENERICJOB, job, "worker", 0, mode="resume")
    assert caught.value.field == "spec.runMode.pause.resumeSpecs[0].args[0]"


# --- T9k Scheduler ----------------------------------------------------------------------------


def test_t9k_scheduler_sets_scheduler_name_label_and_annotation():
    job = with_t9k_scheduler(worker_job({"containers": [GUIDE_CONTAINER], "schedulerName": "other"}))
    pod = desired_pod(GENERICJOB, job, "worker", 0)
    assert pod["spec"]["schedulerName"] == SCHEDULER_NAME == "t9k-scheduler"
    assert pod["metadata"]["labels"][GROUP_NAME_KEY] == "generic-example"
    assert pod["metadata"]["annotations"] == {GROUP_NAME_KEY: "generic-example", RUN_MODE: "immediate",
                                              TEMPLATE_HASH: template_hash(job.spec.replica("worker").template)}
    assert GROUP_NAME_KEY == "scheduler.tensorstack.dev/group-name"


def test_without_a_scheduler_pods_use_the_templates_scheduler():
    pod = desired_pod(GENERICJOB, worker_job(), "worker", 0)
    assert "schedulerName" not in pod["spec"] and GROUP_NAME_KEY not in pod["metadata"]["labels"]
    assert desired_podgroup(GENERICJOB, worker_job()) is None
    assert desired_podgroup(GENERICJOB, worker_job(scheduler={})) is None


def test_desired_podgroup_of_the_guides_scheduler_example():
    job = make_job({"replicaSpecs": [
        {"type": "master", "template": {"spec": {"containers": [GUIDE_CONTAINER]}}},
        {"type": "worker", "replicas": 4, "template": {"spec": {"containers": [GUIDE_CONTAINER]}}},
    ]})
    assert desired_podgroup(GENERICJOB, with_t9k_scheduler(job, "default", 50)) == {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": "generic-example", "namespace": "ns",
                     "labels": {LABEL_JOB_NAME: "generic-example", LABEL_JOB_UID: "uid-1"},
                     "ownerReferences": [owner_reference(GENERICJOB.api, "generic-example", "uid-1")]},
        "spec": {"minMember": 5, "queue": "default", "priority": 50},
    }
    assert PODGROUP_API_VERSION == "scheduler.tensorstack.dev/v1beta1"


def test_priority_defaults_to_zero():
    scheduler = SchedulePolicy(t9k_scheduler=T9kScheduler(queue="q"))
    job = worker_job()
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"scheduler": scheduler})})
    assert desired_podgroup(GENERICJOB, job)["spec"] == {"minMember": 4, "queue": "q", "priority": 0}


# --- through the API --------------------------------------------------------------------------


async def test_desired_objects_are_accepted_by_the_api_server():
    spec = {"service": {"ports": [{"name": "http", "port": 2222}]},
            "runMode": {"debug": {"enabled": True, "replicaSpecs": [{"type": "worker", "skipInitContainer": True}]}},
            "replicaSpecs": [{"type": "worker", "replicas": 2, "template": {"spec": {
                "initContainers": [{"name": "init", "image": "busybox"}],
                "containers": [{"name": "main", "image": "trainer", "args": ["$(service.worker[1].host)"]}]}}}]}
    async with LocalCluster() as cluster:
        cluster.apply_crds("manifests/crds")
        jobs = cluster.registry.get("batch.tensorstack.dev", "v1beta1", "genericjobs")
        stored = cluster.api.create(jobs, "default", {"apiVersion": "batch.tensorstack.dev/v1beta1",
                                                       "kind": "GenericJob",
                                                       "metadata": {"name": "generic-example"}, "spec": spec})
        job = with_t9k_scheduler(GenericJob.from_object(stored))
        assert validate(job) == []
        pods = cluster.registry.get("", "v1", "pods")
        for mode in PodMode:
            for rank in range(2):
                pod = copy.deepcopy(desired_pod(GENERICJOB, job, "worker", rank, mode=mode))
                pod["metadata"]["name"] += f"-{mode}"
                created = cluster.api.create(pods, "default", pod)
                assert created["metadata"]["labels"][LABEL_RANK] == str(rank)
        podgroups = cluster.registry.get("scheduler.tensorstack.dev", "v1beta1", "podgroups")
        created = cluster.api.create(podgroups, "default", desired_podgroup(GENERICJOB, job))
        assert created["spec"] == {"minMember": 2, "queue": "default", "priority": 50}


def test_the_template_hash_follows_the_template_only():
    job = worker_job()
    edited = worker_job({"containers": [{**GUIDE_CONTAINER, "image": "other:2"}]})
    [first, second] = (desired_pod(GENERICJOB, job, "worker", rank)["metadata"]["annotations"][TEMPLATE_HASH]
                       for rank in (0, 1))
    assert first == second  # every rank's pod, one template
    assert desired_pod(GENERICJOB, edited, "worker", 0)["metadata"]["annotations"][TEMPLATE_HASH] != first
