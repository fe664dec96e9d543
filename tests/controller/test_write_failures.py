"""The pure parts of refused writes and expectations: the ReplicaFailure condition a refusal shows,
expectations lowered by informer events, the model refusing Service ports the Service API would, and
the stored-port comparison that decides whether a Service follows a ports edit."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from controller.jobs.children.services import desired_service, stored_ports
from controller.jobs.decisions.job_conditions import (
    REPLICA_FAILURE,
    find_condition,
    progress_conditions,
    write_failure_condition,
)
from controller.jobs.decisions.replica_records import blank_record
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.genericjob.models import GenericJob
from controller.runtime.expectations import EXPECTATION_TTL, Expectations
from localcluster.testing import default_service


def at(minute: int) -> str:
    return f"2030-01-01T00:{minute:02d}:00Z"


def test_a_refusal_shows_as_replica_failure_and_keeps_its_transition_time():
    planned = progress_conditions([], phase="Pending", records=[blank_record("j-w-0")], now=at(1))
    shown = write_failure_condition(planned, [], "FailedCreate", "Error creating pod j-w-0: quota", at(1))
    failure = find_condition(shown, REPLICA_FAILURE)
    assert (failure["status"], failure["reason"], failure["message"]) == (
        "True", "FailedCreate", "Error creating pod j-w-0: quota")
    assert [c["type"] for c in shown] == [c["type"] for c in planned]  # in place, nothing else touched
    # The next reconcile plans from the stored status (True) and its own replicas (no failure: False);
    # the refusal still stands, so the condition stays True since minute 1.
    replanned = progress_conditions(shown, phase="Pending", records=[blank_record("j-w-0")], now=at(5))
    again = write_failure_condition(replanned, shown, "FailedCreate", "Error creating pod j-w-0: quota", at(5))
    assert find_condition(again, REPLICA_FAILURE)["lastTransitionTime"] == at(1)
    # Once the writes go through, the plan's own verdict comes back, with a new transition time.
    cleared = progress_conditions(again, phase="Pending", records=[blank_record("j-w-0")], now=at(9))
    assert find_condition(cleared, REPLICA_FAILURE) == {
        "type": REPLICA_FAILURE, "status": "False", "reason": "NoFailure", "message": "No replica has failed.",
        "lastTransitionTime": at(9)}


def test_expectations_are_lowered_by_observations_not_only_by_the_cache():
    expectations = Expectations()
    expectations.expect_create("job", "j-w-0")
    expectations.expect_delete("job", "uid-1")
    assert expectations.creating("job", "j-w-0") and expectations.deleting("job", "uid-1")
    # A pod added then deleted before the next reconcile: the cache never shows it, the handlers saw it.
    expectations.creation_observed("job", "j-w-0")
    expectations.deletion_observed("job", "uid-1")
    assert not expectations.creating("job", "j-w-0") and not expectations.deleting("job", "uid-1")
    expectations.creation_observed("other", "x")  # unknown jobs and names are no error
    expectations.deletion_observed("job", "nope")


def test_expectations_still_expire(monkeypatch):
    import controller.jobs.execution.reconciler as reconciler

    now = [1000.0]
    monkeypatch.setattr(reconciler.time, "monotonic", lambda: now[0])
    expectations = Expectations()
    expectations.expect_create("job", "j-w-0")
    now[0] += EXPECTATION_TTL + 1
    expectations.observe("job", [])
    assert not expectations.creating("job", "j-w-0")


def job_with_ports(ports: list[dict]) -> GenericJob:
    return GenericJob.from_object({"metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "spec": {
        "service": {"ports": ports},
        "replicaSpecs": [{"type": "w", "template": {"spec": {"containers": [{"name": "m", "image": "i"}]}}}]}})


@pytest.mark.parametrize("ports", [
    [{"name": "HTTP", "port": 80}],
    [{"port": 80, "protocol": "tcp"}],
    [{"port": 80, "targetPort": 0}],
    [{"port": 80, "targetPort": "8080"}],
    [{"port": 80, "targetPort": "sixteen-letters1"}],
    [{"port": 80}, {"name": "b", "port": 81}],
    [{"name": "a", "port": 80}, {"name": "a", "port": 81}],
    [{"name": "a", "port": 80}, {"name": "b", "port": 80}],
])
def test_the_model_refuses_ports_the_service_api_would(ports):
    # Jobs admitted by an older CRD are parsed by the model: they fail as InvalidSpec, visibly.
    with pytest.raises(ValidationError):
        job_with_ports(ports)


def test_stored_ports_compare_equal_to_the_desired_ones_after_defaulting():
    job = job_with_ports([{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP",
                                                          "targetPort": "dns"}])
    stored = desired_service(GENERICJOB, job, "w", 0)
    default_service(stored)  # what the API server stores
    assert stored_ports(stored) == GENERICJOB.service_ports(job)
    edited = job_with_ports([{"name": "http", "port": 8080}])
    assert stored_ports(stored) != GENERICJOB.service_ports(edited)


async def test_pod_handlers_lower_expectations_tombstones_included():
    from kubernetes_asyncio.client import Configuration
    from prometheus_client import CollectorRegistry

    from controller.jobs.execution.controller import JobController
    from controller.kinds.genericjob.kind import GENERICJOB
    from informers import Tombstone
    from kubeclient.from_configuration import settings_from_configuration
    from kubeclient.rest import RestClient

    nowhere = Configuration(host="http://127.0.0.1:9")
    async with RestClient(settings_from_configuration(nowhere)) as api:  # never contacted
        made = JobController(GENERICJOB, api, registry=CollectorRegistry())
        expectations = made.reconciler.expectations
        pod = {"metadata": {"name": "j-w-0", "namespace": "ns", "uid": "pod-1", "ownerReferences": [
            {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "name": "j", "uid": "job",
             "controller": True}]}}
        expectations.expect_create("job", "j-w-0")
        made._pod_added(pod)
        assert not expectations.creating("job", "j-w-0")
        expectations.expect_create("job", "j-w-0")  # its replacement, asked for after pod-1 left the cache
        expectations.expect_delete("job", "pod-1")
        made._pod_deleted(Tombstone("ns/j-w-0", pod))  # found gone by a relist: no final state
        assert not expectations.deleting("job", "pod-1")
        assert expectations.creating("job", "j-w-0")  # pod-1 going says nothing of the replacement
        assert len(made.queue) == 1  # and the job is looked at
