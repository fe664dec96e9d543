"""Events on the job and the status: observedGeneration, start and completion times, conditions whose
lastTransitionTime moves only when they flip, tasks and aggregate agreeing with the pods."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from controller.runtime.controller import ControllerConfig

from .conftest import FAIL, FOREVER, QUICK, condition, finish_pod, genericjob, phase, replicas, scripts, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)


def ticking_clock():
    """A clock a minute further on at every reading: a condition rewritten without flipping would
    show it at once."""
    start = datetime(2030, 1, 1, tzinfo=UTC)
    ticks = itertools.count()
    return lambda: (start + timedelta(minutes=next(ticks))).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_events_of_a_job_that_restarts_then_succeeds(cluster, controller, jobs):
    scripts(cluster, "job", {"worker-0": [FAIL, QUICK], "*": QUICK})
    await jobs.submit(genericjob("job", {"worker": 2}, restart={"policy": "OnFailure", "limit": 1}))
    await jobs.wait_phase("job", "Succeeded")
    await jobs.wait_event("job", "Succeeded")
    events = await jobs.events("job")
    seen = Counter((e.type, e.reason, e.message) for e in events)
    created = {m for (_, r, m) in seen if r == "SuccessfulCreate"}
    assert created == {"Created pod: job-worker-0", "Created pod: job-worker-1"}
    assert ("Normal", "Restarting", "Restarting replica job-worker-0 (restart 1 of 1): pod exited with code 1") in seen
    assert ("Normal", "Succeeded", 'The job is succeeded with rule: {"worker": [0, 1]}') in seen
    for event in events:
        assert event.involved_object.kind == "GenericJob" and event.involved_object.name == "job"
        assert event.source.component == "genericjob-controller"
    # The replacement worker-0 was created too: one Event, counted twice.
    [again] = [e for e in events if e.message == "Created pod: job-worker-0"]
    assert again.count == 2
    assert all(n == 1 for n in seen.values()), seen


async def test_phase_change_events(cluster, controller, jobs):
    await jobs.submit(genericjob("job", {"worker": 1}))
    await jobs.wait_phase("job", "Running")
    [running] = await jobs.wait_event("job", "Running")
    assert (running.type, running.message) == ("Normal", "The job is running.")
    await finish_pod(jobs, "job-worker-0", 1)
    await jobs.wait_phase("job", "Failed")
    [failed] = await jobs.wait_event("job", "Failed")
    assert (failed.type, failed.message) == ("Warning", 'The job is failed with rule: {"worker": [0]}: replica '
                                             "worker-0 failed with exit code 1 (Error) "
                                             "under restart policy OnFailure with limit 0 (no restarts)")
    assert not [e for e in await jobs.events("job") if e.reason == "Pending"]  # a new job is Pending: not news


async def test_events_are_deduplicated_under_many_reconciles(cluster, controller, jobs, controllers):
    await jobs.submit(genericjob("job", {"worker": 3}))
    await jobs.wait_phase("job", "Running")
    for round_ in range(5):  # label changes wake the job up; nothing new happens, so nothing is said
        await jobs.patch("job", {"metadata": {"labels": {"round": str(round_)}}})
    await until(lambda: controllers.reconciles["default/job"] >= 6 and controllers.idle(), what="reconciled")
    events = await jobs.events("job")
    assert sorted(e.reason for e in events) == ["Running"] + ["SuccessfulCreate"] * 3
    assert {e.count for e in events} == {1}


async def test_status_times_generation_and_transitions(cluster, controller, jobs):
    controller.reconciler.now = ticking_clock()
    scripts(cluster, "job", {"worker-0": [FAIL, FOREVER], "*": FOREVER})
    await jobs.submit(genericjob("job", {"worker": 2}, restart={"policy": "OnFailure", "limit": 1}))
    first = await jobs.wait("job", lambda j: phase(j) is not None)
    assert first["status"]["observedGeneration"] == 1
    running = await jobs.wait("job", lambda j: phase(j) == "Running" and j["status"]["backoffCount"] == 1
                              and replicas(j)["job-worker-0"]["phase"] == "Running")
    assert running["status"]["startTime"] == first["status"]["startTime"]
    assert "completionTime" not in running["status"]
    initialized = condition(running, "Initialized")
    not_failed = condition(running, "Failed")
    assert condition(first, "Failed")["lastTransitionTime"] == not_failed["lastTransitionTime"]
    assert condition(running, "ReplicaFailure")["status"] == "False"  # the failed pod was replaced

    await jobs.patch("job", {"metadata": {"labels": {"touch": "1"}}})  # not a spec change
    await jobs.patch("job", {"spec": {"cleanUpPolicy": "Unfinished"}})  # a spec change: generation 2
    updated = await jobs.wait("job", lambda j: j["status"].get("observedGeneration") == 2)
    assert updated["metadata"]["generation"] == 2
    assert condition(updated, "Initialized") == initialized and condition(updated, "Failed") == not_failed

    await finish_pod(jobs, "job-worker-0", 0)
    await finish_pod(jobs, "job-worker-1", 0)
    done = await jobs.wait_phase("job", "Succeeded")
    assert condition(done, "Initialized") == initialized
    assert condition(done, "Failed")["lastTransitionTime"] == not_failed["lastTransitionTime"]
    completed = condition(done, "Completed")
    assert completed["status"] == "True" and completed["lastTransitionTime"] == done["status"]["completionTime"]
    assert condition(done, "Running")["lastTransitionTime"] == done["status"]["completionTime"]
    assert done["status"]["startTime"] < done["status"]["completionTime"]


async def test_tasks_and_aggregate_agree_with_the_pods(cluster, controller, jobs):
    scripts(cluster, "job", {"worker-0": QUICK, "worker-1": FAIL, "ps-0": {"fail_to_start": "ErrImagePull"},
                             "*": FOREVER})
    job = genericjob("job", {"worker": 3, "ps": 2}, restart={"policy": "Never"}, successRules=[{"ps": [0]}],
                     failureRules=[{"ps": [1]}])
    await jobs.submit(job)
    want = {"job-worker-0": "Succeeded", "job-worker-1": "Failed", "job-worker-2": "Running", "job-ps-0": "Pending",
            "job-ps-1": "Running"}
    seen = await jobs.wait("job", lambda j: {n: r["phase"] for n, r in replicas(j).items()} == want)
    pods = {p.metadata.name: p for p in await jobs.pods("job")}
    for name, record in replicas(seen).items():
        assert (record["uid"], record["phase"]) == (pods[name].metadata.uid, pods[name].status.phase)
    assert [(t["type"], len(t["replicas"])) for t in seen["status"]["tasks"]] == [("worker", 3), ("ps", 2)]
    assert seen["status"]["aggregate"] == {"creating": 0, "pending": 1, "running": 2, "succeeded": 1, "failed": 1,
                                           "unknown": 0, "deleted": 0}
    assert replicas(seen)["job-worker-1"]["containers"] == [{"name": "main", "state": "terminated", "exitCode": 1}]
    assert replicas(seen)["job-worker-2"]["containers"] == [{"name": "main", "state": "running"}]
    assert replicas(seen)["job-ps-0"]["containers"] == [{"name": "main", "state": "waiting"}]
    assert phase(seen) == "Pending"  # not every replica is up: ps-0 never started
    assert condition(seen, "ReplicaFailure")["message"] == "Replicas with a failed pod: job-worker-1."


async def test_events_have_a_request_budget_of_their_own(cluster, rest_client, jobs):
    """Events are sent through a client with a rate limit of its own: once the job is running, the
    controller's own client is starved (a bucket that would make the next request wait 1,000 s), and
    Events still go out at once. The job's writes (4 pods, its status writes) fit the burst of 30."""
    from controller.jobs.execution.controller import JobController
    from controller.kinds.genericjob.kind import GENERICJOB
    from kubeclient.ratelimit import TokenBucket

    from .conftest import FAST

    made = JobController(GENERICJOB, rest_client, ControllerConfig(workers=4, qps=0.2, burst=30, informer_options=FAST,
                                                   shutdown_timeout=5.0))
    await made.start(sync_timeout=10)
    try:
        assert made.recorder.client.limiter is not made.client.limiter
        assert made.recorder.client.requests is made.client.requests  # one set of request counts
        await jobs.submit(genericjob("job", {"worker": 4}))
        await jobs.wait_phase("job", "Running", timeout=4.0)
        await until(lambda: made.recorder.sent == 5 and made.recorder.pending == 0, timeout=4.0, what="5 events sent")
        events = await jobs.events("job")
        assert sorted(e.reason for e in events) == ["Running"] + ["SuccessfulCreate"] * 4
        made.client.limiter = TokenBucket(qps=0.001, burst=0)  # the controller's own budget: none left
        job = made.jobs.lister.get("default/job")
        for i in range(3):
            made.recorder.record(job, "Normal", "Checked", f"check {i}")
        await until(lambda: made.recorder.sent == 8 and made.recorder.pending == 0, timeout=4.0,
                    what="3 more events sent while the controller's own client has no budget")
    finally:
        await made.stop()


async def test_jobs_by_phase_follow_every_change_and_deletion(cluster, rest_client, config, jobs):
    """genericjob_jobs{phase} is kept up to date as phases change, including for a deleted job."""
    from prometheus_client import CollectorRegistry

    from controller.jobs.execution.controller import JobController
    from controller.kinds.genericjob.kind import GENERICJOB

    registry = CollectorRegistry()
    made = JobController(GENERICJOB, rest_client, config, registry)
    await made.start(sync_timeout=10)

    def by_phase() -> dict[str, float]:
        return {p: registry.get_sample_value("genericjob_jobs", {"kind": "GenericJob", "phase": p})
                for p in ("Running", "Succeeded")}

    try:
        scripts(cluster, "runs", {"*": FOREVER})
        await jobs.submit(genericjob("runs"))
        await jobs.submit(genericjob("ends", script=QUICK))
        await jobs.wait_phase("runs", "Running")
        await jobs.wait_phase("ends", "Succeeded")
        await until(lambda: by_phase() == {"Running": 1, "Succeeded": 1}, what="one running, one succeeded")
        await jobs.delete("ends")
        await until(lambda: by_phase() == {"Running": 1, "Succeeded": 0}, what="the deleted job uncounted")
    finally:
        await made.stop()
