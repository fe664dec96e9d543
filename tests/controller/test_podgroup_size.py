"""The PodGroup's gang size (controller/jobs/children/podgroup.py): every replica of the job, unless the parsed spec
names a smaller gang in `min_member` (an elastic job's lower bound)."""

from __future__ import annotations

from types import SimpleNamespace

from controller.jobs.children.podgroup import min_member


def _job(counts, **spec):
    specs = [SimpleNamespace(type=f"t{i}", replicas=n, template={}) for i, n in enumerate(counts)]
    return SimpleNamespace(name="j", namespace="default", uid="u", spec=SimpleNamespace(replica_specs=specs, **spec))


def test_the_gang_is_every_replica_by_default():
    assert min_member(_job([1, 3])) == 4


def test_a_spec_with_min_member_names_a_smaller_gang():
    assert min_member(_job([1, 3], min_member=2)) == 2


def test_a_min_member_that_is_not_a_count_is_ignored():
    assert min_member(_job([1, 3], min_member=None)) == 4
