"""The controller's caches hold its children only: the pod, Service and PodGroup informers list and watch with
the kind's children selector, so an unrelated pod or Service never enters them (memory follows the jobs, not
the cluster), while every child of every kind served does."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from apimachinery.resource import PODS, SERVICES
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.registry import make_controller

from .conftest import FOREVER, QUICK, genericjob, scripts, until
from .test_tensorflow import tfjob

MERGE = "application/merge-patch+json"
STRANGER_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
STRANGER_SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"labels": {"app": "web"}},
                    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}


def named(obj: dict, name: str) -> dict:
    return {**obj, "metadata": {**obj["metadata"], "name": name}}


def cached(group, resource) -> set[str]:
    """The names in every cache of `resource` the controllers hold."""
    return {o["metadata"]["name"] for informer in group.factory.informers if informer.resource == resource
            for o in informer.lister.list()}


async def test_unrelated_pods_and_services_never_enter_the_cache_children_of_every_kind_do(cluster, rest_client,
                                                                                             config, jobs):
    await jobs.core.create_namespaced_pod("default", named(STRANGER_POD, "before"))
    await jobs.core.create_namespaced_service("default", named(STRANGER_SERVICE, "before"))
    group = make_controller(rest_client, config, CollectorRegistry())
    await group.start(sync_timeout=10)
    try:
        assert all(informer.label_selector for informer in group.factory.informers
                   if informer.resource in (PODS, SERVICES))
        scripts(cluster, "gj", {"*": FOREVER})
        scripts(cluster, "tf", {"*": FOREVER})
        await jobs.submit(genericjob("gj", {"worker": 1}, service={"ports": [{"name": "http", "port": 80}]}))
        await jobs.custom.create_namespaced_custom_object("batch.tensorstack.dev", "v1beta1", "default",
                                                          "tensorflowtrainingjobs", tfjob("tf", {"worker": 1}))
        children = {"gj-worker-0", "tf-worker-0"}
        await until(lambda: cached(group, PODS) == children and cached(group, SERVICES) == children, 10.0,
                    "each kind's pod and Service in the caches")
        await jobs.core.create_namespaced_pod("default", named(STRANGER_POD, "after"))
        await jobs.core.create_namespaced_service("default", named(STRANGER_SERVICE, "after"))
        # A change to a child after the strangers: once the caches have it, they have seen every event before it.
        # (A label, not an annotation: the caches drop annotations, see controller/jobs/execution/trim.py.)
        await jobs.core.patch_namespaced_pod("gj-worker-0", "default", {"metadata": {"labels": {"seen": "1"}}})
        await jobs.core.patch_namespaced_service("tf-worker-0", "default",
                                                 {"metadata": {"labels": {"seen": "1"}}})

        def annotated() -> bool:
            return any((o["metadata"].get("labels") or {}).get("seen") for informer in group.factory.informers
                       if informer.resource == SERVICES for o in informer.lister.list()) and \
                any((o["metadata"].get("labels") or {}).get("seen") for informer in group.factory.informers
                    if informer.resource == PODS for o in informer.lister.list())

        await until(annotated, 10.0, "the later changes to the children")
        assert cached(group, PODS) == children and cached(group, SERVICES) == children
    finally:
        await group.stop()


async def test_a_child_whose_label_is_removed_by_hand_is_seen_as_deleted_and_reported(cluster, controller, jobs):
    """The informer no longer selects it (the watch says deleted), so the job counts it as a pod deleted by hand;
    a replacement cannot take its name, and the job says why. The pod itself is never touched."""
    from controller.kinds.genericjob.models import API

    scripts(cluster, "strip", {"*": FOREVER})
    await jobs.submit(genericjob("strip", {"worker": 1}, restart={"policy": "Always", "limit": 3}))
    await jobs.wait_phase("strip", "Running")
    await jobs.core.patch_namespaced_pod("strip-worker-0", "default",
                                         {"metadata": {"labels": {API.children_selector: None}}})
    [event] = await jobs.wait_event("strip", "FailedCreate")
    assert event.type == "Warning" and f"lost its label {API.children_selector}" in event.message
    assert (await jobs.pod("strip-worker-0")).metadata.deletion_timestamp is None


async def test_the_caches_hold_trimmed_children_and_jobs_still_run(cluster, controller, jobs):
    """Pods enter the cache without spec, managedFields or annotations but the kind's own (`<prefix>/run-mode`),
    Services with only their ports (trim.py); the job runs to the end on them, and the status writes carry the
    job's whole spec."""
    scripts(cluster, "trim", {"*": QUICK})
    job = genericjob("trim", {"worker": 2}, service={"ports": [{"name": "http", "port": 80}]})
    submitted = await jobs.submit(job)
    await jobs.wait_phase("trim", "Succeeded")
    pods = [p for p in controller.pods.lister.list() if p["metadata"]["name"].startswith("trim-")]
    svcs = [s for s in controller.services.lister.list() if s["metadata"]["name"].startswith("trim-")]
    assert len(pods) == 2 and len(svcs) == 2
    assert all(set(p) == {"apiVersion", "kind", "metadata", "status"} for p in pods)
    assert not any("managedFields" in o["metadata"] for o in pods + svcs)
    assert not any("annotations" in s["metadata"] for s in svcs)
    prefix = f"{GENERICJOB.api.label_prefix}/"
    kept = [p["metadata"].get("annotations") or {} for p in pods]
    assert all(f"{prefix}run-mode" in a and all(k.startswith(prefix) for k in a) for a in kept), kept
    assert all(set(s["spec"]) == {"ports"} for s in svcs)
    assert (await jobs.get("trim"))["spec"] == submitted["spec"]
