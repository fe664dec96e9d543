"""No job can take the controller down: a job over the cap on its replicas is refused at `kubectl apply`, naming
the cap; a status the API server refuses as too large ends the job Failed with a Warning Event, not a retry loop."""

from __future__ import annotations

import pytest
import yaml

from controller.jobs.api import MAX_TOTAL_REPLICAS
from tests.localcluster.kubectl import Kubectl

from .conftest import genericjob


@pytest.fixture
def kubectl(cluster, tmp_path) -> Kubectl:
    return Kubectl(cluster, tmp_path)


async def test_a_job_of_64_types_of_10000_replicas_is_refused_at_apply_naming_the_cap(cluster, kubectl, jobs):
    job = genericjob("huge", {f"t{i}": 10_000 for i in range(64)})
    result = await kubectl.run("apply", "-f", "-", stdin=yaml.safe_dump(job))
    assert result.code == 1, result.out
    assert result.err.startswith('The GenericJob "huge" is invalid: '), result.err
    assert (f'spec.replicaSpecs: Invalid value: "array": the total of replicas over all replica types must be at '
            f"most {MAX_TOTAL_REPLICAS}") in result.err, result.err
    assert "huge" not in (await kubectl.ok("get", "genericjobs", "-o", "name")).out
