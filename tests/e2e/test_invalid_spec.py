"""Bad input. What the CRD schema can reject is rejected at create time with a 422 naming the
field; what only the controller can see ends the job as Failed with reason InvalidSpec, a message
naming the field and a Warning Event, with no pods made, while other jobs carry on."""

from __future__ import annotations

import copy

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from .conftest import QUICK, condition, genericjob, replicas, until

pytestmark = pytest.mark.servers("local", "real")  # on localcluster and on the real API server (tests/real)

SERVICE = {"ports": [{"name": "http", "port": 2222}]}


def with_container(job: dict, **fields) -> dict:
    job = copy.deepcopy(job)
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0].update(fields)
    return job


def with_init(job: dict, init: dict) -> dict:
    job = copy.deepcopy(job)
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["initContainers"] = [init]
    return job


BASE = genericjob("bad", {"worker": 2, "ps": 1})
INVALID = {
    "success rule naming an unknown type": (
        genericjob("bad", {"worker": 2}, successRules=[{"chief": [0]}]),
        "spec.successRules[0]", 'replica type "chief" is not in spec.replicaSpecs'),
    "success rule rank out of range": (
        genericjob("bad", {"worker": 2}, successRules=[{"worker": [0]}, {"worker": [1, 2]}]),
        "spec.successRules[1]", 'rank 2 of "worker" is out of range [0, 2)'),
    "failure rule naming an unknown type": (
        genericjob("bad", {"worker": 2}, failureRules=[{"master": [0]}]),
        "spec.failureRules[0]", 'replica type "master" is not in spec.replicaSpecs'),
    "failure rule rank out of range (as a string)": (
        genericjob("bad", {"worker": 2}, failureRules=[{"worker": ["7"]}]),
        "spec.failureRules[0]", 'rank 7 of "worker" is out of range [0, 2)'),
    "a rule naming no replica": (
        genericjob("bad", {"worker": 2}, successRules=[{"worker": []}]),
        "spec.successRules[0]", "a rule must name at least one replica"),
    "replicas of an unknown type": (
        with_container(BASE, command=["run", "$(replicas[chief])"]),
        "spec.replicaSpecs[0].template.spec.containers[0].command[1]", '"chief" is not in spec.replicaSpecs'),
    "a host of a rank out of range": (
        with_container(genericjob("bad", {"worker": 2}, service=SERVICE), args=["$(service.worker[2].host)"]),
        "spec.replicaSpecs[0].template.spec.containers[0].args[0]", 'rank 2 of "worker" is out of range [0, 2)'),
    "a host of an unknown type": (
        with_container(genericjob("bad", {"worker": 2}, service=SERVICE),
                       env=[{"name": "PEER", "value": "$(service.ps[0].host)"}]),
        "spec.replicaSpecs[0].template.spec.containers[0].env[0].value", '"ps" is not in spec.replicaSpecs'),
    "a port with no such name": (
        with_container(genericjob("bad", {"worker": 2}, service=SERVICE), args=["$(service.port[grpc])"]),
        "spec.replicaSpecs[0].template.spec.containers[0].args[0]", 'no port named "grpc" in spec.service.ports'),
    "service variables without spec.service": (
        with_container(BASE, args=["$(service.worker[0].host)"]),
        "spec.replicaSpecs[0].template.spec.containers[0].args[0]", "need spec.service, which is not set"),
    "an init container's unresolvable variable": (
        with_init(BASE, {"name": "init", "image": "busybox:1.36", "command": ["$(service.port[http])"]}),
        "spec.replicaSpecs[0].template.spec.initContainers[0].command[0]", "need spec.service"),
    "a debug command's unresolvable variable": (
        genericjob("bad", runMode={"debug": {"enabled": True, "replicaSpecs": [
            {"type": "worker", "command": ["sshd", "$(replicas[ps])"]}]}}),
        "spec.runMode.debug.replicaSpecs[0].command[1]", '"ps" is not in spec.replicaSpecs'),
    "a debug override naming an unknown type": (
        genericjob("bad", runMode={"debug": {"enabled": True, "replicaSpecs": [{"type": "ps"}]}}),
        "spec.runMode.debug.replicaSpecs[0].type", 'replica type "ps" is not in spec.replicaSpecs'),
    "a resume override naming an unknown type": (
        genericjob("bad", runMode={"pause": {"enabled": False, "resumeSpecs": [{"type": "ps"}]}}),
        "spec.runMode.pause.resumeSpecs[0].type", 'replica type "ps" is not in spec.replicaSpecs'),
    "a resume override's unresolvable variable": (
        genericjob("bad", runMode={"pause": {"enabled": False, "resumeSpecs": [
            {"type": "worker", "args": ["$(service.port[http])"]}]}}),
        "spec.runMode.pause.resumeSpecs[0].args[0]", "need spec.service"),
}


