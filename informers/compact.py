"""Share equal strings and sub-objects between cached objects.

Decoded JSON spends most of its memory on dict and list overhead, not on payload, and a cache
of pods repeats the same pieces thousands of times: a template's containers, volumes,
resources and env entries, owner references, label sets. The compactor interns string values
and replaces each dict or list by an equal one it has already seen. Nested containers are made
canonical first, so a container's key can name them by identity: a flat tuple, cheap to hash.

Cached objects are read-only by contract (as in client-go), so sharing is invisible to callers
who honour it. The table of known containers is bounded and cleared when full: sharing already
made stays, and a common template's pieces are back in the table after one object.
"""

from __future__ import annotations

import sys


class Compactor:
    def __init__(self, max_entries: int = 4096) -> None:
        self.max_entries = max_entries
        self._table: dict[tuple, dict | list] = {}

    def __call__(self, obj: dict) -> dict:
        """Compact `obj` in place (and return it). Its top two levels are never shared."""
        canon = self._canon
        intern = sys.intern
        # The object and its metadata hold a name and a uid: unique, so not worth a table entry.
        for top in (obj, obj.get("metadata")):
            if type(top) is not dict:
                continue
            for key, value in top.items():
                kind = type(value)
                if kind is str:
                    top[key] = intern(value)
                elif (kind is dict or kind is list) and key != "metadata":
                    top[key] = canon(value)
        return obj

    def _canon(self, node: dict | list) -> dict | list:
        # The key lists the node's values in order: a string stands for itself; anything else is
        # preceded by its type, which no JSON value can be, so True and 1, or a nested container's
        # id and an int, never collide. A dict's keys are strings and sit before their values.
        intern = sys.intern
        canon = self._canon
        parts: list = [type(node)]
        append = parts.append
        pairs = node.items() if type(node) is dict else enumerate(node)
        named = type(node) is dict
        for key, value in pairs:
            if named:
                append(key)
            kind = type(value)
            if kind is str:
                value = node[key] = intern(value)
                append(value)
            elif kind is dict or kind is list:
                value = node[key] = canon(value)
                append(kind)
                append(id(value))
            elif kind is float:
                append(kind)
                append(value.hex())  # 0.0 == -0.0, but their hex differs
            else:
                append(kind)
                append(value)
        signature = tuple(parts)
        table = self._table
        found = table.get(signature)
        if found is not None:
            return found
        if len(table) >= self.max_entries:
            table.clear()
        table[signature] = node
        return node
