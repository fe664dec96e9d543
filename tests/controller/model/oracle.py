"""The model's own account of a job, kept from what the world does and what the controller sees, never from the
controller's status: each pod the controller created (its life), each replica's restarts granted by the rules
(`decided`) and replacements actually made (`made`), each replica's outcome for good, the verdict the rules
reach, and the deadline's clock. From it, at every reconcile: which terminal phases (and reasons) the rules
allow, whether the job must have ended by now, and which pod deletes a running job may make.

Judging follows the spec: a pod outcome the controller sees is judged once, in the reconcile that first sees it,
by the rules as they were before any edit seen with it (pause, debug change, scale-down); a debug pod decides and
counts nothing; a pod lost while running is a restart (except under Never); budgets are drawn in spec order. A kind
whose replicas restart together (rules.restart_together: an MPIJob's) counts the group's restarts seen in one
reconcile once, the others of the group replaced uncounted, and retires the live pods of the types the restart takes
(`Ledger.taken`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.controller.model import rules as r
from tests.controller.model.rules import FINISHED, Key

REASONS = {r.POLICY: {"ReplicaFailed"}, r.BUDGET: {"BackoffLimitExceeded"},
           r.EITHER: {"ReplicaFailed", "BackoffLimitExceeded"}}
DEADLINE_EXCEEDED = "DeadlineExceeded"


@dataclass
class Life:
    """One pod the controller created."""

    uid: str
    name: str
    key: Key
    debug: bool
    seq: int  # the world's pod sequence right after it was created: a snapshot older than this cannot show it
    seen_phase: str | None = None  # its phase as last seen by a reconcile that could act on it
    retired: str | None = None  # why the controller deleted it (restart, pause, mode, scale, cleanup)
    judged: bool = False


@dataclass
class Rep:
    """One replica (a type and rank), across every pod it had and every scale-down and re-add."""

    decided: int = 0  # restarts the rules granted
    made: int = 0  # replacements created for them
    awaiting: bool = False  # a granted restart whose replacement is not made yet
    free: bool = False  # ... granted with a group restart counted by another replica: its replacement counts nothing
    outcome: str | None = None  # Succeeded or Failed for good (its current pod's)
    why: str = r.POLICY  # for a failure for good: why it is not replaced
    rerun_ok: bool = False  # retired by a pause, a debug change or a scale-down: it may run again
    life: Life | None = None


@dataclass
class Expect:
    """What the rules say of one reconcile, from what it sees."""

    allowed: set[tuple[str, str | None]] = field(default_factory=set)  # (phase, reason); reason None: any
    required: bool = False  # the job must be finished after it
    why: str = ""  # the story of `required`, for the failure message
    ambiguous: set[Key] = field(default_factory=set)  # lost pods the spec does not say are counted
    removed: list[Key] = field(default_factory=list)  # ranks seen scaled away in this reconcile
    judged: list[str] = field(default_factory=list)  # what was judged, for the failure message
    failed_removed: list[Key] = field(default_factory=list)  # ranks scaled away whose failure for good was seen


class Ledger:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.reps: dict[Key, Rep] = {}
        self.lives: dict[str, Life] = {}
        self.spec_last: dict | None = None  # the spec of the last reconcile that acted
        self.paused_last = False
        self.clock_start: int | None = None  # when the deadline's clock last (re)started
        self.must: str | None = None  # the verdict the rules reached
        self.reasons: set[str] = set()
        self.lost_in_debug: set[Key] = set()  # replicas whose pod was lost as debug mode was turned on
        self.debug_ended = False  # a debug pod came to an end (or was lost): decides nothing, by the spec
        self.taken: set[str] = set()  # the types whose live pods this reconcile's group restart retires
        self.group_drawn = False  # this reconcile's group restart has drawn its one restart of the budget
        self.group_cause: Key | None = None  # ... the replica whose restart it is (the first of the group judged)

    def rep(self, key: Key) -> Rep:
        return self.reps.setdefault(key, Rep())

    def job_restarts(self) -> int:
        return sum(rep.decided for rep in self.reps.values())

    # --- a reconcile that can act: judge what it sees --------------------------------------------

    def judge(self, spec: dict, seen: dict[str, dict], snapshot_seq: int, world_pods: dict[str, dict],
              now: int) -> Expect:
        expect = Expect()
        present = r.replicas(self.kind, spec)
        before = r.replicas(self.kind, self.spec_last) if self.spec_last is not None else present
        expect.removed = [k for k in before if k not in present]
        newly_failed = []
        self.granted: list[Key] = []
        self.taken, self.group_drawn, self.group_cause = set(), False, None
        for key in present + expect.removed:
            outcome = self._judge_replica(spec, key, seen, snapshot_seq, world_pods, expect, key in expect.removed)
            if outcome == "Failed":
                newly_failed.append(key)
        # The group restart of the spec's replicas: a rank scaled away is not restarted, and takes nothing with it.
        restarted = [k for k in self.granted if k in present]
        together = r.restart_together(self.kind, spec)
        self.taken = {t for k in restarted for t in together.get(k[0], ())}
        self.group_cause = next((k for k in restarted if k[0] in r.group(self.kind, spec)), None)
        outcomes = {k: self.reps[k].outcome for k in present if k in self.reps and self.reps[k].outcome}
        removed_failed = expect.failed_removed = [k for k in expect.removed if k in newly_failed]
        verdict = r.verdict(self.kind, spec, outcomes, removed_failed)
        if verdict is not None and self.must is None:
            self.must = verdict
            failed = [k for k in present + removed_failed if self.rep(k).outcome == "Failed"]
            self.reasons = set().union(*(REASONS[self.rep(k).why] for k in failed)) if failed else {"ReplicaFailed"}
            expect.why = f"the rules decided {verdict} ({self._outcomes_text(present + removed_failed)})"
        if self.must is not None:
            expect.required = True
            expect.why = expect.why or f"the rules had decided {self.must}"
            expect.allowed |= {(self.must, reason) for reason in self.reasons} if self.must == "Failed" \
                else {(self.must, None)}
        self._deadline(spec, now, expect)
        if expect.required:
            # A job that ends in this reconcile replaces nothing: the restarts granted with its end are never made
            # (nor counted). They still drew on the budget while the replicas were judged, in order.
            for key in self.granted:
                self.reps[key].decided -= 0 if self.reps[key].free else 1
                self.reps[key].awaiting = self.reps[key].free = False
            self.taken, self.group_cause = set(), None
        paused = r.run_mode(spec, "pause")
        if self.must is None:
            # The edits take effect: a pause retires every replica (all run again at resume), a scale-down the
            # removed ranks (a rank re-added starts afresh, with its counts): their outcomes are gone.
            for key in (present if paused else []) + expect.removed:
                rep = self.rep(key)
                rep.rerun_ok, rep.outcome = True, None
        self.paused_last = paused
        self.spec_last = spec
        return expect

    def _judge_replica(self, spec: dict, key: Key, seen: dict[str, dict], snapshot_seq: int,
                       world_pods: dict[str, dict], expect: Expect, removed: bool) -> str | None:
        rep = self.reps.get(key)
        life = rep.life if rep else None
        if life is None or life.judged or life.retired:
            return None
        pod = seen.get(life.name)
        if pod is not None and pod["metadata"]["uid"] == life.uid:
            phase = pod["status"].get("phase")
            life.seen_phase = phase
            if phase not in FINISHED:
                return None
            return self._ended(spec, key, life, phase, exit_code(pod, r.container(self.kind)), False, expect)
        if life.seq > snapshot_seq or any(p["metadata"]["uid"] == life.uid for p in world_pods.values()):
            return None  # not in the cache yet, or the cache lags: the controller waits for it
        if life.seen_phase is None:
            life.judged = True  # gone before the controller ever saw it: it cannot know, and makes it again
            return None
        if life.seen_phase in FINISHED:
            return None
        # Lost while running: a failure without an exit code, judged as any (with a pause or a debug change seen
        # with it too: "a deletion of the pod" is an outcome the spec has judged first). Of a rank being scaled
        # away, the spec does not say: the scale-down deletes it anyway, so the model follows the engine there.
        if removed:
            if not life.debug and r.counts_lost(self.kind, spec, key[0]):
                expect.ambiguous.add(key)
            life.judged = True
            return None
        if not life.debug and r.run_mode(spec, "debug"):
            self.lost_in_debug.add(key)
        return self._ended(spec, key, life, "Failed", None, True, expect)

    def _ended(self, spec: dict, key: Key, life: Life, phase: str, code: int | None, lost: bool,
               expect: Expect) -> str | None:
        """A pod of the replica came to an end the controller sees: replaced (a restart) or the replica's end."""
        life.judged = True
        expect.judged.append(f"{life.name} {'lost' if lost else phase}{'' if code is None else f' ({code})'}"
                             f"{' [debug]' if life.debug else ''}")
        if life.debug:
            self.debug_ended = True
            return None  # debug pods decide and count nothing: replaced as they were
        if lost and not r.counts_lost(self.kind, spec, key[0]):
            return None  # recreated without counting
        rep = self.rep(key)
        # A replica of a group whose restart this reconcile has already drawn restarts with it: it is judged
        # against the budget as it was before the group drew on it, and counts nothing.
        grouped = key[0] in r.group(self.kind, spec)
        with_group = grouped and self.group_drawn
        judgement = r.judge(self.kind, spec, key[0], phase, code, rep.decided,
                            self.job_restarts() - (1 if with_group else 0))
        if judgement.replaced:
            rep.decided += 0 if with_group else 1
            rep.awaiting, rep.free = True, with_group
            self.group_drawn = self.group_drawn or grouped
            self.granted.append(key)
            return None
        rep.outcome, rep.why = phase, judgement.why
        return phase

    def follow(self, key: Key, count: int) -> None:
        """Where the spec is silent (`Expect.ambiguous`), the engine's count is taken: a restart granted."""
        rep = self.rep(key)
        if count == rep.decided + 1:
            rep.decided += 1
            rep.awaiting = True

    def _deadline(self, spec: dict, now: int, expect: Expect) -> None:
        """Active time only: the clock starts with the job's first pods, restarts at resume, and does not run
        while paused. Past the deadline the job fails (failure wins a tie with a success decided with it)."""
        seconds = r.deadline(self.kind, spec)
        paused = r.run_mode(spec, "pause")
        past = bool(seconds) and self.clock_start is not None and not self.paused_last and \
            now - self.clock_start >= seconds
        if not paused and (self.clock_start is None or self.paused_last):
            self.clock_start = now
        if past:
            expect.allowed.add(("Failed", DEADLINE_EXCEEDED))
            if not paused:
                expect.required = True
                expect.why = expect.why or f"it has been active {now - self.clock_start}s, past its " \
                                           f"activeDeadlineSeconds {seconds}"

    def _outcomes_text(self, keys: list[Key]) -> str:
        return ", ".join(f"{t}-{rank}: {self.reps[(t, rank)].outcome}" for t, rank in keys
                         if (t, rank) in self.reps and self.reps[(t, rank)].outcome) or "no outcomes"

    # --- the controller's pod writes ---------------------------------------------------------------

    def created(self, key: Key, name: str, pod: dict, seq: int, debug: bool) -> str | None:
        """A pod the controller created; a violation's message, or None."""
        rep = self.rep(key)
        problem = None
        if rep.outcome is not None and not rep.rerun_ok:
            problem = f"replica {name} had come to its end ({rep.outcome} for good) and was given a new pod"
        if rep.awaiting:
            rep.made += 0 if rep.free else 1
            rep.awaiting = rep.free = False
        rep.outcome, rep.rerun_ok = None, False
        rep.life = self.lives[pod["metadata"]["uid"]] = Life(pod["metadata"]["uid"], name, key, debug, seq)
        return problem

    def deleted(self, spec: dict, name: str, uid: str, phase: str | None) -> str | None:
        """A pod the controller deleted from a running job: why it may (the life is retired for that reason), or
        None when no rule allows it."""
        life = self.lives.get(uid)
        if life is None:
            return "unknown"  # not one it made: left alone by no rule, but not ours to judge
        if life.retired:
            return life.retired
        rep = self.rep(life.key)
        debugging = r.run_mode(spec, "debug")
        if r.run_mode(spec, "pause"):
            why = "pause"
        elif life.key not in r.replicas(self.kind, spec):
            why = "scale"
        elif life.debug != debugging and (life.debug or phase not in FINISHED):
            why = "mode"
        elif phase in FINISHED and (life.debug or (rep.awaiting and rep.life is life)):
            why = "restart"
        elif life.key[0] in self.taken and rep.life is life and phase not in FINISHED:
            why = "group"  # a live pod a group restart takes with it
        else:
            return None
        life.retired = why
        if why in ("pause", "mode", "scale"):
            rep.rerun_ok = True
            if why != "scale":
                rep.outcome = None
        return why


    def running(self, key: Key, seen: dict[str, dict]) -> dict | None:
        """The replica's current pod, as seen, if it is Running and neither retired nor being deleted."""
        rep = self.reps.get(key)
        life = rep.life if rep else None
        pod = seen.get(life.name) if life else None
        if life is None or pod is None or pod["metadata"]["uid"] != life.uid or life.retired:
            return None
        if pod["metadata"].get("deletionTimestamp") or pod["status"].get("phase") != "Running":
            return None
        return pod

    def ready(self, key: Key, seen: dict[str, dict]) -> bool:
        """Is the replica's current pod, as seen, Running (`running`) and Ready: its Ready condition True, or none
        reported?"""
        pod = self.running(key, seen)
        condition = next((c for c in pod["status"].get("conditions") or () if c.get("type") == "Ready"), None) \
            if pod else None
        return pod is not None and (condition is None or condition.get("status") == "True")


def exit_code(pod: dict, container: str) -> int | None:
    for status in pod["status"].get("containerStatuses") or ():
        if status.get("name") == container and "terminated" in (status.get("state") or {}):
            return status["state"]["terminated"].get("exitCode")
    return None
