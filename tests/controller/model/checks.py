"""The checks the engine's model (machine.py) makes after each reconcile: the job's end, its counts, its
pod writes and the pods it leaves, each failure a defect (a tolerated known one, or an AssertionError)."""

from __future__ import annotations

import copy
import re

from controller.jobs.schema.naming import replica_name
from tests.controller.model import rules as r
from tests.controller.model.job_strategy import DEBUG_COMMAND
from tests.controller.model.oracle import Expect
from tests.controller.model.rules import FINISHED
from tests.controller.model.world import JOB
from tests.controller.status_checks import monotonic_problems, status_problems


def records(kind, status: dict) -> dict[str, dict]:
    """Every replica record a status keeps, those of replicas scaled away included."""
    found = {raw["name"]: raw for raw in status.get("removedReplicas") or () if raw.get("name")}
    return {**found, **kind.status.stored_records(status)}


def is_debug_pod(pod: dict) -> bool:
    return any(c.get("command") == DEBUG_COMMAND for c in pod["spec"].get("containers") or ())


class Checks:
    """EngineModel's checks (a mixin: the state they read, `defect` and the ledger are EngineModel's)."""

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
                self.defect(self._why_miscount(spec, key, expect, count),
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

    def _check_status_content(self, before: dict, after: dict) -> None:
        """What the status says, not only what it decides (issue 45): conditions complete and well-formed, times
        present and monotonic, a Failed job's message non-empty (status_checks.py), and each record's cause kept: a
        record that described a pod's end (its containers' exit codes) says the same of that pod afterwards."""
        problems = status_problems(after) + monotonic_problems(before, after)
        old = records(self.kind, before)
        for name, record in records(self.kind, after).items():
            previous = old.get(name) or {}
            if not record.get("uid") or record.get("uid") != previous.get("uid"):
                continue
            ended = {c.get("name"): c.get("exitCode") for c in previous.get("containers") or ()
                     if c.get("state") == "terminated"}
            now = {c.get("name"): c.get("exitCode") for c in record.get("containers") or ()
                   if c.get("state") == "terminated"}
            if ended and now != ended:
                problems.append(f"{name}: its pod's exit codes {ended} became {now}")
        if problems:
            self.defect(None, f"the status says the wrong thing: {'; '.join(problems)}")

    def _check_removed_marks(self, status: dict, spec: dict) -> None:
        """After a reconcile that applied the spec: the records of ranks scaled away, and only those, are marked
        `removed` (a later reconcile tells them from ranks the pause retired by it)."""
        if any(c.get("type") == "SpecInvalid" and c.get("status") == "True" for c in status.get("conditions") or ()) \
                or status.get("reason") == "InvalidSpec":
            return  # an edit not applied: the records are those of the spec before it
        ranks = {replica_name(JOB, *key) for key in r.replicas(self.kind_name, spec)}
        wrong = sorted(name for name, record in records(self.kind, status).items()
                       if (record.get("removed") is True) == (name in ranks))
        if wrong:
            self.defect(None, f"records marked removed wrongly (ranks of the spec: {sorted(ranks)}): "
                              + ", ".join(f"{n} removed={records(self.kind, status)[n].get('removed')}" for n in wrong))

    def _check_final(self, status: dict) -> None:
        """Terminal is final: nothing of a finished job's status changes again (its records but to Deleted)."""
        for key in ("phase", "conditions", "completionTime", "startTime", "backoffCount", "reason"):
            if self.final is not None and status.get(key) != self.final.get(key):
                self.defect(None, f"status.{key} of a finished job changed: {self.final.get(key)!r} -> "
                                  f"{status.get(key)!r}")
                return

    def _why_miscount(self, spec: dict, key: tuple[str, int], expect: Expect, count: int) -> str | None:
        """The known defect a replica's wrong restartCount resembles: one that counts too many (a pod adopted, a debug
        pod's end) or too few (a failure forgotten with a pause or a scale-down), never the other way."""
        rep = self.ledger.reps[key]
        life = rep.life
        if count > rep.decided:
            if life and life.retired == "scale" and key in r.replicas(self.kind_name, spec) and \
                    any(p["metadata"]["uid"] == life.uid for p in self.pods_seen.values()):
                return "readded-rank-adopts-old-pod"  # re-added while its scaled-away pod is still terminating
            if life and life.debug:
                return "debug-counts"  # its pod is a debug pod: only the engine's counting it explains a difference
            return None
        if count < rep.decided and r.run_mode(spec, "pause"):
            return "pause-forgets-failure"
        if count < rep.decided and key in expect.removed:
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
                if waits := self._not_ready(spec, key[0]):
                    self.defect(None, f"pod {name} created before every replica it waits for is Running and Ready "
                                      f"(not: {', '.join(waits)})")
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
        if life is not None and life.retired in ("restart", "pause", "mode", "scale", "group"):
            return
        if self.end_ranks is not None and name not in self.end_ranks:
            return  # a pod of a rank scaled away before the end (its delete waited for the cache to show it)
        ranks = {replica_name(JOB, *k) for k in r.replicas(self.kind_name, spec)}
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

    def _not_ready(self, spec: dict, replica_type: str) -> list[str]:
        """The replicas a pod of the type waits for (the start order) that are not Running and Ready, as seen."""
        waits_for = r.start_after(self.kind_name, spec).get(replica_type, ())
        return [replica_name(JOB, *key) for key in r.replicas(self.kind_name, spec)
                if key[0] in waits_for and not self.ledger.ready(key, self.pods_seen)]

    def _check_dependence(self, spec: dict, after: dict) -> None:
        """After a reconcile of a running job that could act: the start order holds back only what waits for a
        replica not Ready (a replica held says WaitingForReady only then), a group restart has taken the live
        pods of the types it takes, and the hostfile names the workers of the spec."""
        kept = records(self.kind, after)
        for key in r.replicas(self.kind_name, spec):
            name = replica_name(JOB, *key)
            if (kept.get(name, {}).get("waiting") or {}).get("reason") == r.WAITING_FOR_READY and \
                    not self._not_ready(spec, key[0]):
                self.defect(None, f"{name} is held back (WaitingForReady) though every replica it waits for is "
                                  f"Running and Ready (start order: {r.start_after(self.kind_name, spec) or 'none'})")
                return
            rep = self.ledger.reps.get(key)
            life = rep.life if rep else None
            pod = self.pods_seen.get(life.name) if life else None
            if key[0] in self.ledger.taken and life and not life.debug and not life.retired and pod and \
                    pod["metadata"]["uid"] == life.uid and pod["status"].get("phase") not in FINISHED and \
                    not pod["metadata"].get("deletionTimestamp"):
                self.defect(None, f"a group restart that takes the {key[0]} with it left {name}'s live pod in place")
                return
        cause = self.ledger.group_cause
        said = (after.get("groupRestart") or {}).get("replica")
        if cause is not None and not r.run_mode(spec, "pause") and said != replica_name(JOB, *cause):
            self.defect(None, f"status.groupRestart names {said}, but the group restart is "
                              f"{replica_name(JOB, *cause)}'s")
            return
        if said is not None and not r.restart_together(self.kind_name, spec):
            self.defect(None, f"status.groupRestart ({said}) of a kind whose replicas do not restart together")
            return
        wanted = r.hostfile_hosts(self.kind_name, spec)
        if wanted is None:
            return
        config = (self.world.children.get("configmaps") or {}).get(f"{JOB}-config")
        data = (config or {}).get("data") or {}
        named = [(m[1], int(m[2])) for m in re.finditer(r"^(\S+?)(?: slots=|:)(\d+)$", data.get("hostfile", ""), re.M)]
        if named != wanted:
            self.defect(None, f"the hostfile names {named or 'nothing'}, but the spec's workers are {wanted}")
            return
        # discover_hosts.sh: those of the hostfile's replicas whose pods are Running (as seen, not being retired).
        running = [(host, slots) for (host, slots), key in zip(wanted, r.hostfile_replicas(self.kind_name, spec),
                                                               strict=True) if self.ledger.running(key, self.pods_seen)]
        discovered = [(m[1], int(m[2])) for m in re.finditer(r"^echo (\S+):(\d+)$", data.get("discover_hosts.sh", ""),
                                                             re.M)]
        if discovered != running:
            self.defect(None, f"discover_hosts.sh names {discovered or 'nothing'}, but the workers Running are "
                              f"{running or 'none'}")

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
