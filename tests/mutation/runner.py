"""Run the mutants of the decision modules against the engine's unit tests (`make mutants`).

How, and why so: the parent imports the controller and the kill set's test files once (a pytest
--collect-only), then runs the kill set unmutated once in a forked child, recording per test which functions of
the mutated modules it calls (its duration and outcome too). Each mutant then runs in a forked child of its own:
the child compiles the mutated module and swaps the changed function's code object into the live function
(`function.__code__ = ...`, which every importer of the function sees), then runs only the tests that call
that function, fastest first, with -x. A child that exits non-zero killed the mutant; one that outlives its
timeout (a mutant that loops) is killed and counts as killed too. No file is ever written, so mutants cannot
leak into the worktree, and a fork costs milliseconds instead of a second of imports.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path

from tests.mutation import mutants as mutation

ROOT = Path(__file__).resolve().parents[2]

# The decision modules of issue 33, smallest first (held.py, conflicts.py and training/status.py, now
# decisions/status.py's TasksStatus, since the records, children, validity and judging branches: the held edit, the
# taken names, the removed ranks' counts; plan.py's situations in modules of their own since issue 37).
MODULES = [
    "controller/jobs/training/runpolicy.py",
    "controller/jobs/training/restart.py",
    "controller/jobs/training/kind.py",  # the training kinds' verdict, restarts and ports (issue 37)
    "controller/jobs/decisions/start_errors.py",  # a container that could not start, condensed (issue 42)
    "controller/jobs/decisions/cause.py",
    "controller/jobs/decisions/held.py",
    "controller/jobs/decisions/conflicts.py",
    "controller/jobs/decisions/cleanup.py",
    "controller/kinds/genericjob/kind.py",
    "controller/kinds/tensorflow/kind.py",
    "controller/kinds/genericjob/rules.py",
    "controller/jobs/decisions/edits.py",
    "controller/jobs/decisions/waiting.py",
    "controller/kinds/pytorch/kind.py",
    "controller/jobs/decisions/restart.py",
    "controller/jobs/decisions/status.py",
    "controller/jobs/decisions/actions.py",
    "controller/jobs/decisions/stuck.py",
    "controller/jobs/decisions/deadline.py",
    "controller/jobs/decisions/pause.py",
    "controller/jobs/decisions/invalid.py",
    "controller/jobs/decisions/scale_down.py",
    "controller/jobs/decisions/run.py",
    "controller/jobs/decisions/slots.py",
    "controller/jobs/decisions/finish.py",
    "controller/jobs/decisions/plan.py",
]

# The engine's unit tests, without the slow ones: test_engine_model (hypothesis, ~90 s), test_crd and
# test_crd_cost (CEL cost of the CRDs), test_leader, test_http1 and test_kube (the client against a server).
KILL_SET = [
    "tests/controller/test_plan.py",
    "tests/controller/test_restart.py",
    "tests/controller/test_rules.py",
    "tests/controller/test_status.py",
    "tests/controller/test_waiting.py",
    "tests/controller/test_failure_cause.py",
    "tests/controller/test_start_errors.py",
    "tests/controller/test_cleanup.py",
    "tests/controller/test_live_edits.py",
    "tests/controller/test_engine_policies.py",
    "tests/controller/test_kinds.py",
    "tests/controller/test_tensorflow_kind.py",
    "tests/controller/test_pytorch_kind.py",
    "tests/controller/test_trim.py",
    "tests/controller/test_reconciler.py",
    "tests/controller/test_write_failures.py",
    "tests/controller/test_events.py",
    "tests/controller/test_services.py",
    "tests/controller/test_substitution.py",
    "tests/controller/test_job_size.py",
    "tests/controller/test_podgroup_size.py",
    "tests/controller/test_pods.py",
    "tests/controller/test_validation.py",
    "tests/controller/test_cleanup_edit.py",
    "tests/controller/test_conflicts.py",
    "tests/controller/test_counted_messages.py",
    "tests/controller/test_held.py",
    "tests/controller/test_judged.py",
    "tests/controller/test_removed_ranks.py",
]
# The tests written against survivors (tests/controller/test_decisions_*.py) join the kill set.
KILL_SET += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests/controller").glob("test_decisions_*.py"))
PYTEST_ARGS = ["-q", "-p", "no:cacheprovider", "-o", "addopts=", "-W", "ignore"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to mutate (default: the decision modules)")
    parser.add_argument("--tests", nargs="*", default=None, help="the kill set (default: the engine's unit tests)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    parser.add_argument("--report", default="mutants-report.json", help="where the JSON report goes")
    parser.add_argument("--list", action="store_true", help="only list the mutants")
    parser.add_argument("--survivors-of", metavar="REPORT",
                        help="only the mutants that survived (or had no test) in an earlier report: e.g. to try "
                             "them against a larger kill set (--tests tests/controller)")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    modules = args.modules or MODULES
    tests = [t for t in (args.tests or KILL_SET) if Path(t).exists()]
    # by module, then by line: a run stopped early has measured whole functions up to a line
    found = [m for path in modules for m in sorted(mutation.mutants(Path(path).read_text(), path),
                                                   key=lambda m: m.line)]
    if args.survivors_of:
        alive = _survivors(Path(args.survivors_of))
        found = [m for m in found if m.ident in alive or (m.path, m.line, m.function[0], m.description) in alive]
    if args.list:
        for m in found:
            print(f"{m.path}:{m.line}: {m.description}  [{m.function[0]}]")
        print(f"{len(found)} mutants")
        return 0
    signal.signal(signal.SIGTERM, _interrupted)  # a run stopped (SIGTERM, ^C) still reports what it measured
    _quiet_pytest(["--collect-only", *tests])
    functions = _live_functions(modules)
    coverage = _baseline(tests, modules)
    results, partial = _run_all(found, functions, coverage, args.jobs)
    _report(results, modules, args.report, partial)
    return 0


def _interrupted(signum, frame):
    raise KeyboardInterrupt


def _child():
    """In a forked child: the default SIGTERM and SIGINT (the parent's ones report and exit)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _survivors(report: Path) -> set:
    """The mutants alive in an earlier run: ids from its JSON report, or (path, line, function, mutation) from
    its printed lines (`SURVIVED  path:line [function] mutation`, as a run prints them while it goes)."""
    text = report.read_text()
    if text.lstrip().startswith("{"):
        return {r["id"] for r in json.loads(text)["results"] if r["outcome"] in ("survived", "no tests")}
    alive = set()
    for line in text.splitlines():
        if line.startswith(("SURVIVED ", "NO TESTS ")):
            where, rest = line[9:].strip().split(" [", 1)
            path, number = where.rsplit(":", 1)
            function, description = rest.split("] ", 1)
            alive.add((path, int(number), function, description))
    return alive


def _quiet_pytest(args: list[str]) -> int:
    import pytest

    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1), os.dup(2)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        return pytest.main([*PYTEST_ARGS, *args])
    finally:
        sys.stdout.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)


