"""Live jobs end to end against localcluster: what users do to a job while it runs, and the rules that hold
whatever they do (the spec's "Live jobs"; ARCHITECTURE.md's "Invariants of the engine"). Each test is one of
issue 23's sequences, synchronised on the job's status, its pods and its Events, with timeouts."""

from __future__ import annotations

import time

import pytest

from controller.jobs.decisions.backoff import epoch
from controller.jobs.execution.controller import JobController
from controller.kinds.tensorflow.kind import TENSORFLOW

from .conftest import FOREVER, QUICK, condition, finish_pod, genericjob, phase, replicas, scripts, until
from .test_tensorflow import tfjob

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)


async def test_editing_a_finished_job_changes_nothing_and_says_so_once(cluster, controllers, jobs, history):
    # cleanUpPolicy None keeps every pod (and its logs) of a finished job; scaling it afterwards must neither
    # delete the pods of the ranks scaled away nor add records for replicas that never ran.
    await controllers.start()
    scripts(cluster, "done", {"worker-0": QUICK, "*": FOREVER})
    await jobs.submit(genericjob("done", {"worker": 3}, successRules=[{"worker": [0]}], cleanUpPolicy="None"))
    finished = await jobs.wait_phase("done", "Succeeded")
    await until(controllers.idle, what="controller idle")
    for count in (1, 4):
        spec = (await jobs.get("done"))["spec"]
        spec["replicaSpecs"][0]["replicas"] = count
        edited = await jobs.patch("done", {"spec": {"replicaSpecs": spec["replicaSpecs"]}})
        generation = edited["metadata"]["generation"]
        await jobs.wait("done", lambda j, g=generation: j["status"].get("observedGeneration") == g)
        await until(controllers.idle, what="controller idle")
    after = await jobs.get("done")
    pods = await jobs.pods("done")
    assert [p.metadata.name for p in pods] == ["done-worker-0", "done-worker-1", "done-worker-2"]
    assert all(p.metadata.deletion_timestamp is None for p in pods)
    assert sorted(replicas(after)) == sorted(replicas(finished))  # no record for replicas that never ran
    for key in ("phase", "conditions", "completionTime", "backoffCount", "startTime"):
        assert after["status"].get(key) == finished["status"].get(key), key
    assert history.total() == 3 and phase(after) == "Succeeded"

    # One per generation: two edits, said twice (the recorder counts a repeat on the same Event, as client-go's).
    async def said():
        found = [e for e in await jobs.events("done") if e.reason == "SpecChangeIgnored"]
        return found if sum(e.count or 1 for e in found) >= 2 else None

    ignored = await until(said, what="two SpecChangeIgnored Events")
    assert sum(e.count or 1 for e in ignored) == 2 and {e.type for e in ignored} == {"Normal"}
    assert ignored[0].message == "the job has finished; spec changes are ignored"


