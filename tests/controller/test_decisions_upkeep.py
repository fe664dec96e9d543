"""Upkeep of a job's Services, PodGroup and TensorBoard (controller/jobs/decisions/upkeep.py): what is patched, with
what body, and when nothing is. Issue 45: mutants that patched Services with `ports: null` on every reconcile, kept
a Service's old ports after an edit, sent empty PodGroup PATCHes, and nulled or never fixed a drifted TensorBoard
all survived tests/controller; each test here fails on one of them."""

from __future__ import annotations

import copy

from controller.jobs.children import podgroup, services
from controller.jobs.decisions import plan as engine
from controller.jobs.decisions import upkeep
from controller.jobs.decisions.actions import PODGROUPS, SERVICES, CreateChild, DeleteChild, PatchChild
from controller.jobs.schema.api import CleanUpPolicy
from controller.jobs.training import tensorboard
from controller.kinds.tensorflow.kind import TENSORFLOW

from .decisions_plan_support import NOW
from .test_tensorflow_kind import parsed

QUEUE = {"t9kScheduler": {"queue": "q"}}


def made_services(job) -> list[dict]:
    """The job's Services as the API server stores them (with a uid)."""
    made = upkeep.service_actions(TENSORFLOW, job, {}, [], terminal=False, making=True)
    return [{**copy.deepcopy(a.body), "metadata": {**a.body["metadata"], "uid": f"u-{a.name}"}} for a in made]


def test_services_whose_ports_match_the_spec_are_left_alone():
    job = parsed(("worker", 2))
    existing = made_services(job)
    assert [s["metadata"]["name"] for s in existing] == ["tf-worker-0", "tf-worker-1"]
    assert upkeep.service_actions(TENSORFLOW, job, {}, existing, terminal=False, making=True) == []


def test_a_services_edited_ports_are_patched_to_the_specs_port_list():
    job = parsed(("worker", 1))
    [svc] = made_services(job)
    svc["spec"]["ports"] = [{"name": "tfjob-port", "port": 1234, "targetPort": 1234, "protocol": "TCP"}]
    wanted = TENSORFLOW.service_ports(job, "worker")
    assert wanted and wanted[0]["port"] != 1234
    actions = upkeep.service_actions(TENSORFLOW, job, {}, [svc], terminal=False, making=True)
    assert actions == [PatchChild(SERVICES, "tf-worker-0", {"spec": {"ports": wanted}})]
    # Once patched, the stored ports are the spec's: nothing more to do.
    svc["spec"]["ports"] = wanted
    assert services.stored_ports(svc) == wanted
    assert upkeep.service_actions(TENSORFLOW, job, {}, [svc], terminal=False, making=True) == []


def test_a_finished_jobs_services_are_not_patched():
    job = parsed(("worker", 1), runPolicy={"cleanUpPolicy": "None"})
    [svc] = made_services(job)
    svc["spec"]["ports"] = [{"name": "tfjob-port", "port": 1234, "targetPort": 1234, "protocol": "TCP"}]
    status = {"phase": "Succeeded", "tasks": [{"type": "worker", "replicaStatus": [
        {"name": "tf-worker-0", "uid": "p", "phase": "Succeeded"}]}]}
    assert upkeep.service_actions(TENSORFLOW, job, status, [svc], terminal=True, making=False) == []


def test_a_podgroup_as_the_spec_wants_it_gets_no_patch_and_a_changed_one_only_its_changes():
    job = parsed(("worker", 2), scheduler=QUEUE)
    desired = podgroup.desired_podgroup(TENSORFLOW, job)
    assert desired is not None
    stored = {**copy.deepcopy(desired), "metadata": {**desired["metadata"], "uid": "pg"}}
    assert upkeep.podgroup_actions(TENSORFLOW, job, [stored], terminal=False, making=True) == []
    stored["spec"]["queue"] = "other"
    assert upkeep.podgroup_actions(TENSORFLOW, job, [stored], terminal=False, making=True) == [
        PatchChild(PODGROUPS, desired["metadata"]["name"], {"spec": {"queue": "q"}})]
    # A finished job's PodGroup (kept under clean-up policy None) is not patched any more.
    assert upkeep.podgroup_actions(TENSORFLOW, job, [stored], terminal=True, making=False,
                                   clean_up=CleanUpPolicy.NONE) == []


