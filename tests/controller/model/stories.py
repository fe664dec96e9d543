"""Rules that tell, in one step, stories several rules reach only in a rare order (a mixin of EngineModel): two of a
group's pods failing as the user pauses the job or scales their type down, a pause that outlasts the deadline, a pod
ending once every pod runs. Each keeps a mutant killed in CI's fixed exploration (mutants.py measures it); without
them, whether the exploration met the story was luck."""

from __future__ import annotations

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from tests.controller.model import rules as r


class CompoundStories:
    # Two pods fail as the user pauses the job or scales a type down, and the controller's next look sees both: the
    # failures are judged first, by the rules before the edit, and a group's restarts seen together count once, a
    # rank scaled away among them included. Apart (two_pods_fail, pause, scale), with a reconcile between, they rarely
    # meet. These rules are drawn only where they can meet a group restart (_group_running); elsewhere they would only
    # end stories sooner (a failure final there), taking steps from the stories of other rules.

    def _group_running(self) -> bool:
        """A job not finished, with two pods or more running, of a kind whose replicas restart together, each type of
        its group replacing a failed pod now (its restart policy and what is left of the budget, by the contract)."""
        if not self.alive or self.final is not None or len(self._running_pods()) < 2:
            return False
        spec = self.world.job["spec"]
        members = r.group(self.kind_name, spec)
        return bool(members) and all(r.judge(self.kind_name, spec, t, "Failed", 1, 0, self.ledger.job_restarts())
                                     .replaced for t in members)

    @precondition(lambda self: self._group_running())
    @rule(which=st.integers(0, 11), code=st.sampled_from([None, 1, 137]))
    def two_pods_fail_with_a_pause(self, which, code):
        self._two_running_fail(which, code)
        self.pause(True)
        self.reconcile()

    @precondition(lambda self: self._group_running())
    @rule(which=st.integers(0, 11), code=st.sampled_from([None, 1, 137]), fewer=st.integers(0, 2))
    def two_pods_fail_with_a_scale_down(self, which, code, fewer):
        """The scale-down removes the rank of the first pod failing (and those above it), and `fewer` more as
        admission lets it: the other pod failing is scaled away too, or stays, a replica of the spec."""
        failing = self._two_running_fail(which, code)
        labels = self.world.pods[failing]["metadata"]["labels"]
        replica_type, rank = labels[self.kind.api.type_label], int(labels[self.kind.api.rank_label])
        types = r.replica_specs(self.kind_name, self.world.job["spec"])
        index = [t["type"] for t in types].index(replica_type)
        count = types[index].get("replicas", 1)
        target = next((n for n in range(max(0, rank - fewer), min(rank + 1, count)) if self._admitted(index, n)), None)
        if target is None:
            note(f"(admission lets no scale-down remove {failing})")
        else:
            self.world.edit(lambda spec: r.scale(self.kind_name, spec, index, target))
        self.reconcile()

    # Stories that several rules reach only in a rare order, reached by one rule: without them, whether the fixed
    # exploration met a pause that outlasts the deadline, or a loss under Never once a launcher runs, was luck (a
    # mutant killed at 1,000 examples survived 1,500: mutants.py measures it).

    @precondition(lambda self: self.alive and self.final is None and not self.tainted)
    @rule(seconds=st.sampled_from([30, 70, 130]))
    def paused_for_a_while(self, seconds):
        """The user pauses the job and the controller sees it; time passes; the user resumes it and the controller
        sees that. The time paused is no active time (runPolicy.activeDeadlineSeconds): not while paused, not in
        the reconcile that resumes, not after it."""
        self.pause(True)
        self.reconcile()
        self.time_passes(seconds)
        if self.alive and not self.tainted:
            self.pause(False)
            self.reconcile()

    @precondition(lambda self: self.alive and self.final is None and not self.tainted)
    @rule(which=st.integers(0, 11), lost=st.booleans(), code=st.sampled_from([1, 137]))
    def a_pod_ends_once_all_run(self, which, lost, code):
        """Every pod comes up (a launcher made once its workers run), then a running pod, counted from the highest
        ranks, is lost (deleted, its node gone) or fails, and the controller looks: a group restart with every member
        live, a loss under each restart policy."""
        self.pods_come_up()
        pods = self._running_pods() if self.alive and not self.tainted else []
        if pods:
            name = pods[(-1 - which) % len(pods)]
            if lost:
                self.world.remove_pod(name)
            else:
                self._fail(name, None, code)
            self.reconcile()

    def _two_running_fail(self, which: int, code: int | None) -> str:
        """Two of the pods running (or pending) fail, counted from the last (the highest ranks): the first's name."""
        pods = self._running_pods()
        self._fail(pods[(-1 - which) % len(pods)], pods[(-2 - which) % len(pods)], code)
        return pods[(-1 - which) % len(pods)]
