"""The pieces behind /metrics: request classification, status latency bookkeeping, addresses."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from controller.jobs.execution.metrics import StatusLatency
from controller.kinds.genericjob.kind import GENERICJOB
from controller.runtime.server import parse_address
from kubeclient.observe import request_verb

HOST = "https://10.0.0.1:443"


@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    ("GET", "/api/v1/pods", [("watch", "true")], ("watch", "pods")),
    ("GET", "/api/v1/pods", [("limit", "500")], ("list", "pods")),
    ("GET", "/api/v1/namespaces/default/pods/job-worker-0", None, ("get", "pods")),
    ("POST", "/api/v1/namespaces/default/pods", None, ("create", "pods")),
    ("DELETE", "/api/v1/namespaces/default/pods/p", None, ("delete", "pods")),
    ("DELETE", "/api/v1/namespaces/default/pods", None, ("deletecollection", "pods")),
    ("PUT", "/apis/batch.tensorstack.dev/v1beta1/namespaces/d/genericjobs/j/status", None,
     ("update", "genericjobs/status")),
    ("PATCH", "/api/v1/namespaces/d/events/e", None, ("patch", "events")),
    ("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l", None, ("get", "leases")),
    ("GET", "/api/v1/namespaces/team", None, ("get", "namespaces")),
    ("PUT", "/api/v1/namespaces/team/status", None, ("update", "namespaces/status")),
    ("GET", "/version", None, ("get", "")),
])
def test_request_verb(method, path, query, expected):
    assert request_verb(method, HOST + path, query) == expected


def job(uid: str, *replicas: tuple[str, str]) -> dict:
    return {"metadata": {"uid": uid}, "status": {"tasks": [
        {"type": "worker", "replicas": [{"name": f"r{i}", "uid": pod, "phase": phase}
                                        for i, (pod, phase) in enumerate(replicas)]}]}}


KIND = {"kind": "GenericJob"}


def test_status_latency_times_a_phase_until_a_write_shows_it():
    registry = CollectorRegistry()
    latency = StatusLatency(registry, GENERICJOB)
    latency.pod_phase("job", "pod-a", "Running", now=10.0)
    latency.pod_phase("job", "pod-b", "Running", now=10.5)
    latency.status_written(job("job", ("pod-a", "Pending"), ("pod-b", "Running")), now=11.0)
    assert registry.get_sample_value("genericjob_status_latency_seconds_count", KIND) == 1
    assert registry.get_sample_value("genericjob_status_latency_seconds_sum", KIND) == 0.5
    latency.pod_phase("job", "pod-a", "Succeeded", now=12.0)  # the newer phase replaces the older
    latency.status_written(job("job", ("pod-a", "Succeeded")), now=12.25)
    assert registry.get_sample_value("genericjob_status_latency_seconds_count", KIND) == 2
    assert registry.get_sample_value("genericjob_status_latency_seconds_sum", KIND) == 0.75
    assert len(latency) == 0


def test_status_latency_forgets_deleted_pods_and_jobs():
    latency = StatusLatency(CollectorRegistry(), GENERICJOB)
    latency.pod_phase("job", "pod-a", "Running", now=1.0)
    latency.pod_phase("job", "pod-b", "Running", now=1.0)
    latency.pod_phase("other", "pod-c", "Running", now=1.0)
    latency.pod_gone("job", "pod-a")
    latency.job_gone("other")
    assert len(latency) == 1
    assert StatusLatency(None, GENERICJOB).enabled is False


@pytest.mark.parametrize(("text", "expected"), [
    (":8080", ("0.0.0.0", 8080)), ("127.0.0.1:0", ("127.0.0.1", 0)), ("[::1]:9000", ("::1", 9000)),
    ("0", None), ("", None)])
def test_parse_address(text, expected):
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["8080", "host:", "host:http", ":70000"])
def test_parse_address_rejects(text):
    with pytest.raises(ValueError, match="invalid address"):
        parse_address(text)
