"""Small factories for the planning tests: jobs, pods, and a fake pod store that applies plans."""

from __future__ import annotations

import itertools

from controller.jobs.children.pods import mode_annotation, pod_mode
from controller.jobs.decisions import plan as engine
from controller.jobs.decisions.actions import Plan
from controller.jobs.schema.naming import replica_labels, replica_name
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import GenericJob
from tests.builders import JobBuilder

from .status_checks import assert_well_formed, status_problems

JOB = "job"
JOB_UID = "job-uid"


def at(second: int) -> str:
    """A timestamp `second` seconds into the test's day."""
    return f"2024-01-01T00:{second // 60:02d}:{second % 60:02d}Z"


def make_job(*replicas: tuple, success=None, failure=None, cleanup="None", debug=False, pause=None) -> GenericJob:
    """replicas: (type, count[, policy[, limit]]) tuples."""
    specs = []
    for entry in replicas:
        replica_type, count, policy, limit = (*entry, *("", 1, "OnFailure", 0)[len(entry):])
        specs.append({"type": replica_type, "replicas": count, "restartPolicy": {"policy": policy, "limit": limit},
                      "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}})
    spec: dict = {"replicaSpecs": specs, "cleanUpPolicy": cleanup}
    if success is not None:
        spec["successRules"] = success
    if failure is not None:
        spec["failureRules"] = failure
    run_mode: dict = {}
    if debug:
        run_mode["debug"] = {"enabled": True}
    if pause is not None:
        run_mode["pause"] = {"enabled": pause}
    spec["runMode"] = run_mode
    return JobBuilder(JOB, namespace="ns", uid=JOB_UID, generation=1).spec(**spec).model()


def plan(job: GenericJob, status: dict, pods: list[dict], now: str) -> Plan:
    """The engine's plan of a GenericJob from its status and pods alone (no children, no clock)."""
    return engine.plan(GENERICJOB, job, status, pods, now)


def plan_invalid(status: dict, pods: list[dict], message: str, now: str) -> Plan:
    result = engine.plan_invalid(GENERICJOB, status, pods, message, now)
    if not status_problems(status or {}):  # (a test's hand-made status may lack fields the engine keeps as they are)
        assert_well_formed(result.status, status)
    return result


def make_pod(replica_type: str, rank: int, uid: str, phase: str | None = "Running", *, exit_code: int | None = None,
             terminating: bool = False, reason: str | None = None, container_reason: str | None = None,
             mode: str | None = None) -> dict:
    metadata = {"name": replica_name(JOB, replica_type, rank), "namespace": "ns", "uid": uid,
                "labels": replica_labels(GENERICJOB.api, JOB, JOB_UID, replica_type, rank)}
    if mode is not None:  # the run mode the pod was made in, as pods.make_pod annotates it
        metadata["annotations"] = {mode_annotation(GENERICJOB.api): mode}
    if terminating:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    status: dict = {}
    if phase is not None:
        status["phase"] = phase
    if reason:
        status["reason"] = reason
    if phase == "Running":
        status["containerStatuses"] = [{"name": "main", "state": {"running": {}}}]
    elif exit_code is not None or phase in ("Succeeded", "Failed"):
        code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
        terminated = {"exitCode": code, **({"reason": container_reason} if container_reason else {})}
        status["containerStatuses"] = [{"name": "main", "state": {"terminated": terminated}}]
    return {"metadata": metadata, "status": status}


class Pods:
    """The job's pods as the API server would hold them, changed by applying plans."""

    def __init__(self, *pods: dict):
        self.by_name: dict[str, dict] = {p["metadata"]["name"]: p for p in pods}
        self._uids = itertools.count(1)
        self.created: list[tuple[str, int, str]] = []

    def list(self) -> list[dict]:
        return list(self.by_name.values())

    def get(self, replica_type: str, rank: int) -> dict:
        return self.by_name[replica_name(JOB, replica_type, rank)]

    def uid(self, replica_type: str, rank: int) -> str:
        return self.get(replica_type, rank)["metadata"]["uid"]

    def set(self, replica_type: str, rank: int, phase: str, **kwargs) -> dict:
        existing = self.by_name.get(replica_name(JOB, replica_type, rank))
        mode = pod_mode(GENERICJOB.api, existing) if existing is not None else None
        pod = make_pod(replica_type, rank, self.uid(replica_type, rank), phase, mode=mode, **kwargs)
        self.by_name[pod["metadata"]["name"]] = pod
        return pod

    def set_all(self, phase: str) -> None:
        for pod in self.list():
            pod_type, rank = pod["metadata"]["labels"]["genericjob.batch.tensorstack.dev/replica-type"], int(
                pod["metadata"]["labels"]["genericjob.batch.tensorstack.dev/rank"])
            self.set(pod_type, rank, phase)

    def remove(self, replica_type: str, rank: int) -> None:
        del self.by_name[replica_name(JOB, replica_type, rank)]

    def apply(self, result: Plan, *, graceful: bool = False) -> None:
        """Deletes (immediate, or leaving the pod terminating when `graceful`), then creates (a
        create over an existing pod fails with AlreadyExists, as on a real API server)."""
        for name, uid, _ in result.delete:
            pod = self.by_name.get(name)
            if pod and pod["metadata"]["uid"] == uid:
                if graceful:
                    pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
                else:
                    del self.by_name[name]
        for replica_type, rank, mode in result.create:
            name = replica_name(JOB, replica_type, rank)
            if name not in self.by_name:
                self.by_name[name] = make_pod(replica_type, rank, f"{name}-u{next(self._uids)}", "Pending", mode=mode)
                self.created.append((replica_type, rank, mode))


def step(job: GenericJob, status: dict, pods: Pods, now: str, *, graceful: bool = False) -> Plan:
    """Plan, check the plan is a fixed point of itself, and apply it to the pods."""
    result = plan(job, status, pods.list(), now)
    assert_well_formed(result.status, status)  # (issue 45: what the status says, not only what it decides)
    assert_idempotent(job, result, pods.list(), now)
    pods.apply(result, graceful=graceful)
    return result


def assert_idempotent(job: GenericJob, result: Plan, pods: list[dict], now: str) -> None:
    """Planning again from the written status with the same pods (a crash before the pod actions,
    or a stale cache) changes nothing in the status, counts nothing and emits no event."""
    again = plan(job, result.status, pods, at(3599))
    assert again.status == result.status
    # Only scale-down deletes (pods with no record to remember them by) are announced again.
    assert again.events == [("Normal", "SuccessfulDelete", f"Deleted pod: {name}")
                            for name, _, reason in result.delete if reason == "scale-down"]
    assert again.terminal == result.terminal
    assert again.delete == result.delete
    assert again.create == result.create


def record(status: dict, replica_type: str, rank: int) -> dict:
    task = next(t for t in status["tasks"] if t["type"] == replica_type)
    return task["replicas"][rank]


def condition(status: dict, condition_type: str) -> dict:
    return next(c for c in status["conditions"] if c["type"] == condition_type)


def start(job, pods: Pods, *, until_running: bool = True) -> dict:
    """Create the job's pods and, unless told otherwise, run them all: returns the status."""
    status = step(job, {}, pods, at(0)).status
    status = step(job, status, pods, at(1)).status  # pods seen Pending
    if until_running:
        pods.set_all("Running")
        status = step(job, status, pods, at(2)).status
    return status


def restarts(result) -> list[str]:
    return [message for _, reason, message in result.events if reason == "Restarting"]


def finish_with(cleanup: str):
    """A job of three workers, one succeeded (the success rule), one failed, one still running."""
    job = make_job(("worker", 3, "Never"), success=[{"worker": [0]}], failure=[{"worker": [0]}], cleanup=cleanup)
    pods = Pods()
    status = start(job, pods)
    pods.set("worker", 1, "Failed")
    status = step(job, status, pods, at(5)).status
    pods.set("worker", 0, "Succeeded")
    return job, pods, status