def board_job():
    return parsed(("worker", 1), tensorboardSpec={"image": "tb"})


def stored_board(job) -> dict:
    [body] = TENSORFLOW.dependents(job).values()
    return copy.deepcopy(body)


def test_a_tensorboard_as_wanted_gets_no_patch():
    job = board_job()
    board = stored_board(job)
    actions, _ = upkeep.dependent_actions(TENSORFLOW, job, {tensorboard.RESOURCE: [board]}, terminal=False)
    assert actions == []


def test_a_drifted_tensorboard_is_patched_back_with_a_merge_patch():
    job = board_job()
    board = stored_board(job)
    wanted_spec = copy.deepcopy(board["spec"])
    board["spec"]["extra"] = "someone's"  # a field added by hand: removed by the patch (null)
    first_key = next(iter(wanted_spec))
    board["spec"][first_key] = "drifted"
    actions, reported = upkeep.dependent_actions(TENSORFLOW, job, {tensorboard.RESOURCE: [board]}, terminal=False)
    name = board["metadata"]["name"]
    assert actions == [PatchChild(tensorboard.RESOURCE.plural, name,
                                  {"spec": {"extra": None, first_key: wanted_spec[first_key]}})]
    assert reported["tensorboard"]["action"] == "Update"
    # A finished job's TensorBoard is left as it is.
    assert upkeep.dependent_actions(TENSORFLOW, job, {tensorboard.RESOURCE: [board]}, terminal=True)[0] == []


def test_a_tensorboard_with_no_spec_stored_is_given_the_whole_spec():
    job = board_job()
    board = stored_board(job)
    wanted_spec = board.pop("spec")
    actions, _ = upkeep.dependent_actions(TENSORFLOW, job, {tensorboard.RESOURCE: [board]}, terminal=False)
    assert actions == [PatchChild(tensorboard.RESOURCE.plural, board["metadata"]["name"], {"spec": wanted_spec})]


def test_the_plan_carries_the_tensorboard_to_make():
    # (plan.py hands the dependents' actions on: without them no TensorBoard is ever made.)
    job = board_job()
    made = engine.plan(TENSORFLOW, job, {}, [], NOW, dependents={tensorboard.RESOURCE: []})
    [body] = TENSORFLOW.dependents(job).values()
    assert made.dependents == [CreateChild(tensorboard.RESOURCE.plural, body["metadata"]["name"], body)]
    board = stored_board(job)
    kept = engine.plan(TENSORFLOW, job, {}, [], NOW, dependents={tensorboard.RESOURCE: [board]})
    assert kept.dependents == []


def test_merge_patch_nulls_removed_keys_recurses_into_objects_and_replaces_the_rest():
    old = {"gone": 1, "same": 2, "changed": 3, "nested": {"keep": 1, "drop": 2, "deep": {"a": 1}},
           "was_scalar": 1, "was_object": {"x": 1}}
    new = {"same": 2, "changed": 4, "nested": {"keep": 1, "deep": {"a": 2}, "added": []},
           "was_scalar": {"y": 1}, "was_object": 5, "added": None}
    assert upkeep.merge_patch(old, new) == {
        "gone": None, "changed": 4, "nested": {"drop": None, "deep": {"a": 2}, "added": []},
        "was_scalar": {"y": 1}, "was_object": 5, "added": None}
    assert upkeep.merge_patch(old, old) == {}
    # An object left as it was inside a changed one is not named in the patch.
    assert upkeep.merge_patch({"a": {"b": 1}, "c": 1}, {"a": {"b": 1}, "c": 2}) == {"c": 2}


