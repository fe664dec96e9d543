"""The engine's start order and group restart (decisions/group.py), for any kind that declares them: here a
GenericJob kind whose launcher waits for its workers and restarts with any of them, as an MPIJob's does.
Checked both ways: without the declarations the same sequences start everything at once and count each restart."""

from __future__ import annotations

from collections.abc import Mapping

from controller.jobs.decisions import plan as engine
from controller.jobs.decisions.actions import CreatePod, DeletePod
from controller.jobs.decisions.backoff import epoch, stamp
from controller.jobs.decisions.group import START_ORDER
from controller.jobs.decisions.run import GROUP_RESTART
from controller.kinds.genericjob.kind import GenericJobKind
from controller.kinds.genericjob.models import GenericJob
from tests.controller.plan_support import Pods, at, make_job, record


class Ordered(GenericJobKind):
    def start_after(self, job: GenericJob) -> Mapping[str, tuple[str, ...]]:
        return {"launcher": ("worker",)}


class Grouped(Ordered):
    def restart_together(self, job: GenericJob) -> Mapping[str, tuple[str, ...]]:
        # Read from the job, as a kind may (the engine must pass it): the group of a job that has a launcher.
        if "launcher" not in {spec.type for spec in job.spec.replica_specs}:
            return {}
        return {"worker": ("launcher",), "launcher": ()}


ORDERED, GROUPED, PLAIN = Ordered(), Grouped(), GenericJobKind()


def job(limit: int = 3) -> GenericJob:
    # A job-wide budget is the training kinds'; GenericJob's is per replica: `limit` each.
    return make_job(("worker", 2, "OnFailure", limit), ("launcher", 1, "OnFailure", limit))


def run(kind, the_job, status, pods: Pods, second: int):
    result = engine.plan(kind, the_job, status, pods.list(), at(second))
    pods.apply(result)
    return result


def ready(pods: Pods, replica_type: str, rank: int) -> None:
    pod = pods.set(replica_type, rank, "Running")
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]


def not_ready(pods: Pods, replica_type: str, rank: int) -> None:
    pod = pods.set(replica_type, rank, "Running")
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]


def test_the_launcher_waits_until_every_worker_is_ready_and_the_status_says_how_many_are():
    the_job, pods = job(), Pods()
    first = run(ORDERED, the_job, {}, pods, 1)
    assert first.create == [CreatePod("worker", 0, "immediate"), CreatePod("worker", 1, "immediate")]
    waiting = record(first.status, "launcher", 0)["waiting"]
    assert waiting["reason"] == START_ORDER and "0 of 2 worker replicas Ready" in waiting["message"]
    condition = next(c for c in first.status["conditions"] if c["type"] == "ReplicasWaiting")
    assert condition["status"] == "True" and condition["reason"] == START_ORDER
    assert [e for e in first.events if e[1] == START_ORDER] and not [e for e in first.events if e[0] == "Warning"]
    ready(pods, "worker", 0)
    not_ready(pods, "worker", 1)  # Running is not enough: Ready
    second = run(ORDERED, the_job, first.status, pods, 2)
    assert second.create == []
    assert "1 of 2 worker replicas Ready" in record(second.status, "launcher", 0)["waiting"]["message"]
    assert not [e for e in second.events if e[1] == START_ORDER]  # announced once
    ready(pods, "worker", 1)
    third = run(ORDERED, the_job, second.status, pods, 3)
    assert third.create == [CreatePod("launcher", 0, "immediate")]
    assert "waiting" not in record(third.status, "launcher", 0)


def test_without_a_start_order_every_pod_is_made_at_once():
    assert len(run(PLAIN, job(), {}, Pods(), 1).create) == 3


def started(kind) -> tuple[GenericJob, Pods, dict]:
    the_job, pods = job(), Pods()
    status = run(kind, the_job, {}, pods, 1).status
    ready(pods, "worker", 0)
    ready(pods, "worker", 1)
    status = run(kind, the_job, status, pods, 2).status
    ready(pods, "launcher", 0)
    return the_job, pods, run(kind, the_job, status, pods, 3).status


