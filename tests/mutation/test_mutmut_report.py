"""`make mutants`' report (mutmut_report.py): which modules mutmut mutates, and the raw figure of a run."""

from __future__ import annotations

import json

from tests.mutation import mutmut_report


def test_every_decision_module_and_the_kinds_decision_code_are_mutated():
    modules = mutmut_report.modules()
    for module in ("controller/jobs/decisions/upkeep.py", "controller/jobs/decisions/oversize.py",
                   "controller/jobs/decisions/backoff.py", "controller/jobs/decisions/plan.py",
                   # decisions/status.py, split by role (issue 46)
                   "controller/jobs/decisions/pod_state.py", "controller/jobs/decisions/replica_records.py",
                   "controller/jobs/decisions/job_conditions.py", "controller/jobs/decisions/phase_machine.py",
                   "controller/jobs/decisions/status_codec.py",
                   "controller/kinds/genericjob/kind.py", "controller/kinds/genericjob/rules.py",
                   "controller/jobs/training/restart.py"):
        assert module in modules
    assert not [m for m in modules if m.endswith("__init__.py") or not m.startswith("controller/")]


def test_the_report_counts_a_timeout_as_killed_and_names_what_survived(tmp_path, monkeypatch, capsys):
    meta = tmp_path / "mutants" / "controller" / "m.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": {"m.x_f__mutmut_1": 1, "m.x_f__mutmut_2": 0,
                                                     "m.x_f__mutmut_3": 36, "m.x_f__mutmut_4": 33}}))
    monkeypatch.chdir(tmp_path)
    assert mutmut_report.main(["controller/m.py", "--survivors"]) == 0
    out = capsys.readouterr().out
    assert "| `controller/m.py` | 4 | 2 | 1 | 1 | 0 | 50.0 % |" in out
    assert "survived: m.x_f__mutmut_2" in out and "no tests: m.x_f__mutmut_4" in out
    assert "m.x_f__mutmut_1" not in out