def test_each_types_services_carry_its_own_port():
    from .test_tensorflow_kind import tfjob

    obj = tfjob(("worker", 1), ("ps", 1))
    ps = next(s for s in obj["spec"]["replicaSpecs"] if s["type"] == "ps")
    ps["template"] = copy.deepcopy(ps["template"])
    ps["template"]["spec"]["containers"][0]["ports"] = [{"name": TENSORFLOW.port_name, "containerPort": 3333}]
    job = TENSORFLOW.parse(obj)
    made = made_services(job)
    ports = {s["metadata"]["name"]: [p["port"] for p in s["spec"]["ports"]] for s in made}
    assert ports["tf-ps-0"] == [3333] and ports["tf-worker-0"] != [3333]
    assert upkeep.service_actions(TENSORFLOW, job, {}, made, terminal=False, making=True) == []  # each as its type's


def test_a_running_jobs_services_of_ranks_scaled_away_are_deleted():
    existing = made_services(parsed(("worker", 3)))
    actions = upkeep.service_actions(TENSORFLOW, parsed(("worker", 1)), {}, existing, terminal=False, making=True)
    assert actions == [DeleteChild(SERVICES, "tf-worker-1", "u-tf-worker-1"),
                       DeleteChild(SERVICES, "tf-worker-2", "u-tf-worker-2")]


def finished(*records: tuple[str, str, str]) -> dict:
    """A finished TFJob's status with records (name, uid, phase); "-" as uid: its pod retired."""
    replicas = [{"name": name, "uid": uid.strip("-"), "phase": phase,
                 **({"lastRestartUid": uid.strip("-")} if uid.startswith("-") else {})} for name, uid, phase in records]
    return {"phase": "Succeeded", "tasks": [{"type": "worker", "replicaStatus": replicas}]}


def test_a_finished_job_keeps_the_services_of_the_pods_its_clean_up_policy_keeps():
    records = [("tf-worker-0", "p0", "Succeeded"), ("tf-worker-1", "p1", "Deleted"), ("tf-worker-2", "-p2", "Deleted"),
               ("tf-worker-3", "", "Deleted")]
    kept = {"None": ["tf-worker-2", "tf-worker-3"],  # a pod retired or never made: no Service
            "Unfinished": ["tf-worker-1", "tf-worker-2", "tf-worker-3"],
            "All": ["tf-worker-0", "tf-worker-1", "tf-worker-2", "tf-worker-3"]}
    for policy, deleted in kept.items():
        job = parsed(("worker", 4), runPolicy={"cleanUpPolicy": policy})
        existing = made_services(job)
        actions = upkeep.service_actions(TENSORFLOW, job, finished(*records), existing, terminal=True, making=False)
        assert [(a.resource, a.name, a.uid) for a in actions] == [
            (SERVICES, name, f"u-{name}") for name in deleted], policy


def test_a_finished_jobs_podgroup_goes_unless_the_policy_it_is_given_or_its_own_keeps_it():
    job = parsed(("worker", 1), scheduler=QUEUE, runPolicy={"cleanUpPolicy": "None"})
    desired = podgroup.desired_podgroup(TENSORFLOW, job)
    assert desired is not None
    stored = {**copy.deepcopy(desired), "metadata": {**desired["metadata"], "uid": "pg"}}
    assert upkeep.podgroup_actions(TENSORFLOW, job, [stored], terminal=True, making=False) == []
    gone = upkeep.podgroup_actions(TENSORFLOW, job, [stored], terminal=True, making=False,
                                   clean_up=CleanUpPolicy.UNFINISHED)
    assert [(a.resource, a.name, a.uid) for a in gone] == [(PODGROUPS, desired["metadata"]["name"], "pg")]


def test_a_made_tensorboard_is_reported_as_created():
    job = board_job()
    actions, reported = upkeep.dependent_actions(TENSORFLOW, job, {tensorboard.RESOURCE: []}, terminal=False)
    assert [type(a) for a in actions] == [CreateChild] and reported["tensorboard"]["action"] == "Create"


