"""A plan's status write, the first write of a reconcile: through the status subresource with the cached
resourceVersion, so that a restart is counted before its pod is touched and a stale cache gets a quiet 409 and a
requeue. It tells the echoes (controller/runtime/echoes.py) of each write, so that a reconcile behind its own write
waits for the echo; it holds back a write the plan says may wait for the pods starting with it (`Plan.may_wait`,
coalesce.py), at most START_COALESCE; and a status the server refuses as too large ends the job Failed with a
compact status (oversize.py). The reconciler (reconciler.py) is given one."""

from __future__ import annotations

import time

import structlog

from apimachinery.errors import ApiStatusError
from controller.jobs.decisions import oversize
from controller.jobs.decisions.actions import WARNING, Plan
from controller.jobs.decisions.coalesce import START_COALESCE
from controller.jobs.execution.metrics import StatusLatency
from controller.jobs.execution.refusals import job_key
from controller.jobs.kind import JobKind
from controller.runtime.client import KubeClient
from controller.runtime.echoes import Echoes
from controller.runtime.events import EventRecorder
from controller.runtime.result import DONE, Result

log = structlog.get_logger("controller.reconciler")


class StatusWriter:
    """A kind's status writes, their echoes and their coalescing."""

    def __init__(self, kind: JobKind, client: KubeClient, recorder: EventRecorder, *, echoes: Echoes | None = None,
                 latency: StatusLatency | None = None) -> None:
        """`echoes`: the controller's, told of each write."""
        self.kind = kind
        self.client = client
        self.recorder = recorder
        self.echoes = echoes if echoes is not None else Echoes()
        self.latency = latency if latency is not None and latency.enabled else None
        # job uid -> when its pending start-only status write is due (monotonic seconds): see `holds_back`.
        self._starting: dict[str, float] = {}
        self.monotonic = time.monotonic  # the coalescing window's clock (tests set their own)

    def holds_back(self, uid: str, the_plan: Plan) -> float | None:
        """Seconds to hold this reconcile's status write back (None: write now): a write that may wait
        (`Plan.may_wait`) waits at most START_COALESCE after the first such plan, so one write reports the pods
        starting together."""
        if not the_plan.may_wait:
            self._starting.pop(uid, None)
            return None
        now = self.monotonic()
        due = self._starting.setdefault(uid, now + START_COALESCE)
        if now >= due:
            del self._starting[uid]
            return None
        return due - now

    async def write(self, obj: dict, status: dict, the_plan: Plan) -> dict | None:
        """The one status write of this reconcile; None when it lost a race (requeue).

        An unchanged status is written anyway when the plan says so (`Plan.confirm`: it sends pod creates): the PUT
        carries the cached resourceVersion, so it proves the cached job current (a no-op write the server stores
        nothing for). Without it, a job cache lagging behind the pod cache (a relist after a failover) could
        re-create the pods of a job that has since finished and been cleaned up."""
        new = {**the_plan.status, "observedGeneration": obj["metadata"].get("generation")}
        if new == status and not the_plan.confirm:
            return obj
        try:
            written = await self.client.replace_status(self.kind.api.resource, obj, new)
        except ApiStatusError as err:
            if err.code in (404, 409):  # stale cache or job gone: the next event brings it back
                log.debug("status write lost a race", job=job_key(obj), code=err.code)
                return None
            raise
        # Until the cache has this write's version, a reconcile would plan from the replaced one: it waits instead.
        assert written is not None  # (the API server answers a status write with the object)
        self.echoes.wrote(job_key(obj), obj["metadata"]["resourceVersion"], written["metadata"].get("resourceVersion"))
        if self.latency is not None:
            self.latency.status_written(written, time.monotonic())
        if new.get("phase") != status.get("phase"):
            # What operators grep for at the default level: one line per phase change, with its reason.
            log.info("job phase changed", job=job_key(obj), kind=self.kind.api.kind, phase=new.get("phase"),
                     previous=status.get("phase"), **phase_reason(new))
        return written

    async def too_large(self, obj: dict, the_plan: Plan, err: ApiStatusError, now: str) -> Result:
        """The server will not store the planned status: the job ends Failed with a compact one (oversize.py), or a
        smaller one when its spec leaves no room for that, and nothing of the plan is done (its pods would have no
        records). The Warning is recorded for the status the server took, never before. `now`: the time written."""
        log.warning("status too large", job=job_key(obj), message=err.message)
        for text, smaller in oversize.fallbacks(self.kind.status, the_plan.status, err.message, now,
                                                obj["metadata"].get("generation")):
            try:
                await self.client.replace_status(self.kind.api.resource, obj, smaller)
            except ApiStatusError as again:
                if again.code in (404, 409):
                    return Result(requeue_after=0.0, lost_at=obj["metadata"]["resourceVersion"])
                if not again.too_large:
                    raise
                err = again
                continue
            self.recorder.record(obj, WARNING, oversize.STATUS_TOO_LARGE, text)
            # Look again once the cache has it (a status-only change queues nothing by itself): the job's
            # unfinished pods are then deleted, as a failed job's.
            return Result(requeue_after=0.0, lost_at=obj["metadata"]["resourceVersion"])
        self.recorder.record(obj, WARNING, oversize.STATUS_TOO_LARGE, oversize.nothing_fits(err.message))
        return DONE

    def forget(self, uid: str) -> None:
        self._starting.pop(uid, None)


def phase_reason(status: dict) -> dict[str, str]:
    """Why the job is in its phase: the finished job's `reason`, else that of the condition that changed last to
    True (Running, Paused...), with its message."""
    true = [c for c in status.get("conditions") or () if c.get("status") == "True"]
    # The last True condition to change (of two in the same second, the later in the list).
    latest: dict = max(true, key=lambda c: (c.get("lastTransitionTime") or "", true.index(c)), default={})
    reason = status.get("reason") or latest.get("reason") or ""
    message = next((c.get("message") for c in true if c.get("reason") == reason), latest.get("message")) or ""
    return {"reason": reason, "message": message} if message else {"reason": reason}
