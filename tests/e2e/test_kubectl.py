"""What a user sees with the real kubectl 1.35 against localcluster, the controller running: the printer
columns of both kinds (`kubectl get gj`, `-o wide`, `kubectl get tftj`), Events listed in the order they
happened, the PodGroup's short name, the defaults `kubectl explain` shows, and what a typo in a kind or
group gets."""

from __future__ import annotations

import re

import pytest
import yaml

from .conftest import FAIL, FOREVER, QUICK, condition, genericjob, phase, status
from .test_tensorflow import tfjob

PENDING = {"start_after": 3600}  # a pod the kubelet has not started: Pending for the whole test




async def test_get_shows_phase_ready_restarts_and_reason_and_wide_adds_the_times(cluster, controller, jobs,
                                                                                  kubectl):
    await jobs.submit(genericjob("pending", {"worker": 4}, script=PENDING))
    await jobs.submit(genericjob("running", {"worker": 2}, script=FOREVER))
    await jobs.submit(genericjob("restarted", {"worker": 1}, script=[FAIL, FOREVER],
                                 restart={"policy": "OnFailure", "limit": 3}))
    await jobs.submit(genericjob("done", {"worker": 2}, script=QUICK))
    await jobs.submit(genericjob("invalid", {"worker": 2}, successRules=[{"chief": [0]}]))
    await jobs.wait("pending", lambda j: status(j).get("ready") == "0/4")
    await jobs.wait("running", lambda j: status(j).get("ready") == "2/2")
    await jobs.wait("restarted", lambda j: status(j).get("backoffCount") == 1 and status(j).get("ready") == "1/1")
    await jobs.wait_phase("done", "Succeeded")
    await jobs.wait_phase("invalid", "Failed")

    table = (await kubectl.ok("get", "gj")).table()
    assert list(table["pending"]) == ["NAME", "PHASE", "READY", "RESTARTS", "REASON", "AGE"]
    shown = {name: (row["PHASE"], row["READY"], row["RESTARTS"], row["REASON"]) for name, row in table.items()}
    assert shown == {
        "pending": ("Pending", "0/4", "0", ""),  # was `0 0 0`: now 0 of 4 ready
        "running": ("Running", "2/2", "0", ""),
        "restarted": ("Running", "1/1", "1", ""),
        "done": ("Succeeded", "0/2", "0", "Succeeded"),
        "invalid": ("Failed", "", "", "InvalidSpec"),  # was a bare Failed; it never had replicas
    }

    wide = (await kubectl.ok("get", "gj", "-o", "wide")).table()
    assert list(wide["done"]) == ["NAME", "PHASE", "READY", "RESTARTS", "REASON", "AGE", "STARTED", "COMPLETED",
                                  "MESSAGE"]
    assert re.fullmatch(r"\d+s", wide["done"]["STARTED"]) and re.fullmatch(r"\d+s", wide["done"]["COMPLETED"])
    assert wide["running"]["COMPLETED"] == "" and re.fullmatch(r"\d+s", wide["running"]["STARTED"])
    assert re.fullmatch(r"\d+s", wide["invalid"]["COMPLETED"])
    # MESSAGE: the Failed condition's; False, it says so (test_start_error.py: a failed job's).
    assert {name: row["MESSAGE"] for name, row in wide.items() if name != "invalid"} == dict.fromkeys(
        ["pending", "running", "restarted", "done"], "The job has not failed.")
    assert wide["invalid"]["MESSAGE"] == condition(await jobs.get("invalid"), "Failed")["message"]


async def test_get_tftj_shows_the_same_columns(cluster, tf_controller, tfjobs, kubectl):
    await tfjobs.submit(tfjob("train", {"chief": 1, "worker": 2}))  # pods run until deleted
    await tfjobs.wait("train", lambda j: phase(j) == "Running" and status(j).get("ready") == "3/3")
    row = (await kubectl.ok("get", "tftj")).table()["train"]
    assert (row["PHASE"], row["READY"], row["RESTARTS"], row["REASON"]) == ("Running", "3/3", "0", "")


