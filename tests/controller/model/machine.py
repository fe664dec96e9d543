"""The job engine against a model of the world: a Hypothesis stateful test (`RuleBasedStateMachine`).

The rules are what the world can do to a job while it runs: the user edits it (scale a type, to 0 and back,
template, pause and resume, debug on and off, cleanUpPolicy, delete; an edit admission would refuse is refused),
its pods come to outcomes (succeed, fail with an exit code, evicted without one, deleted by someone else, stuck
terminating), time passes (deadlines, restart back-off), the controller restarts (a new Reconciler: only what
was written survives), and the caches lag. `reconcile` runs the real `Reconciler` (and so `plan()`) against a
fake write client that applies its writes to the world (world.py).

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
Known defects of today's engine are markers (defects.py).
"""

from __future__ import annotations

import asyncio
import copy

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from structlog.testing import capture_logs

from controller.jobs.decisions.backoff import RestartBackoff
from controller.jobs.execution.reconciler import Reconciler
from controller.jobs.schema.naming import replica_name
from controller.kinds import registry
from informers import Lister, Store, object_key
from tests.controller.model import defects
from tests.controller.model import rules as r
from tests.controller.model.oracle import Expect, Ledger
from tests.controller.model.rules import FINISHED
from tests.controller.model.world import EPOCH, JOB, NS, UID, Recorder, World, WorldClient, stamp

COMMAND = ["python", "train.py"]
DEBUG_COMMAND = ["sleep", "inf"]
DEADLINE = 60
IGNORED = "the job has finished; spec changes are ignored"
KINDS = registry.KINDS  # by kind name; test_engine_model checks that rules.py models each
LIVE = ("Pending", "Running")


def records(kind, status: dict) -> dict[str, dict]:
    """Every replica record a status keeps, those of replicas scaled away included."""
    found = {raw["name"]: raw for raw in status.get("removedReplicas") or () if raw.get("name")}
    return {**found, **kind.status.stored_records(status)}


def is_debug_pod(pod: dict) -> bool:
    return any(c.get("command") == DEBUG_COMMAND for c in pod["spec"].get("containers") or ())


def job_object(kind: str, types: list[tuple[str, int, object]], extra: dict) -> dict:
    template = {"spec": {"containers": [{"name": r.CONTAINER[kind], "image": "train:1", "command": COMMAND}]}}
    specs = [{"type": t, "replicas": n, "restartPolicy": policy, "template": copy.deepcopy(template)}
             for t, n, policy in types]
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": kind,
            "metadata": {"name": JOB, "namespace": NS, "uid": UID, "generation": 1},
            "spec": {"replicaSpecs": specs, **extra}}


@st.composite
def jobs(draw) -> dict:
    """A job of any kind: several replica types, per-type policies, budgets, rules, deadline, clean-up."""
    kind = draw(st.sampled_from(list(KINDS)))
    cleanup = draw(st.sampled_from(["None", "Unfinished", "All"]))
    if kind == r.GENERIC:
        policy = st.fixed_dictionaries({"policy": st.sampled_from(["Never", "OnFailure", "Always"]),
                                        "limit": st.sampled_from([0, 1, 2])})
        master = draw(st.booleans())
        workers = draw(st.integers(0 if master else 1, 3))
        types = ([("master", 1, draw(policy))] if master else []) + [("worker", workers, draw(policy))]
        extra: dict = {"cleanUpPolicy": cleanup}
        success = [None] + ([[{"worker": [0]}]] if workers else []) + ([[{"master": [0]}]] if master else [])
        failure = [None] + ([[{"worker": [0]}, {"worker": [1]}]] if workers >= 2 else [])
        if chosen := draw(st.sampled_from(success)):
            extra["successRules"] = chosen
        if chosen := draw(st.sampled_from(failure)):
            extra["failureRules"] = chosen
        return job_object(kind, types, extra)
    policy = st.sampled_from(["Never", "OnFailure", "Always", "ExitCode"])
    if kind == r.TENSORFLOW:
        chief = draw(st.booleans())
        types = ([("chief", 1, draw(policy))] if chief else []) + \
            [("worker", draw(st.integers(0 if chief else 1, 3)), draw(policy)), ("ps", draw(st.integers(0, 1)),
                                                                                  draw(policy))]
    else:
        master = draw(st.booleans())
        types = ([("master", 1, draw(policy))] if master else []) + \
            [("worker", draw(st.integers(0 if master else 1, 3)), draw(policy))]
    run_policy: dict = {"cleanUpPolicy": cleanup}
    if (limit := draw(st.sampled_from([None, 0, 1, 2]))) is not None:
        run_policy["backoffLimit"] = limit
    if (deadline := draw(st.sampled_from([None, DEADLINE]))) is not None:
        run_policy["activeDeadlineSeconds"] = deadline
    return job_object(kind, types, {"runPolicy": run_policy})


