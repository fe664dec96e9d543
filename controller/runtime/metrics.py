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


# From a few milliseconds (a watch event and one PUT) up to the two minutes a congested queue may take.
STATUS_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class StatusLatency:
    """genericjob_status_latency_seconds: how long a job's status lags behind its pods.

    The clock starts when the pod informer hands the controller a pod whose phase changed (or a new
    pod), and stops when a status write succeeds whose replica record for that pod (same uid) shows
    that phase. Both ends are local monotonic times in this process, so clock skew between nodes
    and the API server cannot distort it; what it leaves out is the time the change took to reach
    the watch. Only phases seen while this replica leads are timed (a standby writes nothing); a
    phase replaced by a newer one before any write showed it is not timed, and a pod's or job's
    deletion forgets what was pending for it.
    """

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.enabled = registry is not None
        # job uid -> pod uid -> (phase, monotonic time the informer delivered it)
        self._pending: dict[str, dict[str, tuple[str, float]]] = {}
        if registry is not None:
            self.histogram = Histogram("genericjob_status_latency_seconds", "Seconds from the controller seeing a "
                                       "pod's new phase to a successful status write showing it",
                                       buckets=STATUS_LATENCY_BUCKETS, registry=registry)

    def __len__(self) -> int:
        return sum(len(pods) for pods in self._pending.values())

    def pod_phase(self, job_uid: str, pod_uid: str, phase: str, now: float) -> None:
        if self.enabled:
            self._pending.setdefault(job_uid, {})[pod_uid] = (phase, now)

    def pod_gone(self, job_uid: str, pod_uid: str) -> None:
        pods = self._pending.get(job_uid)
        if pods is not None:
            pods.pop(pod_uid, None)
            if not pods:
                del self._pending[job_uid]

    def job_gone(self, job_uid: str) -> None:
        self._pending.pop(job_uid, None)

    def status_written(self, job: dict, now: float) -> None:
        """Observe every pending phase that this successfully written job status shows."""
        pods = self._pending.get(job["metadata"]["uid"])
        if not pods:
            return
        for task in (job.get("status") or {}).get("tasks") or ():
            for replica in task.get("replicas") or ():
                seen = pods.get(replica.get("uid") or "")
                if seen is not None and seen[0] == replica.get("phase"):
                    self.histogram.observe(max(now - seen[1], 0.0))
                    del pods[replica["uid"]]
        if not pods:
            del self._pending[job["metadata"]["uid"]]


class EventMetrics:
    """The event recorder's backlog and outcome (an Event is best effort: dropped ones are counted here)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.enabled = registry is not None
        if registry is None:
            return
        self.backlog = Gauge("genericjob_events_pending", "Events queued or being sent", registry=registry)
        self.outcomes = Counter("genericjob_events_total", "Events (and repeat-count patches) sent or dropped",
                                ["result"], registry=registry)

    def pending(self, count: int) -> None:
        if self.enabled:
            self.backlog.set(count)

    def sent(self) -> None:
        if self.enabled:
            self.outcomes.labels("sent").inc()

    def dropped(self) -> None:
        if self.enabled:
            self.outcomes.labels("dropped").inc()


class RequestMetrics:
    """client-go's rest_client metrics, labelled by verb and resource instead of host and method."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("rest_client_requests_total", "API server requests, by verb, resource and HTTP "
                                "status code (<error> when no response came)", ["verb", "resource", "code"],
                                registry=registry)
        self.latency = Histogram("rest_client_request_duration_seconds", "Seconds until the API server's response "
                                 "headers arrived (a watch: until it opened)", ["verb", "resource"],
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
                                 registry=registry)

        # (verb, resource, code) -> the two labelled children: `labels()` takes a lock and builds a key
        # on every call, a few percent of the controller's CPU in a burst of writes.
        self._children: dict[tuple[str, str, str], tuple] = {}

    def observe(self, verb: str, resource: str, code: str, seconds: float) -> None:
        key = (verb, resource, code)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (self.requests.labels(verb, resource, code),
                                              self.latency.labels(verb, resource))
        children[0].inc()
        children[1].observe(seconds)
