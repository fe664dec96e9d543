"""`kubectl logs --previous` reads the container instance before the last restart of the same pod.

A container restarted in place (restartPolicy OnFailure or Always) keeps its previous instance's
output; a pod replaced by a new one of the same name (as the GenericJob controller replaces a
failed replica) is another pod, whose container has no previous instance: the answer is then the
kubelet's `previous terminated container ... not found`, as from a real cluster.
"""

from __future__ import annotations

import pytest

from localcluster.testing import Kubectl, until

from .process_runner_support import process_pod, wait_phase
from .test_delete import gone

pytestmark = pytest.mark.runner("process")

NOT_FOUND = 'Error from server (BadRequest): previous terminated container "main" in pod "{}" not found\n'


async def test_previous_logs_of_a_container_restarted_in_place(cluster, core, tmp_path):
    cluster.runner.backoff = (0.05, 0.1)
    kubectl = Kubectl(cluster, tmp_path)
    marker = tmp_path / "tried"
    script = f"if [ -e {marker} ]; then echo second try; exit 0; fi; echo first try; touch {marker}; exit 1"
    await core.create_namespaced_pod("default", process_pod("flaky", "sh", "-c", script, restart="OnFailure"))
    await wait_phase(core, "flaky", "Succeeded")
    assert (await kubectl.ok("logs", "flaky")).out == "second try\n"
    assert (await kubectl.ok("logs", "flaky", "--previous")).out == "first try\n"


async def test_a_replaced_pod_has_no_previous_logs(cluster, core, tmp_path):
    kubectl = Kubectl(cluster, tmp_path)
    await core.create_namespaced_pod("default", process_pod("replica", "sh", "-c", "echo attempt one; exit 1"))
    await wait_phase(core, "replica", "Failed")
    never = await kubectl.run("logs", "replica", "--previous")
    assert (never.code, never.err) == (1, NOT_FOUND.format("replica"))
    await core.delete_namespaced_pod("replica", "default")
    await until(lambda: gone(core, "replica"))
    await core.create_namespaced_pod("default", process_pod("replica", "sh", "-c", "echo attempt two"))
    await wait_phase(core, "replica", "Succeeded")
    assert (await kubectl.ok("logs", "replica")).out == "attempt two\n"
    replaced = await kubectl.run("logs", "replica", "--previous")
    assert (replaced.code, replaced.err) == (1, NOT_FOUND.format("replica"))
