"""Restart policies Never, OnFailure and Always, with their per-replica limits.

The controller replaces a finished pod itself: same name, new uid, created only after the old
pod is gone, each restart counted once in `restartCount` (per type) and `backoffCount` (per job)."""

from __future__ import annotations

import pytest

from .conftest import FAIL, FOREVER, QUICK, condition, genericjob, phase, replicas, task

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

POD = "job-worker-0"


async def finished(jobs, outcome: str) -> dict:
    return await jobs.wait_phase("job", outcome)


def restarting(events) -> list[str]:
    return sorted(e.message for e in events if e.reason == "Restarting")


async def test_never_does_not_restart_a_failed_pod(controller, jobs, history):
    await jobs.submit(genericjob("job", script=FAIL, restart={"policy": "Never", "limit": 3}))
    done = await finished(jobs, "Failed")
    assert task(done, "worker")["restartCount"] == 0 and done["status"]["backoffCount"] == 0
    assert len(history.uids(POD)) == 1
    [pod] = await jobs.pods("job")
    assert pod.metadata.uid == history.uids(POD)[0] and pod.status.phase == "Failed"
    assert condition(done, "Failed")["message"] == ('The job is failed with rule: {"worker": [0]}: replica worker-0 '
                                                    "failed with exit code 1 (Error) under restart policy Never")
    assert done["status"]["reason"] == "ReplicaFailed"


async def test_never_does_not_restart_a_succeeded_pod(controller, jobs, history):
    await jobs.submit(genericjob("job", script=QUICK, restart={"policy": "Never", "limit": 3}))
    done = await finished(jobs, "Succeeded")
    assert done["status"]["backoffCount"] == 0 and len(history.uids(POD)) == 1


@pytest.mark.parametrize("policy", ["OnFailure", "Always"])
async def test_failed_pod_is_replaced_under_the_same_name_until_it_succeeds(controller, jobs, history, policy):
    # Always also replaces the succeeded pod while its limit allows: with limit 2, fail, fail, then
    # succeed ends the job under OnFailure; under Always the success after two restarts is final too.
    await jobs.submit(genericjob("job", script=[FAIL, FAIL, QUICK], restart={"policy": policy, "limit": 2}))
    done = await finished(jobs, "Succeeded")
    uids = history.uids(POD)
    assert len(uids) == 3 and len(set(uids)) == 3
    assert task(done, "worker")["restartCount"] == 2 and done["status"]["backoffCount"] == 2
    assert replicas(done)[POD]["uid"] == uids[-1]
    assert set(uids[:-1]) <= history.deleted  # each replacement came after its predecessor was deleted
    [pod] = await jobs.pods("job")
    assert (pod.metadata.name, pod.metadata.uid) == (POD, uids[-1])
    events = await jobs.wait_event("job", "Restarting", count=2)
    assert restarting(events) == [f"Restarting replica {POD} (restart 1 of 2): pod exited with code 1",
                                  f"Restarting replica {POD} (restart 2 of 2): pod exited with code 1"]


@pytest.mark.parametrize("policy", ["OnFailure", "Always"])
async def test_failure_after_the_limit_is_final(controller, jobs, history, policy):
    await jobs.submit(genericjob("job", script=[FAIL], restart={"policy": policy, "limit": 2}))
    done = await finished(jobs, "Failed")
    assert len(history.uids(POD)) == 3
    assert task(done, "worker")["restartCount"] == 2 and done["status"]["backoffCount"] == 2
    assert condition(done, "Failed")["message"] == ('The job is failed with rule: {"worker": [0]}: replica worker-0 '
                                                    "failed with exit code 1 (Error) after 2 of 2 restarts")
    assert done["status"]["reason"] == "BackoffLimitExceeded"
    assert replicas(done)[POD]["phase"] == "Failed"


async def test_on_failure_keeps_a_succeeded_pod(controller, jobs, history):
    await jobs.submit(genericjob("job", script=QUICK, restart={"policy": "OnFailure", "limit": 5}))
    done = await finished(jobs, "Succeeded")
    assert done["status"]["backoffCount"] == 0 and len(history.uids(POD)) == 1


async def test_always_replaces_succeeded_pods_until_the_limit(controller, jobs, history):
    await jobs.submit(genericjob("job", script=QUICK, restart={"policy": "Always", "limit": 3}))
    done = await finished(jobs, "Succeeded")
    assert len(history.uids(POD)) == 4
    assert task(done, "worker")["restartCount"] == 3 and done["status"]["backoffCount"] == 3
    events = await jobs.wait_event("job", "Restarting", count=3)
    assert restarting(events)[0] == f"Restarting replica {POD} (restart 1 of 3): pod exited with code 0"


async def test_limit_zero_means_no_restart(controller, jobs, history):
    await jobs.submit(genericjob("job", script=FAIL, restart={"policy": "OnFailure"}))
    done = await finished(jobs, "Failed")
    assert done["status"]["backoffCount"] == 0 and len(history.uids(POD)) == 1


async def test_limits_are_per_replica_and_counts_sum_per_type(controller, jobs, history):
    # Three workers, each failing twice then succeeding: limit 2 is enough for each of them.
    await jobs.submit(genericjob("job", {"worker": 3}, script=[FAIL, FAIL, QUICK],
                                 restart={"policy": "OnFailure", "limit": 2}))
    done = await finished(jobs, "Succeeded")
    assert [r["restartCount"] for r in task(done, "worker")["replicas"]] == [2, 2, 2]
    assert task(done, "worker")["restartCount"] == 6 and done["status"]["backoffCount"] == 6
    assert history.total() == 9


async def test_restart_keeps_the_job_running(controller, jobs, history):
    await jobs.submit(genericjob("job", script=[FAIL, FOREVER], restart={"policy": "OnFailure", "limit": 1}))
    seen = await jobs.wait("job", lambda j: task(j, "worker").get("restartCount") == 1
                           and replicas(j)[POD]["phase"] == "Running")
    assert phase(seen) == "Running"
    assert replicas(seen)[POD]["uid"] == history.uids(POD)[1]
    # The failure stays visible in ReplicaFailure only while a replica is failed; the restarted one runs.
    assert condition(seen, "ReplicaFailure")["status"] == "False"


async def test_replacements_back_off_doubling_and_the_controller_wakes_for_them(cluster, controllers, jobs):
    """--restart-backoff 0.5: the first replacement waits 0.5 s after the failure is counted, the second
    1 s (each failing pod ran for a moment only); nothing but the plan's wake-up creates them."""
    import dataclasses
    import time

    created: list[float] = []

    def on_event(ev) -> None:
        if ev.key == ("", "pods") and ev.type == "ADDED":
            created.append(time.monotonic())

    cluster.store.subscribe(on_event)
    controllers.config = dataclasses.replace(controllers.config, restart_backoff=0.5)
    await controllers.start()
    await jobs.submit(genericjob("job", script=[FAIL, FAIL, QUICK], restart={"policy": "OnFailure", "limit": 3}))
    done = await jobs.wait_phase("job", "Succeeded", timeout=15.0)
    assert len(created) == 3
    assert created[1] - created[0] >= 0.5 and created[2] - created[1] >= 1.0
    record = replicas(done)[POD]
    assert (record["restartCount"], record["restartStreak"]) == (2, 2) and record["lastRestartTime"]
    events = await jobs.wait_event("job", "Restarting", count=2)
    assert [m.split("; ")[1] for m in restarting(events)] == ["its next pod in 0.5s (back-off)",
                                                            "its next pod in 1s (back-off)"]
