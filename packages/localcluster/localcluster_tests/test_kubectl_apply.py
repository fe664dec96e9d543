"""The installed kubectl's server-side apply and diff against localcluster, as on a real cluster:
`apply --server-side`, conflicts between field managers, `--force-conflicts`, the migration from
client-side apply, managedFields shown only on request, and `kubectl diff` (server-side dry runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from localcluster.testing import Kubectl, starts_processes

from .jobs import genericjob

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture
@starts_processes
def kubectl(cluster, tmp_path) -> Kubectl:
    return Kubectl(cluster, tmp_path)


def configmap(**data: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "demo"}, "data": data})


async def get(kubectl: Kubectl, *what: str) -> dict:
    return json.loads((await kubectl.ok("get", *what, "-o", "json", "--show-managed-fields")).out)


def managers(obj: dict) -> dict[tuple[str, str], dict]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


async def test_server_side_apply_conflicts_and_force(kubectl):
    applied = await kubectl.ok("apply", "--server-side", "-f", "-", stdin=configmap(key="one", other="two"))
    assert applied.out.strip() == "configmap/demo serverside-applied"
    hidden = yaml.safe_load((await kubectl.ok("get", "configmap", "demo", "-o", "yaml")).out)
    assert "managedFields" not in hidden["metadata"]  # kubectl hides them unless asked
    shown = await get(kubectl, "configmap", "demo")
    assert managers(shown) == {("kubectl", "Apply"): {"f:data": {"f:key": {}, "f:other": {}}}}

    conflict = await kubectl.run("apply", "--server-side", "--field-manager=deployer", "-f", "-",
                                 stdin=configmap(key="changed"))
    assert conflict.code == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .data.key' in conflict.err
    assert "--force-conflicts" in conflict.err  # kubectl's advice, printed for a conflict it recognised

    forced = await kubectl.ok("apply", "--server-side", "--field-manager=deployer", "--force-conflicts", "-f", "-",
                              stdin=configmap(key="changed"))
    assert forced.out.strip() == "configmap/demo serverside-applied"
    taken = await get(kubectl, "configmap", "demo")
    assert taken["data"] == {"key": "changed", "other": "two"}
    assert managers(taken) == {("kubectl", "Apply"): {"f:data": {"f:other": {}}},
                               ("deployer", "Apply"): {"f:data": {"f:key": {}}}}


async def test_server_side_apply_of_a_genericjob(kubectl, cluster):
    cluster.apply_crds(Path(__file__).parents[3] / "manifests" / "crds")
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    job = genericjob("train", 2, template=template)
    applied = await kubectl.ok("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(job))
    assert applied.out.strip() == "genericjob.batch.tensorstack.dev/train serverside-applied"
    stored = await get(kubectl, "genericjob", "train")
    assert managers(stored) == {("kubectl", "Apply"): {"f:spec": {"f:replicaSpecs": {}}}}

    bigger = genericjob("train", 3, template=template)
    conflict = await kubectl.run("apply", "--server-side", "--field-manager=scaler", "-f", "-",
                                 stdin=yaml.safe_dump(bigger))
    assert conflict.code == 1
    assert 'conflict with "kubectl": .spec.replicaSpecs' in conflict.err  # an atomic list: owned whole
    again = await kubectl.ok("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(bigger))
    assert again.out.strip() == "genericjob.batch.tensorstack.dev/train serverside-applied"
    assert (await get(kubectl, "genericjob", "train"))["spec"]["replicaSpecs"][0]["replicas"] == 3


async def test_client_side_apply_then_server_side_apply_takes_its_fields_over(kubectl):
    await kubectl.ok("apply", "-f", "-", stdin=configmap(key="one", other="two"))
    before = await get(kubectl, "configmap", "demo")
    assert set(managers(before)) == {("kubectl-client-side-apply", "Update")}

    # Another manager may not change client-side apply's fields...
    other = await kubectl.run("apply", "--server-side", "--field-manager=deployer", "-f", "-",
                              stdin=configmap(key="uno", other="two"))
    assert other.code == 1
    assert 'conflict with "kubectl-client-side-apply" using v1: .data.key' in other.err
    # ...but kubectl's own server-side apply upgrades them, with the last-applied annotation's help.
    upgraded = await kubectl.ok("apply", "--server-side", "-f", "-", stdin=configmap(key="uno", other="two"))
    assert upgraded.out.strip() == "configmap/demo serverside-applied"
    after = await get(kubectl, "configmap", "demo")
    assert after["data"] == {"key": "uno", "other": "two"}
    by_manager = managers(after)
    assert ("kubectl-client-side-apply", "Update") not in by_manager
    assert by_manager[("kubectl", "Apply")] == {"f:data": {"f:key": {}, "f:other": {}}}
    # The annotation follows what was applied, so a later client-side apply computes the right patch.
    assert json.loads(after["metadata"]["annotations"][LAST_APPLIED])["data"] == {"key": "uno", "other": "two"}
    back = await kubectl.ok("apply", "-f", "-", stdin=configmap(key="uno"))
    assert back.out.strip() == "configmap/demo configured"
    assert (await get(kubectl, "configmap", "demo"))["data"] == {"key": "uno"}


@pytest.mark.parametrize("server_side", [False, True], ids=["client-side", "server-side"])
async def test_diff_shows_a_change_and_exits_1_and_0_when_nothing_differs(kubectl, server_side):
    flags = ["--server-side"] if server_side else []
    await kubectl.ok("apply", *flags, "-f", "-", stdin=configmap(key="one"))
    same = await kubectl.run("diff", *flags, "-f", "-", stdin=configmap(key="one"))
    assert (same.code, same.out, same.err) == (0, "", "")
    changed = await kubectl.run("diff", *flags, "-f", "-", stdin=configmap(key="two"))
    assert changed.code == 1, changed.err
    assert "-  key: one" in changed.out and "+  key: two" in changed.out
    assert "managedFields" not in changed.out
    assert "generation" not in changed.out  # a ConfigMap has none to bump, as on a real server
    assert (await get(kubectl, "configmap", "demo"))["data"] == {"key": "one"}  # a dry run

    new = await kubectl.run("diff", *flags, "-f", "-", stdin=configmap(key="x").replace("demo", "fresh"))
    assert new.code == 1 and "+  name: fresh" in new.out
    missing = await kubectl.run("get", "configmap", "fresh")
    assert missing.code == 1 and "NotFound" in missing.err
