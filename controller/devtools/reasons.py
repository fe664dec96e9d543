"""Why a replica failed or waits, as its pod and the kubelet's Events tell it.

    worker-0 Failed (StartError: exec: "nonexistent-binary": executable file not found in $PATH, exit 128)
    worker-1 Pending (CreateContainerConfigError: secret "x" not found)
    worker-2 Pending (FailedMount: MountVolume.SetUp failed for volume "creds" : secret "x" not found)

The job's status says only that a replica failed or is pending; the reason is in its pod: for a
failed replica, each container's termination (reason, message, exit code), else the pod's own
reason (Evicted...); for a pending one, each container's wait (reason and message), else the
latest Warning Event about the pod (a wait that no container status shows, such as a missing
volume source). What `kubectl describe pod` would show, condensed to a phrase. A failed pod's log is
read too, for what only a local run meets: a port another replica took (port_collision.py).

A pod someone deleted (`kubectl delete pod`) ends Failed too, its containers stopped by SIGTERM (exit 143): that
code is not why it ended, so it is said as the engine's Restarting Event and Failed condition say it, "pod was
deleted". Such a pod is known by its deletion having been asked before it ended: it is first seen Failed with a
deletionTimestamp already set. A pod that failed by itself is seen Failed first, and only then deleted by the
controller, which retires it (restart.py): its exit code stays its reason.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from apimachinery.resource import PODS, Resource
from controller.devtools.port_collision import LOG_LINES, collision, failed_container
from controller.jobs.decisions.start_errors import START_ERRORS, condensed
from informers import InformerFactory
from kubeclient.rest import RestClient

LogReader = Callable[[str, str, str], Awaitable[str]]  # (namespace, pod, container) -> the tail of its log
LOG_TIMEOUT = 2.0  # seconds a failed pod's log may take to read
TAIL_LINES = 10  # lines of a failed pod's output the summary shows (a run without --logs)

EVENTS = Resource("", "v1", "events")
# Waits every container goes through on its way to running: nothing to explain.
ON_ITS_WAY = frozenset({"ContainerCreating", "PodInitializing"})
EXPLAINED_PHASES = frozenset({"Pending", "Failed", "Unknown"})  # replica phases whose reason is worth printing
DELETED = "pod was deleted"  # the engine's words for it (controller/jobs/decisions/restart.py, cause.py)


def pod_reason(pod: dict, failed: bool, warning: str = "") -> str:
    """Why the pod failed (its containers' terminations, else its own reason) or, when not `failed`, why it
    waits (its containers' waits, else the latest Warning Event about it), in a phrase; "" when nothing says."""
    status = pod.get("status") or {}
    statuses = [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
    named = len(statuses) > 1
    explain = failed_reason if failed else waiting_reason
    parts = [f"{s.get('name')}: {text}" if named else text for s in statuses if (text := explain(s))]
    if not parts and failed and status.get("reason"):  # Evicted, DeadlineExceeded...
        parts.append(_phrase(status["reason"], status.get("message"), None))
    if not parts:
        parts = [warning] if warning else []
    return "; ".join(parts)


def failed_reason(container_status: dict) -> str:
    """`Reason: message, exit N` of a container that ended in failure (a start error's message condensed to what
    runc said, as the job's condition says it)."""
    terminated = (container_status.get("state") or {}).get("terminated")
    if terminated is None or terminated.get("exitCode") == 0:
        return ""
    message = terminated.get("message")
    if message and terminated.get("reason") in START_ERRORS:
        message = condensed(message)
    return _phrase(terminated.get("reason"), message, terminated.get("exitCode"))


def waiting_reason(container_status: dict) -> str:
    """`Reason: message` of a container held waiting (not merely on its way to running)."""
    waiting = (container_status.get("state") or {}).get("waiting")
    if waiting is None or (waiting.get("reason") in ON_ITS_WAY and not waiting.get("message")):
        return ""
    return _phrase(waiting.get("reason"), waiting.get("message"), None)


def _phrase(reason: str | None, message: str | None, code: int | None) -> str:
    words = []
    if message:
        words.append(f"{reason}: {message}" if reason else message)
    elif reason and reason != "Error":  # a bare "Error" says no more than the exit code
        words.append(reason)
    if code is not None:
        words.append(f"exit {code}")
    return ", ".join(words)


class ReplicaReasons:
    """Follows pods and the Warning Events about them, through informers of `factory`, and tells why
    a replica's current pod failed or waits; `changed(owner uid)` is called when that may have changed."""

    def __init__(self, factory: InformerFactory, changed: Callable[[str], None],
                 read_log: LogReader | None = None) -> None:
        self._changed = changed
        self._read_log = read_log
        self._log_notes: dict[str, str | None] = {}  # failed pod uid -> what its log tells ("": nothing; None: reading)
        self._log_tails: dict[str, list[str]] = {}  # failed pod uid -> the last lines of its failed container's log
        self._reading: set[asyncio.Task] = set()
        self._seen = asyncio.Event()  # set at every pod or Warning seen
        # The latest state of each pod by namespace and name, kept once it is deleted: a failed pod's final
        # state explains its replica until the replica has a pod of its own again.
        self._pods: dict[tuple[str, str], dict] = {}
        self._warnings: dict[str, str] = {}  # pod uid -> its latest Warning Event, as "Reason: message"
        self._deleted: dict[str, bool] = {}  # failed pod uid -> its deletion was asked before it ended
        factory.informer(PODS).add_handler(on_add=self._pod, on_update=lambda _old, new: self._pod(new),
                                           on_delete=self._pod)
        factory.informer(EVENTS).add_handler(on_add=self._event, on_update=lambda _old, new: self._event(new))

    def describe(self, namespace: str, record: dict) -> str:
        """Why the replica of this status record fails or waits ("" if it does not, or nothing says why yet)."""
        if record.get("phase") not in EXPLAINED_PHASES:
            return ""
        pod = self._pod_of(namespace, record)
        if pod is None:
            return ""
        failed = record["phase"] != "Pending"
        if failed and self._deleted.get(pod["metadata"].get("uid", "")):
            return DELETED  # its exit code (SIGTERM's 143) and its log say nothing of why it ended
        reason = pod_reason(pod, failed, self._warnings.get(record.get("uid", ""), ""))
        note = self._log_notes.get(record.get("uid", "")) if failed else ""
        return "; ".join(part for part in (note, reason) if part)

    def output_tail(self, record: dict) -> list[str]:
        """The last lines the failed container of the replica's pod wrote (empty if unread or silent)."""
        return self._log_tails.get(record.get("uid", ""), [])

    async def settle(self, failed: Callable[[], list[tuple[str, dict]]], timeout: float) -> None:
        """Wait, `timeout` seconds at most, until the pod of every (namespace, record) `failed()` lists has been
        seen finished: the job's status can come in before its pods' last states, which say why."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not all(self._seen_finished(namespace, record) for namespace, record in failed()):
                    self._seen.clear()
                    await self._seen.wait()

    def _seen_finished(self, namespace: str, record: dict) -> bool:
        pod = self._pod_of(namespace, record)
        phase = (pod.get("status") or {}).get("phase") if pod is not None else None
        log_read = phase != "Failed" or self._read_log is None or self._log_notes.get(record.get("uid", "")) is not None
        return phase in ("Failed", "Succeeded") and log_read

    def _pod_of(self, namespace: str, record: dict) -> dict | None:
        pod = self._pods.get((namespace, record.get("name", "")))
        return pod if pod is not None and pod["metadata"].get("uid") == record.get("uid") else None

    def _pod(self, pod: dict) -> None:
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        old = self._pods.get(key)
        if old is not None and old["metadata"].get("uid") != meta.get("uid"):
            self._warnings.pop(old["metadata"].get("uid", ""), None)
        self._pods[key] = pod
        uid = meta.get("uid", "")
        failed = (pod.get("status") or {}).get("phase") == "Failed"
        if failed and uid not in self._deleted:  # as first seen Failed: later, the controller's delete is on it too
            self._deleted[uid] = bool(meta.get("deletionTimestamp"))
        if self._read_log is not None and failed and uid not in self._log_notes:
            self._log_notes[uid] = None
            task = asyncio.get_running_loop().create_task(self._read_failed_log(pod))
            self._reading.add(task)
            task.add_done_callback(self._reading.discard)
        self._notify(pod)

    async def _read_failed_log(self, pod: dict) -> None:
        meta = pod["metadata"]
        note = ""
        container = failed_container(pod)
        read_log = self._read_log
        if container is not None and read_log is not None:  # (read_log: only called when there is one)
            # Best effort: a pod gone (or its logs with it) or a slow server leaves the reason as the pod gives it.
            with contextlib.suppress(Exception):
                async with asyncio.timeout(LOG_TIMEOUT):
                    log = await read_log(meta.get("namespace", ""), meta["name"], container)
                note = collision(pod, log, self._pods.values())
                self._log_tails[meta.get("uid", "")] = [line for line in log.splitlines() if line.strip()][-TAIL_LINES:]
        self._log_notes[meta.get("uid", "")] = note
        self._notify(pod)

    def _event(self, event: dict) -> None:
        involved = event.get("involvedObject") or {}
        if event.get("type") != "Warning" or involved.get("kind") != "Pod":
            return
        uid = involved.get("uid", "")
        self._warnings[uid] = _phrase(event.get("reason"), event.get("message"), None)
        pod = self._pods.get((involved.get("namespace", ""), involved.get("name", "")))
        if pod is not None and pod["metadata"].get("uid") == uid:
            self._notify(pod)

    def _notify(self, pod: dict) -> None:
        self._seen.set()
        for owner in pod["metadata"].get("ownerReferences") or ():
            if owner.get("controller"):
                self._changed(owner.get("uid", ""))


def pod_log_reader(rest: RestClient) -> LogReader:
    """Reads the last lines of a container's log, as `kubectl logs --tail` does."""

    async def read(namespace: str, name: str, container: str) -> str:
        log = await rest.get(f"/api/v1/namespaces/{namespace}/pods/{name}/log",
                             {"container": container, "tailLines": str(LOG_LINES)})
        return log.decode(errors="replace")

    return read