class EngineModel(RuleBasedStateMachine):
    """The world, the controller, and the model's own account of the job."""

    # --- the job ---------------------------------------------------------------------------------

    @initialize(obj=jobs())
    def create_job(self, obj):
        self.kind_name = obj["kind"]
        self.kind = KINDS[self.kind_name]
        self.types = [s["type"] for s in obj["spec"]["replicaSpecs"]]
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
        self.reconciler = Reconciler(self.kind, self.client, Lister(Store()), Lister(Store()), Lister(Store()),
                                     None, self.recorder, now=lambda: stamp(self.world.now),
                                     clock=lambda: float(self.world.now), restart_backoff=RestartBackoff(5.0))
        self.reconciler.monotonic = lambda: float(self.world.now)

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
        index = type_index % len(self.types)
        spec = copy.deepcopy(self.world.job["spec"])
        spec["replicaSpecs"][index]["replicas"] = replicas
        if r.valid(self.kind_name, spec):
            self.world.edit(lambda s: s["replicaSpecs"][index].update(replicas=replicas))
        else:
            note("(refused at admission)")

    @precondition(lambda self: self.alive)
    @rule()
    def change_template(self):
        def bump(spec):
            container = spec["replicaSpecs"][0]["template"]["spec"]["containers"][0]
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
        if self.kind_name == r.GENERIC:
            self.world.edit(lambda spec: spec.update(cleanUpPolicy=policy))
        else:
            self.world.edit(lambda spec: spec.setdefault("runPolicy", {}).update(cleanUpPolicy=policy))

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

    @rule(which=st.integers(0, 11))
    def pod_runs(self, which):
        if name := self._pod(which):
            self.world.set_pod(name, phase="Running", startTime=stamp(self.world.now),
                               containerStatuses=[{"name": "c", "state": {"running": {}}}])

    @rule(which=st.integers(0, 11))
    def pod_succeeds(self, which):
        if name := self._pod(which):
            self.world.set_pod(name, phase="Succeeded", containerStatuses=[
                {"name": r.CONTAINER[self.kind_name], "state": {"terminated": {"exitCode": 0}}}])

    @rule(which=st.integers(0, 11), code=st.sampled_from([1, 137, 143]))
    def pod_fails(self, which, code):
        if name := self._pod(which):
            self.world.set_pod(name, phase="Failed", containerStatuses=[
                {"name": r.CONTAINER[self.kind_name], "state": {"terminated": {"exitCode": code}}}])

    @rule(which=st.integers(0, 11))
    def pod_evicted(self, which):
        if name := self._pod(which):
            self.world.set_pod(name, phase="Failed", reason="Evicted", containerStatuses=[])

    @rule(which=st.integers(0, 11))
    def pod_deleted_by_someone(self, which):
        if name := self._pod(which, live=False):
            self.world.remove_pod(name)

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
            self.end_ranks = {replica_name(JOB, *k) for k in [*r.replicas(spec), *expect.removed]}
            self.final_policy = r.cleanup_policy(self.kind_name, spec)
            if after.get("reason") == "DeadlineExceeded" and self.final_policy == "None":
                self.final_policy = "Unfinished"  # past its deadline a job stops: its running pods go
        if not finished_before:  # the end first: a missed end explains the pod writes that follow from it
            self._check_end(before, after, expect, acts)
        if not self.tainted:
            self._check_pod_writes(writes, spec, finished_before, after)
        if wrote and finished_before and not self.tainted:
            self._check_final(after)
        if wrote and not self.tainted:
            self._check_counts(after, spec, expect)
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

    # --- the checks ------------------------------------------------------------------------------

    def _check_end(self, before: dict, after: dict, expect: Expect, acts: bool) -> None:
        """Both ways: no end the rules do not allow, and the end they require has happened by now."""
        spec = self.job_seen["spec"]
        phase, reason = after.get("phase"), after.get("reason")
        if phase in FINISHED:
            if (phase, reason) not in expect.allowed and (phase, None) not in expect.allowed:
                allowed = sorted(f"{p}/{why or 'any'}" for p, why in expect.allowed) or ["none: it must run on"]
                self.defect(self._why_wrong_end(spec, expect, phase, reason),
                            f"the job ended {phase}/{reason} ({self._condition(after)}), but the rules allow "
                            f"{', '.join(allowed)}")
                return
            self.final = copy.deepcopy(after)
        elif acts and expect.required:
            self.defect(self._why_no_end(spec, expect),
                        f"{expect.why}, but the job is still {phase or 'new'} after a reconcile that saw it")

    def _why_wrong_end(self, spec: dict, expect: Expect, phase: str, reason: str | None) -> str | None:
        if not r.run_mode(spec, "debug") and (self.ledger.lost_in_debug or self.ledger.debug_ended):
            return "debug-counts"  # the engine judged a debug pod's loss, and ends the job by it once debug is off
        if expect.removed and any(self.ledger.rep(k).outcome == "Failed" or k in expect.failed_removed
                                  for k in expect.removed):
            return "scale-down-forgets-failure"
        if phase == "Failed" and reason == "BackoffLimitExceeded" and ("Failed", "ReplicaFailed") in expect.allowed:
            return "zero-restarts-reason"
        return None

    def _why_no_end(self, spec: dict, expect: Expect) -> str | None:
        if self.ledger.lost_in_debug:
            return "debug-counts"  # a workload pod lost as debug mode came on: the engine defers its verdict
        if expect.failed_removed:
            return "scale-down-forgets-failure"
        if r.run_mode(spec, "pause"):
            return "pause-forgets-failure"
        return None

    def _condition(self, status: dict) -> str:
        failed = next((c for c in status.get("conditions") or () if c.get("type") in ("Failed", "Completed")
                       and c.get("status") == "True"), {})
        return failed.get("message") or "no message"

    def _check_counts(self, status: dict, spec: dict, expect: Expect) -> None:
        """The restarts the rules granted and the replacements made, against the status's counts."""
        kept = records(self.kind, status)
        by_type: dict[str, int] = {}
        for key, rep in sorted(self.ledger.reps.items()):
            name = replica_name(JOB, *key)
            count = int((kept.get(name) or {}).get("restartCount") or 0)
            by_type[key[0]] = by_type.get(key[0], 0) + rep.decided
            if count != rep.decided or not rep.made <= count <= rep.made + 1:
                self.defect(self._why_miscount(spec, key, expect),
                            f"{name}: restartCount {count}, but the rules granted {rep.decided} restarts and "
                            f"{rep.made} replacements were made")
                return
        total = self.ledger.job_restarts()
        if int(status.get("backoffCount") or 0) != total:
            self.defect(None, f"backoffCount {status.get('backoffCount')}, but the replicas' restarts add up to "
                              f"{total}")
            return
        for task in status.get("tasks") or ():
            if int(task.get("restartCount") or 0) != by_type.get(task.get("type"), 0):
                self.defect("type-count-drops-removed",
                            f"tasks[{task.get('type')}].restartCount {task.get('restartCount')}, but its "
                            f"replicas (removed ranks included) restarted {by_type.get(task.get('type'), 0)} times")
                return

    def _check_final(self, status: dict) -> None:
        """Terminal is final: nothing of a finished job's status changes again (its records but to Deleted)."""
        for key in ("phase", "conditions", "completionTime", "startTime", "backoffCount", "reason"):
            if self.final is not None and status.get(key) != self.final.get(key):
                self.defect(None, f"status.{key} of a finished job changed: {self.final.get(key)!r} -> "
                                  f"{status.get(key)!r}")
                return

    def _why_miscount(self, spec: dict, key: tuple[str, int], expect: Expect) -> str | None:
        life = self.ledger.reps[key].life
        if life and life.retired == "scale" and any(p["metadata"]["uid"] == life.uid for p in self.pods_seen.values()):
            return "readded-rank-adopts-old-pod"  # re-added while its scaled-away pod is still terminating
        if self.ledger.reps[key].life and self.ledger.reps[key].life.debug:
            return "debug-counts"  # its pod is a debug pod: only the engine's counting it explains a difference
        if r.run_mode(spec, "pause"):
            return "pause-forgets-failure"
        if key in expect.removed:
            return "scale-down-forgets-failure"
        return None

    def _check_pod_writes(self, writes: list[tuple], spec: dict, finished_before: bool, after: dict) -> None:
        finished = finished_before or after.get("phase") in FINISHED
        for entry in writes:
            if self.tainted:
                return
            verb, name = entry[0], entry[1]
            if verb == "create":
                pod = entry[2]
                if finished:
                    self.defect(None, f"pod {name} created for a finished job")
                    return
                labels = pod["metadata"]["labels"]
                key = (labels[self.kind.api.type_label], int(labels[self.kind.api.rank_label]))
                debug = is_debug_pod(pod)
                if debug != r.run_mode(spec, "debug") or r.run_mode(spec, "pause"):
                    self.defect(None, f"pod {name} created {'in debug mode' if debug else 'for the workload'} "
                                      f"while the spec says {spec.get('runMode')}")
                if problem := self.ledger.created(key, name, pod, entry[3], debug):
                    self.defect(None, problem)
            elif verb == "delete":
                uid, seen = entry[3], self.pods_seen.get(name)
                pod = seen if seen and seen["metadata"]["uid"] == uid else entry[2]  # as the controller saw it
                phase = pod["status"].get("phase") if pod else None
                if finished:
                    self._check_cleanup_delete(name, uid, phase, spec, finished_before)
                elif self.ledger.deleted(spec, name, uid, phase) is None:
                    self.defect(None, f"pod {name} ({phase}) deleted from a running job, for no reason the spec "
                                      "gives (not a restart, pause, debug change or scale-down)")

    def _check_cleanup_delete(self, name: str, uid: str, phase: str | None, spec: dict, finished_before: bool) -> None:
        """A finished job deletes what its clean-up policy selects: the current one (the spec) or, just as it
        finishes, the one it finished with; and it may repeat the delete of a pod it retired while it ran (a
        restart, a pause, a debug change or a scale-down decided before the end: the delete may not have gone
        through, or the cache not show it yet)."""
        life = self.ledger.lives.get(uid)
        if life is not None and life.retired in ("restart", "pause", "mode", "scale"):
            return
        if self.end_ranks is not None and name not in self.end_ranks:
            return  # a pod of a rank scaled away before the end (its delete waited for the cache to show it)
        ranks = {replica_name(JOB, *k) for k in r.replicas(spec)}
        if r.run_mode(spec, "pause") and (phase not in FINISHED or name not in ranks):
            # A paused job runs no pod: one the pause retired unseen (its record Deleted, the cache lagging) is
            # deleted when seen, ended or not; and a rank the pause retired and a scale-down then removed is no
            # replica of the finished job (its record says Deleted, so must its pod).
            return

        def selects(policy):
            return policy == "All" or (policy == "Unfinished" and phase not in FINISHED)
        if not (selects(self.final_policy) or selects(r.cleanup_policy(self.kind_name, spec))):
            scaled = not finished_before and name not in ranks
            self.defect("finish-applies-scale-down" if scaled else None,
                        f"pod {name} ({phase}) deleted from a finished job whose cleanUpPolicy keeps it")

    def _check_pods_follow(self, status: dict) -> None:
        """After a reconcile that saw every pod: a finished job keeps only what its current policy keeps, and the
        pods of a running job run in the mode of its spec (debug on and off replace them, as resuming does)."""
        live = [p for p in self.world.pods.values() if not p["metadata"].get("deletionTimestamp")]
        spec = self.world.job["spec"]
        if self.final is not None:
            policy = r.cleanup_policy(self.kind_name, spec)
            if self.final.get("reason") == "DeadlineExceeded" and policy == "None":
                policy = "Unfinished"  # past its deadline a job stops: its unfinished pods stay deleted
            for pod in live:
                phase = pod["status"].get("phase")
                if policy == "All" or (policy == "Unfinished" and phase not in FINISHED):
                    self.defect("cleanup-by-finished-policy" if self.final_policy != policy else None,
                                f"pod {pod['metadata']['name']} ({phase}) left by cleanUpPolicy {policy}")
                    return
            return
        if status.get("phase") == "Paused" or r.run_mode(spec, "pause"):
            return
        debugging = r.run_mode(spec, "debug")
        for pod in live:
            if pod["status"].get("phase") in FINISHED:
                continue
            if is_debug_pod(pod) != debugging:
                self.defect(None, f"pod {pod['metadata']['name']} runs "
                                  f"{'sleep inf' if is_debug_pod(pod) else 'the workload'} while debug mode is "
                                  f"{'on' if debugging else 'off'}")
                return

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
