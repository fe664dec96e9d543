"""Hand-made mutants of the engine, and a runner that shows the model kills each (issue 33: the model is measured by
the defects it finds). A mutant is one source edit of one decision module; applying it recompiles the module's
source with the edit and swaps the new code into the existing functions and methods (so every `from x import y`
already made sees it too), and restores the old code afterwards.

    python -m tests.controller.model.mutants [--examples N] [--strict] [NAME ...]   # each mutant: killed or not
    python -m tests.controller.model.mutants --defects                             # which known defects main has
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import os
import sys
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    module: str
    old: str
    new: str
    what: str
    equivalent: str = ""  # why the mutant is no defect by the spec, so the model rightly lets it live


MUTANTS = [
    Mutant("backoff-limit-one-early", "controller.jobs.training.restart",
           "return self.limit is None or job_restarts < self.limit",
           "return self.limit is None or job_restarts + 1 < self.limit",
           "runPolicy.backoffLimit fails the job one restart early"),
    Mutant("generic-limit-one-early", "controller.kinds.genericjob.models",
           "return restart_count < self.limit", "return restart_count + 1 < self.limit",
           "a GenericJob replica's limit grants one restart fewer"),
    Mutant("generic-limit-one-late", "controller.kinds.genericjob.models",
           "return restart_count < self.limit", "return restart_count <= self.limit",
           "a GenericJob replica's limit grants one restart more"),
    Mutant("default-success-any", "controller.kinds.genericjob.rules",
           "if all(outcomes.get(key) == Outcome.SUCCEEDED for key in keys):",
           "if any(outcomes.get(key) == Outcome.SUCCEEDED for key in keys):",
           "the default success rule is 'any replica' instead of 'all'"),
    Mutant("exitcode-137-final", "controller.jobs.training.restart",
           "return code is None or code in self.retryable_codes",
           "return code is None or (code in self.retryable_codes and code != 137)",
           "ExitCode treats 137 (SIGKILL) as final"),
    Mutant("training-any-worker-success", "controller.jobs.training.kind",
           "if master is not None and outcomes.get(master) == Outcome.SUCCEEDED:",
           "if master is not None and Outcome.SUCCEEDED in outcomes.values():",
           "any replica's success counts as the master's (TensorFlowTrainingJob and PyTorchTrainingJob)"),
    Mutant("debug-end-judged", "controller.jobs.decisions.edits",
           "    return mode == DEBUG or (debugging and mode is None)", "    return False",
           "a debug pod's end is judged (and counted) as the workload's"),
    Mutant("deleted-pod-uncounted", "controller.jobs.decisions.restart",
           "    if not policy.counts_lost_pods:\n        retired = record.retired()",
           "    if True:\n        retired = record.retired()",
           "a pod deleted by hand is recreated without counting a restart"),
    Mutant("cleanup-while-running", "controller.jobs.decisions.run",
           "    delete = delete + restart_deletes\n",
           "    from controller.jobs.decisions.actions import CLEANUP\n"
           "    from controller.jobs.decisions.pod_state import pod_uid\n"
           "    from controller.jobs.schema.api import CleanUpPolicy\n"
           "    delete = delete + restart_deletes + [DeletePod(o.slot.name, pod_uid(o.slot.pod), CLEANUP)\n"
           "        for o in observations if o.slot.pod is not None and o.outcome is not None\n"
           "        and job.spec.clean_up_policy != CleanUpPolicy.NONE]\n",
           "cleanUpPolicy applied to a running job (its replicas finished for good are deleted)"),
    Mutant("deadline-judged-at-resume", "controller.jobs.decisions.plan",
           'if not run_mode.paused and old.get("phase") != JobPhase.PAUSED:', "if not run_mode.paused:",
           "paused time counts: the deadline is judged by the old startTime in the reconcile that resumes"),
    Mutant("deadline-clock-kept-at-resume", "controller.jobs.decisions.run",
           'start = now if old.get("phase") == JobPhase.PAUSED else old.get("startTime") or now',
           'start = old.get("startTime") or now',
           "paused time counts: startTime is not restarted at resume"),
    Mutant("deadline-runs-while-paused", "controller.jobs.decisions.plan",
           'if not run_mode.paused and old.get("phase") != JobPhase.PAUSED:', "if True:",
           "paused time counts: the deadline is judged while the job is paused"),
    # MPIJob's start order, group restart and hostfile (issue 46): each way the oracle checks.
    Mutant("launcher-before-workers-ready", "controller.jobs.decisions.group",
           "if not all(ready.get(t, ()))]", "if not any(ready.get(t, ()))]",
           "the launcher is made once any worker is Ready, not every one"),
    Mutant("launcher-held-a-reconcile-late", "controller.jobs.decisions.group",
           "ready.setdefault(o.slot.type, []).append(s.record.is_ready)",
           "ready.setdefault(o.slot.type, []).append(o.slot.record.is_ready)",
           "the start order reads the readiness stored by the last reconcile: a launcher whose workers are all "
           "Ready is still held back"),
    Mutant("group-restart-counted-twice", "controller.jobs.decisions.group",
           "for i in counted[1:]:", "for i in counted[1:1]:",
           "every restart of a group seen together is counted, not the group once"),
    Mutant("group-budget-drawn-twice", "controller.jobs.decisions.restart",
           "before = group_base if grouped and group_base is not None else job_restarts",
           "before = job_restarts",
           "a group's later replicas are judged against the budget after the group drew on it"),
    Mutant("group-restart-keeps-launcher", "controller.jobs.decisions.group",
           "taken = {t for i in counted for t in rule.get(observations[i].slot.type, ())}",
           "taken: set = set()",
           "a worker's restart leaves the launcher's pod running (mpirun broken)"),
    Mutant("group-cause-misnamed", "controller.jobs.decisions.group",
           "    first = observations[counted[0]].slot\n    taken",
           "    first = observations[counted[-1]].slot\n    taken",
           "status.groupRestart names the last replica of the group restarted, not the one whose restart it is"),
    Mutant("scaled-away-counts-apart-from-group", "controller.jobs.decisions.scale_down",
           "and not (group_counted and o.slot.type in together)", "",
           "a rank scaled away failing with its group counts a restart of its own"),
    Mutant("pause-counts-group-twice", "controller.jobs.decisions.pause",
           "steps, _ = group.count_once(kind, job, observations, [restart.pause(o, now_epoch, backoff) for o in "
           "observations])",
           "steps = [restart.pause(o, now_epoch, backoff) for o in observations]",
           "a group's failures seen with a pause count each"),
    Mutant("hostfile-not-kept-current", "controller.jobs.decisions.upkeep",
           'for key in follows.get(resource, ("spec",))', 'for key in ("spec",)',
           "a dependent's data does not follow the job: the hostfile is stale after a scale"),
    Mutant("discover-hosts-every-worker", "controller.kinds.mpi.environment",
           "for replica_type, rank in replicas(job) if replica_name(job.name, replica_type, rank) in running)",
           "for replica_type, rank in replicas(job))",
           "discover_hosts.sh names every worker, Running or not"),
    Mutant("mpi-lost-worker-recreated", "controller.kinds.mpi.kind",
           "        return True", '        return self.policy != "Never"',
           "an MPIJob's pod lost under Never is recreated uncounted, not final"),
    Mutant("deadline-judged-at-pause", "controller.jobs.decisions.plan",
           'if not run_mode.paused and old.get("phase") != JobPhase.PAUSED:',
           'if old.get("phase") != JobPhase.PAUSED:',
           "the deadline is also judged in the reconcile that pauses, by the active time before it",
           equivalent="the time before the pause was active: a deadline that ran out then may fail the job in the "
                      "reconcile that sees the pause (the model allows it; it requires it only of a running job)"),
]


@contextlib.contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """The engine with the mutant's edit, for the duration of the block."""
    module = importlib.import_module(mutant.module)
    source = inspect.getsource(module)
    if source.count(mutant.old) != 1:
        raise ValueError(f"mutant {mutant.name}: its text is found {source.count(mutant.old)} times in "
                         f"{mutant.module} (the engine changed: update the table)")
    namespace: dict = {"__name__": module.__name__, "__file__": module.__file__, "__package__": module.__package__}
    exec(compile(source.replace(mutant.old, mutant.new), module.__file__, "exec"), namespace)
    saved = []
    for name, new in namespace.items():
        old = getattr(module, name, None)
        for old_fn, new_fn in _functions(old, new, module.__name__):
            saved.append((old_fn, old_fn.__code__))
            old_fn.__code__ = new_fn.__code__
    try:
        yield
    finally:
        for fn, code in saved:
            fn.__code__ = code


