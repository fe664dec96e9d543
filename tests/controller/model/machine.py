"""The job engine against a model of the world: a Hypothesis stateful test (`RuleBasedStateMachine`).

The rules are what the world can do to a job while it runs: the user edits it (scale a type, to 0 and back,
template, pause and resume, debug on and off, cleanUpPolicy, delete; an edit admission would refuse is refused),
its pods come to outcomes (succeed, fail with an exit code, evicted without one, deleted by someone else, stuck
terminating; two at once, and two as the user pauses the job or scales their type down), time passes (deadlines,
restart back-off), the controller restarts (a new Reconciler: only what was written survives), and the caches lag.
`reconcile` runs the real `Reconciler` (and so `plan()`) against a fake write client that applies its writes to the
world (world.py).

The model checks both ways (oracle.py keeps its own account, never read from the controller's status):
- a job that ends when the rules do not allow it (phase and reason) fails, as does one that has not ended when
  the rules (or the deadline) say it must have, after every reconcile that could act;
- the restarts the rules granted, and the replacements actually made, are compared with every replica's
  restartCount, each type's and backoffCount;
- pods: none created for a finished job or a replica finished for good, none deleted from a running job
  without a reason the spec gives, and a finished job keeps what its current cleanUpPolicy keeps.

Jobs: GenericJob (master and worker types, per-type restart limits, explicit success and failure rules),
TensorFlowTrainingJob (chief, worker, ps) and PyTorchTrainingJob (master, worker), with ExitCode, backoffLimit and
activeDeadlineSeconds. A failure prints the steps and, after each reconcile, a note of what it saw and wrote.
Known defects of today's engine are markers (defects.py). The jobs drawn are job_strategy.py's; the checks
made after each reconcile, checks.py's, and the rules that tell rare stories in one step, stories.py's (mixins of
EngineModel).
"""

from __future__ import annotations

import asyncio
import copy

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from structlog.testing import capture_logs

from controller.jobs.decisions.backoff import RestartBackoff
from controller.jobs.execution.reconciler import job_reconciler
from controller.jobs.schema.naming import replica_name
from informers import Lister, Store, object_key
from tests.controller.model import defects
from tests.controller.model import rules as r
from tests.controller.model.checks import Checks, is_debug_pod, records
from tests.controller.model.job_strategy import COMMAND, DEADLINE, DEBUG_COMMAND, KINDS, jobs
from tests.controller.model.oracle import Expect, Ledger
from tests.controller.model.rules import FINISHED
from tests.controller.model.stories import CompoundStories
from tests.controller.model.world import EPOCH, JOB, NS, Recorder, World, WorldClient, stamp

IGNORED = "the job has finished; spec changes are ignored"
LIVE = ("Pending", "Running")

__all__ = ["COMMAND", "DEADLINE", "DEBUG_COMMAND", "KINDS", "EngineModel", "is_debug_pod", "jobs",
           "records"]


