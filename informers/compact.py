"""Share equal strings and sub-objects between cached objects.

Decoded JSON spends most of its memory on dict, list and str overhead rather than payload,
and a cache repeats the same pieces thousands of times: a pod template's containers, volumes
and resources, owner references, label sets, and, between two versions of one object, nearly
everything. The compactor walks a new object and, for each dict or list in it, reuses an equal
one that is already cached, found in two cheap places: the same place in the previous version of
the object, and the same place (path) in the last object compacted, which is usually a sibling
from the same template since lists come sorted by name. Strings are interned on the way down.

Equality is JSON equality: Python's == says True == 1 and 1 == 1.0, so a candidate that passes
== is confirmed by comparing its serialisation, which only runs for what is then shared.

Cached objects are read-only by contract (as in client-go), so sharing is invisible to callers
who honour it.
"""

from __future__ import annotations

import sys

import orjson


class Compactor:
    def __init__(self, max_paths: int = 10_000) -> None:
        # A bound on remembered paths: keys of user data (a map of dicts keyed by names) add paths.
        self.max_paths = max_paths
        # The paths seen, as a tree: key -> [the last container seen there, its JSON once computed, its children].
        # A tree rather than a dict keyed by path tuples: each step down is one lookup of a key, where a
        # tuple of tuples would be built and hashed whole again at every depth.
        self._last: dict = {}
        self._paths = 0

    def __call__(self, obj: dict, previous: dict | None = None) -> dict:
        """Compact `obj` in place, sharing with `previous` (its cached version) where equal."""
        if self._paths > self.max_paths:
            self._last.clear()
            self._paths = 0
        self._share(obj, previous, self._last)
        return obj

    def _share(self, node: dict | list, previous: dict | list | None, last: dict) -> None:
        intern = sys.intern
        dumps = orjson.dumps
        # (type() rather than isinstance, here and below: decoded JSON holds no subclasses, and it is quicker)
        for key, value in node.items() if type(node) is dict else enumerate(node):
            kind = type(value)
            if kind is str:
                node[key] = intern(value)
                continue
            if kind is not dict and kind is not list:
                continue
            before = None
            if previous is not None:
                before = previous.get(key) if type(previous) is dict else previous[key] if key < len(previous) else None
                if before is not None and before == value and dumps(before) == dumps(value):
                    node[key] = before
                    continue
            seen = last.get(key)
            if seen is None:
                seen = last[key] = [value, None, {}]
                self._paths += 1
            elif seen[0] is not before and seen[0] == value:  # (the cached version was just found unequal)
                if seen[1] is None:
                    seen[1] = dumps(seen[0])
                if seen[1] == dumps(value):
                    node[key] = seen[0]
                    continue
            self._share(value, before if type(before) is kind else None, seen[2])
            seen[0], seen[1] = value, None