def _functions(old, new, module_name: str):
    """Pairs of (existing function, recompiled function) defined by the module: functions and methods."""
    if isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType) and old.__module__ == module_name:
        yield old, new
    elif isinstance(old, type) and isinstance(new, type) and old.__module__ == module_name:
        for attr, value in vars(new).items():
            current = vars(old).get(attr)
            for getter in ("fget", "__func__", None):
                a = getattr(current, getter) if getter and hasattr(current, getter) else current
                b = getattr(value, getter) if getter and hasattr(value, getter) else value
                if isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType) and \
                        a.__code__.co_freevars == b.__code__.co_freevars:
                    yield a, b
                    break


def run_model(examples: int) -> str | None:
    """Run the model as CI does, `examples` split among the same shards (shards.py), one after the other until one
    fails (no shrinking: the first failure found is enough); the failure's first line, or None."""
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    from tests.controller.model import shards
    for seed, share in shards.plan(examples):
        try:
            run_state_machine_as_test(shards.machine(seed), settings=settings(
                max_examples=share, stateful_step_count=50, derandomize=True, database=None, deadline=None,
                phases=[Phase.explicit, Phase.generate], print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
        except AssertionError as err:
            return str(err).splitlines()[0]
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--examples", type=int, default=int(os.environ.get("ENGINE_MODEL_EXAMPLES", "1000")))
    parser.add_argument("--strict", action="store_true", help="tolerate no known defect")
    parser.add_argument("--defects", action="store_true", help="run today's engine with each known defect "
                        "checked strictly in turn, the others tolerated")
    args = parser.parse_args(argv)
    from tests.controller.model import defects
    if args.strict:
        os.environ["ENGINE_MODEL_TOLERATE"] = "none"
    if args.defects:
        for marker in defects.KNOWN:
            os.environ["ENGINE_MODEL_TOLERATE"] = ",".join(m for m in defects.KNOWN if m != marker)
            started = time.monotonic()
            found = run_model(args.examples)
            print(f"{marker:28} {'FOUND' if found else 'not found':9} {time.monotonic() - started:6.1f}s  "
                  f"{found or ''}", flush=True)
        return 0
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    baseline = run_model(args.examples)
    if baseline:
        print(f"the unmutated engine fails the model: {baseline}")
        return 2
    survivors = 0
    for mutant in chosen:
        started = time.monotonic()
        with applied(mutant):
            found = run_model(args.examples)
        verdict = "killed" if found else "equivalent" if mutant.equivalent else "SURVIVED"
        survivors += verdict == "SURVIVED"
        print(f"{mutant.name:30} {verdict:10} {time.monotonic() - started:6.1f}s  "
              f"{found or mutant.equivalent or mutant.what}", flush=True)
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
