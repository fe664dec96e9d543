"""Success and failure rules: the user guide's rules example in each of its combinations, the
defaults when rules are absent, and failure winning a tie."""

from __future__ import annotations

import pytest

from .conftest import FAIL, FOREVER, QUICK, condition, finish_pod, genericjob, phase, replicas, scripts

pytestmark = pytest.mark.servers("local", "real", once_on_real=True)  # each rule here, one on the real server

SUCCESS_RULES = [{"master": [0]}, {"worker": [0, 1, 2]}, {"master": [2], "worker": [0, 1]}]
FAILURE_RULES = [{"master": [0]}]


def rules_job(restart=None, **spec) -> dict:
    spec = {"successRules": SUCCESS_RULES, "failureRules": FAILURE_RULES, **spec}
    return genericjob("job", {"master": 3, "worker": 3}, restart=restart or {"policy": "Never"}, **spec)


@pytest.mark.parametrize(("finishing", "rule"), [
    (["master-0"], '{"master": [0]}'),
    (["worker-0", "worker-1", "worker-2"], '{"worker": [0, 1, 2]}'),
    (["master-2", "worker-0", "worker-1"], '{"master": [2], "worker": [0, 1]}'),
])
async def test_each_success_rule_of_the_guide(cluster, controller, jobs, finishing, rule):
    scripts(cluster, "job", {**dict.fromkeys(finishing, QUICK), "*": FOREVER})
    await jobs.submit(rules_job())
    done = await jobs.wait_phase("job", "Succeeded")
    completed = condition(done, "Completed")
    assert (completed["status"], completed["reason"]) == ("True", "Succeeded")
    assert completed["message"] == f"The job is succeeded with rule: {rule}"
    assert condition(done, "Failed")["status"] == "False"
    assert done["status"]["completionTime"]
    events = await jobs.wait_event("job", "Succeeded")
    assert [e.message for e in events] == [completed["message"]]


@pytest.mark.parametrize("finishing", [
    ["master-1"], ["master-2"], ["worker-0", "worker-1"], ["worker-1", "worker-2", "master-1"],
    ["master-2", "worker-0"],
])
async def test_a_rule_half_met_does_not_end_the_job(cluster, controller, jobs, finishing):
    scripts(cluster, "job", {**dict.fromkeys(finishing, QUICK), "*": FOREVER})
    await jobs.submit(rules_job())
    names = {f"job-{suffix}" for suffix in finishing}

    def settled(job: dict) -> bool:
        # The finishing replicas done and every other one Running (on a loaded machine a quick replica can end
        # before the others have started, while the job is still Pending), or the job ended: judged below.
        seen = replicas(job)
        others = {f"job-{t}-{i}" for t in ("master", "worker") for i in range(3)} - names
        return phase(job) in ("Succeeded", "Failed") or (
            all(seen.get(n, {}).get("phase") == "Succeeded" for n in names)
            and all(seen.get(n, {}).get("phase") == "Running" for n in others))

    seen = await jobs.wait("job", settled)
    assert phase(seen) == "Running"
    assert condition(seen, "Completed")["status"] == "False"