class EngineModel(Checks, CompoundStories, RuleBasedStateMachine):
    """The world, the controller, and the model's own account of the job."""

    # --- the job ---------------------------------------------------------------------------------

    @initialize(obj=jobs())
    def create_job(self, obj):
        self.kind_name = obj["kind"]
        self.kind = KINDS[self.kind_name]
        self.world = World(obj, EPOCH)
        self.recorder = Recorder()
        self.ledger = Ledger(self.kind_name)
        self.tolerated = defects.tolerated()
        self.tainted: str | None = None  # a tolerated known defect hit: the rest of the story is not judged
        self.new_controller()
        self.pod_cache_lags = self.job_cache_lags = False
        self.job_seen = copy.deepcopy(self.world.job)
        self.pods_seen: dict[str, dict] = {}
        self.seen_seq = 0
        self.final: dict | None = None  # the first terminal status written
        self.final_policy = ""
        self.end_ranks: set[str] | None = None  # the job's ranks as it ended (reconcile)
        self.steps = 0
        note(f"{self.kind_name} {obj['spec']}")
        self.reconcile()  # the controller sees the new job

    def new_controller(self) -> None:
        self.client = WorldClient(self.world)
        self.reconciler = job_reconciler(self.kind, self.client, Lister(Store()), Lister(Store()), Lister(Store()),
                                         None, self.recorder, now=lambda: stamp(self.world.now),
                                         clock=lambda: float(self.world.now), restart_backoff=RestartBackoff(5.0))
        self.reconciler.status_writer.monotonic = lambda: float(self.world.now)

    @property
    def alive(self) -> bool:
        return self.world.job is not None

    def defect(self, marker: str | None, message: str) -> None:
        """A check failed: a failure, unless a tolerated known defect explains it."""
        if marker is not None and marker in self.tolerated:
            note(f"known defect {marker}: {message}")
            defects.HITS[marker] += 1
            self.tainted = marker
            return
        suffix = f" [known defect {marker}: {defects.KNOWN[marker]}]" if marker else ""
        raise AssertionError(message + suffix)

    # --- user edits ------------------------------------------------------------------------------

    @precondition(lambda self: self.alive)
    @rule(type_index=st.integers(0, 2), replicas=st.integers(0, 3))
    def scale(self, type_index, replicas):
        """A scale edit, to 0 and back included; one admission would refuse (no replicas left, a rule naming
        a removed rank, the master moved) is refused and changes nothing."""
        if self._admitted(type_index, replicas):
            self.world.edit(lambda s: r.scale(self.kind_name, s, type_index, replicas))
        else:
            note("(refused at admission)")

    @precondition(lambda self: self.alive)
    @rule()
    def change_template(self):
        def bump(spec):
            container = r.replica_specs(self.kind_name, spec)[0]["template"]["spec"]["containers"][0]
            version = int(container["image"].rsplit(":", 1)[1])
            container["image"] = f"{container['image'].rsplit(':', 1)[0]}:{version + 1}"
        self.world.edit(bump)

    @precondition(lambda self: self.alive)
    @rule(on=st.booleans())
    def pause(self, on):
        self.world.edit(lambda spec: spec.setdefault("runMode", {}).update(pause={"enabled": on}))

    @precondition(lambda self: self.alive)
    @rule(on=st.booleans())
    def debug(self, on):
        self.world.edit(lambda spec: spec.setdefault("runMode", {}).update(debug={"enabled": on}))

    @precondition(lambda self: self.alive)
    @rule(policy=st.sampled_from(["None", "Unfinished", "All"]))
    def change_cleanup(self, policy):
        self.world.edit(lambda spec: r.set_cleanup(self.kind_name, spec, policy))

    @precondition(lambda self: self.alive and self.steps > 20)
    @rule()
    def delete_job(self):
        """The user deletes the job: the garbage collector removes its pods."""
        self.world.job = None
        for name in list(self.world.pods):
            self.world.remove_pod(name)

    # --- pods ------------------------------------------------------------------------------------

    def _pod(self, which: int, live: bool = True) -> str | None:
        """One of the pods there are (any of them, whatever `which` is: a rule always has a pod to act on when
        there is one); with `live`, one that has not finished."""
        names = sorted(n for n, p in self.world.pods.items()
                       if not live or p["status"].get("phase") not in FINISHED)
        return names[which % len(names)] if names else None

    def _running_pods(self) -> list[str]:
        """The pods that have not finished and are not being deleted, by name."""
        return sorted(n for n, p in self.world.pods.items()
                      if p["status"].get("phase") not in FINISHED and not p["metadata"].get("deletionTimestamp"))

    @rule(which=st.integers(0, 11))
    def pod_runs(self, which):
        if name := self._pod(which):
            self._runs(name)

    def _runs(self, name: str) -> None:
        self.world.set_pod(name, phase="Running", startTime=stamp(self.world.now),
                           containerStatuses=[{"name": "c", "state": {"running": {}}}])

    @rule()
    def pods_come_up(self):
        """The kubelet starts every pending pod at once (as after a gang is scheduled), and the controller looks: what
        a start order waits for is reached in one step (pod_runs, whose `which` Hypothesis keeps small, would need
        many), so the stories go on to what follows it (a launcher running, a group restart). Again for the pods that
        look creates (a launcher once its workers run), twice at most."""
        for _ in range(2):
            pending = [n for n, p in self.world.pods.items() if p["status"].get("phase") == "Pending"]
            for name in pending:
                self._runs(name)
            written = len(self.world.log)
            self.reconcile()
            if self.world.job is None or self.tainted or not any(e[0] == "create" for e in self.world.log[written:]):
                return

    @rule(which=st.integers(0, 11), ready=st.booleans())
    def pod_readiness(self, which, ready):
        """A running pod's readiness probe passes or fails (a pod that reports none counts as Ready)."""
        name = self._pod(which)
        if name is not None and self.world.pods[name]["status"].get("phase") == "Running":
            self.world.set_pod(name, conditions=[{"type": "Ready", "status": "True" if ready else "False"}])

    @rule(which=st.integers(0, 11))
    def pod_succeeds(self, which):
        if name := self._pod(which):
            self.world.set_pod(name, phase="Succeeded", containerStatuses=[
                {"name": r.container(self.kind_name), "state": {"terminated": {"exitCode": 0}}}])

    @rule(which=st.integers(0, 11), code=st.sampled_from([1, 137, 143]))
    def pod_fails(self, which, code):
        if name := self._pod(which):
            self.world.set_pod(name, phase="Failed", containerStatuses=[
                {"name": r.container(self.kind_name), "state": {"terminated": {"exitCode": code}}}])

    @rule(which=st.integers(0, 11), code=st.sampled_from([None, 1, 137]))
    def two_pods_fail(self, which, code):
        """Two pods end at once (their node drained or lost: evicted, without a code), or fail together (a collective
        broken in both): what a job-wide budget draws on in spec order, and a group restart counts once."""
        self._fail(self._pod(which), self._pod(which + 1), code)

    def _fail(self, first: str | None, second: str | None, code: int | None) -> None:
        for name in dict.fromkeys(n for n in (first, second) if n is not None):
            if code is None:
                self.world.set_pod(name, phase="Failed", reason="Evicted", containerStatuses=[])
            else:
                self.world.set_pod(name, phase="Failed", containerStatuses=[
                    {"name": r.container(self.kind_name), "state": {"terminated": {"exitCode": code}}}])


    def _admitted(self, type_index: int, replicas: int) -> bool:
        """Would admission take the job's spec with the type scaled so?"""
        spec = copy.deepcopy(self.world.job["spec"])
        return r.scale(self.kind_name, spec, type_index, replicas) and r.valid(self.kind_name, spec)

    @rule(which=st.integers(0, 11))
    def pod_evicted(self, which):
        if name := self._pod(which):
            self.world.set_pod(name, phase="Failed", reason="Evicted", containerStatuses=[])

    @rule(which=st.integers(0, 11), running=st.booleans())
    def pod_deleted_by_someone(self, which, running):
        """Someone deletes a pod (or its node is gone); with `running`, one not finished, and the controller looks: a
        pod lost while running, a failure without an exit code, recreated uncounted or judged as any failure (an
        MPIJob's under Never final), by the kind's contract. (Any pod is, late in a story, mostly a finished one.)"""
        if not running:
            if name := self._pod(which, live=False):
                self.world.remove_pod(name)
        elif pods := self._running_pods():
            self.world.remove_pod(pods[which % len(pods)])
            self.reconcile()

    @rule(which=st.integers(0, 11))
    def pod_gets_stuck(self, which):
        """The pod's node stops answering: its next delete leaves it terminating."""
        if name := self._pod(which, live=False):
            self.world.stuck.add(name)

    @rule()
    def kubelet_finishes_terminating(self):
        for name in [n for n, p in self.world.pods.items() if p["metadata"].get("deletionTimestamp")]:
            self.world.remove_pod(name)

    # --- time, the controller, the caches ---------------------------------------------------------

    @rule(seconds=st.sampled_from([1, 6, 30, 70]))
    def time_passes(self, seconds):
        self.world.now += seconds

    @rule()
    def controller_restarts(self):
        """A new process (or a failover): nothing of the old one survives but what it wrote."""
        self.new_controller()

    @rule(pods=st.booleans())
    def cache_lags(self, pods):
        """The next reconcile reads the pods (or the job) as the last one did."""
        if pods:
            self.pod_cache_lags = True
        else:
            self.job_cache_lags = True

    @rule()
    def reconcile(self):
        self.steps += 1
        world = self.world
        if not self.pod_cache_lags:
            self.pods_seen, self.seen_seq = copy.deepcopy(world.pods), world.seq
        if not self.job_cache_lags and world.job is not None:
            self.job_seen = copy.deepcopy(world.job)
        self.pod_cache_lags = self.job_cache_lags = False
        if world.job is None:
            return
        self._fill_caches()
        before = world.job.get("status") or {}
        spec = self.job_seen["spec"]
        finished_before = before.get("phase") in FINISHED
        acts = self._acts()
        expect = self.ledger.judge(spec, self.pods_seen, self.seen_seq, world.pods, world.now) \
            if acts and not finished_before else Expect()
        log_from = len(world.log)
        with capture_logs():  # the controller's log is not the story
            asyncio.run(self.reconciler.reconcile(f"{NS}/{JOB}"))
        writes = world.log[log_from:]
        after = world.job.get("status") or {}
        wrote = any(entry[0] == "status" for entry in writes)
        note(f"t={world.now - EPOCH}s reconcile (gen {self.job_seen['metadata']['generation']}"
             f"{'' if acts else ', cannot act: stale job or pods'}) saw [{', '.join(expect.judged)}] "
             f"-> {self._story(after) if wrote else 'nothing written'}"
             f"{'; ' + ', '.join(f'{e[0]} {e[1]}' for e in writes if e[0] != 'status') if writes else ''}")
        if self.tainted:
            return
        for key in expect.ambiguous:
            self.ledger.follow(key, self._count(after, replica_name(JOB, *key)))
        if not finished_before and after.get("phase") in FINISHED:
            # The job's ranks as it ends: those of its spec and those scaled away in this very moment (whose pods
            # the clean-up policy decides); a rank scaled away before is no rank of the finished job.
            self.end_ranks = {replica_name(JOB, *k) for k in [*r.replicas(self.kind_name, spec), *expect.removed]}
            self.final_policy = r.cleanup_policy(self.kind_name, spec)
            if after.get("reason") == "DeadlineExceeded" and self.final_policy == "None":
                self.final_policy = "Unfinished"  # past its deadline a job stops: its running pods go
        if not finished_before:  # the end first: a missed end explains the pod writes that follow from it
            self._check_end(before, after, expect, acts)
        if not self.tainted:
            self._check_pod_writes(writes, spec, finished_before, after)
        if not self.tainted and acts and after.get("phase") not in FINISHED:
            self._check_dependence(spec, after)
        if wrote and finished_before and not self.tainted:
            self._check_final(after)
        if wrote and not self.tainted:
            self._check_counts(after, spec, expect)
        if wrote and not self.tainted:
            self._check_status_content(before, after)
        if wrote and acts and not finished_before and not self.tainted:
            self._check_removed_marks(after, spec)
        if not self.tainted and self.pods_seen == world.pods and acts:
            self._check_pods_follow(after)

    @rule()
    def reconcile_again(self):
        """(The controller reconciles far more often than anything else happens: a second rule for it.)"""
        self.reconcile()

    @rule(seconds=st.sampled_from([1, 6]))
    def reconcile_later(self, seconds):
        """A wake-up: time passes, and the controller looks again."""
        self.world.now += seconds
        self.reconcile()

    def _acts(self) -> bool:
        """Can this reconcile act on what it sees? Not with a stale job (its status write would lose), nor while
        a pod its status records is missing from the pod cache but still on the server (it waits for the cache)."""
        if self.job_seen["metadata"]["resourceVersion"] != self.world.job["metadata"]["resourceVersion"]:
            return False
        seen = {p["metadata"]["uid"] for p in self.pods_seen.values()}
        live = {p["metadata"]["uid"] for p in self.world.pods.values()}
        for raw in self.kind.status.stored_records(self.job_seen.get("status") or {}).values():
            uid = raw.get("uid")
            if uid and uid not in seen and uid in live and uid != raw.get("lastRestartUid") and \
                    raw.get("phase") not in ("Deleted", "Creating", *FINISHED):
                return False
        return True

    def _fill_caches(self) -> None:
        """The informers' stores as this reconcile reads them (the last reconcile's view, if they lag)."""
        stores = {name: Store() for name in ("jobs", "pods", "services")}
        for name, store in stores.items():
            setattr(self.reconciler, name, Lister(store))
        for dependent in self.kind.dependent_resources:  # (an informer each, as the controller makes once synced)
            store = Store()
            for obj in (self.world.children.get(dependent.resource.plural) or {}).values():
                store.upsert(object_key(obj), copy.deepcopy(obj))
            self.reconciler.dependent_listers[dependent.resource] = Lister(store)
        stores["jobs"].upsert(object_key(self.job_seen), copy.deepcopy(self.job_seen))
        for pod in self.pods_seen.values():
            stores["pods"].upsert(object_key(pod), copy.deepcopy(pod))
        for svc in self.world.services.values():
            stores["services"].upsert(object_key(svc), svc)

    def _story(self, status: dict) -> str:
        recs = ", ".join(f"{name.split('-', 1)[1]}:{rec.get('phase')}/{rec.get('restartCount', 0)}"
                         for name, rec in sorted(records(self.kind, status).items()))
        return (f"{status.get('phase')}{'/' + status['reason'] if status.get('reason') else ''} [{recs}] "
                f"backoffCount={status.get('backoffCount')} startTime={status.get('startTime')}")

    def _count(self, status: dict, name: str) -> int:
        return int((records(self.kind, status).get(name) or {}).get("restartCount") or 0)

    @invariant()
    def invariants_hold(self):
        """The invariants that hold between any two steps (those about a write are checked as it is made)."""
        if not hasattr(self, "world") or self.tainted:
            return
        ranks: dict[tuple, int] = {}
        for pod in self.world.pods.values():
            labels = pod["metadata"]["labels"]
            key = (labels[self.kind.api.type_label], labels[self.kind.api.rank_label])
            ranks[key] = ranks.get(key, 0) + 1
        assert all(count <= 1 for count in ranks.values()), f"more than one pod for a rank: {ranks}"
        # A finished job says once per generation that it ignores an edit; a running job, that its template changed.
        said = [e[0] for e in self.recorder.events if e[3] == IGNORED]
        assert len(said) == len(set(said)), f"'{IGNORED}' said more than once for a generation: {said}"
        changed = [e[0] for e in self.recorder.events if e[2] == "TemplateChanged"]
        assert len(changed) == len(set(changed)), f"TemplateChanged said more than once for a generation: {changed}"