@pytest.mark.parametrize("case", list(INVALID))
@pytest.mark.servers("local", "real", once_on_real=True)  # the controller's judgement: one case on the real server
async def test_invalid_spec_fails_the_job_without_making_anything(cluster, controller, jobs, case):
    job, field, message = INVALID[case]
    await jobs.submit(job)
    await jobs.submit(genericjob("good", {"worker": 2}, script=QUICK))  # submitted after, finishes anyway
    done = await jobs.wait_phase("bad", "Failed")
    failed = condition(done, "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "InvalidSpec")
    assert field in failed["message"] and message in failed["message"], failed["message"]
    assert condition(done, "Completed")["status"] == "False"
    assert condition(done, "Completed")["reason"] == "InvalidSpec"
    [event] = await jobs.wait_event("bad", "InvalidSpec")
    assert (event.type, event.message) == ("Warning", failed["message"])
    assert await jobs.pods("bad") == []
    assert await jobs.services("bad") == []
    assert await jobs.podgroups() == []
    await jobs.wait_phase("good", "Succeeded")


async def test_a_running_job_edited_into_an_invalid_one_is_held_with_its_pods(cluster, controller, jobs):
    # The spec's "Live jobs, settled further": an invalid edit of a running job is not applied (it used to fail
    # the job and delete its pods); tests/e2e/test_live_validity.py has the hold and its release in full.
    await jobs.submit(genericjob("bad", {"worker": 2}))
    await jobs.wait_phase("bad", "Running")
    await jobs.patch("bad", {"spec": {"successRules": [{"worker": [5]}]}})
    held = await jobs.wait("bad", lambda j: (condition(j, "SpecInvalid") or {}).get("status") == "True")
    assert held["status"]["phase"] == "Running" and "spec.successRules[0]" in condition(held, "SpecInvalid")["message"]
    [event] = await jobs.wait_event("bad", "InvalidEdit")
    assert event.type == "Warning" and "generation 2" in event.message
    assert len(await jobs.pods("bad")) == 2 and all(r["phase"] == "Running" for r in replicas(held).values())


def too_long(name_length: int, **spec) -> dict:
    return genericjob("a" * name_length, **spec)


REJECTED = {
    "job name longer than a label value": (too_long(64), "metadata", "no more than 63 characters"),
    "Service name too long": (genericjob("j" * 50, {"w" * 10: 11}, service=SERVICE), "metadata",
                              "Service name of at most 63 characters"),
    "job name not a DNS-1035 label with spec.service": (genericjob("9lives", service=SERVICE), "metadata",
                                                         "must start with a lower case letter"),
    "duplicate replica types": (
        genericjob("bad") | {"spec": {"replicaSpecs": genericjob("bad")["spec"]["replicaSpecs"] * 2}},
        "spec.replicaSpecs", "replica types must be unique"),
    "priority above 100": (genericjob("bad", scheduler={"t9kScheduler": {"queue": "q", "priority": 101}}),
                           "spec.scheduler.t9kScheduler.priority", "100"),
    "negative replicas": (genericjob("bad", {"worker": -1}), "spec.replicaSpecs[0].replicas", "0"),
    "unknown restart policy": (genericjob("bad", restart={"policy": "Sometimes"}),
                               "spec.replicaSpecs[0].restartPolicy.policy", "Sometimes"),
    "negative restart limit": (genericjob("bad", restart={"policy": "Always", "limit": -1}),
                               "spec.replicaSpecs[0].restartPolicy.limit", "0"),
    "unknown clean-up policy": (genericjob("bad", cleanUpPolicy="Some"), "spec.cleanUpPolicy", "Some"),
    "negative rank": (genericjob("bad", successRules=[{"worker": [-1]}]), "spec.successRules[0].worker[0]", "0"),
    "rank not a number": (genericjob("bad", successRules=[{"worker": ["one"]}]), "spec.successRules[0].worker[0]",
                          "one"),
    "replica type not a DNS label": (genericjob("bad", {"Worker_1": 1}), "spec.replicaSpecs[0].type", "Worker_1"),
    "template without containers": (
        genericjob("bad") | {"spec": {"replicaSpecs": [{"type": "worker", "template": {"spec": {}}}]}},
        "spec.replicaSpecs[0].template.spec.containers", "Required"),
    "no replica specs": (genericjob("bad") | {"spec": {"replicaSpecs": []}}, "spec.replicaSpecs", "1"),
    # The pod template is a PodTemplateSpec, checked as a Deployment's is (the controller still checks name and
    # image, for jobs an older CRD let in: tests/controller/test_validation.py).
    "a container without an image": (with_container(BASE, image=None),
                                     "spec.replicaSpecs[0].template.spec.containers[0].image", "Required value"),
    "a container name not a DNS label": (with_container(BASE, name="Main"),
                                         "spec.replicaSpecs[0].template.spec.containers[0].name", "should match"),
    "a quantity that does not parse": (with_container(BASE, resources={"limits": {"memory": "lots"}}),
                                       "spec.replicaSpecs[0].template.spec.containers[0].resources.limits.memory",
                                       "should match"),
}


@pytest.mark.parametrize("case", list(REJECTED))
async def test_schema_rejects_at_create_time_naming_the_field(cluster, controller, jobs, case):
    job, field, text = REJECTED[case]
    with pytest.raises(ApiException) as caught:
        await jobs.submit(job)
    assert caught.value.status == 422
    assert field in caught.value.body and text in caught.value.body, caught.value.body


async def test_invalid_jobs_do_not_hold_up_valid_ones(cluster, controller, jobs):
    for index, (job, _, _) in enumerate(INVALID.values()):
        await jobs.submit(job | {"metadata": {"name": f"bad-{index}"}})
    await jobs.submit(genericjob("good", {"worker": 3}, script=QUICK))
    await jobs.wait_phase("good", "Succeeded")

    async def all_failed():
        for index in range(len(INVALID)):
            job = await jobs.get(f"bad-{index}")
            if condition(job, "Failed") is None or condition(job, "Failed")["reason"] != "InvalidSpec":
                return False
        return True

    await until(all_failed, what="every invalid job failed")
    assert controller.healthy()