async def test_the_failure_rule_of_the_guide(cluster, controller, jobs):
    scripts(cluster, "job", {"master-0": FAIL, "*": FOREVER})
    await jobs.submit(rules_job())
    done = await jobs.wait_phase("job", "Failed")
    failed = condition(done, "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "ReplicaFailed")
    assert failed["message"] == ('The job is failed with rule: {"master": [0]}: replica master-0 failed with exit '
                                 "code 1 (Error) under restart policy Never")
    completed = condition(done, "Completed")
    assert (completed["status"], completed["message"]) == ("False", failed["message"])
    [event] = await jobs.wait_event("job", "Failed")
    assert (event.type, event.message) == ("Warning", failed["message"])


async def test_failures_outside_the_failure_rules_do_not_end_the_job(cluster, controller, jobs):
    scripts(cluster, "job", {"master-1": FAIL, "master-2": FAIL, "worker-*": FAIL, "*": FOREVER})
    await jobs.submit(rules_job())
    names = ["job-master-1", "job-master-2", "job-worker-0", "job-worker-1", "job-worker-2"]
    seen = await jobs.wait("job", lambda j: all(replicas(j).get(n, {}).get("phase") == "Failed" for n in names))
    assert phase(seen) == "Running"
    assert condition(seen, "ReplicaFailure")["status"] == "True"


async def test_a_failure_that_will_be_restarted_is_not_failed_for_good(cluster, controller, jobs):
    scripts(cluster, "job", {"master-0": [FAIL, QUICK], "*": FOREVER})
    await jobs.submit(rules_job(restart={"policy": "OnFailure", "limit": 1}))
    done = await jobs.wait_phase("job", "Succeeded")
    assert condition(done, "Completed")["message"] == 'The job is succeeded with rule: {"master": [0]}'
    assert done["status"]["backoffCount"] == 1


async def test_failure_wins_a_tie(cluster, controllers, jobs):
    """master-0 failed (failure rule) and workers 0-2 succeeded (success rule), seen in one observation:
    the controller is stopped while the pods end, so its successor sees all of it at once."""
    await controllers.start()
    await jobs.submit(rules_job())
    await jobs.wait("job", lambda j: (j.get("status") or {}).get("aggregate", {}).get("running") == 6)
    await controllers.stop()
    await finish_pod(jobs, "job-master-0", 1)
    for rank in range(3):
        await finish_pod(jobs, f"job-worker-{rank}", 0)
    await controllers.start()
    done = await jobs.wait_phase("job", "Failed")
    assert condition(done, "Failed")["message"] == ('The job is failed with rule: {"master": [0]}: replica master-0 '
                                                    "failed with exit code 1 (Error) under restart policy Never")


async def test_without_rules_every_replica_must_succeed(cluster, controller, jobs):
    scripts(cluster, "job", {"worker-1": FOREVER, "*": QUICK})
    await jobs.submit(genericjob("job", {"master": 1, "worker": 2}))
    seen = await jobs.wait("job", lambda j: replicas(j).get("job-worker-0", {}).get("phase") == "Succeeded"
                           and replicas(j).get("job-master-0", {}).get("phase") == "Succeeded")
    assert phase(seen) == "Running"
    await finish_pod(jobs, "job-worker-1", 0)
    done = await jobs.wait_phase("job", "Succeeded")
    assert condition(done, "Completed")["message"] == \
        'The job is succeeded with rule: {"master": [0], "worker": [0, 1]}'


async def test_without_rules_any_replica_failing_for_good_fails_the_job(cluster, controller, jobs):
    scripts(cluster, "job", {"worker-1": FAIL, "*": FOREVER})
    await jobs.submit(genericjob("job", {"master": 1, "worker": 2}))
    done = await jobs.wait_phase("job", "Failed")
    assert condition(done, "Failed")["message"] == ('The job is failed with rule: {"worker": [1]}: replica worker-1 '
                                                    "failed with exit code 1 (Error) "
                                                    "under restart policy OnFailure with limit 0 (no restarts)")


async def test_without_rules_failure_wins_a_tie(cluster, controllers, jobs):
    await controllers.start()
    await jobs.submit(genericjob("job", {"worker": 2}))
    await jobs.wait("job", lambda j: (j.get("status") or {}).get("aggregate", {}).get("running") == 2)
    await controllers.stop()
    await finish_pod(jobs, "job-worker-0", 0)
    await finish_pod(jobs, "job-worker-1", 2)
    await controllers.start()
    done = await jobs.wait_phase("job", "Failed")
    assert condition(done, "Failed")["message"] == ('The job is failed with rule: {"worker": [1]}: replica worker-1 '
                                                    "failed with exit code 2 (Error) "
                                                    "under restart policy OnFailure with limit 0 (no restarts)")


async def test_only_success_rules_given_keeps_the_default_failure_rule(cluster, controller, jobs):
    scripts(cluster, "job", {"worker-2": FAIL, "*": FOREVER})
    await jobs.submit(genericjob("job", {"worker": 3}, successRules=[{"worker": [0]}]))
    done = await jobs.wait_phase("job", "Failed")
    assert condition(done, "Failed")["message"] == ('The job is failed with rule: {"worker": [2]}: replica worker-2 '
                                                    "failed with exit code 1 (Error) "
                                                    "under restart policy OnFailure with limit 0 (no restarts)")


async def test_ranks_may_be_strings(cluster, controller, jobs):
    scripts(cluster, "job", {"worker-1": QUICK, "*": FOREVER})
    await jobs.submit(genericjob("job", {"worker": 2}, successRules=[{"worker": ["1"]}]))
    done = await jobs.wait_phase("job", "Succeeded")
    assert condition(done, "Completed")["message"] == 'The job is succeeded with rule: {"worker": [1]}'
