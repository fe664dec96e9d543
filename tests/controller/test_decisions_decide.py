"""decide.py, the decisions' one door: what it adds to a job's plan (the names taken it still waits for and its
ChildConflict condition, the hold released, whether the status write confirms the cache or may wait for the pods
starting with it), decided from plan()'s inputs alone, with no reconciler."""

from __future__ import annotations

from dataclasses import dataclass

from controller.jobs.decisions import held
from controller.jobs.decisions.actions import (
    CreateChild,
    CreatePod,
    DeletePod,
    Event,
    ForceDeletePod,
    WriteFailure,
)
from controller.jobs.decisions.backoff import RestartBackoff, epoch
from controller.jobs.decisions.coalesce import may_wait, starts_only
from controller.jobs.decisions.conflicts import CHILD_CONFLICT, Conflict
from controller.jobs.decisions.decide import decide, plans_replicas
from controller.jobs.decisions.held import RELEASED, SPEC_INVALID
from controller.jobs.decisions.invalid import plan_invalid
from controller.jobs.decisions.job_conditions import find_condition
from controller.jobs.decisions.oversize import STATUS_TOO_LARGE
from controller.jobs.decisions.plan import plan as engine_plan
from controller.jobs.schema.naming import replica_name
from controller.kinds.genericjob.kind import GENERICJOB
from tests.builders import JobBuilder

from .plan_support import JOB, JOB_UID, at, make_pod

NOW = at(100)
TAKEN = Conflict(f"pod {replica_name(JOB, 'worker', 0)}", "GenericJob other")
GONE = Conflict(f"pod {replica_name(JOB, 'worker', 9)}", "no controller")


@dataclass(frozen=True)
class Problem:  # a kind's SpecProblem
    field: str
    message: str