def _module_name(path: str) -> str:
    return path[:-3].replace("/", ".")


def _live_functions(modules: list[str]) -> dict[tuple[str, str, int], list]:
    """(file, co_qualname, co_firstlineno) -> the live function objects with that code (found on the heap)."""
    import gc

    for path in modules:
        importlib.import_module(_module_name(path))
    files = {str(ROOT / path): path for path in modules}
    live = defaultdict(list)
    for obj in gc.get_objects():
        code = getattr(obj, "__code__", None) if callable(obj) else None
        if code is not None and type(obj).__name__ == "function" and code.co_filename in files:
            live[(files[code.co_filename], code.co_qualname, code.co_firstlineno)].append(obj)
    return live


def _baseline(tests: list[str], modules: list[str]) -> dict:
    """Run the kill set unmutated in a child; per test: outcome, duration, the mutated modules' functions it calls."""
    out = ROOT / f".mutants-baseline.{os.getpid()}.json"
    pid = os.fork()
    if pid == 0:
        _child()
        code = 1
        try:
            code = _record_baseline(tests, modules, out)
        except BaseException:
            import traceback

            out.with_suffix(".err").write_text(traceback.format_exc())
        finally:
            os._exit(code)
    try:
        os.waitpid(pid, 0)
    except KeyboardInterrupt:  # stopped before any mutant ran: the unmutated run goes too, and leaves no file
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        out.unlink(missing_ok=True)
        raise SystemExit("stopped during the unmutated run: nothing measured") from None
    if not out.exists():
        raise SystemExit("the unmutated run failed:\n" + out.with_suffix(".err").read_text())
    data = json.loads(out.read_text())
    out.unlink()
    failing = [t for t, d in data.items() if d["outcome"] != "passed"]
    if failing:
        print(f"unmutated, these tests do not pass and are left out: {failing}", file=sys.stderr)
    print(f"baseline: {len(data)} tests, {sum(d['duration'] for d in data.values()):.1f} s", file=sys.stderr)
    return {t: d for t, d in data.items() if d["outcome"] == "passed"}