def test_a_failed_worker_restarts_the_group_counted_once_and_the_launcher_comes_back_after_the_workers():
    the_job, pods, status = started(GROUPED)
    launcher = pods.uid("launcher", 0)
    pods.set("worker", 1, "Failed")
    restart = run(GROUPED, the_job, status, pods, 4)
    assert DeletePod("job-launcher-0", launcher, "restart") in restart.delete
    assert record(restart.status, "worker", 1)["restartCount"] == 1
    assert record(restart.status, "launcher", 0)["restartCount"] == 0  # retired with the group, not counted
    assert restart.status["backoffCount"] == 1
    cause = restart.status[GROUP_RESTART]
    assert cause["replica"] == "job-worker-1" and "exited with code 1" in cause["message"]
    assert cause["time"] == stamp(epoch(at(4)))  # the moment of the group restart
    assert ("Normal", "GroupRestart", "Restarting job-launcher-0 with replica job-worker-1 (one restart of the job)") \
        in restart.events
    # The worker's replacement is made; the launcher waits for it to be Ready.
    again = run(GROUPED, the_job, restart.status, pods, 5)
    assert CreatePod("worker", 1, "immediate") in again.create and CreatePod("launcher", 0, "immediate") \
        not in again.create
    assert record(again.status, "launcher", 0)["waiting"]["reason"] == START_ORDER
    ready(pods, "worker", 1)
    back = run(GROUPED, the_job, again.status, pods, 6)
    assert back.create == [CreatePod("launcher", 0, "immediate")]
    assert back.status["backoffCount"] == 1 and back.status[GROUP_RESTART] == cause


def test_two_workers_failing_together_are_one_group_restart():
    the_job, pods, status = started(GROUPED)
    pods.set("worker", 0, "Failed")
    pods.set("worker", 1, "Failed")
    restart = run(GROUPED, the_job, status, pods, 4)
    assert restart.status["backoffCount"] == 1
    assert [record(restart.status, "worker", r)["restartCount"] for r in (0, 1)] == [1, 0]
    assert [e for e in restart.events if e[1] in ("Restarting", "GroupRestart")] == [
        ("Normal", "Restarting", "Restarting replica job-worker-0 (restart 1 of 3): pod exited with code 1"),
        ("Normal", "Restarting",
         "Restarting replica job-worker-1 with the group restart of job-worker-0 (not counted)"),
        ("Normal", "GroupRestart", "Restarting job-launcher-0 with replica job-worker-0 (one restart of the job)")]
    assert {d.name for d in restart.delete} == {"job-worker-0", "job-worker-1", "job-launcher-0"}
    # Without the declaration each worker counts its own restart and the launcher runs on.
    the_job, pods, status = started(ORDERED)
    pods.set("worker", 0, "Failed")
    pods.set("worker", 1, "Failed")
    alone = run(ORDERED, the_job, status, pods, 4)
    assert alone.status["backoffCount"] == 2 and "job-launcher-0" not in {d.name for d in alone.delete}
    assert GROUP_RESTART not in alone.status


def test_a_failed_launcher_restarts_alone_counted_once():
    the_job, pods, status = started(GROUPED)
    pods.set("launcher", 0, "Failed")
    restart = run(GROUPED, the_job, status, pods, 4)
    assert [d.name for d in restart.delete] == ["job-launcher-0"]
    assert restart.status["backoffCount"] == 1 and restart.status[GROUP_RESTART]["replica"] == "job-launcher-0"
    again = run(GROUPED, the_job, restart.status, pods, 5)
    assert again.create == [CreatePod("launcher", 0, "immediate")]  # its workers are still Ready


def test_replanning_a_group_restart_counts_nothing_more():
    the_job, pods, status = started(GROUPED)
    pods.set("worker", 1, "Failed")
    restart = engine.plan(GROUPED, the_job, status, pods.list(), at(4))
    again = engine.plan(GROUPED, the_job, restart.status, pods.list(), at(5))  # nothing applied yet (a crash)
    assert again.status["backoffCount"] == 1
    assert {d.name for d in again.delete} == {d.name for d in restart.delete}


class TakenOnly(Ordered):
    def restart_together(self, job: GenericJob) -> Mapping[str, tuple[str, ...]]:
        return {"worker": ("launcher",)}  # the launcher named only as taken: its own restart takes nothing


def test_a_type_named_only_as_taken_by_the_group_restarts_alone():
    taken_only = TakenOnly()
    the_job, pods, status = started(taken_only)
    worker = pods.uid("worker", 0)
    pods.set("launcher", 0, "Failed")
    restart = run(taken_only, the_job, status, pods, 4)
    assert [d.name for d in restart.delete] == ["job-launcher-0"] and restart.status["backoffCount"] == 1
    assert pods.uid("worker", 0) == worker


