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


REPORT = """\
### Issue 45: older runs

| `controller.m.x_f__mutmut_9` | an older run's name, not read | |

### The figure (final run, 2026-12-07)

| mutant | the mutation | why equivalent |
| --- | --- | --- |
| `controller.m.x_f__mutmut_2` | `None` for `False` | falsy either way |
| `controller.m.xǁKǁg__mutmut_1`, `controller.n.x_h__mutmut_3` | a default dropped | every caller passes it |
| see `controller.m.x_f__mutmut_5` | prose mentions no survivor | |

### The project's own runner

| `controller.m.x_f__mutmut_7` | after the section, not read | |
"""


def test_the_final_sections_rows_name_their_mutants_in_the_first_cell_only():
    assert mutmut_report.named_survivors(REPORT) == {
        "controller.m.x_f__mutmut_2", "controller.m.xǁKǁg__mutmut_1", "controller.n.x_h__mutmut_3",
        "controller.m.x_f__mutmut_5"}
    assert mutmut_report.named_survivors("### Other\n| `controller.m.x_f__mutmut_2` | |\n") == set()


def test_the_check_names_survivors_left_out_and_names_of_the_measured_modules_no_longer_left():
    named = mutmut_report.named_survivors(REPORT)
    left = ["controller.m.x_f__mutmut_2", "controller.m.xǁKǁg__mutmut_1", "controller.m.x_f__mutmut_8"]
    missing, stale = mutmut_report.unnamed(left, named, ["controller/m.py"])
    assert missing == ["controller.m.x_f__mutmut_8"]
    # n.py was not measured: its name is not stale
    assert stale == ["controller.m.x_f__mutmut_5"]


def test_check_named_fails_the_run_when_a_survivor_is_not_named(tmp_path, monkeypatch, capsys):
    meta = tmp_path / "mutants" / "controller" / "m.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": {"controller.m.x_f__mutmut_2": 0,
                                                     "controller.m.x_f__mutmut_3": 1}}))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "RELIABILITY.md").write_text("### The figure (final run, x)\n\n| `controller.m.x_f__mutmut_2` | |\n")
    assert mutmut_report.main(["controller/m.py", "--check-named"]) == 0
    meta.write_text(json.dumps({"exit_code_by_key": {"controller.m.x_f__mutmut_2": 0,
                                                     "controller.m.x_f__mutmut_4": 0}}))
    assert mutmut_report.main(["controller/m.py", "--check-named"]) == 1
    assert "not named in RELIABILITY.md's survivors table: controller.m.x_f__mutmut_4" in capsys.readouterr().out


def test_reliability_md_names_its_final_survivors_each_of_a_module_make_mutants_mutates():
    from pathlib import Path

    named = mutmut_report.named_survivors(Path("RELIABILITY.md").read_text())
    assert len(named) > 100
    prefixes = tuple(m.removesuffix(".py").replace("/", ".") + "." for m in mutmut_report.modules())
    assert not [name for name in named if not name.startswith(prefixes)]