def _record_baseline(tests, modules, out: Path) -> int:
    import threading

    files = {str(ROOT / path): path for path in modules}
    tests_data: dict[str, dict] = {}
    current = {"test": None}
    keys: dict[object, tuple | None] = {}

    def profile(frame, event, arg):
        if event != "call" or current["test"] is None:
            return
        code = frame.f_code
        key = keys.get(code, False)
        if key is False:
            key = _outer_key(code, files)
            keys[code] = key
        if key is not None:
            tests_data[current["test"]]["calls"].add(key)

    class Recorder:
        def pytest_runtest_setup(self, item):
            tests_data.setdefault(item.nodeid, {"calls": set(), "duration": 0.0, "outcome": "passed"})
            current["test"] = item.nodeid

        def pytest_runtest_logreport(self, report):
            entry = tests_data.setdefault(report.nodeid, {"calls": set(), "duration": 0.0, "outcome": "passed"})
            entry["duration"] += report.duration
            if report.failed:
                entry["outcome"] = "failed"

        def pytest_runtest_logfinish(self, nodeid, location):
            current["test"] = None

    import pytest

    sys.setprofile(profile)
    threading.setprofile(profile)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    pytest.main([*PYTEST_ARGS, *tests], plugins=[Recorder()])
    sys.setprofile(None)
    threading.setprofile(None)
    out.write_text(json.dumps({t: {**d, "calls": sorted(map(list, d["calls"]))} for t, d in tests_data.items()}))
    return 0


def _outer_key(code, files):
    """The (file, qualname, first line) of the outermost function around `code`, if it is in a mutated module."""
    path = files.get(code.co_filename)
    if path is None:
        return None
    outer = code.co_qualname.split(".<locals>.")[0]
    if outer == code.co_qualname:
        return path, code.co_qualname, code.co_firstlineno
    return path, outer, -1  # a nested function: matched to its outer function by name below


def _tests_for(mutant, coverage) -> list[str]:
    wanted = {(mutant.path, mutant.function[0], mutant.function[1]), (mutant.path, mutant.function[0], -1)}
    chosen = [t for t, d in coverage.items() if any(tuple(c) in wanted for c in d["calls"])]
    return sorted(chosen, key=lambda t: coverage[t]["duration"])


def _run_all(found, functions, coverage, jobs: int) -> list[dict]:
    trees = {}
    results = []
    running: dict[int, tuple] = {}
    queue = list(found)
    started = time.monotonic()
    reported = 0
    try:
        while queue or running:
            while queue and len(running) < jobs:
                mutant = queue.pop(0)
                tests = _tests_for(mutant, coverage)
                if not tests:
                    results.append(_result(mutant, "no tests", []))
                    continue
                timeout = 10 + 3 * sum(coverage[t]["duration"] for t in tests)
                pid = _fork_mutant(mutant, tests, functions, trees)
                running[pid] = (mutant, tests, time.monotonic() + timeout)
            _reap(running, results)
            if len(results) // 100 > reported:
                reported = len(results) // 100
                print(f"{len(results)}/{len(found)} mutants, {time.monotonic() - started:.0f} s", file=sys.stderr)
    except KeyboardInterrupt:  # stopped: the mutants not finished are left out of the report, which says so
        for pid in running:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        print(f"stopped after {len(results)}/{len(found)} mutants", file=sys.stderr)
        return results, True
    return results, False