def test_the_group_restart_leaves_alone_a_pod_of_its_group_that_finished_or_is_going():
    # The launcher's pod succeeded (kept, its record Succeeded), or is being deleted by someone (not deleted again):
    # neither is retired by a worker's restart, nor named by the GroupRestart Event.
    for launcher in ("Succeeded", "terminating"):
        the_job, pods, status = started(GROUPED)
        if launcher == "terminating":
            pods.set("launcher", 0, "Running", terminating=True)
        else:
            pods.set("launcher", 0, launcher)
        pods.set("worker", 1, "Failed")
        restart = engine.plan(GROUPED, the_job, status, pods.list(), at(4))
        assert [d.name for d in restart.delete] == ["job-worker-1"], launcher
        assert not [e for e in restart.events if e[1] == "GroupRestart"], launcher
        if launcher == "Succeeded":
            assert record(restart.status, "launcher", 0)["phase"] == "Succeeded"


def test_a_pod_the_last_group_restart_retired_is_not_retired_again_by_the_next():
    # worker-1's restart retired the launcher; before that delete shows, worker-0 fails: a new group restart,
    # whose GroupRestart Event does not name the launcher again (its own step repeats its delete).
    the_job, pods, status = started(GROUPED)
    pods.set("worker", 1, "Failed")
    first = engine.plan(GROUPED, the_job, status, pods.list(), at(4))
    launcher = pods.uid("launcher", 0)
    assert DeletePod("job-launcher-0", launcher, "restart") in first.delete
    pods.set("worker", 0, "Failed")
    second = engine.plan(GROUPED, the_job, first.status, pods.list(), at(5))
    assert second.status["backoffCount"] == 2
    assert not [e for e in second.events if e[1] == "GroupRestart"]


def test_the_group_restart_event_names_every_pod_it_retires():
    the_job, pods = make_job(("worker", 1, "OnFailure", 3), ("launcher", 2, "OnFailure", 3)), Pods()
    status = run(GROUPED, the_job, {}, pods, 1).status
    ready(pods, "worker", 0)
    status = run(GROUPED, the_job, status, pods, 2).status
    ready(pods, "launcher", 0)
    ready(pods, "launcher", 1)
    status = run(GROUPED, the_job, status, pods, 3).status
    pods.set("worker", 0, "Failed")
    restart = engine.plan(GROUPED, the_job, status, pods.list(), at(4))
    assert [e for e in restart.events if e[1] == "GroupRestart"] == [("Normal", "GroupRestart", (
        "Restarting job-launcher-0, job-launcher-1 with replica job-worker-0 (one restart of the job)"))]


class TwoAhead(GenericJobKind):
    def start_after(self, job: GenericJob) -> Mapping[str, tuple[str, ...]]:
        return {"launcher": ("worker", "ps")}


def test_a_replica_waiting_for_two_types_says_both_and_its_event_says_it_whole():
    two_ahead = TwoAhead()
    the_job = make_job(("worker", 2), ("ps", 1), ("launcher", 1))
    first = run(two_ahead, the_job, {}, Pods(), 1)
    message = ("its pod is made once every worker and ps replica is Running and Ready "
               "(0 of 2 worker replicas Ready; 0 of 1 ps replicas Ready)")
    assert record(first.status, "launcher", 0)["waiting"] == {"reason": START_ORDER, "message": message}
    assert [e for e in first.events if e[1] == START_ORDER] == [
        ("Normal", START_ORDER, f"Replica job-launcher-0 waits: {message}")]


def test_a_type_waited_for_that_the_job_does_not_have_holds_nothing_back():
    made = run(TwoAhead(), make_job(("worker", 1), ("launcher", 1)), {}, Pods(), 1)
    assert CreatePod("launcher", 0, "immediate") not in made.create  # (the workers are not Ready yet)
    alone = run(TwoAhead(), make_job(("launcher", 1)), {}, Pods(), 1)
    assert alone.create == [CreatePod("launcher", 0, "immediate")]


