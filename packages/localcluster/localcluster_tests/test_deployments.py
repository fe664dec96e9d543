"""Deployments: defaults and validation as the apiserver's, and localcluster's deployment controller.

The pod runner here is `none`: pods stay Pending until a test reports them Ready through /status, as a
kubelet would, so each count of the Deployment's status can be checked on its own.
"""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from localcluster.api import now_rfc3339
from localcluster.testing import until

from .test_crud import status_of
from .test_scale import deployment

MERGE = "application/merge-patch+json"


@pytest.fixture
def apps(api_client):
    return client.AppsV1Api(api_client)


async def pods(core, app: str = "web") -> list:
    return (await core.list_namespaced_pod("default", label_selector=f"app={app}")).items


async def make_ready(core, pod) -> None:
    """What the kubelet reports of a started pod."""
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": now_rfc3339()}
    await core.patch_namespaced_pod_status(pod.metadata.name, "default", {"status": {
        "phase": "Running", "conditions": [ready]}}, _content_type=MERGE)


async def status_when(apps, check, name: str = "web"):
    async def current():
        status = (await apps.read_namespaced_deployment_status(name, "default")).status
        return status if check(status) else None
    return await until(current)


def conditions(status) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in status.conditions or ()}


async def test_defaults_and_validation(apps):
    created = await apps.create_namespaced_deployment("default", {
        "metadata": {"name": "plain"},
        "spec": {"selector": {"matchLabels": {"app": "plain"}},
                 "template": {"metadata": {"labels": {"app": "plain"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
    spec = created.spec
    assert (spec.replicas, spec.revision_history_limit, spec.progress_deadline_seconds) == (1, 10, 600)
    assert spec.strategy.type == "RollingUpdate"
    assert (spec.strategy.rolling_update.max_surge, spec.strategy.rolling_update.max_unavailable) == ("25%", "25%")

    bad = deployment("bad")
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    with pytest.raises(ApiException) as refused:
        await apps.create_namespaced_deployment("default", bad)
    body = status_of(refused.value)
    assert refused.value.status == 422
    assert [c["message"] for c in body["details"]["causes"]] == [
        'Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`',
        'Unsupported value: "Never": supported values: "Always"']
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.template.metadata.labels",
                                                               "spec.template.spec.restartPolicy"]
    no_selector = deployment("none")
    del no_selector["spec"]["selector"]
    with pytest.raises(ApiException) as missing:
        await apps.create_namespaced_deployment("default", no_selector)
    assert 'spec.selector: Required value' in status_of(missing.value)["message"]
    # Switching to Recreate must drop rollingUpdate (kubectl apply of `type: Recreate` alone keeps it).
    both = deployment("both")
    both["spec"]["strategy"] = {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}
    with pytest.raises(ApiException) as forbidden:
        await apps.create_namespaced_deployment("default", both)
    assert status_of(forbidden.value)["message"] == (
        'Deployment.apps "both" is invalid: spec.strategy.rollingUpdate: Forbidden: may not be specified when '
        "strategy `type` is 'Recreate'")
    imageless = deployment("imageless")
    del imageless["spec"]["template"]["spec"]["containers"][0]["image"]
    with pytest.raises(ApiException) as invalid_pod:  # the template is validated as the pods it makes
        await apps.create_namespaced_deployment("default", imageless)
    assert status_of(invalid_pod.value)["message"] == (
        'Deployment.apps "imageless" is invalid: spec.template.spec.containers[0].image: Required value')


async def test_status_follows_the_pods(apps, core):
    await apps.create_namespaced_deployment("default", deployment(replicas=3))
    status = await status_when(apps, lambda s: s.replicas == 3)
    assert (status.observed_generation, status.updated_replicas, status.ready_replicas, status.available_replicas,
            status.unavailable_replicas) == (1, 3, None, None, 3)
    assert conditions(status) == {"Available": ("False", "MinimumReplicasUnavailable"),
                                  "Progressing": ("True", "ReplicaSetUpdated")}
    made = await pods(core)
    assert len(made) == 3 and {p.status.phase for p in made} == {"Pending"}
    # Owned by the Deployment's ReplicaSet (the ReplicaSet controller's pods), which the Deployment owns.
    [rs] = (await apps.list_namespaced_replica_set("default")).items
    assert all(p.metadata.owner_references[0].kind == "ReplicaSet" and p.metadata.owner_references[0].controller
               and p.metadata.owner_references[0].name == rs.metadata.name for p in made)
    assert (rs.metadata.owner_references[0].kind, rs.metadata.owner_references[0].name) == ("Deployment", "web")

    for pod in made[:2]:
        await make_ready(core, pod)
    status = await status_when(apps, lambda s: s.ready_replicas == 2)
    # maxUnavailable 25% of 3 rounds down to 0: two of three is not the minimum availability.
    assert conditions(status)["Available"] == ("False", "MinimumReplicasUnavailable")
    await make_ready(core, made[2])
    status = await status_when(apps, lambda s: s.available_replicas == 3)
    assert status.unavailable_replicas is None
    assert conditions(status) == {"Available": ("True", "MinimumReplicasAvailable"),
                                  "Progressing": ("True", "NewReplicaSetAvailable")}

    # Scaling down removes the least advanced pods first; a new one is never ready, so it goes.
    await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 4}}, _content_type=MERGE)
    await until(lambda: _count(core, 4))
    [fresh] = [p for p in await pods(core) if p.status.phase == "Pending"]
    await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 3}}, _content_type=MERGE)
    await until(lambda: _count(core, 3))
    assert fresh.metadata.name not in {p.metadata.name for p in await pods(core)}


