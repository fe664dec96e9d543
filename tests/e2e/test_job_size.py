"""No job can take the controller down: a job over the cap on its replicas is refused at `kubectl apply`, naming
the cap; a status the API server refuses as too large ends the job Failed with a Warning Event, not a retry loop."""

from __future__ import annotations

import orjson
import pytest
import yaml

from controller.jobs.schema.api import MAX_TOTAL_REPLICAS

from .conftest import FOREVER, condition, finish_pod, genericjob, scripts, status, until


async def test_a_job_of_64_types_of_10000_replicas_is_refused_at_apply_naming_the_cap(cluster, kubectl, jobs):
    job = genericjob("huge", {f"t{i}": 10_000 for i in range(64)})
    result = await kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(job))
    assert result.code == 1, result.out
    assert result.err.startswith('The GenericJob "huge" is invalid: '), result.err
    assert (f'spec.replicaSpecs: Invalid value: the total of replicas over all replica types must be at '
            f"most {MAX_TOTAL_REPLICAS}") in result.err, result.err
    assert "huge" not in (await kubectl.ok("get", "genericjobs", "-o", "name")).out


def stored_size(cluster, name: str) -> int:
    """The job's size as etcd would store it without its managedFields (the apiserver drops them from a write
    that is too large with them, and tries again)."""
    job = cluster.api.get(cluster.registry.get("batch.tensorstack.dev", "v1beta1", "genericjobs"), "default", name)
    return len(orjson.dumps({**job, "metadata": {k: v for k, v in job["metadata"].items() if k != "managedFields"}}))


async def settled(controllers, key: str) -> int:
    """The reconciles of `key` once the controller is idle: nothing queued, delayed or in progress."""
    await until(controllers.idle, what="an idle controller")
    return controllers.reconciles[key]


async def test_a_status_too_large_to_store_fails_the_job_with_an_event_and_nothing_made(cluster, controllers, jobs):
    """The first status (every replica Creating) is already over the object limit: a compact status says why,
    and no pod is made, since a pod without its record could never be accounted for."""
    cluster.api.max_object_bytes = 8 * 1024  # etcd's 1.5 MiB, scaled down to a 100-replica job
    await controllers.start()
    await jobs.submit(genericjob("big", {"worker": 100}, script=FOREVER))
    job = await jobs.wait_phase("big", "Failed")
    assert status(job)["reason"] == "StatusTooLarge"
    failed = condition(job, "Failed")
    assert failed["status"] == "True" and failed["reason"] == "StatusTooLarge"
    assert "100 replicas" in failed["message"] and "etcdserver: request is too large" in failed["message"]
    assert "tasks" not in status(job) and status(job)["aggregate"]["creating"] == 100
    [event] = await jobs.wait_event("big", "StatusTooLarge")
    assert event.type == "Warning" and event.message == failed["message"]
    assert await jobs.pods("big") == []
    # Not retried: the job is reconciled a few times (its own status write brings it back), then left alone.
    reconciles = await settled(controllers, "default/big")
    assert reconciles <= 4, reconciles
    await jobs.patch("big", {"metadata": {"labels": {"touched": "yes"}}})  # another look changes nothing
    await until(lambda: controllers.reconciles["default/big"] > reconciles, what="a reconcile of the touched job")
    assert condition(await jobs.get("big"), "Failed") == failed
    assert await jobs.pods("big") == []


async def test_a_status_that_outgrows_the_limit_fails_the_job_and_its_running_pods_go(cluster, controllers, jobs):
    await controllers.start()
    scripts(cluster, "grows", {"worker-*": FOREVER})
    await jobs.submit(genericjob("grows", {"worker": 20}, restart={"policy": "OnFailure", "limit": 3}))
    await jobs.wait("grows", lambda j: status(j).get("aggregate", {}).get("running") == 20)
    # The limit just above the job as it is: worker-0's restart makes its status larger (the restart's time and
    # count in its record, its failure in a condition). worker-0 fails only then (not after a time the machine's
    # load could make it reach before the limit was set).
    cluster.api.max_object_bytes = stored_size(cluster, "grows") + 8
    await finish_pod(jobs, "grows-worker-0", 1)
    job = await jobs.wait_phase("grows", "Failed")
    assert status(job)["reason"] == "StatusTooLarge", status(job)
    await jobs.wait_event("grows", "StatusTooLarge")
    # Its unfinished pods are deleted as a failed job's are; the status stays as written.
    await jobs.wait_pods("grows", lambda pods: [p.metadata.name for p in pods] == ["grows-worker-0"])
    assert condition(await jobs.get("grows"), "Failed") == condition(job, "Failed")


@pytest.mark.parametrize(("room", "stored"), [(420, "condition"), (100, "phase"), (30, "nothing")])
async def test_a_spec_that_leaves_no_room_for_the_compact_status_still_ends_failed(cluster, controllers, jobs, room,
                                                                                    stored):
    """The job's spec alone is nearly the object limit (issue 35): the compact status does not fit, so a smaller
    one is written (a Failed condition alone, or the phase and reason alone); the Warning says Failed only of a
    job whose phase the server took. With no room even for the phase, the Warning says so and no phase is set."""
    wide = genericjob("wide", {"worker": 100}, script=FOREVER)
    # The limit scaled down with a spec of 8 KB (its pods' environment), so the job's Events still fit.
    wide["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["env"] = [{"name": "PAD", "value": "x" * 8000}]
    await jobs.submit(wide)
    cluster.api.max_object_bytes = stored_size(cluster, "wide") + room
    await controllers.start()
    [event] = await jobs.wait_event("wide", "StatusTooLarge")
    assert event.type == "Warning"
    job = await jobs.get("wide")
    if stored == "nothing":
        assert status(job).get("phase") is None and "Failed" not in event.message.replace("phase Failed", "")
        assert event.message.startswith("Not even a status of phase Failed fits in the API server")
    else:
        assert (status(job)["phase"], status(job)["reason"]) == ("Failed", "StatusTooLarge")
        failed = condition(job, "Failed")
        if stored == "condition":
            assert failed["reason"] == "StatusTooLarge" and failed["message"] == event.message
            assert "etcdserver: request is too large" in event.message and event.message.endswith("Failed.")
        else:
            assert failed is None and "only the phase and reason are stored" in event.message
    assert await jobs.pods("wide") == []
    # Not retried: left alone once settled, and a later look changes nothing.
    reconciles = await settled(controllers, "default/wide")
    assert reconciles <= 4, reconciles
    # As settled (the reconcile after the fallback may add the observedGeneration that the bare phase left out).
    settled_status = status(await jobs.get("wide"))
    await jobs.patch("wide", {"metadata": {"labels": {"t": "y"}}})
    await until(lambda: controllers.reconciles["default/wide"] > reconciles, what="a reconcile of the touched job")
    assert status(await jobs.get("wide")) == settled_status and await jobs.pods("wide") == []
