"""The world a job lives in, as the engine's model test fakes it: the API server's objects (the job, its pods and
Services), the write client that applies the controller's writes to them as a real API server would
(resourceVersion conflicts, uid preconditions, AlreadyExists, graceful deletes), and the Event recorder.

Every pod write is logged (`World.log`) with a sequence number, so the model can tell which pods a lagging cache
could not have seen yet and which pods the controller itself created and deleted."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime

import orjson

from apimachinery.errors import ApiStatusError

EPOCH = 1893456000  # 2030-01-01T00:00:00Z
JOB, NS, UID = "job", "ns", "job-uid"
GRACE = 30  # seconds a pod deleted while stuck stays terminating before its grace period ends


def stamp(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class World:
    """The API server's objects (the job and its children), changed by the fake write client and the rules."""

    def __init__(self, obj: dict, now: int) -> None:
        self.job: dict | None = obj
        self.pods: dict[str, dict] = {}
        self.services: dict[str, dict] = {}
        self.children: dict[str, dict[str, dict]] = {}  # a kind's dependents (an MPIJob's ConfigMap) by resource
        self.now = now
        self.rv = itertools.count(100)
        self.uids = itertools.count(1)
        self.seq = 0  # one more for every pod change: a snapshot of the pods is as new as its seq
        self.stuck: set[str] = set()  # pods whose next delete leaves them terminating (a lost node)
        self.log: list[tuple] = []  # (verb, name, object as it was[, seq]) of every write of the controller
        obj["metadata"]["resourceVersion"] = str(next(self.rv))

    def edit(self, change) -> None:
        """A user's edit of the spec: a new generation and resourceVersion."""
        spec = copy.deepcopy(self.job["spec"])
        change(spec)
        meta = self.job["metadata"]
        self.job = {**self.job, "spec": spec, "metadata": {**meta, "generation": meta["generation"] + 1,
                                                           "resourceVersion": str(next(self.rv))}}

    def set_pod(self, name: str, **status) -> None:
        pod = self.pods[name]
        self.seq += 1
        self.pods[name] = {**pod, "metadata": {**pod["metadata"], "resourceVersion": str(next(self.rv))},
                           "status": {**pod.get("status", {}), **status}}

    def remove_pod(self, name: str) -> None:
        self.seq += 1
        del self.pods[name]
        self.stuck.discard(name)


class WorldClient:
    """The controller's write client, applied to the World as a real API server would."""

    def __init__(self, world: World) -> None:
        self.world = world

    async def replace_status(self, resource, job: dict, status: dict) -> dict:
        current = self.world.job
        if current is None:
            raise ApiStatusError(404, "NotFound", "job gone")
        if current["metadata"]["resourceVersion"] != job["metadata"]["resourceVersion"]:
            raise ApiStatusError(409, "Conflict", "the object has been modified")
        orjson.dumps(status)  # what goes over the wire must be JSON (no enum keys, no dataclasses)
        self.world.job = {**current, "status": copy.deepcopy(status),
                          "metadata": {**current["metadata"], "resourceVersion": str(next(self.world.rv))}}
        self.world.log.append(("status", JOB, self.world.job))
        return self.world.job

    async def create(self, resource: str, obj: dict, *, answer: bool = True) -> dict:
        name = obj["metadata"]["name"]
        if resource == "services":
            self.world.services.setdefault(name, {**obj, "metadata": {**obj["metadata"], "uid": f"svc-{name}"}})
            return obj
        if resource != "pods":
            kept = self.world.children.setdefault(resource, {})
            if name in kept:
                raise ApiStatusError(409, "AlreadyExists", f'{resource} "{name}" already exists')
            kept[name] = {**copy.deepcopy(obj), "metadata": {**obj["metadata"], "uid": f"{resource}-{name}"}}
            return kept[name]
        if name in self.world.pods:
            raise ApiStatusError(409, "AlreadyExists", f'pods "{name}" already exists')
        pod = copy.deepcopy(obj)
        pod["metadata"].update(uid=f"{name}-u{next(self.world.uids)}", resourceVersion=str(next(self.world.rv)),
                               creationTimestamp=stamp(self.world.now))
        pod["status"] = {"phase": "Pending"}
        self.world.seq += 1
        self.world.pods[name] = pod
        self.world.log.append(("create", name, pod, self.world.seq))
        return pod

    async def delete(self, resource: str, namespace: str, name: str, uid: str | None = None) -> None:
        if resource != "pods":
            self.world.services.pop(name, None)
            return
        pod = self.world.pods.get(name)
        if pod is None or (uid and pod["metadata"]["uid"] != uid):
            self.world.log.append(("delete", name, None, uid))  # meant for a pod already gone: it retires it
        if pod is None:
            raise ApiStatusError(404, "NotFound", f'pods "{name}" not found')
        if uid and pod["metadata"]["uid"] != uid:
            raise ApiStatusError(409, "Conflict", "uid precondition failed")
        self.world.log.append(("delete", name, pod, pod["metadata"]["uid"]))
        if pod["metadata"].get("deletionTimestamp"):
            return
        self.world.seq += 1
        if name in self.world.stuck:
            self.world.pods[name] = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp":
                                                         stamp(self.world.now + GRACE)}}
        else:
            del self.world.pods[name]

    async def force_delete(self, resource: str, namespace: str, name: str, uid: str) -> None:
        pod = self.world.pods.get(name)
        if pod is None or pod["metadata"]["uid"] != uid:
            raise ApiStatusError(404, "NotFound", f'pods "{name}" not found')
        self.world.remove_pod(name)

    async def patch(self, resource: str, namespace: str, name: str, changes: dict, *, answer: bool = True) -> dict:
        """A merge patch (RFC 7386) of a dependent; of anything else, nothing."""
        kept = self.world.children.get(resource) or {}
        if name not in kept:
            return {}
        kept[name] = merged(kept[name], changes)
        return kept[name]

    async def get(self, resource: str, namespace: str, name: str) -> dict:
        pod = self.world.pods.get(name) if resource == "pods" else None
        if pod is None:
            raise ApiStatusError(404, "NotFound", f'{resource} "{name}" not found')
        return pod


def merged(target: dict, patch: dict) -> dict:
    out = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[int, str, str, str]] = []  # (generation, type, reason, message)

    def record(self, obj: dict, event_type: str, reason: str, message: str) -> None:
        self.events.append((obj["metadata"].get("generation"), event_type, reason, message))
