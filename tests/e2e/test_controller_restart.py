"""The controller stopped mid-run and started again (a crash, an upgrade, a new leader): no duplicate
pod, no lost or extra restart, the right final phase."""

from __future__ import annotations

import pytest

from .conftest import FAIL, FOREVER, QUICK, condition, finish_pod, genericjob, phase, replicas, scripts, task

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

POD = "job-worker-0"


async def test_stopped_mid_run_and_started_again(cluster, controllers, jobs, history):
    # Each worker fails twice, then runs until the test ends it; limit 2 covers both failures.
    scripts(cluster, "job", {"worker-*": [FAIL, FAIL, FOREVER]})
    await controllers.start()
    await jobs.submit(genericjob("job", {"worker": 3}, restart={"policy": "OnFailure", "limit": 2}))
    await jobs.wait("job", lambda j: (j.get("status") or {}).get("backoffCount", 0) >= 1)
    await controllers.restart()
    await jobs.wait("job", lambda j: phase(j) == "Running" and j["status"]["backoffCount"] == 6
                    and j["status"]["aggregate"]["running"] == 3)
    await controllers.restart()
    for rank in range(3):
        await finish_pod(jobs, f"job-worker-{rank}", 0)
    done = await jobs.wait_phase("job", "Succeeded")
    assert task(done, "worker")["restartCount"] == 6
    for rank in range(3):
        uids = history.uids(f"job-worker-{rank}")
        assert len(uids) == 3 and len(set(uids)) == 3  # two replacements each, never a duplicate
        assert replicas(done)[f"job-worker-{rank}"]["uid"] == uids[-1]


async def test_stopped_between_a_pod_failing_and_its_replacement(cluster, controllers, jobs, history):
    await controllers.start()
    await jobs.submit(genericjob("job", {"worker": 2}, restart={"policy": "OnFailure", "limit": 1}))
    running = await jobs.wait_phase("job", "Running")
    await controllers.stop()
    await finish_pod(jobs, POD, 1)  # fails while no controller is running
    await controllers.start()
    again = await jobs.wait("job", lambda j: replicas(j)[POD]["phase"] == "Running"
                            and replicas(j)[POD]["uid"] != replicas(running)[POD]["uid"])
    assert again["status"]["backoffCount"] == 1 and len(history.uids(POD)) == 2
    await controllers.restart()  # and once more: nothing is counted twice
    await finish_pod(jobs, POD, 1)  # the limit is used up now
    done = await jobs.wait_phase("job", "Failed")
    assert done["status"]["backoffCount"] == 1 and len(history.uids(POD)) == 2
    assert condition(done, "Failed")["message"] == ('The job is failed with rule: {"worker": [0]}: replica worker-0 '
                                                    "failed with exit code 1 (Error) after 1 of 1 restarts")


class Crash(Exception):
    pass


async def test_crash_after_counting_a_restart_before_replacing_the_pod(cluster, controllers, jobs, history):
    """The restart is recorded in the status before the old pod is deleted: a controller that dies in
    between leaves a count its successor honours, without counting it again."""
    scripts(cluster, "job", {"worker-0": [FAIL, FOREVER]})
    first = await controllers.start()
    delete = first.client.delete

    async def crash_on_pod_delete(resource, *args, **kwargs):
        if resource == "pods":
            raise Crash("the controller died here")
        return await delete(resource, *args, **kwargs)

    first.client.delete = crash_on_pod_delete
    await jobs.submit(genericjob("job", restart={"policy": "OnFailure", "limit": 3}))
    counted = await jobs.wait("job", lambda j: (j.get("status") or {}).get("backoffCount") == 1)
    assert [p.status.phase for p in await jobs.pods("job")] == ["Failed"]  # not yet replaced
    await controllers.stop(first)
    await controllers.start()
    again = await jobs.wait("job", lambda j: replicas(j)[POD]["phase"] == "Running")
    assert again["status"]["backoffCount"] == 1
    assert replicas(again)[POD]["uid"] == history.uids(POD)[1] and len(history.uids(POD)) == 2
    assert replicas(counted)[POD]["lastRestartUid"] == history.uids(POD)[0]


async def test_a_finished_job_stays_finished_across_a_restart(cluster, controllers, jobs, history):
    scripts(cluster, "job", {"worker-0": QUICK, "*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("job", {"worker": 2}, successRules=[{"worker": [0]}]))
    done = await jobs.wait_phase("job", "Succeeded")
    await controllers.restart()
    await jobs.core.delete_namespaced_pod("job-worker-1", "default")  # and its pods go: still nothing new
    after = await jobs.wait("job", lambda j: replicas(j)["job-worker-1"]["phase"] == "Deleted")
    assert after["status"]["conditions"] == done["status"]["conditions"]
    assert after["status"]["completionTime"] == done["status"]["completionTime"]
    assert history.total() == 2


async def test_a_paused_job_stays_paused_across_a_restart(cluster, controllers, jobs, history):
    await controllers.start()
    await jobs.submit(genericjob("job", {"worker": 2}))
    await jobs.wait_phase("job", "Running")
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await controllers.stop()  # possibly before it acted on the pause
    await controllers.start()
    await jobs.wait_pods("job", lambda pods: pods == [])
    paused = await jobs.wait_phase("job", "Paused")
    assert paused["status"]["backoffCount"] == 0
    await jobs.patch("job", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    await jobs.wait_phase("job", "Running")
    assert history.total() == 4


async def test_controller_started_after_pods_finished_catches_up(cluster, controllers, jobs, history):
    scripts(cluster, "job", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("job", {"worker": 2}, restart={"policy": "Always", "limit": 1}))
    await jobs.wait_phase("job", "Running")
    await controllers.stop()
    await finish_pod(jobs, "job-worker-0", 0)
    await finish_pod(jobs, "job-worker-1", 0)
    scripts(cluster, "job", {"*": QUICK})
    await controllers.start()
    done = await jobs.wait_phase("job", "Succeeded")
    assert done["status"]["backoffCount"] == 2 and history.total() == 4
