"""A plan's Service, PodGroup and dependent writes (creates, merge patches, deletes), in order: a create refused as
AlreadyExists is the job's own child the cache has not seen yet, or a name taken by another owner (refusals.py).
The reconciler (reconciler.py) is given one."""

from __future__ import annotations

from apimachinery.errors import ApiStatusError
from controller.jobs.decisions.actions import (
    CHILD_KINDS,
    ChildAction,
    CreateChild,
    DeleteChild,
    child_kinds,
    child_what,
)
from controller.jobs.execution.refusals import NAME_TAKEN_RETRY, Refusals
from controller.jobs.kind import JobKind
from controller.jobs.schema.naming import controller_uid
from controller.runtime.client import KubeClient


class ChildWrites:
    """The Service, PodGroup and dependent upkeep of a plan."""

    def __init__(self, kind: JobKind, client: KubeClient, refusals: Refusals) -> None:
        self.client = client
        self.refusals = refusals
        self.child_kinds = child_kinds({d.resource.plural: d.kind for d in kind.dependent_resources})

    async def upkeep(self, obj: dict, actions: list[ChildAction], failed: list[tuple[str, str]],
                     wake_ups: list[float]) -> bool:
        """Executes the plan's Service or PodGroup actions in order; True when a create was held back because its
        name is taken (or its holder could not be told). After a refused create or patch the others wait for the
        retry: every Service is made from the same spec, and would be refused alike."""
        namespace, job_uid = obj["metadata"]["namespace"], obj["metadata"]["uid"]
        taken = self.refusals.taken
        held_back = False
        for action in actions:
            what = child_what(self.child_kinds, action)
            if isinstance(action, CreateChild) and taken.waits(job_uid, what):
                held_back = True
                continue
            try:
                if isinstance(action, DeleteChild):
                    await self.client.delete(action.resource, namespace, action.name, action.uid)
                elif isinstance(action, CreateChild):
                    await self.client.create(action.resource, action.body, answer=False)
                    taken.freed(job_uid, what)
                else:
                    await self.client.patch(action.resource, namespace, action.name, action.changes, answer=False)
            except ApiStatusError as err:
                if isinstance(action, DeleteChild):
                    if err.code not in (404, 409):  # gone already, or the name now holds another object
                        self.refusals.refused(obj, failed, "FailedDelete", f"Error deleting {what}: {err.message}")
                    continue
                if isinstance(action, CreateChild) and err.code == 409:
                    if action.resource in CHILD_KINDS:  # a Service or PodGroup: whose is it?
                        held_back |= await self._already_exists(obj, action, what, wake_ups)
                    continue  # a kind's dependent (a TensorBoard): the cache has not seen it yet
                reason, doing = ("FailedCreate", "creating") if isinstance(action, CreateChild) else \
                    ("FailedUpdate", "updating")
                self.refusals.refused(obj, failed, reason, f"Error {doing} {what}: {err.message}")
                return held_back
        return held_back

    async def _already_exists(self, obj: dict, action: CreateChild, what: str, wake_ups: list[float]) -> bool:
        """A child's create refused as AlreadyExists: the job's own child the cache has not seen yet (fine), or
        another's (its name is taken: conflicts.py). True unless it is the job's own."""
        holder = await self._holder(action.resource, obj["metadata"]["namespace"], action.name)
        if holder is None:  # gone meanwhile: try again soon
            wake_ups.append(NAME_TAKEN_RETRY)
            return True
        if controller_uid(holder) == obj["metadata"]["uid"]:
            return False
        self.refusals.name_taken(obj, what, holder)
        return True

    async def _holder(self, resource: str, namespace: str, name: str) -> dict | None:
        """The object that has a name a create was refused for (None: gone since)."""
        try:
            return await self.client.get(resource, namespace, name)
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise
