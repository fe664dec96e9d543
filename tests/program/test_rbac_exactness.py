"""RBAC: the controller runs in-process under leader election through every path that calls the API, as the
manifests' ServiceAccount with their RBAC and OwnerReferencesPermissionEnforcement enforced; the (verb, resource)
pairs localcluster saw must be exactly what the ClusterRole and the Role allow, and none was refused.

Every kind of the registry is in the run, the test-only fourth kind (tests/e2e/test_fourth_kind.py's ShellJob)
registered in it for the length of the test: the cluster gets the CRDs and the RBAC `make generate` writes from the
registry (tests/program/manifests_support.py, registry_install), which for the build's kinds are the install's own
(checked here too), so the exactness check covers a kind added to the registry with no line here changed."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from controller.jobs.children.podgroup import GROUP as PG_GROUP
from controller.jobs.execution.controller import JobController
from controller.jobs.testing import ApiExercise
from controller.kinds import registry
from controller.kinds.genericjob.kind import GENERICJOB
from controller.kinds.registry import make_controller
from controller.runtime.controller import ControllerConfig
from controller.runtime.group import ControllerGroup
from controller.runtime.leader import LeaderElectionConfig, LeaderElector
from controller.runtime.preflight import preflight
from tests.clients import controller_client
from tests.e2e.conftest import FAIL, FAST, FOREVER, MERGE, QUICK, condition, genericjob, replicas, template
from tests.e2e.test_fourth_kind import KIND as SHELL_KIND
from tests.e2e.test_fourth_kind import SHELLJOB

from .manifests_support import (
    NAME,
    NAMESPACE,
    ROLES,
    InProcess,
    Rule,
    apply_rbac,
    find,
    refused,
    registry_install,
    render,
    rules_of,
    service_account_client,
)

# --- RBAC: the rules against the requests the controller really makes ---------------------------

# The API group of each resource the controller may request (localcluster counts requests by resource
# name only). Events are core/v1: controller/runtime/client.py posts them to /api/v1, never to events.k8s.io.
FIXED_GROUPS = {
    "podgroups": PG_GROUP,
    "pods": "",
    "services": "",
    "events": "",
    "leases": "coordination.k8s.io",
    "tokenreviews": "authentication.k8s.io",
    "subjectaccessreviews": "authorization.k8s.io",
}
NAMESPACED_ROLE = {"leases"}  # granted by the Role in the controller's namespace, not the ClusterRole


def groups() -> dict[str, str]:
    """Every resource's group: every registered kind (read now: a kind a test registers too), its subresources and
    its dependents (the TensorBoard, an MPIJob's ConfigMap and Secret), and the engine's own."""
    return {**{f"{kind.api.plural}{sub}": kind.api.group for kind in registry.KINDS.values()
               for sub in ("", "/status", "/finalizers")},
            **{dependent.resource.plural: dependent.resource.group for kind in registry.KINDS.values()
               for dependent in kind.dependent_resources},
            **FIXED_GROUPS}


# Permissions the controller needs but that the scenario below cannot make it request: (group, resource,
# verb) -> why it is needed. Every other rule is exercised: even the live `get pods` of reconciler.py's
# `_cache_lags` (by force-deleting a running pod, which the cache then misses while the job's status still
# records it running), and the force-delete of a pod stuck terminating needs no more than `delete pods`,
# which clean-up and restarts use.
NOT_EXERCISED_FIXED: dict[Rule, str] = {
    ("scheduler.tensorstack.dev", "podgroups", "get"):
        "who holds a PodGroup name a create found taken (not met in this run, where each PodGroup is made once): "
        "tests/e2e/test_live_conflicts.py::test_a_podgroup_taken_by_a_job_of_another_kind_holds_the_pods_back",
    ("authentication.k8s.io", "tokenreviews", "create"):
        "the secure metrics endpoint, scraped under these rules in test_metrics_security.py",
    ("authorization.k8s.io", "subjectaccessreviews", "create"):
        "the secure metrics endpoint, scraped under these rules in test_metrics_security.py",
}


def not_exercised() -> dict[Rule, str]:
    return {**{(kind.api.group, f"{kind.api.plural}/finalizers", "update"):
               f"checked by OwnerReferencesPermissionEnforcement on every child's create of a {kind.api.kind}, never "
               "requested: test_without_the_finalizers_rule_every_pod_create_is_refused shows the need"
               for kind in registry.KINDS.values()},
            **NOT_EXERCISED_FIXED}


def describe(rule: Rule) -> str:
    group, resource, verb = rule
    return f"{verb} {resource}.{group}" if group else f"{verb} {resource}"



def controller_idle(controller: JobController) -> bool:
    """Nothing queued or being reconciled, and every Event recorded has been sent."""
    return len(controller.queue) == 0 and not controller.queue._processing and controller.recorder._idle.is_set()


async def run_every_api_path(cluster, group: ControllerGroup) -> None:
    """Jobs that between them make the controller call every API it has."""
    local = InProcess(cluster)
    controller = next(member for member in group.members if member.kind is GENERICJOB)

    # A job of every other kind, as its folder's contract writes it (controller/kinds/<kind>/testing.py): its kind's
    # list, watch and status writes, and what it adds (a TensorBoard, an MPIJob's ConfigMap and Secret), made, then
    # patched by an edit of the job.
    exercises = [(kind, exercise) for kind in registry.KINDS.values()
                 if (exercise := registry.model_contract(kind).api_exercise(template(FOREVER))) is not None]
    for kind, exercise in exercises:
        local.api.create(cluster.registry.get(kind.api.group, kind.api.version, kind.api.plural), "default",
                         exercise.job)

    # Succeeds: pods created, status written, Events created.
    local.submit(genericjob("succeeds", {"worker": 2}, script=QUICK))
    # A restart (OnFailure, limit 1): the failed pod is deleted and made again under the same name, so
    # the second "Created pod" Event within the dedupe window is a PATCH of the first.
    local.submit(genericjob("restarts", {"worker": 1}, script=[FAIL, QUICK], restart={"policy": "OnFailure",
                                                                                      "limit": 1}))
    # cleanUpPolicy All, with Services and a PodGroup: on success, pods, Services and the PodGroup are deleted.
    service = {"ports": [{"name": "http", "port": 2222}]}
    scheduler = {"t9kScheduler": {"queue": "default", "priority": 5}}
    local.submit(genericjob("cleanup", {"master": 1, "worker": 1}, script=QUICK, cleanUpPolicy="All",
                            service=service, scheduler=scheduler))
    # spec.service and t9kScheduler on a running job: Services and the PodGroup are created.
    local.submit(genericjob("served", {"master": 1, "worker": 2}, script=FOREVER, service=service,
                            scheduler=scheduler))
    # Paused while running (its pods are deleted), then the job is deleted.
    local.submit(genericjob("paused", {"worker": 2}, script=FOREVER))
    # InvalidSpec: a success rule naming a type the job does not have.
    local.submit(genericjob("invalid", {"worker": 1}, script=QUICK, successRules=[{"chief": [0]}]))
    # A running pod force-deleted: the cache loses it while the job's status still records it running,
    # so the reconciler asks the server (a live GET, 404) before counting the replica as lost.
    local.submit(genericjob("lost", {"worker": 1}, script=FOREVER))

    assert replicas(await local.wait_phase("succeeds", "Succeeded"))
    restarted = await local.wait_phase("restarts", "Succeeded")
    assert restarted["status"]["tasks"][0]["restartCount"] == 1
    await local.wait("restart's repeated Event patched",
                     lambda: any(e.get("count", 1) >= 2 for e in local.events("restarts")))

    await local.wait_phase("cleanup", "Succeeded")
    await local.wait("cleanup's pods, Services and PodGroup deleted",
                     lambda: not (local.pods("cleanup") or local.services("cleanup") or local.podgroups("cleanup")))

    await local.wait_phase("served", "Running")
    await local.wait("served's Services and PodGroup",
                     lambda: len(local.services("served")) == 3 and len(local.podgroups("served")) == 1)
    # Edits of a running job: a scale edit patches the PodGroup's minMember, a ports edit every Service.
    served = local.job("served")
    specs = [{**s, "replicas": 3} if s["type"] == "worker" else s for s in served["spec"]["replicaSpecs"]]
    local.patch("served", {"spec": {"replicaSpecs": specs, "service": {"ports": [{"name": "http", "port": 2223}]}}})
    await local.wait("served's PodGroup and Services follow the edit", lambda: len(local.services("served")) == 4
                     and local.podgroups("served")[0]["spec"]["minMember"] == 4
                     and all(s["spec"]["ports"][0]["port"] == 2223 for s in local.services("served")))

    await local.wait_phase("paused", "Running")
    local.patch("paused", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    await local.wait_phase("paused", "Paused")
    await local.wait("paused's pods deleted", lambda: not local.pods("paused"))
    local.delete("paused")
    await local.wait("paused deleted", lambda: local.job("paused") is None)

    invalid = await local.wait_phase("invalid", "Failed")
    assert condition(invalid, "Failed")["reason"] == "InvalidSpec"

    # Only once the controller's own cache shows the replica running is the force-deletion a lost pod.
    def cached_running() -> bool:
        cached = controller.jobs.lister.get("default/lost")
        return bool(cached) and (replicas(cached).get("lost-worker-0") or {}).get("phase") == "Running"

    await local.wait("lost's replica running in the controller's cache", cached_running)
    local.force_delete_pod("lost-worker-0")
    await local.wait_phase("lost", "Failed")  # restartPolicy Never: a lost pod has failed for good

    for kind, exercise in exercises:
        await exercised(local, cluster, kind, exercise)
    await local.wait("controller idle", lambda: all(controller_idle(member) for member in group.members))

    # localcluster counts a request when its response ends, and the informers' watches are still open:
    # end them (the informers re-watch) so that they are counted too.
    watches = sum(n for (verb, _, _), n in cluster.faults.requests.items() if verb == "watch")
    dropped = cluster.drop_watches()
    await local.wait("the dropped watches counted", lambda: sum(
        n for (verb, _, _), n in cluster.faults.requests.items() if verb == "watch") >= watches + dropped)


async def exercised(local: InProcess, cluster, kind, exercise: ApiExercise) -> None:
    """A kind's exercise, its job created: its status written, what it makes, then the edit it follows; the job
    deleted."""
    jobs = cluster.registry.get(kind.api.group, kind.api.version, kind.api.plural)
    name = exercise.job["metadata"]["name"]

    def status_written() -> bool:  # the kind's status subresource written (for a kind that adds nothing else)
        return bool((local.api.get(jobs, "default", name).get("status") or {}).get("phase"))

    await local.wait(f"the {kind.api.kind}'s status", status_written)
    if exercise.made is not None:
        resource, made = exercise.made
        await local.wait(f"the {kind.api.kind}'s {resource[1]}", lambda: made(local.store.objects(resource, "default")))
    if exercise.edit is not None:
        local.api.patch(jobs, "default", name, MERGE, exercise.edit)
    if exercise.followed is not None:
        resource, followed = exercise.followed
        await local.wait(f"the {kind.api.kind}'s {resource[1]} follow the edit",
                         lambda: followed(local.store.objects(resource, "default")))
    local.api.delete(jobs, "default", name, {"propagationPolicy": "Background"})


async def run_under_leader_election(cluster, rest_client) -> None:
    """Run every API path as `genericjob-controller run --leader-elect` would, with `rest_client`'s identity."""
    # Every kind, as `run` serves them by default: one controller per kind, sharing their informers.
    controller = make_controller(rest_client, ControllerConfig(workers=4, qps=0, informer_options=FAST,
                                                              shutdown_timeout=5.0), None)
    # As `genericjob-controller run --leader-elect` does: the start-up checks (their requests are counted
    # too), informers warm up, workers run only while leading.
    await preflight(rest_client, [(i.resource, i.namespace) for i in controller.factory.informers],
                    lease=(NAMESPACE, NAME), timeout=10)
    controller.start_informers()
    await controller.wait_for_sync(10)
    leading, lost = asyncio.Event(), asyncio.Event()

    async def lead() -> None:
        controller.run_workers()
        leading.set()
        await asyncio.Event().wait()

    elector = LeaderElector(rest_client, LeaderElectionConfig(NAME, NAMESPACE), lead, lost.set)
    election = asyncio.create_task(elector.run())
    try:
        await asyncio.wait_for(leading.wait(), 10)
        await run_every_api_path(cluster, controller)
        assert not lost.is_set(), "leadership lost during the scenario"
    finally:
        election.cancel()  # a clean shutdown: the lease is released (GET, then PUT)
        await asyncio.gather(election, return_exceptions=True)
        await controller.stop()
    lease = cluster.api.get(cluster.registry.get("coordination.k8s.io", "v1", "leases"), NAMESPACE, NAME)
    assert lease["spec"]["holderIdentity"] == "", "the lease was not released"


@pytest.mark.runner("scripted")
async def test_rbac_rules_are_exactly_what_the_controller_uses(cluster, rendered, tmp_path, monkeypatch):
    monkeypatch.setitem(registry.KINDS, SHELL_KIND, SHELLJOB)  # the test-only kind, as one entry of registry.py would
    install = render(registry_install(tmp_path))
    assert without_kind(install, SHELLJOB.api.plural) == without_kind(rendered, ""), \
        "the install's RBAC is not what the registry's kinds make of it (make generate)"
    cluster.apply_crds(tmp_path / "manifests" / "crds")
    local = tmp_path / "local"
    local.mkdir()
    for name, definition in registry.local_crds().items():  # the platform's APIs (the TensorBoard)
        (local / name).write_text(yaml.safe_dump(definition))
    cluster.apply_crds(local)
    apply_rbac(cluster, install)
    async with service_account_client(cluster) as api_client, controller_client(api_client) as rest_client:
        await run_under_leader_election(cluster, rest_client)
    assert not refused(cluster), f"requests refused under the manifests' RBAC: {refused(cluster)}"
    assert cluster.access.admission.owner_references  # the plugin was on: the finalizers rule was needed

    seen = cluster.faults.requests
    known = groups()
    unknown = sorted({resource for _, resource, _ in seen if resource not in known})
    assert not unknown, f"requests for resources the test cannot map to an API group: {unknown}"
    used = {(known[resource], resource, verb) for verb, resource, _ in seen}
    assert {resource for _, resource, _ in used} >= {SHELLJOB.api.plural, f"{SHELLJOB.api.plural}/status"}
    cluster_rules = rules_of(find(install, "ClusterRole", NAME))
    role_rules = rules_of(find(install, "Role", ROLES["Role"]))

    def granted(rule: Rule) -> bool:
        return rule in (role_rules if rule[1] in NAMESPACED_ROLE else cluster_rules)

    missing = sorted(describe(r) for r in used if not granted(r))
    assert not missing, f"the controller used permissions the manifests do not grant: {missing}"
    assert not {r for r in role_rules if r[1] not in NAMESPACED_ROLE}, "the Role grants more than leases"
    assert not {r for r in cluster_rules if r[1] in NAMESPACED_ROLE}, "leases belong in the namespaced Role"
    unused = sorted(describe(r) for r in (cluster_rules | role_rules) - used - set(not_exercised()))
    assert not unused, f"permissions granted but never used (over-broad; remove them or explain in " \
                       f"NOT_EXERCISED_FIXED): {unused}"


def without_kind(objects: list[dict], plural: str) -> dict[tuple[str, str], set[Rule]]:
    """The rules of the controller's roles, those naming a kind's resources (`plural`, its subresources) left out."""
    return {(kind, name): {r for r in rules_of(find(objects, kind, name)) if not plural or r[1].split("/")[0] != plural}
            for kind, name in ROLES.items()}
