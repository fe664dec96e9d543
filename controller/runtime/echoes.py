"""Parking a key until the version of its object it waits for arrives through the watch.

Two waits, one protocol:
- a status write lost to a newer version (409): reconcile again once the cache holds a version other than the
  one the write carried (`park`), at once if it came while the write was in flight (`Controller._await_newer`);
- a reconcile that finds the cache still holding the very version its own last status write replaced
  (`behind_own_write`): the echo of that write is on its way, and a plan made now would be made from a status
  the server no longer has (its write could only lose, 409, and cost a request). It parks until the echo.

The rate-limited requeue alone would not do: its bucket is shared by every key, so after a burst of conflicts a
key would wait seconds for a version that arrives in milliseconds. The watch (or the relist that replaces a broken
one) certainly brings a version that exists, or the object's deletion (`gone`), so a parked key is never lost.

The runtime owns the protocol: the reconciler says what it wrote (`wrote`) and asks `behind_own_write`; the
controller's watch handlers say what arrived (`arrived`, `gone`); the work queue stays client-go's plain queue.
"""

from __future__ import annotations

from collections.abc import Callable


class Echoes:
    """The parked keys and the last status write of each key, for one controller's queue (`wake`: its add)."""

    def __init__(self, wake: Callable[[str], None] | None = None) -> None:
        self._wake = wake if wake is not None else (lambda key: None)
        self._parked: dict[str, str] = {}  # key -> the version it waits to see replaced
        self._wrote: dict[str, tuple[str, str]] = {}  # key -> (the version our last write replaced, the one it made)

    def park(self, key: str, version: str) -> None:
        """Hold `key` until a version other than `version` arrives."""
        self._parked[key] = version

    def arrived(self, key: str, version: str) -> bool:
        """A version of `key` has reached the cache: if the key is parked for an older one, wake it now. True if it
        was parked (then it has been woken, or the version is the one it already had): nothing else to do."""
        parked = self._parked.get(key)
        if parked is None:
            return False
        if parked != version:
            del self._parked[key]
            self._wake(key)
        return True

    def gone(self, key: str) -> None:
        """The object is deleted: nothing of it is awaited any more."""
        self._parked.pop(key, None)
        self._wrote.pop(key, None)

    @property
    def parked(self) -> dict[str, str]:
        """The parked keys and the version each waits to see replaced (a copy)."""
        return dict(self._parked)

    def wrote(self, key: str, replaced: str, made: str | None) -> None:
        """A status write of `key` replaced version `replaced` with `made` (a no-op write makes no new version)."""
        if made and made != replaced:
            self._wrote[key] = (replaced, made)

    def behind_own_write(self, key: str, cached: str) -> bool:
        """Does the cache still hold (`cached`) the very version our last status write of `key` replaced? Then the
        reconcile waits for the echo: `Result(lost_at=cached)`, parked with no retry besides."""
        wrote = self._wrote.get(key)
        if wrote is None:
            return False
        if wrote[0] == cached:
            return True
        del self._wrote[key]  # the cache has moved on: our write's version, or a newer one
        return False
