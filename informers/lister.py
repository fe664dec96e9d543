"""Read-only queries over an informer's cache; nothing here talks to the server.

Returned objects are the cached ones, shared with every other reader: never mutate them
(copy first, e.g. with `copy.deepcopy`, to build an update).
"""

from __future__ import annotations

import builtins
from functools import lru_cache
from typing import Protocol

from apimachinery.selectors import LabelSelector, parse_label_selector
from informers.store import CONTROLLER_INDEX, NAMESPACE_INDEX, Store

Selector = str | LabelSelector | None


@lru_cache(maxsize=256)
def _parse(text: str) -> LabelSelector:
    return parse_label_selector(text)


def _matching(objects: list[dict], selector: Selector) -> list[dict]:
    if selector is None or selector == "":
        return objects
    parsed = _parse(selector) if isinstance(selector, str) else selector
    if parsed.empty:
        return objects
    return [obj for obj in objects if parsed.matches(obj["metadata"].get("labels"))]


class CacheReader(Protocol):
    """What a reader asks of a cache: the surface of a Lister, which a MultiNamespaceLister has as well.

    (`builtins.list` in the annotations: inside the class, `list` is the method.)"""

    def get(self, key: str) -> dict | None: ...

    def get_named(self, namespace: str | None, name: str) -> dict | None: ...

    def list(self, selector: Selector = None) -> builtins.list[dict]: ...

    def in_namespace(self, namespace: str, selector: Selector = None) -> builtins.list[dict]: ...

    def by_index(self, index: str, value: str, selector: Selector = None) -> builtins.list[dict]: ...

    def controlled_by(self, owner_uid: str, selector: Selector = None) -> builtins.list[dict]: ...


class Lister:
    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, key: str) -> dict | None:
        """By cache key: `namespace/name`, or `name` for a cluster-scoped object."""
        return self._store.get(key)

    def get_named(self, namespace: str | None, name: str) -> dict | None:
        return self._store.get(f"{namespace}/{name}" if namespace else name)

    def list(self, selector: Selector = None) -> builtins.list[dict]:
        """Every cached object whose labels match `selector` (a string such as "app=web,tier!=db")."""
        return _matching(self._store.objects(), selector)

    def in_namespace(self, namespace: str, selector: Selector = None) -> builtins.list[dict]:
        return _matching(self._store.by_index(NAMESPACE_INDEX, namespace), selector)

    def by_index(self, index: str, value: str, selector: Selector = None) -> builtins.list[dict]:
        return _matching(self._store.by_index(index, value), selector)

    def controlled_by(self, owner_uid: str, selector: Selector = None) -> builtins.list[dict]:
        """Objects whose controlling ownerReference points at `owner_uid`."""
        return _matching(self._store.by_index(CONTROLLER_INDEX, owner_uid), selector)
