"""A parsed path evaluated against an object as client-go's jsonpath.go walks it."""

from __future__ import annotations

from .comparison import compare
from .printing import go_text, go_type
from .values import Failed, Uint8, utf8_bytes

# --- evaluation (jsonpath.go) ----------------------------------------------------------------------------------

def find_results(nodes: tuple, data) -> list[list]:
    """FindResults with missing keys allowed: one list of values per root node. Failed on an error."""
    return _Evaluation(nodes).find(data, 0)


class _Evaluation:
    def __init__(self, nodes: tuple) -> None:
        self.nodes = nodes
        self.begin_range = self.in_range = self.end_range = 0
        self.last_end: int | None = None

    def find(self, data, first: int) -> list[list]:
        current = [data]
        full: list[list] = []
        i = first
        while i < len(self.nodes):
            results = self.walk(current, self.nodes[i])
            if 0 < self.end_range <= self.in_range:  # an {end}: this block is over
                self.end_range -= 1
                self.last_end = i
                break
            if self.begin_range > 0:  # a {range}: the nodes after it, for each value
                self.begin_range -= 1
                self.in_range += 1
                if results:
                    for value in results:
                        full += self.find(value, i + 1)
                else:
                    self.find(None, i + 1)
                self.in_range -= 1
                if self.last_end is not None and self.last_end > i:
                    i = self.last_end  # on after the range's {end}
                i += 1
                continue
            full.append(results)
            i += 1
        return full

    def walk(self, values: list, node: tuple) -> list:
        kind = node[0]
        if kind == "list":
            for child in node[1]:
                values = self.walk(values, child)
            return values
        if kind == "text":
            return [node[1]]
        if kind in ("int", "float", "bool"):
            return [node[1]] * len(values)
        return getattr(self, "_" + kind)(values, node)

    def _field(self, values: list, node: tuple) -> list:
        return [value[node[1]] for value in values if isinstance(value, dict) and node[1] in value]

    def _array(self, values: list, node: tuple) -> list:
        result: list = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise Failed(f"{go_type(value)} is not array or slice", values)
            (known0, start, _), (known1, stop, derived1), (known2, step, _) = node[1]
            length = len(value)
            start = start if known0 else 0
            start += length if start < 0 else 0
            stop = stop if known1 else length
            stop += length if stop < 0 or (stop == 0 and derived1) else 0
            if stop == start:
                return result  # zero elements asked for: the values so far, the rest not looked at
            if not 0 <= start < length or not 0 <= stop <= length:
                raise Failed(f"array index out of bounds: index {start}, length {length}", values)
            if start > stop:
                raise Failed(f"starting index {start} is greater than ending index {stop}", values)
            if known2 and step <= 0:
                raise Failed("step must be > 0", values)
            result += value[start:stop:step if known2 else 1]
        return result

    def _union(self, values: list, node: tuple) -> list:
        result: list = []
        for branch in node[1]:
            try:
                result += self.walk(values, branch)
            except Failed as failed:
                raise Failed(str(failed), values) from None
        return result

    def _wildcard(self, values: list, node: tuple) -> list:
        return [child for value in values for child in _children(value)]

    def _recursive(self, values: list, node: tuple) -> list:
        result: list = []
        for value in values:
            children = _children(value)
            if children:
                result.append(value)
                result += self._recursive(children, node)
        return result

    def _identifier(self, values: list, node: tuple) -> list:
        if node[1] == "range":
            self.begin_range += 1
            return values
        if node[1] == "end":
            if self.in_range > 0:
                self.end_range += 1
                return []
            raise Failed("not in range, nothing to end", [])
        raise Failed(f"unrecognized identifier {node[1]}", values)

    def _filter(self, values: list, node: tuple) -> list:
        _, left, right, operator = node
        result: list = []
        for value in values:
            if not isinstance(value, list):
                raise Failed(f"{go_text(value)} is not array or slice and cannot be filtered", values)
            for item in value:
                try:
                    lefts, error = self.walk([item], left), None
                except Failed as failed:
                    lefts, error = failed.values, failed
                if operator == "exists":
                    if lefts:
                        result.append(item)
                    continue
                if error is not None:
                    raise Failed(str(error), values)
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise Failed("can only compare one element at a time", values)
                try:
                    rights = self.walk([item], right)
                except Failed as failed:
                    raise Failed(str(failed), values) from None
                if not rights:
                    continue
                if len(rights) > 1:
                    raise Failed("can only compare one element at a time", values)
                if compare(operator, lefts[0], rights[0], result):
                    result.append(item)
        return result


def _children(value) -> list:
    """What `*` and `..` step into: a map's values, a list's items, a string's bytes."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [Uint8(b) for b in utf8_bytes(value)]
    return []

