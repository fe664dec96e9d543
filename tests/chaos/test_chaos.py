"""The CI-sized chaos run: 45 seeded jobs under 35 s of faults and leader kills, every invariant
checked (see tests/chaos/harness.py and RELIABILITY.md). Longer runs: `python -m tests.chaos`."""

from __future__ import annotations

import pytest

from controller.jobs.testing import FAILED, RUNNING
from controller.jobs.training.testing import TrainingContract
from controller.kinds import registry
from controller.kinds.genericjob.models import PLURAL
from controller.kinds.genericjob.testing import verdicts

from .harness import LABEL_JOB, Audit, Settings, run_chaos
from .jobs import make_jobs, simulate


@pytest.mark.slow  # runs the programs
# The settling is a wait for every job's phase, over as soon as they all have it: generous, since `make test`'s
# parallel workers load the machine (twice, at a load average of 12-17, jobs were still unsettled after 60 s).
@pytest.mark.timeout(330)
async def test_chaos_run_keeps_every_invariant(tmp_path):
    settings = Settings(jobs=45, chaos_seconds=35, seed=20240607, settle_timeout=150)
    report = await run_chaos(settings, tmp_path, hard_timeout=300)
    print(report.describe())
    assert not report.violations, report.describe()
    assert sum(report.phases.values()) == settings.jobs
    assert report.faults["kill-leader"] >= 1 and report.failovers >= 1


def pod_record(rv: int, kind: str, name: str, uid: str, phase: str | None = "Pending", deleting: bool = False,
               job: str = "j") -> dict:
    return {"rv": rv, "type": kind, "resource": "pods", "name": name, "uid": uid, "phase": phase,
            "deleting": deleting, "labels": {LABEL_JOB: job}}


def test_the_audit_checks_fire_on_a_second_live_pod_and_a_pod_after_the_job_finished():
    found: list[str] = []
    audit = Audit({}, lambda job, message: found.append(f"{job}: {message}"))
    audit.feed([pod_record(1, "ADDED", "j-w-0", "a"), pod_record(2, "MODIFIED", "j-w-0", "a", "Failed"),
                pod_record(3, "ADDED", "j-w-0", "b")])
    assert found == ["j: pod j-w-0 uid b created while uid a still exists"]
    audit.feed([{"rv": 4, "type": "MODIFIED", "resource": PLURAL, "name": "j", "uid": "u", "phase": "Failed",
                 "deleting": False, "labels": {}},
                pod_record(5, "ADDED", "j-w-1", "c"),
                {"rv": 6, "type": "MODIFIED", "resource": PLURAL, "name": "j", "uid": "u", "phase": "Running",
                 "deleting": False, "labels": {}}])
    assert "after the job finished" in found[1] and "changed phase: Failed -> Running" in found[2]
    assert audit.natural == {"a": "Failed"}


def test_the_oracle():
    assert simulate("OnFailure", 2, lambda i: i == 2) == ("Succeeded", 2)
    assert simulate("OnFailure", 1, lambda i: i == 2) == ("Failed", 1)
    assert simulate("Always", 2, lambda i: i != 2) == ("Failed", 2)
    assert simulate("Never", 3, lambda i: False) == ("Failed", 0)
    plans = make_jobs(5, 60)
    assert {plan.kind.api.kind for plan in plans} == set(registry.KINDS)  # the mix has every kind of the registry
    for plan in plans:
        assert set(plan.job.scripts) == {r.name for r in plan.replicas}  # every pod scripted
        if isinstance(plan.contract, TrainingContract):
            # Only the master can fail for good; the others' scripts end in success, or never end (an MPIJob's
            # workers); the master's outcome is the job's.
            master = plan.contract.master(plan.body["spec"])
            assert all(r.outcome != FAILED for r in plan.replicas if (r.type, r.rank) != master)
            assert plan.expected == next(r.outcome for r in plan.replicas if (r.type, r.rank) == master)
        elif plan.mode != "debug":
            succeeded, failed = verdicts(plan.replicas, plan.body["spec"].get("successRules") or [],
                                         plan.body["spec"].get("failureRules") or [])
            assert succeeded != failed and plan.expected == ("Succeeded" if succeeded else "Failed")
        else:
            assert plan.expected == RUNNING


def test_a_gap_in_the_audit_log_is_a_violation_not_a_silent_miss():
    found: list[str] = []
    audit = Audit({}, lambda job, message: found.append(message))
    audit.read({"first": 0, "next": 1, "records": [pod_record(1, "ADDED", "j-w-0", "a")]})
    assert (found, audit.next, audit.live) == ([], 1, {"j-w-0": "a"})
    audit.read({"first": 4, "next": 5, "records": [pod_record(9, "MODIFIED", "j-w-0", "a", "Running")]})
    assert found == ["the audit log dropped records 1..3 before they were read (raise localcluster's "
                     "--audit-size): the invariants over them went unchecked"]
    assert audit.next == 5
