"""The PodGroup's gang size (controller/jobs/children/podgroup.py): every replica the kind runs, unless the kind names a
smaller gang (`JobKind.min_member`, an elastic job's lower bound)."""

from __future__ import annotations

from types import SimpleNamespace

from controller.jobs.children.podgroup import min_member
from controller.kinds.genericjob.kind import GenericJobKind


class _Kind(GenericJobKind):
    def __init__(self, counts: dict[str, int], smaller: int | None) -> None:
        self.counts, self.smaller = counts, smaller

    def replica_counts(self, job):
        return self.counts

    def min_member(self, job):
        return self.smaller


JOB = SimpleNamespace(name="j", namespace="default", uid="u")


def test_the_gang_is_every_replica_the_kind_runs_by_default():
    assert min_member(_Kind({"a": 1, "b": 3}, None), JOB) == 4


def test_a_kind_with_min_member_names_a_smaller_gang():
    assert min_member(_Kind({"a": 1, "b": 3}, 2), JOB) == 2
