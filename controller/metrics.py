"""Reconcile metrics with controller-runtime's names, and GenericJob metrics like training-operator's."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

CONTROLLER = "genericjob"

# controller-runtime's reconcile time buckets (pkg/internal/controller/metrics).
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                     0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
                     40, 50, 60)


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.enabled = registry is not None
        if registry is None:
            return
        kw = {"registry": registry}
        self.reconcile_total = Counter("controller_runtime_reconcile_total", "Total number of reconciliations per "
                                       "controller", ["controller", "result"], **kw)
        self.reconcile_errors = Counter("controller_runtime_reconcile_errors_total", "Total number of reconciliation "
                                        "errors per controller", ["controller"], **kw)
        self.reconcile_time = Histogram("controller_runtime_reconcile_time_seconds", "Length of time per "
                                        "reconciliation per controller", ["controller"], buckets=RECONCILE_BUCKETS,
                                        **kw)
        self.max_concurrent = Gauge("controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent "
                                    "reconciles per controller", ["controller"], **kw)
        self.active_workers = Gauge("controller_runtime_active_workers", "Number of currently used workers per "
                                    "controller", ["controller"], **kw)
        self.jobs_created = Counter("genericjob_jobs_created_total", "GenericJobs seen for the first time",
                                    ["namespace"], **kw)
        self.jobs_succeeded = Counter("genericjob_jobs_succeeded_total", "GenericJobs that succeeded",
                                      ["namespace"], **kw)
        self.jobs_failed = Counter("genericjob_jobs_failed_total", "GenericJobs that failed", ["namespace"], **kw)
        self.jobs_restarted = Counter("genericjob_jobs_restarted_total", "Replica restarts performed",
                                      ["namespace"], **kw)
        self.jobs_by_phase = Gauge("genericjob_jobs", "GenericJobs by phase", ["phase"], **kw)

    def observe_reconcile(self, seconds: float, result: str) -> None:
        if not self.enabled:
            return
        self.reconcile_time.labels(CONTROLLER).observe(seconds)
        self.reconcile_total.labels(CONTROLLER, result).inc()
        if result == "error":
            self.reconcile_errors.labels(CONTROLLER).inc()

    def workers(self, active_delta: int = 0, maximum: int | None = None) -> None:
        if not self.enabled:
            return
        if maximum is not None:
            self.max_concurrent.labels(CONTROLLER).set(maximum)
        if active_delta:
            self.active_workers.labels(CONTROLLER).inc(active_delta)

    def job_transition(self, namespace: str, old: dict | None, new: dict | None) -> None:
        """Count job lifecycle changes from informer events (so standby replicas agree with the leader)."""
        if not self.enabled:
            return
        old_status = (old or {}).get("status") or {}
        new_status = (new or {}).get("status") or {}
        if old is None and new is not None:
            self.jobs_created.labels(namespace).inc()
        old_phase, new_phase = old_status.get("phase"), new_status.get("phase")
        if new is not None and new_phase != old_phase:
            if new_phase == "Succeeded":
                self.jobs_succeeded.labels(namespace).inc()
            elif new_phase == "Failed":
                self.jobs_failed.labels(namespace).inc()
        restarts = (new_status.get("backoffCount") or 0) - (old_status.get("backoffCount") or 0)
        if new is not None and restarts > 0:
            self.jobs_restarted.labels(namespace).inc(restarts)

    def phases(self, counts: dict[str, int]) -> None:
        if not self.enabled:
            return
        for phase in ("Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown"):
            self.jobs_by_phase.labels(phase).set(counts.get(phase, 0))