def job_obj(workers: int = 2, status: dict | None = None, policy: str = "Never") -> dict:
    obj = JobBuilder(JOB, namespace="ns", uid=JOB_UID, generation=1).spec(replicaSpecs=[
        {"type": "worker", "replicas": workers, "restartPolicy": {"policy": policy, "limit": 3},
         "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}]).obj()
    return {**obj, "status": status or {}}


def decided(obj: dict, pods: list[dict] | None = None, **inputs):
    return decide(GENERICJOB, obj, GENERICJOB.parse(obj), pods or [], NOW, **inputs)


def test_a_taken_name_the_plan_still_creates_is_kept_and_shown_and_one_it_no_longer_creates_forgotten():
    the_plan = decided(job_obj(), taken=[TAKEN, GONE])
    assert the_plan.taken == (TAKEN,)
    condition = find_condition(the_plan.status["conditions"], CHILD_CONFLICT)
    assert condition is not None and condition["status"] == "True" and condition["reason"] == "NameTaken"
    assert TAKEN.what in condition["message"] and GONE.what not in condition["message"]


def test_once_no_name_is_taken_the_condition_says_so_and_a_job_that_never_met_one_has_none():
    shown = decided(job_obj(), taken=[TAKEN]).status
    freed = decided(job_obj(status=shown))
    condition = find_condition(freed.status["conditions"], CHILD_CONFLICT)
    assert condition is not None and condition["status"] == "False" and freed.taken == ()
    assert find_condition(decided(job_obj()).status["conditions"], CHILD_CONFLICT) is None


def test_a_job_that_cannot_run_waits_for_no_name():
    obj = job_obj()
    problems = [Problem("spec.replicaSpecs", "no")]
    the_plan = decide(GENERICJOB, obj, problems, [], NOW, taken=[TAKEN])
    assert the_plan.taken == () and the_plan.terminal
    assert find_condition(the_plan.status["conditions"], CHILD_CONFLICT) is None


def test_a_finished_jobs_conditions_are_not_touched_for_a_taken_name():
    status = {"phase": "Failed", "conditions": []}
    assert find_condition(decided(job_obj(status=status), taken=[TAKEN]).status["conditions"] or [],
                          CHILD_CONFLICT) is None


def test_the_status_confirms_the_cache_when_the_plan_sends_creates_and_not_for_creates_in_flight():
    obj = job_obj()
    assert decided(obj).confirm
    in_flight = frozenset(replica_name(JOB, "worker", rank) for rank in range(2))
    the_plan = decided(obj, creating=in_flight)
    assert the_plan.create and not the_plan.confirm


def test_a_hold_of_an_earlier_generation_is_released_with_one_event():
    on_hold = {"phase": "Running", "conditions": [{"type": SPEC_INVALID, "status": "True", "reason": "InvalidEdit",
                                                    "message": "m", "lastTransitionTime": at(0)}]}
    the_plan = decided(job_obj(status=on_hold))
    condition = find_condition(the_plan.status["conditions"], SPEC_INVALID)
    assert condition is not None and condition["status"] == "False" and condition["reason"] == RELEASED
    assert [e.reason for e in the_plan.events].count(RELEASED) == 1


def statuses_of_pods_starting() -> tuple[dict, list[dict]]:
    """A job's status recording both pods Pending, and its pods with the first one now Running."""
    created = decided(job_obj()).status
    pending = [make_pod("worker", rank, f"uid-{rank}", "Pending") for rank in range(2)]
    recorded = decided(job_obj(status=created), pending).status
    return recorded, [make_pod("worker", 0, "uid-0", "Running"), pending[1]]


def test_a_plan_that_only_reports_pods_starting_may_wait_and_not_after_a_refused_write():
    recorded, pods = statuses_of_pods_starting()
    the_plan = decided(job_obj(status=recorded), pods)
    assert the_plan.may_wait and starts_only(GENERICJOB, recorded, the_plan.status)
    refused = decided(job_obj(status=recorded), pods, write_failure=WriteFailure("FailedCreate", "no"))
    assert not refused.may_wait


def test_a_plan_that_records_a_pod_first_seen_or_creates_pods_is_written_at_once():
    created = decided(job_obj())
    assert not created.may_wait  # it creates pods
    pending = [make_pod("worker", rank, f"uid-{rank}", "Pending") for rank in range(2)]
    first_seen = decided(job_obj(status=created.status), pending)
    assert not first_seen.may_wait and not starts_only(GENERICJOB, created.status, first_seen.status)


def test_only_a_valid_job_not_failed_too_large_is_planned_from_its_replicas():
    job = GENERICJOB.parse(job_obj())
    assert plans_replicas(job, {})
    assert not plans_replicas([Problem("spec", "no")], {})
    too_large = {"phase": "Failed", "reason": STATUS_TOO_LARGE,
                 "conditions": [{"type": "Failed", "status": "True", "reason": STATUS_TOO_LARGE}]}
    assert not plans_replicas(job, too_large)


# --- decide() hands each path its inputs: equal to the plan made directly ------------------------------------


def same_plan(got, want) -> None:
    for field in ("status", "create", "delete", "events", "terminal", "podgroup", "services", "force_delete",
                  "dependents", "requeue_after"):
        assert getattr(got, field) == getattr(want, field), field


STUCK = {**make_pod("worker", 1, "uid-stuck", "Running"), "metadata": {
    **make_pod("worker", 1, "uid-stuck", "Running")["metadata"], "deletionTimestamp": at(0),
    "deletionGracePeriodSeconds": 0}}
SERVICE = {"metadata": {"name": "job-worker-0", "namespace": "ns", "uid": "svc-uid"}}
PODGROUP = {"metadata": {"name": "job", "namespace": "ns", "uid": "pg-uid"}}
CHILDREN = {"services": [SERVICE], "podgroups": [PODGROUP], "clock": epoch(NOW), "stuck_after": 30.0}


def test_a_held_edit_is_planned_with_every_input():
    running = decided(job_obj(), [make_pod("worker", 0, "uid-0", "Running")]).status
    running = {**running, "phase": "Running", "startTime": at(0)}
    obj = job_obj(status=running)
    obj["metadata"]["generation"] = 3
    pods = [make_pod("worker", 0, "uid-0", "Failed"), STUCK]
    problems = [Problem("spec.replicaSpecs[0].replicas", "must be positive")]
    got = decide(GENERICJOB, obj, problems, pods, NOW, **CHILDREN)
    want = held.plan_held(GENERICJOB, running, pods, GENERICJOB.invalid_spec_message(problems), 3, NOW,
                          deadline=None, **CHILDREN)
    same_plan(got, want)
    assert "generation 3" in got.status["conditions"][-1]["message"] and got.force_delete


def test_a_held_edit_past_the_raw_deadline_fails_the_job():
    running = {**decided(job_obj()).status, "phase": "Running", "startTime": at(0)}
    obj = job_obj(status=running)
    obj["spec"]["runPolicy"] = {"activeDeadlineSeconds": 5}
    problems = [Problem("spec.replicaSpecs[0].replicas", "must be positive")]
    got = decide(GENERICJOB, obj, problems, [], NOW, **CHILDREN)
    assert got.terminal and got.status["phase"] == "Failed"
    same_plan(got, held.plan_held(GENERICJOB, running, [], GENERICJOB.invalid_spec_message(problems), 1, NOW,
                                  deadline=5.0, **CHILDREN))


def test_a_new_invalid_job_is_failed_with_every_input():
    pods = [make_pod("worker", 0, "uid-0", "Running"), STUCK]
    problems = [Problem("spec.replicaSpecs", "no")]
    got = decide(GENERICJOB, job_obj(), problems, pods, NOW, **CHILDREN)
    same_plan(got, plan_invalid(GENERICJOB, {}, pods, GENERICJOB.invalid_spec_message(problems), NOW, **CHILDREN))
    assert got.delete and got.services and got.podgroup and got.force_delete


def test_a_job_failed_for_a_status_too_large_stays_so_with_every_input():
    status = {**decided(job_obj()).status, "phase": "Running"}
    failed = plan_invalid(GENERICJOB, status, [], "", NOW, reason=STATUS_TOO_LARGE).status
    pods = [make_pod("worker", 0, "uid-0", "Running"), STUCK]
    got = decided(job_obj(status=failed), pods, **CHILDREN)
    same_plan(got, plan_invalid(GENERICJOB, failed, pods, "", NOW, reason=STATUS_TOO_LARGE, **CHILDREN))
    assert got.terminal and got.delete and got.force_delete


def test_a_valid_job_is_planned_with_every_input():
    created = decided(job_obj(policy="OnFailure")).status
    recorded = decided(job_obj(status=created, policy="OnFailure"),
                       [make_pod("worker", r, f"uid-{r}", "Pending") for r in range(2)]).status
    backoff = RestartBackoff(10.0)
    restarted = decided(job_obj(status=recorded, policy="OnFailure"),
                        [make_pod("worker", 0, "uid-0", "Failed"), make_pod("worker", 1, "uid-1", "Pending")],
                        restart_backoff=backoff).status
    pods = [make_pod("worker", 1, "uid-1", "Pending")]  # the failed pod is gone: its replacement waits
    inputs = {"write_failure": WriteFailure("FailedCreate", "no"), "restart_backoff": backoff,
              "creating": frozenset({"job-worker-9"}), **CHILDREN}
    obj = job_obj(status=restarted, policy="OnFailure")
    got = decided(obj, pods, **inputs)
    same_plan(got, engine_plan(GENERICJOB, GENERICJOB.parse(obj), restarted, pods, NOW, **inputs))
    assert got.requeue_after is not None and not got.create  # the replacement waits for its back-off


def test_a_valid_jobs_dependents_are_planned():
    from controller.kinds.tensorflow.kind import TENSORFLOW

    obj = JobBuilder("tf", kind="TensorFlowTrainingJob", namespace="ns", uid="tf-uid", generation=1).spec(
        tensorboardSpec={"image": "tensorboard", "trainingLogFilesets": ["file:///logs"]},
        replicaSpecs=[{"type": "worker", "replicas": 1,
                       "template": {"spec": {"containers": [{"name": "tensorflow", "image": "busybox"}]}}}]).obj()
    dependents = {resource: [] for resource in (d.resource for d in TENSORFLOW.dependent_resources)}
    got = decide(TENSORFLOW, obj, TENSORFLOW.parse(obj), [], NOW, dependents=dependents)
    assert got.dependents == engine_plan(TENSORFLOW, TENSORFLOW.parse(obj), {}, [], NOW,
                                         dependents=dependents).dependents != []


def test_the_hold_released_names_the_generation_and_the_time():
    held_status = {"phase": "Running", "conditions": [{"type": SPEC_INVALID, "status": "True",
                                                        "reason": "InvalidEdit", "message": "m",
                                                        "lastTransitionTime": at(0)}]}
    obj = job_obj(status=held_status)
    obj["metadata"]["generation"] = 4
    condition = find_condition(decided(obj).status["conditions"], SPEC_INVALID)
    assert condition is not None and "Generation 4" in condition["message"]
    assert condition["lastTransitionTime"] == NOW


def test_the_child_conflict_condition_is_set_at_now():
    condition = find_condition(decided(job_obj(), taken=[TAKEN]).status["conditions"], CHILD_CONFLICT)
    assert condition is not None and condition["lastTransitionTime"] == NOW


def test_a_held_job_waits_for_no_name_and_says_so():
    """A job that cannot run creates nothing: its names taken are dropped, and the condition follows (the job is
    not finished: its conditions still change)."""
    shown = decided(job_obj(), taken=[TAKEN]).status
    on_hold = decide(GENERICJOB, job_obj(status=shown), [Problem("spec", "no")], [], NOW, taken=[TAKEN])
    condition = find_condition(on_hold.status["conditions"], CHILD_CONFLICT)
    assert on_hold.taken == () and condition is not None and condition["status"] == "False"


# --- may_wait, field by field; starts_only, case by case ------------------------------------------------------


def test_anything_besides_pods_starting_is_written_at_once():
    recorded, pods = statuses_of_pods_starting()
    starting = decided(job_obj(status=recorded), pods)
    assert may_wait(GENERICJOB, recorded, starting, failed_last=False)
    service = CreateChild("services", "s", {})
    for change in ({"confirm": True}, {"create": [CreatePod("worker", 0, "immediate")]},
                   {"delete": [DeletePod("p", "u", "restart")]}, {"force_delete": [ForceDeletePod("p", "u", 1.0)]},
                   {"events": [Event("Normal", "R", "m")]}, {"podgroup": [service]}, {"services": [service]},
                   {"dependents": [service]}, {"requeue_after": 1.0}):
        assert not may_wait(GENERICJOB, recorded, starting.but(**change), failed_last=False), change
    assert not may_wait(GENERICJOB, recorded, starting, failed_last=True)


def record(name: str, **fields) -> dict:
    return {"name": name, "uid": f"uid-{name}", "phase": "Pending", "containers": [], "restartCount": 0, **fields}


def tasks(*records: dict, **more) -> dict:
    return {"phase": "Pending", "tasks": [{"type": "worker", "restartCount": 0, "replicas": list(records)}], **more}


def test_starts_only_tells_a_start_from_any_other_change():
    a, b = record("job-worker-0"), record("job-worker-1")
    running = {"phase": "Running", "containers": [{"name": "main", "state": "running"}]}
    assert starts_only(GENERICJOB, tasks(a, b), tasks({**a, **running}, b))
    assert starts_only(GENERICJOB, tasks({**a, **running}), tasks({**a, **running, "ready": True}))  # Running on
    assert starts_only(GENERICJOB, tasks(a), tasks({**a, **running, "waiting": None}))
    assert not starts_only(GENERICJOB, tasks(a), tasks(a))  # nothing changed
    assert not starts_only(GENERICJOB, tasks(a), tasks(a, aggregate={"pending": 1}))  # a count alone
    assert not starts_only(GENERICJOB, tasks(a), tasks(a, b))  # a record added
    assert not starts_only(GENERICJOB, tasks(a), tasks({**a, **running}, reason="x"))  # another field too
    assert not starts_only(GENERICJOB, tasks(a, reason="x"), tasks({**a, **running}))  # one dropped
    assert not starts_only(GENERICJOB, tasks(a), tasks({**a, **running, "uid": ""}))  # no pod
    assert not starts_only(GENERICJOB, tasks(a), tasks({**a, "phase": "Succeeded"}))  # not a start
    assert not starts_only(GENERICJOB, tasks({**a, "phase": "Failed"}), tasks({**a, **running}))  # not from Pending
    assert not starts_only(GENERICJOB, tasks(a), tasks({**a, **running, "restartCount": 1}))  # a restart
    assert not starts_only(GENERICJOB, tasks(a), tasks({**a, **running, "lastRestartUid": "u"}))  # a field added
    assert not starts_only(GENERICJOB, tasks({**a, "lastRestartUid": "u"}), tasks({**a, **running}))  # one dropped


def test_a_finished_jobs_child_conflict_stays_as_it_was():
    shown = decided(job_obj(), taken=[TAKEN]).status
    finished = {**shown, "phase": "Failed"}
    condition = find_condition(decided(job_obj(status=finished)).status["conditions"], CHILD_CONFLICT)
    assert condition is not None and condition["status"] == "True"


def test_a_refusal_already_shown_still_writes_pods_starting_at_once():
    refused = WriteFailure("FailedCreate", "no")
    created = decided(job_obj(), write_failure=refused).status
    pending = [make_pod("worker", rank, f"uid-{rank}", "Pending") for rank in range(2)]
    recorded = decided(job_obj(status=created), pending, write_failure=refused).status
    starting = [make_pod("worker", 0, "uid-0", "Running"), pending[1]]
    assert not decided(job_obj(status=recorded), starting, write_failure=refused).may_wait
    assert decided(job_obj(status=recorded), starting).may_wait is False  # (its condition is cleared: a change)


def test_an_invalid_job_with_a_status_but_no_phase_keeps_it():
    status = {"observedGeneration": 1, "startTime": at(0)}
    problems = [Problem("spec", "no")]
    got = decide(GENERICJOB, job_obj(status=status), problems, [], NOW)
    same_plan(got, plan_invalid(GENERICJOB, status, [], GENERICJOB.invalid_spec_message(problems), NOW))
    assert got.status["startTime"] == at(0)


def test_the_smallest_status_too_large_is_finished_with_every_input():
    smallest = {"phase": "Failed", "reason": STATUS_TOO_LARGE}  # oversize.py's last fallback: no conditions
    pods = [make_pod("worker", 0, "uid-0", "Running"), STUCK]
    got = decided(job_obj(status=smallest), pods, **CHILDREN)
    same_plan(got, plan_invalid(GENERICJOB, smallest, pods, "", NOW, reason=STATUS_TOO_LARGE, **CHILDREN))
    assert got.terminal and got.status == smallest  # (kept as it is: the message and time are never written)


def test_a_start_clears_what_the_pod_waited_for():
    a = record("job-worker-0", waiting={"reason": "ContainerCreating", "message": "m"})
    assert starts_only(GENERICJOB, tasks(a), tasks({**a, "phase": "Running", "waiting": None}))
