"""The engine's metrics, labelled by job kind: jobs created, succeeded, failed and restarted (as
training-operator counts them), jobs by phase, and how long a job's status lags behind its pods.

The families keep their first kind's names (`genericjob_*`) for every kind: a `kind` label tells the
kinds apart, so dashboards and alerts written for one keep working, and sum over all."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from controller.jobs.kind import JobKind
from controller.runtime.metrics import Children, shared


class JobMetrics:
    def __init__(self, registry: CollectorRegistry | None, kind: JobKind) -> None:
        self.enabled = registry is not None
        self.kind = kind.api.kind
        if registry is None:
            return
        self.created, self.succeeded, self.failed, self.restarted, self.by_phase = shared(
            registry, "jobs", lambda: _job_families(registry))
        self._child = Children()
        self._published: dict[str, int] = {}  # phase -> the value its gauge was last set to

    def job_transition(self, namespace: str, old: dict | None, new: dict | None) -> None:
        """Count job lifecycle changes from informer events (so standby replicas agree with the leader)."""
        if not self.enabled:
            return
        old_status = (old or {}).get("status") or {}
        new_status = (new or {}).get("status") or {}
        if old is None and new is not None:
            self._child(self.created, self.kind, namespace).inc()
        old_phase, new_phase = old_status.get("phase"), new_status.get("phase")
        if new is not None and new_phase != old_phase:
            if new_phase == "Succeeded":
                self._child(self.succeeded, self.kind, namespace).inc()
            elif new_phase == "Failed":
                self._child(self.failed, self.kind, namespace).inc()
        restarts = (new_status.get("backoffCount") or 0) - (old_status.get("backoffCount") or 0)
        if new is not None and restarts > 0:
            self._child(self.restarted, self.kind, namespace).inc(restarts)

    def phases(self, counts: dict[str, int]) -> None:
        if not self.enabled:
            return
        for phase in PHASES:
            value = counts.get(phase, 0)
            if self._published.get(phase) != value:  # (a phase change moves two counts: five gauges stay as they are)
                self._child(self.by_phase, self.kind, phase).set(value)
                self._published[phase] = value


PHASES = ("Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown")


def _job_families(registry: CollectorRegistry) -> tuple:
    by_namespace = ["kind", "namespace"]
    return (Counter("genericjob_jobs_created_total", "Jobs seen for the first time", by_namespace, registry=registry),
            Counter("genericjob_jobs_succeeded_total", "Jobs that succeeded", by_namespace, registry=registry),
            Counter("genericjob_jobs_failed_total", "Jobs that failed", by_namespace, registry=registry),
            Counter("genericjob_jobs_restarted_total", "Replica restarts performed", by_namespace, registry=registry),
            Gauge("genericjob_jobs", "Jobs by phase", ["kind", "phase"], registry=registry))


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

    def __init__(self, registry: CollectorRegistry | None, kind: JobKind) -> None:
        self.enabled = registry is not None
        self.codec = kind.status
        # job uid -> pod uid -> (phase, monotonic time the informer delivered it)
        self._pending: dict[str, dict[str, tuple[str, float]]] = {}
        if registry is not None:
            self.histogram = shared(registry, "status-latency", lambda: Histogram(
                "genericjob_status_latency_seconds", "Seconds from the controller seeing a pod's new phase to a "
                "successful status write showing it", ["kind"], buckets=STATUS_LATENCY_BUCKETS,
                registry=registry)).labels(kind.api.kind)

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
        for replica in self.codec.stored_records(job.get("status") or {}).values():
            seen = pods.get(replica.get("uid") or "")
            if seen is not None and seen[0] == replica.get("phase"):
                self.histogram.observe(max(now - seen[1], 0.0))
                del pods[replica["uid"]]
        if not pods:
            del self._pending[job["metadata"]["uid"]]
