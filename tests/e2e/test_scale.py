"""Many jobs at once, and finished jobs left alone."""

from __future__ import annotations

from .conftest import FAIL, FOREVER, QUICK, genericjob, phase, replicas, scripts, until

KINDS = 5  # job i is of kind i % KINDS


def mixed_job(index: int) -> tuple[dict, str]:
    """A job and its expected outcome: success, failure, restart-then-success, rules, and clean-up."""
    name = f"job-{index:02d}"
    kind = index % KINDS
    if kind == 0:
        return genericjob(name, {"worker": 2}, script=QUICK), "Succeeded"
    if kind == 1:
        return genericjob(name, {"worker": 2}, script=FAIL), "Failed"
    if kind == 2:
        return genericjob(name, {"worker": 2}, script=[FAIL, QUICK], restart={"policy": "OnFailure", "limit": 1},
                          cleanUpPolicy="All"), "Succeeded"
    if kind == 3:
        return genericjob(name, {"master": 1, "worker": 2}, script={"master": QUICK, "worker": FOREVER},
                          successRules=[{"master": [0]}], cleanUpPolicy="Unfinished"), "Succeeded"
    return genericjob(name, {"worker": 3}, script=[FAIL], restart={"policy": "Always", "limit": 1},
                      failureRules=[{"worker": [0, 1, 2]}]), "Failed"


async def test_fifty_jobs_at_once(cluster, controller, jobs, history):
    expected = {}
    for index in range(50):
        job, outcome = mixed_job(index)
        expected[job["metadata"]["name"]] = outcome
        await jobs.submit(job)

    async def all_done():
        listed = await jobs.custom.list_namespaced_custom_object("batch.tensorstack.dev", "v1beta1", "default",
                                                                 "genericjobs")
        return {j["metadata"]["name"]: phase(j) for j in listed["items"]} == expected and listed["items"]

    # A bound on the wait, not a speed target: how fast jobs finish at scale is bench/scale's to measure.
    finished = await until(all_done, timeout=60, what="all 50 jobs finished as expected")
    for job in finished:
        kind = int(job["metadata"]["name"][-2:]) % KINDS
        restarts = {0: 0, 1: 0, 2: 2, 3: 0, 4: 3}[kind]
        assert job["status"]["backoffCount"] == restarts, job["metadata"]["name"]
        if kind == 2:  # All: every pod cleaned up
            assert {r["phase"] for r in replicas(job).values()} <= {"Deleted", "Succeeded"}
    # No pod was ever made twice except as a counted restart.
    made = sum(len(history.uids(n)) for n in history.created)
    assert made == sum({0: 2, 1: 2, 2: 4, 3: 3, 4: 6}[i % KINDS] for i in range(50))


async def test_a_finished_job_is_left_alone(cluster, controllers, jobs, history):
    await controllers.start()
    scripts(cluster, "job", {"worker-0": QUICK, "*": FOREVER})
    await jobs.submit(genericjob("job", {"worker": 3}, successRules=[{"worker": [0]}]))
    done = await jobs.wait_phase("job", "Succeeded")
    await until(controllers.idle, what="controller idle")
    settled = controllers.reconciles["default/job"]
    # Its pods go (deleted by hand): each deletion wakes the job up, and it creates nothing.
    for rank in (1, 2):
        await jobs.core.delete_namespaced_pod(f"job-worker-{rank}", "default")
    await jobs.core.delete_namespaced_pod("job-worker-0", "default")
    await jobs.wait_pods("job", lambda pods: pods == [])
    after = await jobs.wait("job", lambda j: all(r["phase"] == "Deleted" for r in replicas(j).values()))
    await until(controllers.idle, what="controller idle")
    woken = controllers.reconciles["default/job"] - settled
    assert woken <= 9, f"{woken} reconciles for 3 pod deletions"  # at most one per pod event (3 each)
    assert history.total() == 3
    assert after["status"]["conditions"] == done["status"]["conditions"]
    # And then it is quiet: a status write of its own or a resync does not bring it back.
    quiet = controllers.reconciles["default/job"]
    await jobs.patch("job", {"metadata": {"annotations": {"note": "looked at"}}})
    cache = controllers.running[-1].jobs.lister
    await until(lambda: (cache.get("default/job")["metadata"].get("annotations") or {}).get("note"),
                what="the controller saw the change")
    await until(controllers.idle, what="controller idle")
    assert controllers.reconciles["default/job"] == quiet
