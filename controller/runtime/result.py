"""What a reconcile tells its worker: done, look again after a delay, or retry with backoff.

A reconcile returns a `Result`, or raises; `WritesFailed` is the expected way to ask for a retry with
backoff after the server refused some of its writes (each already reported on the object).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Result:
    requeue_after: float | None = None  # None: done until something changes
    # The job's resourceVersion a status write lost with (409): the cache lagged, and the version
    # that won is on its way; the controller reconciles again when it arrives. With requeue_after 0.0
    # also a retry with backoff, should that version never come; with requeue_after None only the wait,
    # for a version certain to come (our own write's, which the watch or a relist delivers).
    lost_at: str | None = None

    @property
    def requeue(self) -> bool:
        return self.requeue_after is not None


DONE = Result()


class WritesFailed(Exception):
    """Writes of a reconcile the server refused: each was recorded as a Warning Event on the job,
    and the reconcile went on; raising this at its end retries the key with backoff."""

    def __init__(self, failures: list[tuple[str, str]], wake_up: float | None = None) -> None:
        super().__init__("; ".join(message for _, message in failures))
        self.failures = failures
        # A timed look the reconcile asked for besides (a stuck pod's deadline): the backoff must not
        # push it back.
        self.wake_up = wake_up
