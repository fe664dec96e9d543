"""What is built from a CRD's schema, built once per schema and kept only for the latest schemas used.

A CRD's schema is a dict that is never changed in place (a changed CRD brings a new dict), so what is built from
it (its compiled form, its status-only reduction, its field shapes) is keyed by the dict's identity; the entry
holds the dict, so its id cannot be reused while kept. Only the LIMIT most recently used schemas are kept: a
process runs cluster after cluster (a test suite runs hundreds), and each cluster's CRDs are new dicts; an
unbounded memo kept every one, with everything built from it, to the process's end.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
LIMIT = 64  # a cluster's CRDs and their status-only forms are about a dozen: several clusters at once fit


class BySchema(Generic[T]):
    __slots__ = ("_build", "_kept", "limit")

    def __init__(self, build: Callable[[dict], T], limit: int = LIMIT) -> None:
        self._build = build
        self._kept: OrderedDict[int, tuple[dict, T]] = OrderedDict()
        self.limit = limit

    def __call__(self, schema: dict) -> T:
        key = id(schema)
        hit = self._kept.get(key)
        if hit is not None and hit[0] is schema:
            self._kept.move_to_end(key)
            return hit[1]
        built = self._build(schema)
        self._kept[key] = (schema, built)
        self._kept.move_to_end(key)
        while len(self._kept) > self.limit:
            self._kept.popitem(last=False)
        return built

    def __len__(self) -> int:
        return len(self._kept)
