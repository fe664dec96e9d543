"""Names that are taken (the spec's "Live jobs, settled further"): a child whose name belongs to an object the
job does not control is never adopted nor skipped in silence. The back-off and condition (conflicts.py), and
the reconciler against a fake client whose creates meet another owner's objects."""

from __future__ import annotations

from apimachinery.errors import ApiStatusError
from controller.jobs.decisions.conflicts import CHILD_CONFLICT, Conflict, TakenNames, conflict_condition, holder_of
from tests.builders import JobBuilder

from .test_reconciler import FakeClient, Harness, job_object

OTHER = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "PyTorchTrainingJob", "name": "job", "uid": "other",
         "controller": True}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_taken_name_is_retried_with_exponential_back_off_up_to_a_cap():
    clock = Clock()
    taken = TakenNames(base=1.0, cap=4.0, clock=clock)
    conflict = Conflict("pod a-worker-x-0", "GenericJob a-worker")
    delays = []
    for _ in range(5):
        taken.found("uid", conflict)
        delays.append(taken.next_retry("uid"))
        assert taken.waits("uid", conflict.what)
        clock.now += delays[-1]
        assert not taken.waits("uid", conflict.what)
    assert delays == [1.0, 2.0, 4.0, 4.0, 4.0]
    assert taken.conflicts("uid") == [conflict]
    taken.freed("uid", conflict.what)
    assert taken.conflicts("uid") == [] and taken.next_retry("uid") is None


def test_names_no_longer_wanted_are_forgotten():
    taken = TakenNames(clock=Clock())
    taken.found("uid", Conflict("pod a-0", "x"))
    taken.found("uid", Conflict("Service a-0", "x"))
    taken.keep_only("uid", {"Service a-0"})
    assert [c.what for c in taken.conflicts("uid")] == ["Service a-0"]


def test_the_holder_is_named_by_its_controller():
    assert holder_of({"metadata": {"ownerReferences": [OTHER]}}) == "PyTorchTrainingJob job"
    assert holder_of({"metadata": {}}) == "no controller"


def test_the_condition_names_the_objects_and_clears_once_they_are_free():
    conflicts = [Conflict("PodGroup a", "GenericJob a")]
    shown = conflict_condition([], conflicts, "t1")
    [condition] = shown
    assert (condition["type"], condition["status"], condition["reason"]) == (CHILD_CONFLICT, "True", "NameTaken")
    assert condition["message"] == "PodGroup a is taken by an object controlled by GenericJob a. The job waits " \
                                   "until the names are free."
    [cleared] = conflict_condition(shown, [], "t2")
    assert (cleared["status"], cleared["reason"], cleared["lastTransitionTime"]) == ("False", "NamesFree", "t2")
    assert conflict_condition([], [], "t3") == []  # never taken: no condition at all


class TakenClient(FakeClient):
    """Creates of the names in `taken` get 409; a get of them answers another owner's object."""

    def __init__(self, echo=None) -> None:
        super().__init__(echo)
        self.taken: dict[tuple[str, str], dict] = {}

    async def create(self, resource: str, obj: dict, *, answer: bool = True) -> dict:
        if (resource, obj["metadata"]["name"]) in self.taken:
            self.calls.append(("create", resource, obj["metadata"]["name"]))
            raise ApiStatusError(409, "AlreadyExists", f'{resource} "{obj["metadata"]["name"]}" already exists')
        return await super().create(resource, obj, answer=answer)

    async def get(self, resource: str, namespace: str, name: str) -> dict:
        held = self.taken.get((resource, name))
        if held is None:
            return await super().get(resource, namespace, name)
        self.calls.append(("get", resource, name))
        return held


def harness_with(job: dict, *taken: tuple[str, str]) -> tuple[Harness, Clock]:
    clock = Clock()
    harness = Harness(job, client_type=TakenClient, taken=TakenNames(clock=clock))
    assert isinstance(harness.client, TakenClient)
    harness.client.taken = {key: {"metadata": {"name": key[1], "ownerReferences": [OTHER]}} for key in taken}
    return harness, clock


