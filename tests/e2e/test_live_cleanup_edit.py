"""Clean-up of a finished job follows its current `cleanUpPolicy` (the spec's "Live jobs, settled further";
issue 33): editing the policy of a finished job deletes what the new policy says, never creates a pod, turns
the records of deleted pods `Deleted`, and changes nothing else of its status; other edits are still ignored."""

from __future__ import annotations

import pytest

from .conftest import FOREVER, finish_pod, genericjob, phase, replicas, until
from .test_pytorch import pjob

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

UNCHANGED = ("phase", "conditions", "completionTime", "startTime", "backoffCount", "reason", "aggregate")
PORTS = {"ports": [{"name": "http", "port": 80}]}


async def said(jobs, name: str, reason: str, count: int = 1):
    async def check():
        found = [e for e in await jobs.events(name) if e.reason == reason]
        return found if sum(e.count or 1 for e in found) >= count else None
    return await until(check, what=f"{count} {reason} Event(s)")


async def test_editing_a_failed_jobs_policy_to_all_reclaims_its_peers(cluster, controller, jobs, history):
    # worker-1 fails for good; cleanUpPolicy None keeps worker-0 running (and its Service and PodGroup). The user
    # then sets All, to reclaim what the failed job still holds.
    await jobs.submit(genericjob("peers", {"worker": 2}, script=FOREVER, restart={"policy": "Never"},
                                 cleanUpPolicy="None", service=PORTS,
                                 scheduler={"t9kScheduler": {"queue": "default"}}))
    await jobs.wait_phase("peers", "Running")
    await finish_pod(jobs, "peers-worker-1", 1)
    failed = await jobs.wait_phase("peers", "Failed")
    await until(lambda: _settled(jobs, "peers"), what="the failed job settled")
    assert [p.metadata.deletion_timestamp for p in await jobs.pods("peers")] == [None, None]
    edited = await jobs.patch("peers", {"spec": {"cleanUpPolicy": "All"}})
    await jobs.wait_pods("peers", lambda pods: pods == [], timeout=15)
    after = await jobs.wait("peers", lambda j: j["status"].get("observedGeneration") ==
                            edited["metadata"]["generation"] and
                            {r["phase"] for r in replicas(j).values()} == {"Deleted"})
    for key in UNCHANGED[:-1]:
        assert after["status"].get(key) == failed["status"].get(key), key
    assert after["status"]["cleanUpPolicy"] == "All"
    await until(lambda: _children_gone(jobs, "peers"), what="Services and PodGroup deleted")
    [event] = await said(jobs, "peers", "CleanUpPolicyApplied")
    assert event.message == ("the job has finished; its clean-up now follows cleanUpPolicy All (was None); "
                             "other spec changes are ignored")
    assert history.total() == 2  # no pod was created by the edit

    # Weakening it again brings nothing back, and another edit is still ignored (and said so).
    await jobs.patch("peers", {"spec": {"cleanUpPolicy": "None"}})
    await said(jobs, "peers", "CleanUpPolicyApplied", count=2)
    await jobs.patch("peers", {"spec": {"replicaSpecs": [{**(await jobs.get("peers"))["spec"]["replicaSpecs"][0],
                                                         "replicas": 3}]}})
    await said(jobs, "peers", "SpecChangeIgnored")
    final = await jobs.get("peers")
    assert {r["phase"] for r in replicas(final).values()} == {"Deleted"} and len(replicas(final)) == 2
    assert phase(final) == "Failed" and history.total() == 2 and await jobs.pods("peers") == []


async def _settled(jobs, name: str) -> bool:
    job = await jobs.get(name)
    return job["status"].get("observedGeneration") == job["metadata"]["generation"] and \
        len(await jobs.services(name)) == 2 and len(await jobs.podgroups()) == 1


async def _children_gone(jobs, name: str) -> bool:
    return await jobs.services(name) == [] and await jobs.podgroups() == []


@pytest.mark.usefixtures("pj_controller")
async def test_a_job_failed_by_its_deadline_keeps_its_running_pods_deleted_under_policy_none(cluster, pjobs,
                                                                                           history):
    await pjobs.submit(pjob("late", {"master": 1, "worker": 1}, runPolicy={"activeDeadlineSeconds": 1,
                                                                             "cleanUpPolicy": "None"}))
    done = await pjobs.wait_phase("late", "Failed", timeout=15)
    assert done["status"]["reason"] == "DeadlineExceeded"
    await pjobs.wait_pods("late", lambda pods: pods == [], timeout=15)
    made = history.total()
    spec = (await pjobs.get("late"))["spec"]
    await pjobs.patch("late", {"spec": {"runPolicy": {**spec["runPolicy"], "backoffLimit": 5}}})
    await said(pjobs, "late", "SpecChangeIgnored")
    after = await pjobs.get("late")
    assert {r["phase"] for r in replicas(after).values()} == {"Deleted"} and history.total() == made
    for key in UNCHANGED:
        assert after["status"].get(key) == done["status"].get(key), key