def test_two_ranks_of_a_group_failing_as_they_are_scaled_away_count_one_restart():
    # (scale_down.judged_away: the group's restarts in one reconcile count one, ranks scaled away included)
    def jobs(workers: int) -> GenericJob:
        return make_job(("worker", workers, "OnFailure", 3), ("launcher", 1, "OnFailure", 3))

    pods = Pods()
    status = run(GROUPED, jobs(4), {}, pods, 1).status
    for rank in range(4):
        ready(pods, "worker", rank)
    status = run(GROUPED, jobs(4), status, pods, 2).status
    ready(pods, "launcher", 0)
    status = run(GROUPED, jobs(4), status, pods, 3).status
    pods.set("worker", 2, "Failed")
    pods.set("worker", 3, "Failed")
    scaled = engine.plan(GROUPED, jobs(2), status, pods.list(), at(4))
    assert scaled.status["backoffCount"] == 1
    assert [record(scaled.status, "worker", r)["restartCount"] for r in (2, 3)] == [1, 0]


def test_two_workers_failing_as_the_job_is_paused_count_one_restart_of_the_group():
    # (pause.py: the group's restarts seen with the pause count once, the group read from the job as when it runs)
    _, pods, status = started(GROUPED)
    uids = {name: pods.uid(t, r) for name, t, r in
            (("job-worker-0", "worker", 0), ("job-worker-1", "worker", 1), ("job-launcher-0", "launcher", 0))}
    pods.set("worker", 0, "Failed")
    pods.set("worker", 1, "Failed")
    paused = engine.plan(GROUPED, make_job(("worker", 2, "OnFailure", 3), ("launcher", 1, "OnFailure", 3),
                                           pause=True), status, pods.list(), at(4))
    assert paused.status["phase"] == "Paused" and paused.status["backoffCount"] == 1
    assert [record(paused.status, "worker", r)["restartCount"] for r in (0, 1)] == [1, 0]
    assert [e for e in paused.events if e[1] == "Restarting"] == [
        ("Normal", "Restarting", "Restarting replica job-worker-0 (restart 1 of 3): pod exited with code 1; "
                                 "its next pod when the job resumes"),
        ("Normal", "Restarting", "Restarting replica job-worker-1 with the group restart of job-worker-0 "
                                 "(not counted)")]
    assert sorted(paused.delete) == sorted(DeletePod(name, uid, "pause") for name, uid in uids.items())
    condition = next(c for c in paused.status["conditions"] if c["type"] == "Paused")
    assert (condition["status"], condition["reason"], condition["lastTransitionTime"]) == ("True", "Paused", at(4))
    assert condition["message"] == "The job is paused: its pods are being deleted."


class GroupOnly(GenericJobKind):
    def restart_together(self, job: GenericJob) -> Mapping[str, tuple[str, ...]]:
        return {"worker": ("launcher",), "launcher": ()}  # (no start order: the launcher is made with the workers)


def test_the_group_restart_leaves_a_debug_pod_of_its_group_alone():
    # Debug mode is turned on while someone is deleting worker-1 (slowly: terminating, so it is not replaced as a
    # pod of the other mode); the others are replaced by debug pods. When worker-1 then fails, its restart is
    # counted, but the launcher's debug pod, a session the user may be in, decides and counts nothing: the group
    # restart does not retire it.
    group_only, pods = GroupOnly(), Pods()
    the_job = job()
    status = run(group_only, the_job, {}, pods, 1).status
    for t, r in (("worker", 0), ("worker", 1), ("launcher", 0)):
        ready(pods, t, r)
    status = run(group_only, the_job, status, pods, 2).status
    pods.set("worker", 1, "Running", terminating=True)
    debug = make_job(("worker", 2, "OnFailure", 3), ("launcher", 1, "OnFailure", 3), debug=True)
    turned = run(group_only, debug, status, pods, 3)
    assert {d.name for d in turned.delete} == {"job-worker-0", "job-launcher-0"}
    made = run(group_only, debug, turned.status, pods, 4)
    assert sorted(made.create) == [CreatePod("launcher", 0, "debug"), CreatePod("worker", 0, "debug")]
    ready(pods, "launcher", 0)
    debug_launcher = pods.uid("launcher", 0)
    pods.set("worker", 1, "Failed", terminating=True)
    restart = run(group_only, debug, made.status, pods, 5)
    assert record(restart.status, "worker", 1)["restartCount"] == 1 and restart.status["backoffCount"] == 1
    assert restart.delete == []  # (worker-1's pod is going already)
    assert not [e for e in restart.events if e[1] == "GroupRestart"]
    launcher = record(restart.status, "launcher", 0)
    assert (launcher["uid"], launcher["phase"], launcher.get("debug"), launcher["restartCount"]) == (
        debug_launcher, "Running", True, 0)
    assert pods.uid("launcher", 0) == debug_launcher
