"""Dependents whose chosen fields follow the job (`Dependent.follows`, decisions/upkeep.py): a ConfigMap's `data`
rewritten by a scale, a Secret created once and never patched, a TensorBoard's `spec` as before."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.resource import Resource
from controller.jobs.decisions import upkeep
from controller.jobs.decisions.actions import CreateChild, PatchChild
from controller.jobs.kind import NO_STATUS, Dependent
from controller.kinds.genericjob.kind import GenericJobKind
from controller.kinds.genericjob.models import GenericJob
from tests.controller.plan_support import make_job

CONFIGMAPS, SECRETS, BOARDS = Resource("", "v1", "configmaps"), Resource("", "v1", "secrets"), \
    Resource("example.dev", "v1", "boards")


class WithDependents(GenericJobKind):
    dependent_resources = (Dependent(CONFIGMAPS, "ConfigMap", follows=("data",)),
                           Dependent(SECRETS, "Secret", ("list", "watch", "create"), follows=()),
                           Dependent(BOARDS, "Board"))
    keys = 0

    def dependents(self, job: GenericJob, status: Mapping[str, Any] = NO_STATUS) -> dict[Resource, dict]:
        self.keys += 1  # a new key each time it is asked: it must be written once only
        workers = sum(spec.replicas for spec in job.spec.replica_specs)
        hosts = "".join(f"{job.name}-worker-{i}\n" for i in range(workers))
        return {CONFIGMAPS: {"metadata": {"name": f"{job.name}-config"}, "data": {"hostfile": hosts}},
                SECRETS: {"metadata": {"name": f"{job.name}-ssh"}, "data": {"key": f"key-{self.keys}"}},
                BOARDS: {"metadata": {"name": f"{job.name}-board"}, "spec": {"workers": workers}}}


KIND = WithDependents()


def stored(bodies: dict[Resource, dict]) -> dict[Resource, list[dict] | None]:
    return {resource: [{**body, "metadata": {**body["metadata"], "uid": "u"}}] for resource, body in bodies.items()}


def test_each_dependent_is_created_then_only_its_followed_fields_follow_the_job():
    two = make_job(("worker", 2))
    made, _ = upkeep.dependent_actions(KIND, two, {CONFIGMAPS: [], SECRETS: [], BOARDS: []}, terminal=False)
    assert [type(a) for a in made] == [CreateChild] * 3
    objects = stored(KIND.dependents(two))
    same, _ = upkeep.dependent_actions(KIND, two, objects, terminal=False)
    assert same == []  # the Secret's key differs each time it is asked, and is never patched
    three = make_job(("worker", 3))
    scaled, _ = upkeep.dependent_actions(KIND, three, objects, terminal=False)
    assert scaled == [
        PatchChild("configmaps", "job-config", {"data": {"hostfile": "job-worker-0\njob-worker-1\njob-worker-2\n"}}),
        PatchChild("boards", "job-board", {"spec": {"workers": 3}})]
    finished, _ = upkeep.dependent_actions(KIND, three, objects, terminal=True)
    assert finished == []  # a finished job's dependents are left as they are


def test_a_deleted_dependent_is_made_again():
    two = make_job(("worker", 2))
    objects = stored(KIND.dependents(two))
    objects[SECRETS] = []
    again, _ = upkeep.dependent_actions(KIND, two, objects, terminal=False)
    assert [(type(a), a.resource) for a in again] == [(CreateChild, "secrets")]