def conflict_of(harness: Harness) -> dict | None:
    status = harness.stores["jobs"].get("ns/job")["status"]
    return next((c for c in status.get("conditions") or () if c["type"] == CHILD_CONFLICT), None)


def creates(harness: Harness, resource: str) -> list[str]:
    return [name for verb, res, name in harness.client.calls if verb == "create" and res == resource]


async def test_a_taken_service_name_is_shown_counted_and_retried_with_back_off_until_free():
    harness, clock = harness_with(job_object(workers=1, service=True), ("services", "job-worker-0"))
    first = await harness.reconcile()
    assert first.requeue_after == 0.05  # at once again, to show the condition
    message = ("Warning", "FailedCreate", "Error creating Service job-worker-0: the name is taken by an object "
               "controlled by PyTorchTrainingJob job, not by this job; it is left alone, and the create is retried "
               "with back-off until the name is free")
    assert [e for e in harness.recorder.events if e[1] == "FailedCreate"] == [message]
    second = await harness.reconcile()
    assert conflict_of(harness)["status"] == "True" and "Service job-worker-0" in conflict_of(harness)["message"]
    assert second.requeue_after == 1.0  # the back-off: no create before then, however often it is reconciled
    for _ in range(3):
        await harness.reconcile()
    assert creates(harness, "services") == ["job-worker-0"]
    clock.now += 1.0
    third = await harness.reconcile()
    assert creates(harness, "services") == ["job-worker-0"] * 2 and third.requeue_after == 2.0
    assert [e for e in harness.recorder.events if e[1] == "FailedCreate"] == [message] * 2  # one Event, counted
    harness.client.taken.clear()  # the other owner is gone
    clock.now += 2.0
    freed = await harness.reconcile()
    assert creates(harness, "services") == ["job-worker-0"] * 3 and freed.requeue_after == 0.05
    await harness.reconcile()
    assert (conflict_of(harness)["status"], conflict_of(harness)["reason"]) == ("False", "NamesFree")


async def test_a_taken_podgroup_name_holds_every_pod_back():
    job = JobBuilder("job", namespace="ns", uid="job-uid", generation=1).meta(resourceVersion="10").replica(
        "worker", 2, template={"spec": {"containers": [{"name": "main", "image": "busybox"}]}}).spec(
        scheduler={"t9kScheduler": {"queue": "default"}}).obj()
    harness, clock = harness_with({**job, "status": {}}, ("podgroups", "job"))
    for _ in range(3):
        await harness.reconcile()
        clock.now += 0.5
    assert creates(harness, "podgroups") == ["job", "job"] and creates(harness, "pods") == []
    assert "PodGroup job is taken by an object controlled by PyTorchTrainingJob job" in conflict_of(harness)["message"]
    harness.client.taken.clear()
    clock.now += 5
    await harness.reconcile()
    assert creates(harness, "pods") == ["job-worker-0", "job-worker-1"]


async def test_the_jobs_own_child_not_yet_cached_is_no_conflict():
    harness, _ = harness_with(job_object(workers=1, service=True))
    harness.client.taken = {("services", "job-worker-0"): {"metadata": {"name": "job-worker-0", "ownerReferences": [
        {"kind": "GenericJob", "name": "job", "uid": "job-uid", "controller": True}]}}}
    result = await harness.reconcile()
    assert harness.recorder.events == [("Normal", "SuccessfulCreate", "Created pod: job-worker-0")]
    assert result is None or result.requeue_after is None
    assert conflict_of(harness) is None


async def test_a_name_the_job_no_longer_wants_is_forgotten_and_the_condition_clears():
    harness, _ = harness_with(job_object(workers=1, service=True), ("services", "job-worker-0"))
    await harness.reconcile()
    await harness.reconcile()
    assert conflict_of(harness)["status"] == "True"
    job = harness.stores["jobs"].get("ns/job")
    paused = {**job, "metadata": {**job["metadata"], "generation": 2},
              "spec": {**job["spec"], "runMode": {"pause": {"enabled": True}}}}
    harness.put("jobs", paused)
    await harness.reconcile()  # a paused job makes nothing: it waits for no name
    assert conflict_of(harness)["status"] == "False"
    assert harness.reconciler.taken.conflicts("job-uid") == []