def test_a_dependent_whose_api_is_missing_does_not_stop_the_next_one():
    from types import SimpleNamespace

    from apimachinery.resource import Resource

    missing, present = Resource("example.com", "v1", "missings"), Resource("example.com", "v1", "presents")
    bodies = {resource: {"metadata": {"name": "tf"}, "spec": {"a": 1}} for resource in (missing, present)}
    kind = SimpleNamespace(dependents=lambda job, status: bodies, dependent_resources=[],
                           dependent_status=lambda job, observed, done: dict(done))
    actions, reported = upkeep.dependent_actions(kind, None, {missing: None, present: []}, terminal=False)
    assert actions == [CreateChild("presents", "tf", bodies[present])] and reported == {present: "Create"}


def _mpijob(**spec):
    from .test_mpijob_kind import mpijob
    from .test_mpijob_kind import parsed as parsed_mpijob

    return parsed_mpijob(mpijob(**spec))


def stored_job_service(job) -> dict:
    """The MPIJob's own headless Service as the API server stores it: with a uid, and no port list (a Service
    without ports stores none)."""
    from controller.kinds.mpi.kind import MPIJOB

    [made] = upkeep.service_actions(MPIJOB, job, {}, [], terminal=False, making=True)
    assert made == CreateChild(SERVICES, "pi", services.subdomain_service(MPIJOB, job))
    assert made.body["spec"] == {"clusterIP": "None", "selector": {"mpijob.batch.tensorstack.dev/uid": "uid-1"},
                                 "ports": [], "publishNotReadyAddresses": True}
    body = copy.deepcopy(made.body)
    del body["spec"]["ports"]
    return {**body, "metadata": {**body["metadata"], "uid": "u-pi"}}


def test_a_running_mpijobs_own_service_as_made_is_left_alone():
    # Issue 45 (`x_service_actions__mutmut_51`): compared with no port list, it was patched `ports: null` on every
    # reconcile.
    from controller.kinds.mpi.kind import MPIJOB

    job = _mpijob()
    assert upkeep.service_actions(MPIJOB, job, {}, [stored_job_service(job)], terminal=False, making=True) == []
    assert upkeep.service_actions(MPIJOB, job, {}, [stored_job_service(job)], terminal=False, making=False) == []


def test_a_finished_mpijob_keeps_its_own_service_while_a_pod_of_it_stays_and_deletes_it_when_none_does():
    # Issue 45 (`x_service_actions__mutmut_13`, `_15`, `_16`): the job's Service names its pods; it stays while the
    # clean-up leaves one, and goes with the last.
    from controller.kinds.mpi.kind import MPIJOB

    def finished_mpijob(*records: tuple[str, str, str]) -> dict:
        replicas = [{"name": name, "uid": uid, "phase": phase} for name, uid, phase in records]
        return {"phase": "Succeeded", "tasks": [{"type": "launcher", "replicas": replicas[:1]},
                                                {"type": "worker", "replicas": replicas[1:]}]}

    ended = finished_mpijob(("pi-launcher-0", "l", "Succeeded"), ("pi-worker-0", "w0", "Deleted"),
                            ("pi-worker-1", "w1", "Deleted"))
    gone = [DeleteChild(SERVICES, "pi", "u-pi")]
    for policy, actions in (("None", []), ("Unfinished", []), ("All", gone)):
        job = _mpijob(runPolicy={"cleanUpPolicy": policy})
        assert upkeep.service_actions(MPIJOB, job, ended, [stored_job_service(job)], terminal=True,
                                      making=False) == actions, policy
    # Every pod gone (each record Deleted, none kept by the policy): no pod left to name, the Service goes.
    job = _mpijob(runPolicy={"cleanUpPolicy": "Unfinished"})
    every = finished_mpijob(("pi-launcher-0", "l", "Deleted"), ("pi-worker-0", "w0", "Deleted"))
    assert upkeep.service_actions(MPIJOB, job, every, [stored_job_service(job)], terminal=True, making=False) == gone