def _reap(running, results):
    time.sleep(0.01)
    for pid, (mutant, tests, deadline) in list(running.items()):
        finished, status = os.waitpid(pid, os.WNOHANG)
        if finished:
            code = os.waitstatus_to_exitcode(status)
            outcome = {0: "survived", 3: "skipped"}.get(code, "killed")
            results.append(_result(mutant, outcome, tests))
            del running[pid]
        elif time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            results.append(_result(mutant, "timeout", tests))
            del running[pid]


def _result(mutant, outcome, tests) -> dict:
    if outcome in ("survived", "no tests", "skipped"):  # as they come: a long run can be read while it runs
        print(f"{outcome.upper():9} {mutant.path}:{mutant.line} [{mutant.function[0]}] {mutant.description}",
              file=sys.stderr, flush=True)
    return {"path": mutant.path, "line": mutant.line, "function": mutant.function[0],
            "mutation": mutant.description, "operator": mutant.operator, "id": mutant.ident,
            "outcome": outcome, "tests": len(tests)}


def _fork_mutant(mutant, tests, functions, trees) -> int:
    if mutant.path not in trees:
        source = Path(mutant.path).read_text()
        trees[mutant.path] = mutation.parse(source, str(ROOT / mutant.path))
    tree = trees[mutant.path]
    pid = os.fork()
    if pid:
        return pid
    _child()
    code = 2
    try:
        if not _swap(mutant, tree, functions):
            code = 3
        else:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            import pytest

            code = 1 if pytest.main([*PYTEST_ARGS, "-x", *tests]) else 0
    except BaseException:
        code = 2  # the mutant does not even compile or swap: counted as killed, which it would be at import
    finally:
        os._exit(code)


def _swap(mutant, tree, functions) -> bool:
    mutated = mutation.apply(tree, mutant)
    module_code = compile(mutated, str(ROOT / mutant.path), "exec")
    qualname, first = mutant.function
    new_code = _find_code(module_code, qualname, first)
    live = functions.get((mutant.path, qualname, first), [])
    if new_code is None or not live:
        return False
    for function in live:
        if len(function.__code__.co_freevars) != len(new_code.co_freevars):
            return False
        function.__code__ = new_code
    _clear_caches(mutant.path)
    return True


def _clear_caches(path):
    module = sys.modules.get(_module_name(path))
    for value in vars(module).values():
        if hasattr(value, "cache_clear"):
            value.cache_clear()


def _find_code(code, qualname, first):
    for const in code.co_consts:
        if isinstance(const, type(code)):
            if const.co_qualname == qualname and const.co_firstlineno == first:
                return const
            found = _find_code(const, qualname, first)
            if found is not None:
                return found
    return None


def _report(results, modules, out, partial=False):
    by_module = defaultdict(lambda: defaultdict(int))
    for r in results:
        by_module[r["path"]][r["outcome"]] += 1
    if partial:  # mutants run in the order of their lines: say how far each module got
        last = {r["path"]: max(x["line"] for x in results if x["path"] == r["path"]) for r in results}
        print("PARTIAL RUN (stopped): " + ", ".join(f"{p} up to line {n}" for p, n in last.items()))
    print(f"{'module':45} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'no tests':>8} {'skipped':>7}")
    for path in modules:
        c = by_module[path]
        total = sum(c.values())
        print(f"{path:45} {total:7} {c['killed']:6} {c['timeout']:7} {c['survived']:8} {c['no tests']:8} "
              f"{c['skipped']:7}")
    dead = sum(1 for r in results if r["outcome"] in ("killed", "timeout"))
    judged = sum(1 for r in results if r["outcome"] != "skipped")
    print(f"score: {dead}/{judged} killed ({100 * dead / max(judged, 1):.1f} %)")
    for r in sorted(results, key=lambda r: (r["path"], r["line"])):
        if r["outcome"] in ("survived", "no tests", "skipped"):
            print(f"{r['outcome'].upper():9} {r['path']}:{r['line']} [{r['function']}] {r['mutation']}")
    Path(out).write_text(json.dumps({"commit": _commit(), "partial": partial, "results": results}, indent=1))


def _commit() -> str:
    head = os.popen("git rev-parse HEAD 2>/dev/null").read().strip()
    dirty = os.popen("git status --porcelain -- controller 2>/dev/null").read().strip()
    return head + (" (controller/ modified)" if dirty else "")


if __name__ == "__main__":
    sys.exit(main())