async def test_an_outcome_that_arrives_with_a_pause_is_judged_first(cluster, controllers, jobs):
    # worker-1 fails (policy Never, no failure rules) while no controller runs, and the job is paused before
    # one sees it: the failure decided the job, so it ends Failed, never Paused (nor re-run on resume).
    scripts(cluster, "both", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("both", {"worker": 2}, restart={"policy": "Never"}))
    await jobs.wait_phase("both", "Running")
    await controllers.stop()
    await finish_pod(jobs, "both-worker-1", 3)
    await jobs.patch("both", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await controllers.start()
    done = await jobs.wait("both", lambda j: phase(j) in ("Failed", "Paused"))
    assert phase(done) == "Failed", done["status"]
    assert replicas(done)["both-worker-1"]["phase"] == "Failed"


async def test_a_master_that_succeeded_with_a_pause_ends_the_job(cluster, rest_client, config, tfjobs):
    scripts(cluster, "master", {"*": FOREVER})
    first = JobController(TENSORFLOW, rest_client, config)
    await first.start(sync_timeout=10)
    await tfjobs.submit(tfjob("master", {"worker": 2}))
    await tfjobs.wait_phase("master", "Running")
    await first.stop()
    await finish_pod(tfjobs, "master-worker-0", 0)  # worker 0 is the master without a chief
    await tfjobs.patch("master", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    second = JobController(TENSORFLOW, rest_client, config)
    await second.start(sync_timeout=10)
    try:
        done = await tfjobs.wait("master", lambda j: phase(j) in ("Succeeded", "Paused"))
    finally:
        await second.stop()
    assert phase(done) == "Succeeded", done["status"]


async def test_paused_time_never_counts_toward_the_deadline(cluster, tf_controller, tfjobs):
    # Paused longer than its deadline, the job is not failed at resume: its clock (startTime) restarts then,
    # and the deadline passes 2s of active time later.
    scripts(cluster, "nap", {"*": FOREVER})
    await tfjobs.submit(tfjob("nap", {"worker": 1}, run_policy={"activeDeadlineSeconds": 2}))
    started = await tfjobs.wait_phase("nap", "Running")
    await tfjobs.patch("nap", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await tfjobs.wait_phase("nap", "Paused")
    first_start = epoch(started["status"]["startTime"])
    await until(lambda: time.time() > first_start + 3, what="the deadline passed while paused")
    await tfjobs.patch("nap", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    resumed = await tfjobs.wait("nap", lambda j: phase(j) not in ("Paused", None))
    assert phase(resumed) != "Failed", resumed["status"]
    assert epoch(resumed["status"]["startTime"]) >= first_start + 3  # the clock restarted at resume
    done = await tfjobs.wait_phase("nap", "Failed", timeout=8)
    failed = condition(done, "Failed")
    assert failed["reason"] == "DeadlineExceeded"
    assert epoch(failed["lastTransitionTime"]) - epoch(resumed["status"]["startTime"]) >= 2


async def test_debug_mode_off_runs_the_workload_and_the_deadline_holds_in_debug(cluster, controllers, jobs,
                                                                                tf_controller, tfjobs):
    # Debug on, then off: the debug pods (`sleep inf`) are replaced by pods of the workload, as resuming does,
    # and an Event says so.
    scripts(cluster, "dbg", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("dbg", {"worker": 2}, runMode={"debug": {"enabled": True}}))
    debug_pods = await jobs.wait_pods("dbg", lambda pods: len(pods) == 2 and all(
        p.status.phase == "Running" for p in pods))
    assert all(p.spec.containers[0].command == ["sleep", "inf"] for p in debug_pods)
    old_uids = {p.metadata.uid for p in debug_pods}
    await jobs.patch("dbg", {"spec": {"runMode": {"debug": {"enabled": False}}}})
    workload = await jobs.wait_pods("dbg", lambda pods: len(pods) == 2 and not old_uids & {
        p.metadata.uid for p in pods})
    assert [p.spec.containers[0].command for p in workload] == [["sh", "-c", f"echo worker {rank}"] for rank in (0, 1)]
    [changed] = await jobs.wait_event("dbg", "RunModeChanged")
    assert changed.type == "Normal" and "Debug mode turned off" in changed.message
    # A forgotten debug session does not hold its pods past the deadline.
    scripts(cluster, "forgotten", {"*": FOREVER})
    await tfjobs.submit(tfjob("forgotten", {"worker": 1}, run_policy={"activeDeadlineSeconds": 1},
                              runMode={"debug": {"enabled": True}}))
    done = await tfjobs.wait_phase("forgotten", "Failed", timeout=8)
    assert condition(done, "Failed")["reason"] == "DeadlineExceeded"


async def _fail_when_running(jobs, job: str, pod: str, seen: set[str]) -> None:
    """Wait for a new pod `pod` (a uid not in `seen`) to run, then fail it (exit 1), as its kubelet would."""
    async def running():
        found = [p for p in await jobs.pods(job) if p.metadata.name == pod and p.metadata.uid not in seen
                 and p.status.phase == "Running"]
        return found[0] if found else None

    made = await until(running, what=f"a new {pod} running")
    seen.add(made.metadata.uid)
    await finish_pod(jobs, pod, 1)


async def _scale(jobs, job: str, count: int) -> None:
    edited = await jobs.patch(job, {"spec": {"replicaSpecs": [
        {**spec, "replicas": count} for spec in (await jobs.get(job))["spec"]["replicaSpecs"]]}})
    await jobs.wait(job, lambda j: j["status"].get("observedGeneration") == edited["metadata"]["generation"])


async def test_scaling_down_and_up_refunds_no_restart(cluster, controllers, jobs, tf_controller, tfjobs):
    # GenericJob, limit 1: worker-1 restarts once, is scaled away and back: it keeps its count, so its next
    # failure fails the job instead of being restarted again.
    scripts(cluster, "gj", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("gj", {"worker": 2}, restart={"policy": "OnFailure", "limit": 1}))
    seen: set[str] = set()
    await _fail_when_running(jobs, "gj", "gj-worker-1", seen)
    await jobs.wait_replica("gj", "gj-worker-1", lambda r: r["restartCount"] == 1)
    await _scale(jobs, "gj", 1)
    scaled = await jobs.wait_replica("gj", "gj-worker-1", lambda r: r["phase"] == "Deleted")
    assert scaled["status"]["backoffCount"] == 1  # the restart of the rank scaled away still counts
    assert replicas(scaled)["gj-worker-1"]["restartCount"] == 1  # its record kept, Deleted
    await jobs.wait_pods("gj", lambda pods: [p.metadata.name for p in pods] == ["gj-worker-0"])
    await _scale(jobs, "gj", 2)
    back = await jobs.wait_replica("gj", "gj-worker-1", lambda r: True)
    assert replicas(back)["gj-worker-1"]["restartCount"] == 1
    await _fail_when_running(jobs, "gj", "gj-worker-1", seen)
    done = await jobs.wait_phase("gj", "Failed")
    assert replicas(done)["gj-worker-1"]["restartCount"] == 1 and done["status"]["backoffCount"] == 1
    # TensorFlowTrainingJob, backoffLimit 2: worker-2 uses the budget, is scaled away; worker-1's failure then
    # fails the job (2 restarts of 2, not 4).
    scripts(cluster, "tf", {"*": FOREVER})
    await tfjobs.submit(tfjob("tf", {"worker": 3}, restart="OnFailure", run_policy={"backoffLimit": 2}))
    tf_seen: set[str] = set()
    for restarts in (1, 2):
        await _fail_when_running(tfjobs, "tf", "tf-worker-2", tf_seen)
        await tfjobs.wait("tf", lambda j, n=restarts: j["status"].get("backoffCount") == n)
    await _scale(tfjobs, "tf", 2)
    scaled = await tfjobs.wait("tf", lambda j: j["status"]["aggregate"]["deleted"] == 1)  # tf-worker-2, Deleted
    assert scaled["status"]["backoffCount"] == 2
    await _fail_when_running(tfjobs, "tf", "tf-worker-1", tf_seen)
    done = await tfjobs.wait_phase("tf", "Failed")
    assert done["status"]["backoffCount"] == 2


async def test_a_template_edit_applies_to_new_pods_and_says_so_once(cluster, controllers, jobs):
    scripts(cluster, "tpl", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("tpl", {"worker": 2}))
    running = await jobs.wait_pods("tpl", lambda pods: len(pods) == 2 and all(
        p.status.phase == "Running" for p in pods))
    spec = (await jobs.get("tpl"))["spec"]
    spec["replicaSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "busybox:1.37"
    await jobs.patch("tpl", {"spec": {"replicaSpecs": spec["replicaSpecs"]}})
    [said] = await jobs.wait_event("tpl", "TemplateChanged")
    assert said.type == "Normal" and said.message.startswith("spec.replicaSpecs[0].template (worker) changed: pods "
                                                             "created from now on")
    await _scale(jobs, "tpl", 3)  # a new rank is made from the new template; the running pods stay
    pods = await jobs.wait_pods("tpl", lambda pods: len(pods) == 3)
    assert {p.metadata.uid for p in pods[:2]} == {p.metadata.uid for p in running}
    assert [p.spec.containers[0].image for p in pods] == ["busybox:1.36", "busybox:1.36", "busybox:1.37"]
    await until(controllers.idle, what="controller idle")
    events = [e for e in await jobs.events("tpl") if e.reason == "TemplateChanged"]
    assert sum(e.count or 1 for e in events) == 1  # the scale edit changed no template: said once
