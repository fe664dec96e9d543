"""A clock the credential tests drive (k8s.io/utils/clock/testing's FakeClock for kubeclient.clock.Clock): the time
stands still until the test advances it, so a token expires when the test says, whatever the machine's load.

The same time can be given to what stands on the other side: an exec plugin's process reads it from a file
(`PLUGIN_CLOCK`, tests/kubeclient/plugins.py), and `drive_cluster` makes the in-process localcluster's
authenticator judge token expiries and certificate validity by it."""

from __future__ import annotations

from pathlib import Path

from localcluster.testing import drive_authentication_clock

# A whole second: the steps the tests take (quarters, eighths) add to it exactly, and an expirationTimestamp
# (microseconds) or a JWT's exp read back is the time that was written.
START = 1_800_000_000.0


class FakeClock:
    def __init__(self, start: float = START) -> None:
        self._time, self._monotonic = start, 1_000.0
        self.files: list[Path] = []
        self.slept: list[float] = []

    def time(self) -> float:
        return self._time

    def monotonic(self) -> float:
        return self._monotonic

    async def sleep(self, seconds: float) -> None:
        """Over at once, the time moved on by `seconds`; each wait kept in `slept`."""
        self.slept.append(seconds)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        assert seconds >= 0, "a monotonic clock does not go back"
        self._time += seconds
        self._monotonic += seconds
        self._publish()

    def advance_to(self, wall: float) -> None:
        """On to the wall time `wall` (if it is later)."""
        self.advance(max(0.0, wall - self._time))

    def publish(self, path: Path) -> Path:
        """Keep the wall time written in `path` (repr: read back exactly), for a process to read."""
        self.files.append(path)
        self._publish()
        return path

    def _publish(self) -> None:
        for path in self.files:
            path.write_text(repr(self._time))


def drive_cluster(cluster, clock: FakeClock, monkeypatch) -> None:
    """The cluster's tokens expire, and its client certificates are in their validity period, by `clock` (the
    authenticator reads the time module's time() alone: it gets the clock instead). Checked, so that a change of
    how it reads the time cannot leave these tests passing against real time."""
    drive_authentication_clock(monkeypatch, clock)
    authenticator = cluster.access.authenticator
    token = cluster.add_token("clock.check.token", "clock-check", expires_in=1.0)
    assert authenticator.review(token) is not None
    clock.advance(1.0)
    assert authenticator.review(token) is None, "localcluster's authenticator does not go by the test's clock"
    cluster.revoke_token(token)
