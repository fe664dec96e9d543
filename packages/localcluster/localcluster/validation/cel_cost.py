"""The static cost of a CEL rule, as kube-apiserver estimates it when a CRD is written.

A port of cel-go's estimator (checker/cost.go: every node's cost range, comprehensions priced as the
size of their range times the cost of one step, string work at 0.1 per character, a regex at a
quarter of its length per character matched) with the sizes apiextensions-apiserver gives it (the
schema's maxLength, maxItems and maxProperties, or what fits in a 3 MiB request) and the prices of the
Kubernetes CEL libraries (k8s.io/apiserver/pkg/cel/library/cost.go).

The estimator changed between Kubernetes versions in ways that decide whether a CRD is accepted;
`Estimator` names those differences and `K8S_1_24`, `K8S_1_28`, `K8S_1_35` and `WORST` are the
versions' settings (`WORST`: the most expensive of all, what a CRD must fit to install on every
supported version). Only the max of each range decides acceptance; mins are kept as cel-go keeps them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .cel_ast import ACCUMULATOR, Expr, part
from .cel_types import CelType, Checker, SizeRules

U64 = 2**64 - 1
STRING_TRAVERSAL = 0.1  # common.StringTraversalCostFactor
REGEX_LENGTH = 0.25  # common.RegexStringLengthCostFactor
LIST_CREATE, MAP_CREATE, STRUCT_CREATE = 10, 30, 40


@dataclass(frozen=True)
class Estimator:
    """What one Kubernetes version's estimator does differently.

    - enum_bounds_strings: an enum string is as long as its longest value (1.29+, kubernetes#121085);
      before, it is as long as a request.
    - comprehension_sizes: a macro's result (`map`, `filter`) has the size of its range (cel-go 0.20,
      Kubernetes 1.31+); before, it has no known size, so `self.map(...).sum()` costs 2^64-1.
    - presence_test_cost: what `has()` adds (cel-go 0.16+ counts its operand too; Kubernetes zeroes
      the test itself from 1.29, cel-go 0.17.7); `None`: cel-go before 0.16, where `has()` is free.
    - max_length_factor: a maxLength counts 4 bytes a character (apiserver's SchemaDeclType; whether
      1.24 already did is not known here, and its data point does not depend on it).
    """

    name: str
    enum_bounds_strings: bool
    comprehension_sizes: bool
    presence_test_cost: int | None
    max_length_factor: int = 4

    @property
    def size_rules(self) -> SizeRules:
        return SizeRules(self.enum_bounds_strings, self.max_length_factor)


K8S_1_24 = Estimator("1.24", enum_bounds_strings=False, comprehension_sizes=False, presence_test_cost=None)
K8S_1_28 = Estimator("1.28", enum_bounds_strings=False, comprehension_sizes=False, presence_test_cost=1)
K8S_1_35 = Estimator("1.35", enum_bounds_strings=True, comprehension_sizes=True, presence_test_cost=0)
WORST = Estimator("every supported version", enum_bounds_strings=False, comprehension_sizes=False,
                  presence_test_cost=1)


@dataclass(frozen=True)
class Range:
    lo: int
    hi: int

    def __add__(self, other: Range) -> Range:
        return Range(min(self.lo + other.lo, U64), min(self.hi + other.hi, U64))

    def times(self, other: Range) -> Range:
        return Range(min(self.lo * other.lo, U64), min(self.hi * other.hi, U64))

    def factor(self, per_unit: float) -> Range:
        return Range(_by_factor(self.lo, per_unit), _by_factor(self.hi, per_unit))

    def union(self, other: Range) -> Range:
        return Range(min(self.lo, other.lo), max(self.hi, other.hi))


def _by_factor(value: int, per_unit: float) -> int:
    if value > 0 and per_unit > 0 and float(value) > U64 / per_unit:
        return U64
    return min(math.ceil(float(value) * per_unit), U64)


UNKNOWN = Range(0, U64)
ZERO = Range(0, 0)


def fixed(value: int) -> Range:
    return Range(value, value)


def estimate(expr: Expr, checker: Checker, root: CelType, estimator: Estimator = WORST,
             unbounded: set[str] | None = None) -> Range:
    """The cost range of a checked expression whose `self` (and `oldSelf`) is `root`. `unbounded`, if
    given, collects the paths (`self.spec.name`) whose size the estimate took from the request size
    because the schema declares no maxLength, maxItems or maxProperties."""
    coster = _Coster(checker, root, estimator)
    result = coster.cost(expr)
    if unbounded is not None:
        unbounded.update(coster.unbounded)
    return result


class _Coster:
    def __init__(self, checker: Checker, root: CelType, estimator: Estimator) -> None:
        self.checker = checker
        self.root = root
        self.estimator = estimator
        self.paths: dict[int, list[str]] = {}
        self.sizes: dict[int, Range] = {}
        self.locals: dict[str, list[tuple[list[str], Range | None]]] = {}
        self.unbounded: set[str] = set()

    # --- sizes --------------------------------------------------------------------------------

    def path(self, expr: Expr) -> list[str]:
        if expr.kind == "ident" and self.locals.get(expr.value):
            return list(self.locals[expr.value][-1][0])
        return list(self.paths.get(id(expr), []))

    def schema_size(self, path: list[str]) -> Range | None:
        """apiextensions' sizeEstimator: walk the declared types from `self` along a path."""
        if not path or path[0] == ACCUMULATOR:
            return None
        node = self.root  # path[0] is a variable: `self` or `oldSelf` (or nothing, as cel-go)
        for name in path[1:]:
            if name in ("@items", "@values"):
                found = node.elem
            elif name == "@keys":
                found = node.key
            else:
                found = node.fields.get(name) if node.kind == "object" else None
            if found is None:
                return None
            node = found
        if not node.bounded:
            self.unbounded.add(".".join(path))
        return Range(0, node.max_elements)

    def size(self, expr: Expr) -> Range | None:
        if id(expr) in self.sizes:
            return self.sizes[id(expr)]
        literal = _literal_size(expr)
        if literal is not None:
            return literal
        found = self.schema_size(self.path(expr))
        if found is not None:
            self.sizes[id(expr)] = found
            return found
        if self.checker.type_of(expr).kind in ("bool", "double", "duration", "int", "timestamp", "uint"):
            return fixed(1)
        if expr.kind == "ident" and self.locals.get(expr.value):
            return self.locals[expr.value][-1][1]
        return None

    def size_or_unknown(self, expr: Expr) -> Range:
        found = self.size(expr)
        return found if found is not None else UNKNOWN

    # --- costs --------------------------------------------------------------------------------

    def cost(self, expr: Expr | None) -> Range:
        if expr is None:
            return ZERO
        if expr.kind == "literal":
            return ZERO
        if expr.kind == "ident":
            if not self.locals.get(expr.value):
                self.paths[id(expr)] = [expr.value]
            return fixed(1)
        return getattr(self, "_" + expr.kind)(expr)

    def _select(self, expr: Expr) -> Range:
        if expr.test_only:
            if self.estimator.presence_test_cost is None:
                return ZERO
            return fixed(self.estimator.presence_test_cost) + self.cost(expr.operand)
        operand = part(expr.operand)
        total = self.cost(operand)
        if self.checker.type_of(operand).kind in ("map", "object"):  # not dyn: cel-go adds none for it
            total = total + fixed(1)
        self.paths[id(expr)] = [*self.path(operand), expr.value]
        return total

    def _list(self, expr: Expr) -> Range:
        total = ZERO
        for element in expr.args:
            total = total + self.cost(element)
        return total + fixed(LIST_CREATE)

    def _map(self, expr: Expr) -> Range:
        total = ZERO
        for key, value in expr.entries:
            total = total + self.cost(key) + self.cost(value)
        return total + fixed(MAP_CREATE)

    def _struct(self, expr: Expr) -> Range:
        total = ZERO
        for _, value in expr.entries:
            total = total + self.cost(value)
        return total + fixed(STRUCT_CREATE)

    def _comprehension(self, expr: Expr) -> Range:
        iter_range, accu_init = part(expr.iter_range), part(expr.accu_init)
        total = self.cost(iter_range) + self.cost(accu_init)
        range_type = self.checker.type_of(iter_range)
        step = "@keys" if range_type.kind == "map" else "@items"
        item_size = self._entry_size(iter_range, range_type)
        self.locals.setdefault(expr.accu_var, []).append(([ACCUMULATOR], None))
        self.locals.setdefault(expr.iter_var, []).append(([*self.path(iter_range), step], item_size))
        loop = self.cost(expr.loop_condition)
        step_cost = self.cost(expr.loop_step)
        self.locals[expr.iter_var].pop()
        total = total + self.cost(expr.result)
        self.locals[expr.accu_var].pop()
        count = self.size_or_unknown(iter_range)
        total = total + count.times(step_cost + loop)
        if self.estimator.comprehension_sizes:
            if accu_init.kind == "literal":
                literal = _literal_size(accu_init)
                if literal is not None:
                    self.sizes[id(expr)] = literal
            elif accu_init.kind in ("list", "map"):
                self.sizes[id(expr)] = count
        return total

    def _entry_size(self, iter_range: Expr, range_type: CelType) -> Range | None:
        """A list literal's elements' sizes, for its iteration variable (cel-go 0.22+)."""
        if not self.estimator.comprehension_sizes or iter_range.kind != "list" or range_type.kind != "list":
            return None
        sizes = [self.size_or_unknown(element) for element in iter_range.args]
        if not sizes:
            return ZERO
        result = sizes[0]
        for size in sizes[1:]:
            result = result.union(size)
        return result

    def _call(self, expr: Expr) -> Range:
        if expr.value == "dyn" and expr.target is None and len(expr.args) == 1:
            cost = fixed(1) + self.cost(expr.args[0])
            found = self.size(expr.args[0])
            if found is not None:
                self.sizes[id(expr)] = found
            return cost
        arg_costs = [self.cost(arg) for arg in expr.args]
        overloads = self.checker.overloads.get(id(expr), [])
        if not overloads:
            return ZERO
        name, target = self.checker.function(expr)
        total = ZERO
        if target is not None:
            total = self.cost(target)
        function_cost = Range(U64, 0)
        result_size: Range | None = None
        for overload in overloads:
            cost, size = self._function(expr, name, target, overload, arg_costs)
            function_cost = function_cost.union(cost)
            if size is not None:
                result_size = size if result_size is None else result_size.union(size)
            if overload in ("index_list", "index_map") and expr.args:
                self.paths[id(expr)] = [*self.path(expr.args[0]), "@items" if overload == "index_list" else "@values"]
        if result_size is not None:
            self.sizes[id(expr)] = result_size
        return total + function_cost

    def _function(self, expr: Expr, name: str, target: Expr | None, overload: str,
                  arg_costs: list[Range]) -> tuple[Range, Range | None]:
        args_total = ZERO
        for cost in arg_costs:
            args_total = args_total + cost
        library = self._library(name, target, expr.args)
        if library is not None:
            return library[0] + args_total, library[1]
        args = expr.args
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return self.size_or_unknown(args[0]).factor(STRING_TRAVERSAL) + args_total, None
        if overload == "in_list" and len(args) == 2:
            return self.size_or_unknown(args[1]).factor(1) + args_total, None
        if overload == "matches_string" and target is not None and len(args) == 1:
            text = (self.size_or_unknown(target) + fixed(1)).factor(STRING_TRAVERSAL)
            regex = self.size_or_unknown(args[0]).factor(REGEX_LENGTH)
            return text.times(regex) + args_total, None
        if overload == "contains_string" and target is not None and len(args) == 1:
            text = self.size_or_unknown(target).factor(STRING_TRAVERSAL)
            sub = self.size_or_unknown(args[0]).factor(STRING_TRAVERSAL)
            return text.times(sub) + args_total, None
        if overload in ("logical_and", "logical_or"):
            lhs, rhs = arg_costs
            return Range(lhs.lo, (lhs + rhs).hi), None
        if overload == "conditional":
            size = self.size_or_unknown(args[1]).union(self.size_or_unknown(args[2]))
            return arg_costs[0] + arg_costs[1].union(arg_costs[2]), size
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            size = self.size_or_unknown(args[0]) + self.size_or_unknown(args[1])
            if overload == "add_list":
                return fixed(1) + args_total, size
            return size.factor(STRING_TRAVERSAL) + args_total, size
        if overload in ("string_to_bytes", "bytes_to_string") and len(args) == 1:
            return self.size_or_unknown(args[0]).factor(STRING_TRAVERSAL) + args_total, None
        if overload in _SIZED_COMPARISONS:
            lhs, rhs = self.size_or_unknown(args[0]), self.size_or_unknown(args[1])
            smallest = min(lhs.hi, rhs.hi)
            return Range(1 if smallest > 0 else 0, smallest).factor(STRING_TRAVERSAL) + args_total, None
        return fixed(1) + args_total, None

    def _library(self, name: str, target: Expr | None, args: list[Expr]) -> tuple[Range, Range | None] | None:
        """library.CostEstimator.EstimateCallCost, for the functions Kubernetes prices itself."""
        if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target is not None:
            target_type = self.checker.type_of(target)
            if target_type.kind == "list":
                element = fixed(1)
                if target_type.elem is not None and target_type.elem.kind in ("string", "bytes"):
                    items = self.schema_size([*self.path(target), "@items"]) or UNKNOWN
                    element = element + items.factor(STRING_TRAVERSAL)
                return self._library_size(target).times(element), None
            return self._library_size(target).factor(STRING_TRAVERSAL), None
        if name == "url" and len(args) == 1:
            return self._library_size(args[0]).factor(STRING_TRAVERSAL), None
        if name in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
            size = self._library_size(target)
            return size.factor(STRING_TRAVERSAL), size
        if name == "replace" and target is not None and len(args) >= 2:
            size = self._library_size(target)
            old, new = (self._library_size(arg) for arg in args[:2])
            return size.factor(2 * STRING_TRAVERSAL), self._replaced_size(size, old, new)
        if name == "split" and target is not None:
            size = self._library_size(target)
            return size.factor(2 * STRING_TRAVERSAL), Range(0, size.hi)
        if name == "join" and target is not None:
            items = self.schema_size([*self.path(target), "@items"]) or UNKNOWN
            size = self._library_size(target).times(items)
            if args:
                count = self._library_size(target)
                separators = Range(max(count.lo - 1, 0), max(count.hi - 1, 0))
                size = size + self._library_size(args[0]).times(separators)
            return size.factor(STRING_TRAVERSAL), size
        if name in ("find", "findAll") and target is not None and args:
            size = self._library_size(target)
            text = (size + fixed(1)).factor(STRING_TRAVERSAL)
            return text.times(self._library_size(args[0]).factor(REGEX_LENGTH)), Range(0, size.hi)
        if name in ("quantity", "isQuantity", "cidr", "isIP", "isCIDR") and args:
            return self._library_size(args[0]).factor(STRING_TRAVERSAL), None
        if name in ("sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
                    "compareTo", "add", "sub"):
            return fixed(1), None
        return None

    @staticmethod
    def _replaced_size(size: Range, old: Range, new: Range) -> Range:
        """The longest and shortest results of replace(old, new) on a string of `size`."""
        if old.lo == 0:
            count_hi, kept_hi = (size.hi + 1 if size.hi < U64 else size.hi), size.hi
        elif new.hi <= old.lo:
            count_hi, kept_hi = 0, size.hi
        else:
            count_hi, kept_hi = math.ceil(size.hi / old.lo), 0
        if old.hi == 0:
            count_lo, kept_lo = (size.lo + 1 if size.lo < U64 else size.lo), size.lo
        elif old.hi <= new.lo:
            count_lo, kept_lo = 0, size.lo
        else:
            count_lo, kept_lo = math.ceil(size.lo / old.hi), 0
        return Range(count_lo, count_hi).times(new) + Range(kept_lo, kept_hi)

    def _library_size(self, expr: Expr) -> Range:
        """The library's sizeEstimate: computed, else from the schema, else unknown (no scalar rule)."""
        if id(expr) in self.sizes:
            return self.sizes[id(expr)]
        literal = _literal_size(expr)
        if literal is not None:
            return literal
        return self.schema_size(self.path(expr)) or UNKNOWN


_SIZED_COMPARISONS = {"equals", "not_equals", "less_string", "greater_string", "less_equals_string",
                      "greater_equals_string", "less_bytes", "greater_bytes", "less_equals_bytes",
                      "greater_equals_bytes"}


def _literal_size(expr: Expr) -> Range | None:
    if expr.kind == "literal":
        if expr.literal_type in ("string", "bytes"):
            return fixed(len(expr.value))
        return fixed(1)
    if expr.kind == "list":
        return fixed(len(expr.args))
    if expr.kind == "map":
        return fixed(len(expr.entries))
    return None