async def test_events_are_listed_in_the_order_they_happened(cluster, controller, jobs, kubectl):
    """kubectl lists objects by name, as the API server returns them: Events named `<job>.<hex time>` (as
    client-go names them) read in time order, the pods created first and the verdict last."""
    await jobs.submit(genericjob("ordered", {"worker": 6}, script=QUICK))
    await jobs.wait_phase("ordered", "Succeeded")
    await jobs.wait_event("ordered", "Succeeded")
    listed = await kubectl.ok("get", "events", "--field-selector", "involvedObject.name=ordered", "--no-headers",
                              "-o", "custom-columns=NAME:.metadata.name,REASON:.reason")
    rows = [line.split() for line in listed.out.splitlines()]
    assert all(re.fullmatch(r"ordered\.[0-9a-f]+", name) for name, _ in rows)
    reasons = [reason for _, reason in rows]
    assert reasons[:6] == ["SuccessfulCreate"] * 6 and reasons[-1] == "Succeeded", reasons


async def test_podgroups_have_a_short_name_of_their_own(cluster, controller, jobs, kubectl):
    await jobs.submit(genericjob("gang", {"worker": 2}, scheduler={"t9kScheduler": {"queue": "default"}}))
    await jobs.wait("gang", lambda j: bool(status(j).get("tasks")))
    row = (await kubectl.ok("get", "t9kpg", "gang")).table()["gang"]
    assert (row["MINMEMBER"], row["QUEUE"], row["PRIORITY"]) == ("2", "default", "0")


@pytest.mark.parametrize(("field", "expected"), [
    ("genericjob.spec.replicaSpecs", ["replicas\t<integer>\n    The desired number of replicas of this type. "
                                      "Defaults to 1."]),
    ("genericjob.spec.replicaSpecs.restartPolicy", ["Defaults to 0.", "Defaults to OnFailure."]),
    ("genericjob.spec", ["Defaults to None."]),
    ("tftj.spec.replicaSpecs", ["Defaults to 1.", "Defaults to Never."]),
    ("tftj.spec.runPolicy", ["Unfinished\n    (default)"]),
    ("tftj.spec.scheduler.t9kScheduler", ["0-100. Defaults to 0."]),
])
async def test_explain_shows_the_defaults(cluster, kubectl, field, expected):
    """kubectl explain prints descriptions, never a schema's `default`: the descriptions say it."""
    out = (await kubectl.ok("explain", field)).out
    for text in expected:
        assert text in out, out


@pytest.mark.parametrize(("api_version", "kind"), [
    ("batch.tensorstack.dev/v1beta1", "GenericJobb"),  # a typo in the kind
    ("batch.tensorstak.dev/v1beta1", "GenericJob"),  # a typo in the group
])
@pytest.mark.parametrize("verb", ["apply", "create"])
async def test_a_wrong_kind_or_group_gets_the_real_servers_message(cluster, kubectl, api_version, kind, verb):
    """kubectl validates a kind its v3 documents do not know against /openapi/v2 (protobuf): then the REST
    mapping fails with the message a real server gives, not a content-type error."""
    job = genericjob("typo", {"worker": 1}, script=QUICK)
    result = await kubectl.run(verb, "-f", "-", stdin=yaml.safe_dump({**job, "apiVersion": api_version,
                                                                      "kind": kind}))
    assert result.code == 1
    assert (f'no matches for kind "{kind}" in version "{api_version}"\nensure CRDs are installed first'
            in result.err), result.err


@pytest.mark.parametrize("kind", ["GenericJob", "TensorFlowTrainingJob"])
async def test_a_pod_template_is_checked_at_apply_as_a_deployments_is(cluster, kubectl, kind):
    """A typo in a pod template is named (kubectl sends fieldValidation=Strict), not pruned or kept silently,
    and a container needs a name and an image, as in a Deployment's template."""
    job = genericjob("typo", {"worker": 1}, script=QUICK) if kind == "GenericJob" else tfjob("typo", {"worker": 1})
    container = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container["comand"] = ["sleep", "1"]
    result = await kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(job))
    assert result.code == 1
    assert (f'{kind} in version "v1beta1" cannot be handled as a {kind}: strict decoding error: '
            'unknown field "spec.replicaSpecs[0].template.spec.containers[0].comand"') in result.err, result.err
    del container["comand"], container["image"]
    result = await kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(job))
    assert result.code == 1
    assert result.err.startswith(f'The {kind} "typo" is invalid: '), result.err
    assert "* spec.replicaSpecs[0].template.spec.containers[0].image: Required value\n" in result.err, result.err
    container["image"] = "busybox:1.36"
    assert "created" in (await kubectl.ok("apply", "-f", "-", stdin=yaml.safe_dump(job))).out