async def _count(core, n: int) -> bool:
    return len(await pods(core)) == n


async def test_min_ready_seconds_delays_availability(apps, core):
    slow = deployment(replicas=1)
    slow["spec"]["minReadySeconds"] = 1
    await apps.create_namespaced_deployment("default", slow)
    [pod] = await until(lambda: pods(core))
    await make_ready(core, pod)
    status = await status_when(apps, lambda s: s.ready_replicas == 1)
    assert status.available_replicas is None
    status = await status_when(apps, lambda s: s.available_replicas == 1)  # the controller looks again in 1 s
    assert conditions(status)["Progressing"] == ("True", "NewReplicaSetAvailable")


async def test_a_new_template_replaces_the_pods_unless_paused(apps, core):
    await apps.create_namespaced_deployment("default", deployment(replicas=2))
    first = {p.metadata.name for p in await until(lambda: _pods_if(core, 2))}
    await apps.patch_namespaced_deployment("web", "default", {"spec": {"paused": True}}, _content_type=MERGE)
    image = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}}}}
    await apps.patch_namespaced_deployment("web", "default", image)
    status = await status_when(apps, lambda s: s.observed_generation == 3)
    assert conditions(status)["Progressing"] == ("Unknown", "DeploymentPaused")
    assert {p.metadata.name for p in await pods(core)} == first and status.updated_replicas is None

    # Resumed: a rolling update (the default strategy), which needs the new pods to become available before
    # it removes old ones (maxUnavailable 25% of 2 rounds down to 0) and runs at most one pod more than wanted
    # (maxSurge 25% of 2 rounds up to 1). The kubelet's part, reporting each new pod Ready, is played here.
    await apps.patch_namespaced_deployment("web", "default", {"spec": {"paused": False}}, _content_type=MERGE)
    most = 0

    async def rolled_out():
        nonlocal most
        current = await pods(core)
        most = max(most, len(current))
        for pod in current:
            if pod.status.phase == "Pending" and not pod.metadata.deletion_timestamp:
                await make_ready(core, pod)
        status = (await apps.read_namespaced_deployment_status("web", "default")).status
        return (status.observed_generation, status.updated_replicas, status.replicas,
                status.available_replicas) == (4, 2, 2, 2)

    await until(rolled_out)
    assert most <= 3
    now = await pods(core)
    assert not {p.metadata.name for p in now} & first
    assert {p.spec.containers[0].image for p in now} == {"busybox:1.37"}


async def _pods_if(core, n: int) -> list:
    found = await pods(core)
    return found if len(found) == n else []


async def test_strategic_merge_patch_merges_the_templates_containers_by_name(apps):
    two = deployment(replicas=0)
    two["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox:1.36",
                                                          "env": [{"name": "A", "value": "1"}]})
    await apps.create_namespaced_deployment("default", two)
    patched = await apps.patch_namespaced_deployment("web", "default", {"spec": {"template": {"spec": {"containers": [
        {"name": "side", "env": [{"name": "B", "value": "2"}]}]}}}},
        _content_type="application/strategic-merge-patch+json")
    containers = patched.spec.template.spec.containers
    assert [(c.name, c.image) for c in containers] == [("c", "busybox:1.36"), ("side", "busybox:1.36")]
    assert sorted((e.name, e.value) for e in containers[1].env) == [("A", "1"), ("B", "2")]


async def test_an_annotation_change_bumps_a_deployments_generation(apps):
    # The deployment strategy counts annotations too (kubectl rollout's change-cause, say); a pod's does not.
    await apps.create_namespaced_deployment("default", deployment(replicas=0))
    annotated = await apps.patch_namespaced_deployment("web", "default", {"metadata": {"annotations": {
        "kubernetes.io/change-cause": "v2"}}}, _content_type=MERGE)
    assert annotated.metadata.generation == 2
    labelled = await apps.patch_namespaced_deployment("web", "default", {"metadata": {"labels": {"tier": "x"}}},
                                                      _content_type=MERGE)
    assert labelled.metadata.generation == 2


# --- the ReplicaSets: strategies, scaling, history --------------------------------------------------

IMAGE_137 = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}}}}


async def replica_sets(apps) -> dict[str, object]:
    return {rs.metadata.name: rs for rs in (await apps.list_namespaced_replica_set("default")).items}


