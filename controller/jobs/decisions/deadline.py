"""The active deadline (runPolicy.activeDeadlineSeconds): the verdict of a job whose deadline has passed since its
startTime (`DeadlineExceeded`), or the seconds until it passes, a wake-up no watch event announces.

Paused time never counts: plan.py does not judge it while the job is paused, and run.py restarts the clock at
resume."""

from __future__ import annotations

from controller.jobs.decisions.backoff import epoch
from controller.jobs.schema.api import JobPhase, Verdict

DEADLINE_EXCEEDED = "DeadlineExceeded"


def deadline(seconds: float | None, status: dict, now_epoch: float) -> tuple[Verdict | None, float | None]:
    """The verdict of a job whose active deadline has passed since its startTime, or the seconds until it
    passes (a wake-up: nothing else would announce it). (None, None) without a deadline or a start."""
    start = status.get("startTime")
    if not seconds or not start:
        return None, None
    left = epoch(start) + seconds - now_epoch
    if left > 0:
        return None, left
    return Verdict(JobPhase.FAILED, None, f"The job was active longer than its deadline "
                   f"(runPolicy.activeDeadlineSeconds {seconds:g}).", reason=DEADLINE_EXCEEDED), None
