"""MPIJob as a kind (controller/kinds/mpi): parsing and its problems named by MPIJob's own fields, the hostfile of
each MPI implementation, the launcher's environment (the user's values kept), the pods' host names and mounts, the
plan's start order by launcherCreationPolicy, the job's one Service and its dependents, the CRD, and admission of a
create and an edit."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from controller.jobs.children.pods import desired_pod
from controller.jobs.decisions.actions import CreateChild, CreatePod
from controller.jobs.decisions.plan import plan
from controller.jobs.schema import admission
from controller.kinds.mpi import environment
from controller.kinds.mpi.kind import MPIJOB
from controller.kinds.mpi.models import MPIJob

POD = {"spec": {"containers": [{"name": "mpi", "image": "mpioperator/mpi-pi:openmpi"}]}}
NOW = "2026-01-01T00:00:00Z"


def mpijob(name: str = "pi", workers: int = 2, **spec) -> dict:
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "MPIJob",
            "metadata": {"name": name, "namespace": "ns", "uid": "uid-1", "generation": 1},
            "spec": {"launcher": {"template": copy.deepcopy(POD)},
                     "worker": {"replicas": workers, "template": copy.deepcopy(POD)}, **spec}}


def parsed(obj: dict) -> MPIJob:
    job = MPIJOB.parse(obj)
    assert isinstance(job, MPIJob), job
    return job


def test_defaults_and_the_replicas_the_engine_runs():
    job = parsed(mpijob())
    assert MPIJOB.replica_counts(job) == {"launcher": 1, "worker": 2}
    spec = job.spec
    assert (spec.slots_per_worker, spec.mpi_implementation, spec.launcher_creation_policy, spec.run_launcher_as_worker,
            spec.ssh_auth_mount_path, spec.run_policy.backoff_limit, spec.clean_up_policy) == \
        (1, "OpenMPI", "WaitForWorkersReady", False, "/root/.ssh", 3, "Unfinished")
    assert [r.restart_policy for r in spec.replica_specs] == ["OnFailure", "OnFailure"]


@pytest.mark.parametrize(("change", "field"), [
    (lambda s: s["worker"]["template"]["spec"].update(containers=[]), "spec.worker.template.spec.containers"),
    (lambda s: s["launcher"]["template"]["spec"].update(containers=[]), "spec.launcher.template.spec.containers"),
    (lambda s: s["worker"].update(replicas=0), "spec.worker.replicas"),
    (lambda s: s["worker"].update(restartPolicy="ExitCode"), "spec.worker.restartPolicy"),
    (lambda s: s.update(mpiImplementation="LAM"), "spec.mpiImplementation"),
    (lambda s: s.update(slotsPerWorker=0), "spec.slotsPerWorker"),
    (lambda s: s.update(sshAuthMountPath="home/.ssh"), "spec.sshAuthMountPath"),
    (lambda s: s.update(runMode={"debug": {"enabled": True, "replicaSpecs": [{"type": "chief"}]}}),
     "spec.runMode.debug.replicaSpecs[0].type"),
])
def test_problems_name_mpijobs_own_fields(change, field):
    obj = mpijob()
    change(obj["spec"])
    problems = MPIJOB.parse(obj)
    assert isinstance(problems, list) and field in [p.field for p in problems], problems


def test_a_name_too_long_for_the_pods_host_names_is_refused():
    assert [p.field for p in MPIJOB.parse(mpijob("j" * 53))] == ["metadata.name"]
    parsed(mpijob("j" * 52))


@pytest.mark.parametrize(("implementation", "lines"), [
    ("OpenMPI", ["pi-worker-0.pi.ns.svc slots=4", "pi-worker-1.pi.ns.svc slots=4"]),
    ("MPICH", ["pi-worker-0.pi.ns.svc:4", "pi-worker-1.pi.ns.svc:4"]),
    ("Intel", ["pi-worker-0.pi.ns.svc:4", "pi-worker-1.pi.ns.svc:4"]),
])
def test_the_hostfile_of_each_implementation(implementation, lines):
    job = parsed(mpijob(slotsPerWorker=4, mpiImplementation=implementation))
    assert environment.hostfile(job).splitlines() == lines


def test_a_launcher_that_runs_as_a_worker_is_the_first_host():
    job = parsed(mpijob(workers=1, runLauncherAsWorker=True))
    assert environment.hostfile(job) == "pi-launcher-0.pi.ns.svc slots=1\npi-worker-0.pi.ns.svc slots=1\n"


@pytest.mark.parametrize(("implementation", "expected"), [
    ("OpenMPI", {"OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
                 "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10", "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
                 "OMPI_MCA_orte_set_default_slots": "2", "PRTE_MCA_prte_default_hostfile": "/etc/mpi/hostfile",
                 "PRTE_MCA_plm_ssh_args": "-o ConnectionAttempts=10", "PRTE_MCA_prte_keep_fqdn_hostnames": "true"}),
    ("MPICH", {"HYDRA_HOST_FILE": "/etc/mpi/hostfile"}),
    ("Intel", {"I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile",
               "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": "-o ConnectionAttempts=10"}),
])
def test_the_launchers_environment_of_each_implementation(implementation, expected):
    job = parsed(mpijob(slotsPerWorker=2, mpiImplementation=implementation))
    launcher = desired_pod(MPIJOB, job, "launcher", 0)
    env = {e["name"]: e["value"] for e in launcher["spec"]["containers"][0]["env"]}
    assert env == {"K_MPI_JOB_ROLE": "launcher", "PYTHONUNBUFFERED": "1", **expected}
    worker = desired_pod(MPIJOB, job, "worker", 1)
    assert {e["name"]: e["value"] for e in worker["spec"]["containers"][0]["env"]} == {
        "K_MPI_JOB_ROLE": "worker", "PYTHONUNBUFFERED": "1"}


def test_a_value_the_user_set_is_left_alone():
    obj = mpijob()
    obj["spec"]["launcher"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-p 2222"}]
    launcher = desired_pod(MPIJOB, parsed(obj), "launcher", 0)
    env = launcher["spec"]["containers"][0]["env"]
    assert [e["value"] for e in env if e["name"] == "OMPI_MCA_plm_rsh_args"] == ["-p 2222"]


def test_every_pod_has_its_host_name_the_keys_and_the_launcher_the_hostfile():
    job = parsed(mpijob(sshAuthMountPath="/home/mpiuser/.ssh"))
    for replica_type, rank in (("launcher", 0), ("worker", 1)):
        pod = desired_pod(MPIJOB, job, replica_type, rank)
        name = f"pi-{replica_type}-{rank}"
        assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (name, "pi")
        secret = next(v for v in pod["spec"]["volumes"] if v["name"] == environment.SSH_VOLUME)["secret"]
        assert secret["secretName"] == "pi-ssh" and secret["defaultMode"] == 0o600
        mounts = {m["mountPath"]: m for m in pod["spec"]["containers"][0]["volumeMounts"]}
        assert mounts["/home/mpiuser/.ssh"]["readOnly"] is True
        assert ("/etc/mpi" in mounts) == (replica_type == "launcher")


def test_the_plan_holds_the_launcher_back_unless_at_startup():
    job = parsed(mpijob())
    first = plan(MPIJOB, job, {}, [], NOW, services=[], dependents={
        environment.CONFIGMAPS: [], environment.SECRETS: []})
    assert first.create == [CreatePod("worker", 0, "immediate"), CreatePod("worker", 1, "immediate")]
    assert [(a.resource, a.name) for a in first.services] == [("services", "pi")]  # the job's one Service
    made = {a.resource: a.body for a in first.dependents if isinstance(a, CreateChild)}
    assert made["configmaps"]["data"]["hostfile"] == environment.hostfile(job)
    secret = made["secrets"]
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert base64.b64decode(secret["data"]["authorized_keys"]).startswith(b"ssh-ed25519 ")
    early = plan(MPIJOB, parsed(mpijob(launcherCreationPolicy="AtStartup")), {}, [], NOW)
    assert CreatePod("launcher", 0, "immediate") in early.create


def test_discover_hosts_names_only_the_workers_running_and_the_hostfile_every_one():
    job = parsed(mpijob(workers=3))
    pods = [{"metadata": {"name": f"pi-worker-{rank}", "namespace": "ns", "uid": f"w{rank}",
                          "labels": {MPIJOB.api.type_label: "worker", MPIJOB.api.rank_label: str(rank)},
                          "ownerReferences": [{"uid": "uid-1", "controller": True}]},
             "status": {"phase": phase}} for rank, phase in enumerate(["Running", "Pending", "Running"])]
    config = {environment.CONFIGMAPS: [], environment.SECRETS: []}
    made = plan(MPIJOB, job, plan(MPIJOB, job, {}, [], NOW, dependents=config).status, pods, NOW, dependents=config)
    [body] = [a.body for a in made.dependents if isinstance(a, CreateChild) and a.resource == "configmaps"]
    discovered = body["data"]["discover_hosts.sh"].splitlines()
    assert discovered == ["#!/bin/sh", "echo pi-worker-0.pi.ns.svc:1", "echo pi-worker-2.pi.ns.svc:1"]
    assert len(body["data"]["hostfile"].splitlines()) == 3


def test_under_never_a_lost_worker_is_final_and_the_job_fails_saying_which_and_why():
    job = parsed(mpijob(workers=2, worker={"replicas": 2, "template": copy.deepcopy(POD), "restartPolicy": "Never"}))
    pods = [{"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}",
                          "labels": {MPIJOB.api.type_label: t, MPIJOB.api.rank_label: "0" if t == "launcher" else n}},
             "status": {"phase": "Running"}}
            for name, t, n in [("pi-launcher-0", "launcher", "0"), ("pi-worker-0", "worker", "0"),
                               ("pi-worker-1", "worker", "1")]]
    running = plan(MPIJOB, job, plan(MPIJOB, job, {}, [], NOW).status, pods, NOW).status
    lost = plan(MPIJOB, job, running, pods[:2], NOW)  # worker-1's pod deleted by someone (or its node lost)
    assert lost.status["phase"] == "Failed" and lost.status["reason"] == "ReplicaFailed"
    failed = next(c for c in lost.status["conditions"] if c["type"] == "Failed")
    assert "pi-worker-1" in failed["message"] and "Never" in failed["message"], failed["message"]
    assert not any(isinstance(c, CreatePod) for c in lost.create)


def test_the_crd_prints_as_the_other_kinds_and_fits_a_client_side_apply():
    crd = MPIJOB.crd()
    version = crd["spec"]["versions"][0]
    assert crd["spec"]["names"]["shortNames"] == ["mj"]
    assert [c["name"] for c in version["additionalPrinterColumns"]][:5] == ["Phase", "Ready", "Restarts", "Reason",
                                                                           "Age"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert spec["worker"]["properties"]["replicas"]["minimum"] == 1
    assert spec["mpiImplementation"]["enum"] == ["OpenMPI", "MPICH", "Intel"]
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert "groupRestart" in status
    # Two pod templates (the launcher's and the workers'): within the 256 KiB of a last-applied annotation.
    assert len(json.dumps(crd, separators=(",", ":"))) < 192 * 1024


# --- admission: the webhook's decision on a create and an edit ---------------------------------------------


def review(operation: str, obj: dict, old: dict | None = None) -> dict:
    body = {"uid": "review-1", "kind": {"group": "batch.tensorstack.dev", "version": "v1beta1", "kind": "MPIJob"},
            "resource": {"group": "batch.tensorstack.dev", "version": "v1beta1", "resource": "mpijobs"},
            "name": obj["metadata"]["name"], "namespace": "ns", "operation": operation, "object": obj,
            "oldObject": old, "dryRun": False}
    return admission.review(MPIJOB, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                     "request": body})["response"]


def test_a_create_is_admitted_or_refused_naming_the_field():
    assert review("CREATE", mpijob())["allowed"] is True
    bad = mpijob()
    bad["spec"]["worker"]["replicas"] = 0
    refused = review("CREATE", bad)
    assert refused["allowed"] is False and refused["status"]["message"].startswith("spec.worker.replicas:")


def test_an_edit_that_scales_is_admitted_and_one_that_breaks_the_spec_refused():
    old = {**mpijob(), "status": {"phase": "Running", "tasks": [{"type": "launcher"}, {"type": "worker"}]}}
    scaled = copy.deepcopy(old)
    scaled["spec"]["worker"]["replicas"] = 5
    scaled["metadata"]["generation"] = 2
    assert review("UPDATE", scaled, old)["allowed"] is True
    broken = copy.deepcopy(scaled)
    broken["spec"]["launcher"]["restartPolicy"] = "Always"
    refused = review("UPDATE", broken, old)
    assert refused["allowed"] is False and "spec.launcher.restartPolicy" in refused["status"]["message"]


def test_the_keys_are_made_once_per_job_and_the_launcher_names_the_success():
    job = parsed(mpijob())
    first, again = environment.ssh_secret(job, MPIJOB.api), environment.ssh_secret(job, MPIJOB.api)
    assert first == again  # a plan of the same job asks for the same Secret: replanning changes nothing
    other = parsed({**mpijob(), "metadata": {**mpijob()["metadata"], "uid": "uid-2"}})
    assert environment.ssh_secret(other, MPIJOB.api)["data"] != first["data"]  # a new job, new keys
    verdict = MPIJOB.verdict(job, {("launcher", 0): "Succeeded", ("worker", 0): None, ("worker", 1): None})
    assert verdict is not None and verdict.message == "The launcher pi-launcher-0 has succeeded."


# --- the group restart counted once, however it is seen (the engine's model found each) -----------------------------


def mpi_pods(phases: dict[str, str]) -> list[dict]:
    return [{"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}",
                          "labels": {MPIJOB.api.type_label: name.split("-")[1], MPIJOB.api.rank_label: name[-1]}},
             "status": {"phase": phase}} for name, phase in phases.items()]


def running_status(job: MPIJob, workers: int) -> dict:
    up = mpi_pods({"pi-launcher-0": "Running", **{f"pi-worker-{r}": "Running" for r in range(workers)}})
    return plan(MPIJOB, job, plan(MPIJOB, job, {}, [], NOW).status, up, NOW).status


def test_a_group_failing_together_is_judged_against_the_budget_before_it_draws_on_it():
    job = parsed(mpijob(workers=2, runPolicy={"backoffLimit": 1}))
    failed = plan(MPIJOB, job, running_status(job, 2), mpi_pods(
        {"pi-launcher-0": "Failed", "pi-worker-0": "Failed", "pi-worker-1": "Failed"}), NOW)
    assert failed.status["phase"] not in ("Failed", "Succeeded"), failed.status.get("conditions")
    assert failed.status["backoffCount"] == 1


def test_a_group_failing_as_the_job_is_paused_counts_once():
    job = parsed(mpijob(workers=2, runMode={"pause": {"enabled": True}}))
    paused = plan(MPIJOB, job, running_status(parsed(mpijob(workers=2)), 2), mpi_pods(
        {"pi-launcher-0": "Running", "pi-worker-0": "Failed", "pi-worker-1": "Failed"}), NOW)
    assert paused.status["phase"] == "Paused" and paused.status["backoffCount"] == 1


def test_a_rank_scaled_away_failing_with_its_group_counts_with_the_group():
    job = parsed(mpijob(workers=1))
    scaled = plan(MPIJOB, job, running_status(parsed(mpijob(workers=2)), 2), mpi_pods(
        {"pi-launcher-0": "Running", "pi-worker-0": "Failed", "pi-worker-1": "Failed"}), NOW)
    assert scaled.status["backoffCount"] == 1
