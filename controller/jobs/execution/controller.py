"""The controller of one job kind: the runtime's worker loop (controller/runtime/controller.py), fed by the job's
informers and its children's, given the engine's Reconciler (reconciler.py) to reconcile each job.

    controller = JobController(kind, rest_client, JobConfig(workers=4))
    await controller.start()     # or start_informers / wait_for_sync / run_workers, as the manager does

The job informer enqueues the job; the pod, Service and PodGroup informers, which select only this
kind's children (`KindApi.children_selector`), enqueue their owner (when it is a job of this kind).
Handlers only compute a key and enqueue it; pod events also lower the reconciler's expectations and
time the status latency. All the work is in `Reconciler.reconcile`. This class puts them together, as
controller-runtime's builder does, and has the runtime's lifecycle (`Runnable`): it is no Controller itself.
"""

from __future__ import annotations

import asyncio
import functools
import time

import structlog
from prometheus_client import CollectorRegistry

from apimachinery.errors import ApiStatusError
from apimachinery.resource import PODS, SERVICES
from controller.jobs.children import podgroup
from controller.jobs.decisions.backoff import RestartBackoff
from controller.jobs.execution import trim
from controller.jobs.execution.config import JobConfig
from controller.jobs.execution.metrics import JobMetrics, StatusLatency
from controller.jobs.execution.reconciler import job_reconciler
from controller.jobs.kind import JobKind
from controller.jobs.schema.naming import controller_uid, owner_key
from controller.runtime.client import KubeClient
from controller.runtime.controller import Controller, ControllerConfig, start_all, stop_all
from controller.runtime.echoes import Echoes
from controller.runtime.events import EventRecorder
from controller.runtime.metrics import ControllerMetrics
from informers import InformerFactory
from kubeclient.rest import TRANSIENT_ERRORS, RestClient
from workqueue import RateLimitingQueue

__all__ = ["JobConfig", "JobController"]

log = structlog.get_logger("controller.jobs")