async def scaling_messages(core) -> list[str]:
    events = (await core.list_namespaced_event("default", field_selector="reason=ScalingReplicaSet")).items
    return [e.message for e in sorted(events, key=lambda e: e.metadata.resource_version.zfill(20))]


async def test_recreate_removes_the_old_pods_before_making_new_ones(apps, core):
    recreate = deployment(replicas=2)
    recreate["spec"]["strategy"] = {"type": "Recreate"}
    await apps.create_namespaced_deployment("default", recreate)
    await until(lambda: _pods_if(core, 2))
    [first] = await replica_sets(apps)
    await apps.patch_namespaced_deployment("web", "default", IMAGE_137)
    mixed = False

    async def replaced():
        nonlocal mixed
        images = [p.spec.containers[0].image for p in await pods(core)]
        mixed = mixed or len(set(images)) > 1
        return images == ["busybox:1.37"] * 2

    await until(replaced)
    assert not mixed  # never old and new pods at once, though none ever got ready
    [second] = set(await replica_sets(apps)) - {first}
    await until(lambda: _messages_are(core, [
        f"Scaled up replica set {first} from 0 to 2", f"Scaled down replica set {first} from 2 to 0",
        f"Scaled up replica set {second} from 0 to 2"]))


async def _messages_are(core, expected: list[str]) -> bool:
    return await scaling_messages(core) == expected


async def test_resuming_without_a_new_template_says_so(apps):
    await apps.create_namespaced_deployment("default", deployment(replicas=1))
    await status_when(apps, lambda s: s.replicas == 1)
    await apps.patch_namespaced_deployment("web", "default", {"spec": {"paused": True}}, _content_type=MERGE)
    await status_when(apps, lambda s: conditions(s)["Progressing"] == ("Unknown", "DeploymentPaused"))
    await apps.patch_namespaced_deployment("web", "default", {"spec": {"paused": False}}, _content_type=MERGE)
    status = await status_when(apps, lambda s: s.observed_generation == 3)
    assert conditions(status)["Progressing"] == ("Unknown", "DeploymentResumed")
    assert [c.type for c in status.conditions] == ["Available", "Progressing"]  # the changed one goes last


async def test_old_replicasets_beyond_the_revision_history_limit_are_deleted(apps):
    kept = deployment(replicas=0)
    kept["spec"]["revisionHistoryLimit"] = 1
    await apps.create_namespaced_deployment("default", kept)
    for image in ("busybox:1.37", "busybox:1.38"):
        await apps.patch_namespaced_deployment("web", "default", {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": image}]}}}})

    async def revisions():
        found = await replica_sets(apps)
        return sorted(rs.metadata.annotations["deployment.kubernetes.io/revision"] for rs in found.values())

    await until(lambda: _equal(revisions(), ["2", "3"]))
    status = await status_when(apps, lambda s: s.observed_generation == 3)
    assert conditions(status)["Progressing"] == ("True", "NewReplicaSetAvailable")
    stored = await apps.read_namespaced_deployment("web", "default")
    assert stored.metadata.annotations == {"deployment.kubernetes.io/revision": "3"}


async def _equal(value, expected) -> bool:
    return await value == expected


async def test_scaling_during_a_rollout_is_proportional(apps, core):
    # 4 replicas, maxSurge 1 and maxUnavailable 1 (25%): the rollout of a new image, with pods that never get
    # ready, stops at 3 old + 2 new (5 = 4 + maxSurge; no old pod may go while 3 must be available).
    await apps.create_namespaced_deployment("default", deployment(replicas=4))
    await until(lambda: _pods_if(core, 4))
    [old] = await replica_sets(apps)
    await apps.patch_namespaced_deployment("web", "default", IMAGE_137)
    [new] = set(await until(lambda: _two(apps))) - {old}
    await until(lambda: _sizes(apps, {old: 3, new: 2}))
    # Scaled to 8 mid-rollout: the 5 more (8 + 2 surge - 5) go to each ReplicaSet by its share (6 and 4), as
    # the real controller's proportional scaling.
    await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 8}}, _content_type=MERGE)
    await until(lambda: _sizes(apps, {old: 6, new: 4}))
    for rs in (await replica_sets(apps)).values():
        assert (rs.metadata.annotations["deployment.kubernetes.io/desired-replicas"],
                rs.metadata.annotations["deployment.kubernetes.io/max-replicas"]) == ("8", "10")
    await until(lambda: _pods_if(core, 10))
    messages = await scaling_messages(core)
    assert f"Scaled up replica set {old} from 3 to 6" in messages
    assert f"Scaled up replica set {new} from 2 to 4" in messages


async def _two(apps):
    found = await replica_sets(apps)
    return found if len(found) == 2 else None


async def _sizes(apps, expected: dict[str, int]) -> bool:
    return {name: rs.spec.replicas for name, rs in (await replica_sets(apps)).items()} == expected
