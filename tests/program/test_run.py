"""`genericjob-controller run` as a subprocess against a localcluster subprocess: jobs, /metrics, shutdown."""

from __future__ import annotations

import signal

import pytest

from controller.kinds.registry import KINDS
from tests.e2e.conftest import FAIL, QUICK, genericjob

from .subprocesses import ControllerProcess, LocalClusterProcess, Samples, until

pytestmark = pytest.mark.slow  # each test runs the programs

JOB_RESOURCE = "genericjobs.batch.tensorstack.dev"
RETRY = [FAIL, QUICK]  # the first pod of a replica fails, its replacement succeeds


async def test_jobs_run_to_the_end_and_metrics_describe_them(tmp_path):
    async with LocalClusterProcess(tmp_path) as cluster, \
            ControllerProcess(cluster, "--log-level", "debug", "--workers", "3") as controller:
        jobs = cluster.jobs
        await jobs.submit(genericjob("ok", {"worker": 2}, script=QUICK))
        await jobs.submit(genericjob("bad", script=FAIL, restart={"policy": "Never"}))
        await jobs.submit(genericjob("retry", script=RETRY, restart={"policy": "OnFailure", "limit": 2}))
        assert (await jobs.wait_phase("ok", "Succeeded"))["status"]["aggregate"]["succeeded"] == 2
        await jobs.wait_phase("bad", "Failed")
        assert (await jobs.wait_phase("retry", "Succeeded"))["status"]["backoffCount"] == 1

        async def settled() -> Samples | None:
            samples = await controller.metrics()
            return samples if samples.value("genericjob_jobs", phase="Succeeded") == 2 else None

        metrics = await until(settled, what="jobs by phase")
        check_metrics(metrics, workers=3)
        assert await controller.get("/healthz") == (200, "ok\n")
        assert await controller.get("/readyz") == (200, "ok\n")
        # `run` serves on uvloop's event loop (manager.main), and says so as it starts.
        assert next(r for r in controller.logs if r.get("event") == "starting")["event_loop"] == "uvloop"

        reconciles = [r for r in controller.logs if r.get("event") == "reconciled"]
        assert {r["job"] for r in reconciles} == {"default/ok", "default/bad", "default/retry"}
        assert all(r["reconcile_id"] for r in reconciles)

        controller.send(signal.SIGTERM)
        assert await controller.exit_code() == 0
        assert not (await cluster.lease())["spec"].get("holderIdentity")  # released


def check_metrics(m: Samples, workers: int) -> None:
    # Jobs, counted from the informer's events.
    assert m.value("genericjob_jobs_created_total", namespace="default") == 3
    assert m.value("genericjob_jobs_succeeded_total", namespace="default") == 2
    assert m.value("genericjob_jobs_failed_total", namespace="default") == 1
    assert m.value("genericjob_jobs_restarted_total", namespace="default") == 1
    assert (m.value("genericjob_jobs", phase="Succeeded"), m.value("genericjob_jobs", phase="Failed")) == (2, 1)
    assert m.value("genericjob_jobs", phase="Running") == 0
    # Status latency: every pod phase change of the 5 pods was timed, each well under a second here.
    count = m.value("genericjob_status_latency_seconds_count")
    assert count >= 5
    assert 0 < m.value("genericjob_status_latency_seconds_sum") / count < 1.0
    assert m.value("genericjob_status_latency_seconds_bucket", le="+Inf") == count
    # Reconciles and the work queue, with controller-runtime's names.
    assert m.value("controller_runtime_reconcile_total", controller="genericjob", result="success") >= 3
    assert m.value("controller_runtime_reconcile_time_seconds_count", controller="genericjob") >= 3
    assert m.value("controller_runtime_reconcile_errors_total", controller="genericjob") == 0
    assert m.value("controller_runtime_max_concurrent_reconciles", controller="genericjob") == workers
    assert 0 <= m.value("controller_runtime_active_workers", controller="genericjob") <= workers
    assert m.all("controller_runtime_active_workers", controller="genericjob")
    assert m.value("workqueue_adds_total", name="genericjob") >= 3
    assert m.all("workqueue_depth", name="genericjob")
    for metric in ("workqueue_queue_duration_seconds_count", "workqueue_work_duration_seconds_count"):
        assert m.value(metric, name="genericjob") >= 3
    for metric in ("workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds",
                   "workqueue_retries_total"):
        assert m.all(metric, name="genericjob"), metric
    # Leader election.
    assert m.value("leader_election_master_status", name="genericjob-controller") == 1
    # API requests by verb, resource and code: every request the process made.
    assert m.value("rest_client_requests_total", verb="create", resource="pods", code="201") == 5
    assert m.value("rest_client_requests_total", verb="update", resource="genericjobs/status", code="200") >= 3
    assert m.value("rest_client_requests_total", verb="create", resource="events", code="201") >= 3
    for resource in ("genericjobs", "pods", "services", "podgroups"):
        assert m.value("rest_client_requests_total", verb="list", resource=resource, code="200") >= 1
        assert m.value("rest_client_requests_total", verb="watch", resource=resource, code="200") >= 1
    assert m.value("rest_client_requests_total", verb="create", resource="leases", code="201") == 1
    assert m.value("rest_client_request_duration_seconds_count", verb="create", resource="pods") == 5
    # Informers: events and relists.
    assert m.value("informer_events_total", resource=JOB_RESOURCE, type="ADDED") == 3
    assert m.value("informer_events_total", resource="pods", type="MODIFIED") >= 5
    assert m.value("informer_relists_total", resource="pods") == 0
    # One pod informer per kind served (each selects its kind's children), each listed once.
    pod_lists = m.all("informer_lists_total", resource="pods")
    assert len(pod_lists) == len(KINDS) and all(s.value == 1 for s in pod_lists), pod_lists
    assert m.value("informer_synced", resource=JOB_RESOURCE) == 1
    # The process itself.
    assert m.value("process_resident_memory_bytes") > 0


async def test_the_default_level_logs_one_line_per_phase_change_with_its_reason(tmp_path):
    """At `run`'s default level (info): `job phase changed` once per phase a job takes, with the reason the job
    gives (its Failed or Completed condition's, once finished), and nothing per reconcile."""
    async with LocalClusterProcess(tmp_path) as cluster, ControllerProcess(cluster) as controller:
        jobs = cluster.jobs
        await jobs.submit(genericjob("ok", {"worker": 2}, script=QUICK))
        await jobs.submit(genericjob("bad", script=FAIL, restart={"policy": "Never"}))
        await jobs.wait_phase("ok", "Succeeded")
        await jobs.wait_phase("bad", "Failed")
        await controller.wait_log(lambda r: r.get("event") == "job phase changed" and r["phase"] == "Failed",
                                  what="the failed job's phase change")

        def changes(job: str) -> list[dict]:
            return [r for r in controller.logs
                    if r.get("event") == "job phase changed" and r["job"] == f"default/{job}"]

        for job, last, reason in (("ok", "Succeeded", "Succeeded"), ("bad", "Failed", "ReplicaFailed")):
            lines = changes(job)
            assert all(line["level"] == "info" and line["kind"] == "GenericJob" for line in lines), lines
            assert [line["previous"] for line in lines[1:]] == [line["phase"] for line in lines[:-1]], lines
            assert len({line["phase"] for line in lines}) == len(lines), lines  # one line per change
            assert (lines[-1]["phase"], lines[-1]["reason"]) == (last, reason), lines
            assert lines[-1]["message"], lines
        assert not [r for r in controller.logs if r.get("event") == "reconciled"]  # debug, not info