class JobController:
    def __init__(self, kind: JobKind, rest: RestClient, config: ControllerConfig | None = None,
                 registry: CollectorRegistry | None = None, *, factory: InformerFactory | None = None) -> None:
        """`config`: a JobConfig, or the runtime's settings alone (the engine's then default)."""
        config = JobConfig.of(config)
        # The worker loop, its queue, write client and recorder; given the reconciler below, once made with them.
        self.runtime = Controller(rest, config, registry, name=kind.api.kind.lower(), factory=factory)
        self.kind = kind
        self.config: JobConfig = config
        self.job_metrics = JobMetrics(registry, kind)
        self.status_latency = StatusLatency(registry, kind)
        self.client.register(kind.api.resource)
        self.client.register(podgroup.RESOURCE)
        # Each cache keeps only what the engine reads of its objects (trim.py).
        self.jobs = self.runtime.informer(kind.api.resource, transform=trim.trim_job)
        # Children only: an unrelated pod or Service of the cluster never enters the cache.
        children = kind.api.children_selector
        own_annotations = f"{kind.api.label_prefix}/"
        self.pods = self.runtime.informer(PODS, children, functools.partial(trim.trim_pod,
                                                                            keep_prefix=own_annotations))
        self.services = self.runtime.informer(SERVICES, children, trim.trim_service)
        self.podgroups = self.runtime.informer(podgroup.RESOURCE, children, trim.trim_podgroup) \
            if config.podgroups else None
        self.reconciler = job_reconciler(kind, self.client, self.jobs.lister, self.pods.lister, self.services.lister,
                                         self.podgroups.lister if self.podgroups else None, self.recorder,
                                         stuck_after=config.stuck_terminating_after, latency=self.status_latency,
                                         restart_backoff=RestartBackoff(config.restart_backoff), echoes=self.echoes)
        self.runtime.reconciler = self.reconciler
        self._phases: dict[str, str] = {}  # job uid -> phase
        self._phase_counts: dict[str, int] = {}  # phase -> jobs, kept as phases change (no recount per event)
        for dependent in kind.dependent_resources:
            self.client.register(dependent.resource)
        self._discovery: asyncio.Task | None = None  # looks again for dependent APIs the cluster lacks
        self._register_handlers()

    # --- the runtime's parts and lifecycle (Runnable) ----------------------------------------

    @property
    def client(self) -> KubeClient:
        return self.runtime.client

    @property
    def factory(self) -> InformerFactory:
        return self.runtime.factory

    @property
    def queue(self) -> RateLimitingQueue[str]:
        return self.runtime.queue

    @property
    def echoes(self) -> Echoes:
        return self.runtime.echoes

    @property
    def recorder(self) -> EventRecorder:
        return self.runtime.recorder

    @property
    def metrics(self) -> ControllerMetrics:
        return self.runtime.metrics

    def start_informers(self) -> None:
        self.runtime.start_informers()

    def run_workers(self) -> None:
        self.runtime.run_workers()

    async def start(self, sync_timeout: float = 60.0) -> None:
        await start_all(self, sync_timeout)

    async def stop(self) -> None:
        await stop_all(self)

    def healthy(self) -> bool:
        return self.runtime.healthy()

    def problems(self) -> list[str]:
        return self.runtime.problems()

    # --- dependents whose API the cluster may lack (a TensorBoard) --------------------------

    async def wait_for_sync(self, timeout: float) -> None:
        """The caches, then the kind's dependent APIs: each the cluster serves gets an informer now, before
        any job is reconciled; those it lacks are looked for again every `dependent_recheck` seconds (an API
        installed later is noticed, and every job reconciled with it)."""
        await self.runtime.wait_for_sync(timeout)
        if not await self._discover_dependents(timeout) and self._discovery is None:
            self._discovery = asyncio.get_running_loop().create_task(self._rediscover(timeout))

    async def _discover_dependents(self, timeout: float) -> bool:
        """Watch every dependent API the cluster now serves; True once all are watched."""
        for resource in (dependent.resource for dependent in self.kind.dependent_resources):
            if resource in self.reconciler.dependent_listers or not await self._served(resource):
                continue
            informer = self.runtime.informer(resource, self.kind.api.children_selector)
            informer.add_handler(on_add=self._child_changed, on_update=self._child_updated,
                                 on_delete=self._child_changed)
            self.factory.start()  # starts only the new informer
            await self.factory.wait_for_sync(timeout)
            self.reconciler.dependent_listers[resource] = informer.lister
            log.info("watching a dependent API", resource=str(resource), kind=self.kind.api.kind)
            for job in self.jobs.lister.list():
                self.queue.add(f"{job['metadata'].get('namespace', '')}/{job['metadata']['name']}")
        return all(d.resource in self.reconciler.dependent_listers for d in self.kind.dependent_resources)

    async def _served(self, resource) -> bool:
        """Does the cluster serve this API? A list of at most one object answers it (404: no such API)."""
        try:
            await self.client.rest.get(resource.path(self._a_namespace()), {"limit": "1"},
                                       timeout=self.config.request_timeout)
        except ApiStatusError as err:
            if err.code != 404:
                log.warning("cannot tell whether the cluster serves a dependent API", resource=str(resource),
                            code=err.code, error=err.message)
            return False
        except TRANSIENT_ERRORS as err:
            log.warning("cannot tell whether the cluster serves a dependent API", resource=str(resource),
                        error=str(err))
            return False
        return True

    def _a_namespace(self) -> str | None:
        namespaces = self.config.watched_namespaces()
        return namespaces[0] if namespaces else None

    async def _rediscover(self, timeout: float) -> None:
        found = False
        while not found:  # a poll: no event announces an API being installed (without watching CRDs)
            await asyncio.sleep(self.config.dependent_recheck)
            found = await self._discover_dependents(timeout)

    async def stop_workers(self, drain: bool = True) -> None:
        if self._discovery is not None:
            self._discovery.cancel()
            await asyncio.gather(self._discovery, return_exceptions=True)
            self._discovery = None
        await self.runtime.stop_workers(drain)

    # --- event handlers: compute a key, enqueue it ----------------------------------------

    def _register_handlers(self) -> None:
        self.jobs.add_handler(on_add=self._job_added, on_update=self._job_updated, on_delete=self._job_deleted)
        self.pods.add_handler(on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted)
        for informer in (self.services, self.podgroups):
            if informer is not None:
                informer.add_handler(on_add=self._child_changed, on_update=self._child_updated,
                                     on_delete=self._child_changed)

    def _job_added(self, obj: dict) -> None:
        self.job_metrics.job_transition(obj["metadata"].get("namespace", ""), None, obj)
        self._track_phase(obj)
        self.queue.add(_key(obj))

    def _job_updated(self, old: dict, new: dict) -> None:
        self.job_metrics.job_transition(new["metadata"].get("namespace", ""), old, new)
        self._track_phase(new)
        key = _key(new)
        if self.echoes.arrived(key, new["metadata"].get("resourceVersion", "")):
            return  # parked: the version a status write awaited has come (or it is that version again)
        # A status-only change is our own write echoing back: nothing new to act on.
        if old["metadata"].get("generation") == new["metadata"].get("generation") and \
                old["metadata"].get("deletionTimestamp") == new["metadata"].get("deletionTimestamp") and \
                old["metadata"].get("labels") == new["metadata"].get("labels"):
            return
        self.queue.add(key)

    def _job_deleted(self, obj: dict) -> None:
        self.echoes.gone(_key(obj))
        self._set_phase(obj["metadata"]["uid"], None)
        self.reconciler.forget(obj["metadata"]["uid"])
        self.status_latency.job_gone(obj["metadata"]["uid"])

    def _child_changed(self, obj: dict) -> None:
        key = owner_key(self.kind.api, obj)
        if key is not None:
            self.queue.add(key)

    def _child_updated(self, old: dict, new: dict) -> None:
        self._child_changed(new)

    # Pods also start the status latency clock (see StatusLatency); only a leader writes, so only it times.

    # Pod events also lower the reconciler's expectations at once (client-go's CreationObserved and
    # DeletionObserved): a pod deleted just after its creation must not leave its replica waiting for
    # a create expectation that the next reconcile, no longer seeing the pod, could not clear.

    def _pod_added(self, obj: dict) -> None:
        job_uid = controller_uid(obj)
        if job_uid:
            self.reconciler.expectations.creation_observed(job_uid, obj["metadata"]["name"])
        key = owner_key(self.kind.api, obj)  # once per event: the timing and the enqueue both need it
        self._time_pod_phase(obj, key)
        if key is not None:
            self.queue.add(key)

    def _pod_updated(self, old: dict, new: dict) -> None:
        key = owner_key(self.kind.api, new)
        if _pod_phase(old) != _pod_phase(new):
            self._time_pod_phase(new, key)
        if key is not None:
            self.queue.add(key)

    def _pod_deleted(self, obj: dict) -> None:
        job_uid = controller_uid(obj)  # obj may be a Tombstone: the last state the cache saw
        if job_uid:
            # Only the uid's delete: the name may already be expected again (the replacement of a
            # restarted replica), and this event says nothing of that new pod.
            self.reconciler.expectations.deletion_observed(job_uid, obj["metadata"].get("uid", ""))
            self.status_latency.pod_gone(job_uid, obj["metadata"].get("uid", ""))
        self._child_changed(obj)

    def _time_pod_phase(self, pod: dict, key: str | None) -> None:
        """`key`: the pod's owner_key (None: not a job of this kind)."""
        if self.runtime.working and self.status_latency.enabled and key is not None:
            job_uid = controller_uid(pod)
            if job_uid:
                self.status_latency.pod_phase(job_uid, pod["metadata"]["uid"], _pod_phase(pod), time.monotonic())

    def _track_phase(self, obj: dict) -> None:
        self._set_phase(obj["metadata"]["uid"], (obj.get("status") or {}).get("phase") or "Pending")

    def _set_phase(self, uid: str, phase: str | None) -> None:
        """Record a job's phase (None: the job is gone) and publish the counts when they changed."""
        old = self._phases.pop(uid, None) if phase is None else self._phases.get(uid)
        if old == phase:
            return
        if phase is not None:
            self._phases[uid] = phase
            self._phase_counts[phase] = self._phase_counts.get(phase, 0) + 1
        if old is not None:
            self._phase_counts[old] -= 1
        self.job_metrics.phases(self._phase_counts)



def _pod_phase(pod: dict) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def _key(obj: dict) -> str:
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
