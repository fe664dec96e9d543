"""The Events a scheduler and a kubelet record about a pod, as `kubectl describe pod` lists them.

The process runner plays both, so it records what they record (reasons from the kubelet's
pkg/kubelet/events, messages as kubelet 1.35 words them):

    Normal   Scheduled    default-scheduler  Successfully assigned default/job-worker-0 to localnode
    Normal   Pulled       kubelet            spec.containers{main}: Container image "x" already present on
                                             machine and can be accessed by the pod
    Normal   Created      kubelet            spec.containers{main}: Container created
    Normal   Started      kubelet            spec.containers{main}: Container started
    Warning  Failed       kubelet            spec.containers{main}: Error: secret "x" not found
    Warning  BackOff      kubelet            spec.containers{main}: Back-off restarting failed container main
                                             in pod job-worker-0_default(UID)
    Normal   Killing      kubelet            spec.containers{main}: Stopping container main
    Warning  FailedMount  kubelet            MountVolume.SetUp failed for volume "v" : secret "x" not found

Images are not pulled (the runner ignores them; the host's files stand in for the image's), so
every image is "already present": the message a kubelet gives for an image it finds on the node.
A repeat of the same event (a retried configuration error) raises the first one's `count` and
`lastTimestamp`, as client-go's event correlator does, so a waiting pod does not pile up Events.
The scripted runner records none: it stands in for thousands of pods in the scale benchmark.
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime

from ..api import Api, now_rfc3339
from ..errors import ApiError
from .runner import NODE

KUBELET = {"component": "kubelet", "host": NODE}
SCHEDULER = "default-scheduler"
EVENTS = ("", "events")


def field_path(container: str, init: bool) -> str:
    return f"spec.{'initContainers' if init else 'containers'}{{{container}}}"


class PodEvents:
    def __init__(self, api: Api) -> None:
        self.api = api
        # pod uid -> (fieldPath, type, reason, message) -> the Event's name, for repeats
        self._sent: dict[str, dict[tuple[str, str, str, str], str]] = {}

    def scheduled(self, pod: dict) -> None:
        """The scheduler's Event, as an events.k8s.io/v1 Event reads through core/v1 (no source, no count)."""
        meta = pod["metadata"]
        scheduler = pod["spec"].get("schedulerName") or SCHEDULER  # the one that bound it (scheduling.py)
        self._create(pod, "", "Normal", "Scheduled",
                     f"Successfully assigned {meta.get('namespace')}/{meta['name']} to {NODE}",
                     {"source": {}, "reportingComponent": scheduler, "reportingInstance": f"{scheduler}-{NODE}",
                      "action": "Binding", "eventTime": _micro_time(), "firstTimestamp": None,
                      "lastTimestamp": None})

    def record(self, pod: dict, kind: str, reason: str, message: str, path: str = "") -> None:
        """A kubelet Event about the pod (`path`: the container's fieldPath, or "" for the pod)."""
        key = (path, kind, reason, message)
        sent = self._sent.setdefault(pod["metadata"]["uid"], {})
        name = sent.get(key)
        if name is not None and self._repeat(pod["metadata"].get("namespace", ""), name):
            return
        now = now_rfc3339()
        created = self._create(pod, path, kind, reason, message,
                               {"source": dict(KUBELET), "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                                "eventTime": None, "reportingComponent": "kubelet", "reportingInstance": NODE})
        if created is not None:
            sent[key] = created

    def forget(self, uid: str) -> None:
        self._sent.pop(uid, None)

    def _repeat(self, namespace: str, name: str) -> bool:
        event = self.api.store.get(EVENTS, (namespace, name))
        if event is None:
            return False
        rt = self.api.registry.builtin("", "v1", "events")
        self.api.system_write(rt, {**event, "count": int(event.get("count") or 1) + 1,
                                   "lastTimestamp": now_rfc3339()})
        return True

    def _create(self, pod: dict, path: str, kind: str, reason: str, message: str, extra: dict) -> str | None:
        meta = pod["metadata"]
        involved = {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta["name"], "uid": meta["uid"],
                    "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion", "")}
        if path:
            involved["fieldPath"] = path
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": meta.get("namespace")},
                 "involvedObject": involved, "reason": reason, "message": message, "type": kind, **extra}
        with contextlib.suppress(ApiError):  # best effort, as the kubelet's: a terminating namespace refuses it
            return self.api.create(self.api.registry.builtin("", "v1", "events"), meta.get("namespace"),
                                   event)["metadata"]["name"]
        return None


def _micro_time() -> str:
    """metav1.MicroTime: RFC 3339 with microseconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
