"""A chaos run of any size: `python -m tests.chaos --jobs 100 --minutes 5 --seed 3`.

Prints the figures (jobs, pods, restarts, faults by kind, lease transitions) and every invariant
violation with the history of the jobs concerned; exits 1 if any invariant was broken.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from .harness import Settings, run_chaos
from .jobs import SHARE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=2.0, help="how long the faults go on")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settle", type=float, default=120.0, help="seconds allowed to settle after the faults")
    parser.add_argument("--workdir", type=Path, default=None, help="kubeconfig and controllers.log go here")
    parser.add_argument("--share", type=float, default=SHARE,
                        help="of the normal jobs, the share of the kinds other than GenericJob, in turn "
                             "(0: GenericJobs only)")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="chaos-"))
    settings = Settings(jobs=args.jobs, chaos_seconds=args.minutes * 60, seed=args.seed, settle_timeout=args.settle,
                        share=args.share)
    report = asyncio.run(run_chaos(settings, workdir))
    print(report.describe())
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
