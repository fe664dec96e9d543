"""Invalid edits end to end (the spec's "Live jobs, settled further": invalid input refused, zero replicas, master
and ranks). What the CRD's rules can say is refused at the API server, as `kubectl patch` meets it: a 422 naming
the field. An invalid edit that reaches the controller anyway (a rule naming a rank scaled away, a `$(...)` that
does not resolve: the webhook's, issue 34; or anything, with an older CRD) holds a running job: no pod is made or
deleted because of it, the phase stays, a `SpecInvalid` condition and one Warning Event name the field and the
generation, and the next valid edit releases it. A job created invalid still ends Failed/InvalidSpec."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from controller.kinds.genericjob.models import GROUP, VERSION
from localcluster.testing import CRD_KEY

from .conftest import FOREVER, Jobs, condition, finish_pod, genericjob, phase, scripts, status, until
from .test_pytorch import pjob
from .test_pytorch import records as pt_records
from .test_tensorflow import records as tf_records
from .test_tensorflow import tfjob

JSON_PATCH = "application/json-patch+json"






async def json_patch(jobs: Jobs, name: str, operations: list[dict]) -> dict:
    """`kubectl patch KIND NAME --type=json -p '[...]'`."""
    return await jobs.custom.patch_namespaced_custom_object(GROUP, VERSION, "default", jobs.plural, name, operations,
                                                            _content_type=JSON_PATCH)


def set_replicas(index: int, count: int) -> dict:
    return {"op": "replace", "path": f"/spec/replicaSpecs/{index}/replicas", "value": count}


async def refused(jobs: Jobs, name: str, operations: list[dict]) -> str:
    with pytest.raises(ApiException) as caught:
        await json_patch(jobs, name, operations)
    assert caught.value.status == 422, caught.value.body
    return json.loads(caught.value.body)["message"]


def loosen(cluster, plural: str) -> None:
    """The job kind's CRD without any rule on spec.replicaSpecs: an older CRD, as when an invalid edit gets past
    the API server (and no webhook stops it)."""
    crds = cluster.registry.get(CRD_KEY[0], "v1", CRD_KEY[1])
    crd = cluster.api.get(crds, None, f"{plural}.{GROUP}")
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["replicaSpecs"].pop("x-kubernetes-validations", None)
    cluster.api.update(crds, None, crd["metadata"]["name"], crd)


def held(job: dict) -> dict | None:
    found = condition(job, "SpecInvalid")
    return found if found and found["status"] == "True" else None


async def wait_held(jobs: Jobs, name: str, generation: int) -> dict:
    return await jobs.wait(name, lambda j: held(j) is not None and f"generation {generation} " in held(j)["message"]
                           and status(j).get("observedGeneration") == generation)


async def wait_released(jobs: Jobs, name: str, generation: int) -> dict:
    return await jobs.wait(name, lambda j: (condition(j, "SpecInvalid") or {}).get("status") == "False"
                           and status(j).get("observedGeneration") == generation)


async def live_uids(jobs: Jobs, name: str) -> dict[str, str]:
    return {p.metadata.name: p.metadata.uid for p in await jobs.pods(name) if p.metadata.deletion_timestamp is None}


# --- defect 3: an edit the controller finds invalid holds a running job -----------------------------------------


async def test_a_scale_down_below_a_failure_rule_is_held_then_released(cluster, controllers, jobs, history):
    # The user guide's shape: a failure rule per rank. Scaling to 1 leaves {worker: [1]} naming a rank the spec
    # no longer has: the edit is not applied (no pod deleted, phase Running), and fixing the rules releases it.
    scripts(cluster, "rules", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("rules", {"worker": 3}, failureRules=[{"worker": [0]}, {"worker": [1]}]))
    await jobs.wait("rules", lambda j: status(j).get("ready") == "3/3")
    before = await live_uids(jobs, "rules")
    edited = await json_patch(jobs, "rules", [set_replicas(0, 1)])  # admitted: the webhook's to refuse (issue 34)
    job = await wait_held(jobs, "rules", edited["metadata"]["generation"])
    message = held(job)["message"]
    assert "spec.failureRules[1]" in message and 'rank 1 of "worker" is out of range [0, 1)' in message, message
    assert phase(job) == "Running" and (condition(job, "Failed") or {}).get("status") != "True"
    [warning] = await jobs.wait_event("rules", "InvalidEdit")
    assert warning.type == "Warning" and warning.message == message

    # While held, the records follow the pods, and nothing is made or deleted.
    await finish_pod(jobs, "rules-worker-2", 0)
    job = await jobs.wait_replica("rules", "rules-worker-2", lambda r: r["phase"] == "Succeeded")
    assert phase(job) == "Running" and await live_uids(jobs, "rules") == before
    await until(controllers.idle, what="controller idle")
    assert history.total() == 3 and not history.deleted
    assert sum(e.count or 1 for e in await jobs.events("rules") if e.reason == "InvalidEdit") == 1  # once

    fixed = await jobs.patch("rules", {"spec": {"failureRules": [{"worker": [0]}]}})
    job = await wait_released(jobs, "rules", fixed["metadata"]["generation"])
    assert phase(job) == "Running" and condition(job, "SpecInvalid")["reason"] == "SpecValid"
    await jobs.wait_pods("rules", lambda pods: [p.metadata.name for p in pods] == ["rules-worker-0"])
    await jobs.wait_event("rules", "SpecValid")
    assert phase(await jobs.get("rules")) == "Running"


async def test_a_template_edit_with_an_unresolvable_variable_is_held_then_released(cluster, controllers, jobs):
    scripts(cluster, "vars", {"*": FOREVER})
    await controllers.start()
    await jobs.submit(genericjob("vars", {"worker": 2}, restart={"policy": "OnFailure", "limit": 3}))
    await jobs.wait("vars", lambda j: status(j).get("ready") == "2/2")
    before = await live_uids(jobs, "vars")
    path = "/spec/replicaSpecs/0/template/spec/containers/0/command"
    edited = await json_patch(jobs, "vars", [{"op": "replace", "path": path, "value": ["run", "$(replicas[chief])"]}])
    job = await wait_held(jobs, "vars", edited["metadata"]["generation"])
    assert "spec.replicaSpecs[0].template.spec.containers[0].command[1]" in held(job)["message"]
    assert phase(job) == "Running" and await live_uids(jobs, "vars") == before
    # A pod deleted while held is not replaced yet (nothing is made): its loss is judged once released.
    await jobs.core.delete_namespaced_pod("vars-worker-1", "default")
    await jobs.wait_pods("vars", lambda pods: [p.metadata.name for p in pods] == ["vars-worker-0"])
    assert phase(await jobs.get("vars")) == "Running"
    fixed = await json_patch(jobs, "vars", [{"op": "replace", "path": path, "value": ["run", "$(replicas[worker])"]}])
    job = await wait_released(jobs, "vars", fixed["metadata"]["generation"])
    pods = await jobs.wait_pods("vars", lambda pods: len(pods) == 2)
    assert pods[1].spec.containers[0].command == ["run", "2"]  # the replacement is made from the new template
    assert phase(await jobs.get("vars")) == "Running"


async def test_a_job_created_invalid_still_fails_invalid_spec(cluster, controllers, jobs):
    await controllers.start()
    await jobs.submit(genericjob("born-bad", {"worker": 1}, failureRules=[{"worker": [1]}]))
    job = await jobs.wait_phase("born-bad", "Failed")
    assert condition(job, "Failed")["reason"] == "InvalidSpec" and condition(job, "SpecInvalid") is None


async def test_the_deadline_still_applies_while_held(cluster, tf_controller, tfjobs):
    scripts(cluster, "late", {"*": FOREVER})
    loosen(cluster, "tensorflowtrainingjobs")
    await tfjobs.submit(tfjob("late", {"worker": 2}, run_policy={"activeDeadlineSeconds": 2}))
    await tfjobs.wait_phase("late", "Running")
    edited = await json_patch(tfjobs, "late", [set_replicas(0, 0)])
    await wait_held(tfjobs, "late", edited["metadata"]["generation"])
    done = await tfjobs.wait_phase("late", "Failed", timeout=8)
    assert condition(done, "Failed")["reason"] == "DeadlineExceeded"
    await tfjobs.wait_pods("late", lambda pods: all(p.metadata.deletion_timestamp for p in pods))


# --- defect 4: zero replicas -------------------------------------------------------------------------------------


async def test_scaling_every_type_to_zero_is_refused_for_every_kind(cluster, jobs, tfjobs, pjobs):
    await jobs.submit(genericjob("g", {"worker": 2, "ps": 1}))
    await tfjobs.submit(tfjob("t", {"ps": 1, "worker": 2}))
    await pjobs.submit(pjob("p", {"worker": 2}))
    for api, name in ((jobs, "g"), (tfjobs, "t"), (pjobs, "p")):
        message = await refused(api, name, [set_replicas(0, 0), set_replicas(1, 0)] if name != "p" else
                                [set_replicas(0, 0)])
        assert "spec.replicaSpecs" in message and "at least one replica" in message, message
    # One type to 0 is fine while the job keeps the replica it is judged by.
    await json_patch(jobs, "g", [set_replicas(1, 0)])
    await json_patch(tfjobs, "t", [set_replicas(0, 0)])


async def test_the_replica_a_job_is_judged_by_cannot_be_scaled_away(cluster, tfjobs, pjobs):
    await tfjobs.submit(tfjob("chief", {"chief": 1, "worker": 2}))
    message = await refused(tfjobs, "chief", [set_replicas(0, 0)])
    assert "spec.replicaSpecs" in message and "judged by the chief" in message, message
    await tfjobs.submit(tfjob("workers", {"ps": 1, "worker": 2}))
    message = await refused(tfjobs, "workers", [set_replicas(1, 0)])
    assert "judged by worker 0" in message, message
    await pjobs.submit(pjob("nomaster", {"worker": 2, "node": 1}))
    message = await refused(pjobs, "nomaster", [set_replicas(0, 0)])
    assert 'rank 0 of the first type ("worker") is the master' in message, message


async def test_a_genericjob_scaled_to_zero_past_the_crd_is_held_not_succeeded(cluster, controllers, jobs, history):
    scripts(cluster, "empty", {"*": FOREVER})
    loosen(cluster, "genericjobs")
    await controllers.start()
    await jobs.submit(genericjob("empty", {"worker": 2}))
    await jobs.wait("empty", lambda j: status(j).get("ready") == "2/2")
    edited = await json_patch(jobs, "empty", [set_replicas(0, 0)])
    job = await wait_held(jobs, "empty", edited["metadata"]["generation"])
    assert "at least one replica" in held(job)["message"] and phase(job) == "Running"
    await until(controllers.idle, what="controller idle")
    assert len(await live_uids(jobs, "empty")) == 2 and not history.deleted
    fixed = await json_patch(jobs, "empty", [set_replicas(0, 1)])
    await wait_released(jobs, "empty", fixed["metadata"]["generation"])
    await jobs.wait_pods("empty", lambda pods: [p.metadata.name for p in pods] == ["empty-worker-0"])


async def test_a_tensorflow_job_scaled_to_zero_past_the_crd_is_held_not_running_forever(cluster, tf_controller,
                                                                                         tfjobs):
    scripts(cluster, "tf0", {"*": FOREVER})
    loosen(cluster, "tensorflowtrainingjobs")
    await tfjobs.submit(tfjob("tf0", {"worker": 2}))
    await tfjobs.wait_phase("tf0", "Running")
    edited = await json_patch(tfjobs, "tf0", [set_replicas(0, 0)])
    job = await wait_held(tfjobs, "tf0", edited["metadata"]["generation"])
    assert "spec.replicaSpecs" in held(job)["message"] and sorted(tf_records(job)) == ["tf0-worker-0", "tf0-worker-1"]
    assert len(await live_uids(tfjobs, "tf0")) == 2


# --- defect 5: the PyTorch master cannot move ---------------------------------------------------------------------


async def test_replica_types_and_their_order_cannot_change(cluster, tfjobs, pjobs):
    await pjobs.submit(pjob("order", {"master": 1, "node": 2}))
    swap = [{"op": "move", "from": "/spec/replicaSpecs/1", "path": "/spec/replicaSpecs/0"}]
    message = await refused(pjobs, "order", swap)
    assert "spec.replicaSpecs" in message and "types and their order cannot change" in message, message
    rename = [{"op": "replace", "path": "/spec/replicaSpecs/1/type", "value": "worker"}]
    assert "cannot change" in await refused(pjobs, "order", rename)
    added = {"op": "add", "path": "/spec/replicaSpecs/-", "value": pjob("x", {"extra": 1})["spec"]["replicaSpecs"][0]}
    assert "cannot change" in await refused(pjobs, "order", [added])
    assert "exactly one replica" in await refused(pjobs, "order", [set_replicas(0, 0)])
    assert "exactly one replica" in await refused(pjobs, "order", [set_replicas(0, 2)])
    await json_patch(pjobs, "order", [set_replicas(1, 5)])  # counts may change
    await tfjobs.submit(tfjob("tforder", {"worker": 2, "ps": 1}))
    assert "cannot change" in await refused(tfjobs, "tforder", swap)


async def test_a_swap_of_the_pytorch_types_past_the_crd_is_held_and_the_master_stays(cluster, pj_controller, pjobs):
    # Swapped, node-0 would become global rank 0: its exit 0 ended the job, and clean-up deleted the real master.
    scripts(cluster, "swap", {"*": FOREVER})
    loosen(cluster, "pytorchtrainingjobs")
    await pjobs.submit(pjob("swap", {"worker": 1, "node": 2}))
    await pjobs.wait("swap", lambda j: status(j).get("ready") == "3/3")
    before = await live_uids(pjobs, "swap")
    edited = await json_patch(pjobs, "swap", [{"op": "move", "from": "/spec/replicaSpecs/1",
                                               "path": "/spec/replicaSpecs/0"}])
    job = await wait_held(pjobs, "swap", edited["metadata"]["generation"])
    assert "types and their order cannot change" in held(job)["message"]
    await finish_pod(pjobs, "swap-node-0", 0)  # not the master: it decides nothing
    job = await pjobs.wait("swap", lambda j: pt_records(j)["swap-node-0"]["phase"] == "Succeeded")
    assert phase(job) == "Running" and (await live_uids(pjobs, "swap")).keys() == before.keys()
    back = await json_patch(pjobs, "swap", [{"op": "move", "from": "/spec/replicaSpecs/1",
                                             "path": "/spec/replicaSpecs/0"}])
    await wait_released(pjobs, "swap", back["metadata"]["generation"])
    assert phase(await pjobs.get("swap")) == "Running"
    await finish_pod(pjobs, "swap-worker-0", 0)  # the master, as it always was
    await pjobs.wait_phase("swap", "Succeeded")



async def test_a_pytorch_master_scaled_to_zero_past_the_crd_is_held(cluster, pj_controller, pjobs):
    # Applied, worker-0 would become the master while its environment still says RANK=1.
    scripts(cluster, "m0", {"*": FOREVER})
    loosen(cluster, "pytorchtrainingjobs")
    await pjobs.submit(pjob("m0", {"master": 1, "worker": 2}))
    await pjobs.wait("m0", lambda j: status(j).get("ready") == "3/3")
    before = await live_uids(pjobs, "m0")
    edited = await json_patch(pjobs, "m0", [set_replicas(0, 0)])
    job = await wait_held(pjobs, "m0", edited["metadata"]["generation"])
    assert 'spec.replicaSpecs[0].replicas: a replica type "master" has exactly one replica' in held(job)["message"]
    assert phase(job) == "Running" and await live_uids(pjobs, "m0") == before
    await finish_pod(pjobs, "m0-worker-0", 0)  # not the master: it decides nothing
    job = await pjobs.wait("m0", lambda j: pt_records(j)["m0-worker-0"]["phase"] == "Succeeded")
    assert phase(job) == "Running"
