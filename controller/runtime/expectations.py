"""Expectations: the creates and deletes a controller has asked for and its cache has not shown yet
(client-go's ControllerExpectations, keyed by owner uid and by child name or uid).

Raised before each request, lowered by the child informer's handlers (`creation_observed`,
`deletion_observed`) and by `observe`, which a reconcile calls with the children it read; an
expectation never observed expires after EXPECTATION_TTL, so a lost event costs a retry, not a stuck job.
"""

from __future__ import annotations

import time

EXPECTATION_TTL = 60.0  # seconds before an unobserved create/delete is assumed lost and retried


class Expectations:
    """Per job: pod names created and pod uids deleted that the cache has not reflected yet."""

    def __init__(self) -> None:
        self._creates: dict[str, dict[str, float]] = {}
        self._deletes: dict[str, dict[str, float]] = {}

    def observe(self, job_uid: str, pods: list[dict]) -> None:
        names = {p["metadata"]["name"] for p in pods}
        uids = {p["metadata"]["uid"] for p in pods}
        now = time.monotonic()
        creates = self._creates.get(job_uid)
        if creates:
            for name in [n for n, t in creates.items() if n in names or now - t > EXPECTATION_TTL]:
                del creates[name]
        deletes = self._deletes.get(job_uid)
        if deletes:
            for uid in [u for u, t in deletes.items() if u not in uids or now - t > EXPECTATION_TTL]:
                del deletes[uid]

    def creating(self, job_uid: str, name: str) -> bool:
        return name in self._creates.get(job_uid, ())

    def creating_now(self, job_uid: str) -> frozenset[str]:
        """The names expected at this moment: a reconcile takes this with its read of the cache, and
        decides from the two together (a pod observed later was not in the pods it planned from)."""
        return frozenset(self._creates.get(job_uid, ()))

    def deleting(self, job_uid: str, uid: str) -> bool:
        return uid in self._deletes.get(job_uid, ())

    def expect_create(self, job_uid: str, name: str) -> None:
        self._creates.setdefault(job_uid, {})[name] = time.monotonic()

    def expect_delete(self, job_uid: str, uid: str) -> None:
        self._deletes.setdefault(job_uid, {})[uid] = time.monotonic()

    def creation_observed(self, job_uid: str, name: str) -> None:
        """A pod of that name was seen (pod informer add or delete), or its create failed."""
        creates = self._creates.get(job_uid)
        if creates:
            creates.pop(name, None)

    def deletion_observed(self, job_uid: str, uid: str) -> None:
        """The pod is gone (pod informer delete, tombstones included), or its delete failed."""
        deletes = self._deletes.get(job_uid)
        if deletes:
            deletes.pop(uid, None)

    def forget(self, job_uid: str) -> None:
        self._creates.pop(job_uid, None)
        self._deletes.pop(job_uid, None)
