"""The types CEL rules see, as apiextensions-apiserver declares them, and a type check of a rule.

`decl_type(schema)` is SchemaDeclType (k8s.io/apiserver/pkg/cel/common/schemas.go): each node's CEL
type with the bounds the cost estimator reads, `max_elements` (a string's maxLength, a list's maxItems,
a map's maxProperties, or what fits in a request of 3 MiB when the schema says nothing) and the
node's smallest serialized size. `check(expr, variables)` types every node of an AST and picks the
overloads of every call (what cel-go's checker puts in its type and reference maps), or raises
CelTypeError with cel-go's message for an unknown variable, field or function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import cel_versions
from .cel_ast import ACCUMULATOR, Expr, part

MAX_REQUEST_SIZE = 3 * 1024 * 1024  # apiserver's MaxRequestSizeBytes
MIN_STRING_SIZE = 2  # ""
MIN_BOOL_SIZE = 4
MIN_NUMBER_SIZE = 1
MIN_DURATION_SIZE_JSON = 4
MAX_DURATION_SIZE_JSON = 32
JSON_DATE_SIZE = 12
MIN_DATETIME_SIZE_JSON = 22
MAX_DATETIME_SIZE_JSON = 37


@dataclass(eq=False)
class CelType:
    kind: str  # object, list, map, string, bytes, int, uint, double, bool, null, dyn, timestamp, duration, type, opaque
    elem: CelType | None = None  # a list's items, a map's values
    key: CelType | None = None
    fields: dict[str, CelType] = field(default_factory=dict)
    max_elements: int = 0
    min_size: int = 0
    name: str = ""  # opaque types: kubernetes.URL, kubernetes.Quantity, ...
    bounded: bool = True  # False: max_elements is what fits in a request, not a bound the schema declares

    def __str__(self) -> str:
        if self.kind == "list":
            return f"list({self.elem})"
        if self.kind == "map":
            return f"map({self.key}, {self.elem})"
        return self.name or self.kind


DYN = CelType("dyn")
INT, UINT, DOUBLE, BOOL = CelType("int"), CelType("uint"), CelType("double"), CelType("bool")
STRING, BYTES, NULL = CelType("string"), CelType("bytes"), CelType("null")


def scalar(kind: str) -> CelType:
    return {"int": INT, "uint": UINT, "double": DOUBLE, "bool": BOOL, "string": STRING, "bytes": BYTES,
            "null": NULL, "dyn": DYN}.get(kind) or CelType(kind)


# --- SchemaDeclType -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SizeRules:
    """How a Kubernetes version sizes schema nodes: strings with an enum are as long as the longest value
    from 1.29 on (kubernetes#121085), unbounded before; a maxLength counts 4 bytes per character."""

    enum_bounds_strings: bool = True
    max_length_factor: int = 4


def decl_type(schema: dict, resource_root: bool = False, rules: SizeRules = SizeRules()) -> CelType | None:
    if schema.get("x-kubernetes-int-or-string"):
        return CelType("dyn", max_elements=MAX_REQUEST_SIZE - 2, min_size=1, bounded=False)
    if resource_root:
        schema = _with_type_and_object_meta(schema)
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        item_type = decl_type(items, bool(items.get("x-kubernetes-embedded-resource")), rules) \
            if isinstance(items, dict) else None
        if item_type is None:
            return None
        declared = schema.get("maxItems")
        bound = max(declared, 0) if declared is not None else (MAX_REQUEST_SIZE - 2) // (item_type.min_size + 1)
        return CelType("list", elem=item_type, max_elements=bound, min_size=2, bounded=declared is not None)
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            value_type = decl_type(extra, bool(extra.get("x-kubernetes-embedded-resource")), rules)
            if value_type is None:
                return None
            declared = schema.get("maxProperties")
            bound = max(declared, 0) if declared is not None else (MAX_REQUEST_SIZE - 2) // (value_type.min_size + 6)
            return CelType("map", key=STRING, elem=value_type, max_elements=bound, min_size=2,
                           bounded=declared is not None)
        required = set(schema.get("required") or ())
        fields: dict[str, CelType] = {}
        min_size = 2
        for name, prop in (schema.get("properties") or {}).items():
            field_type = decl_type(prop, bool(prop.get("x-kubernetes-embedded-resource")), rules)
            if field_type is None:
                continue
            escaped = escape(name)
            if escaped is not None:
                fields[escaped] = field_type
            if name in required and prop.get("default") is None:
                min_size += len(name) + field_type.min_size + 4
        return CelType("object", fields=fields, min_size=min_size)
    if kind == "string":
        return _string_type(schema, rules)
    if kind == "boolean":
        return CelType("bool", min_size=MIN_BOOL_SIZE)
    if kind == "number":
        return CelType("double", min_size=MIN_NUMBER_SIZE)
    if kind == "integer":
        return CelType("int", min_size=MIN_NUMBER_SIZE)
    return None


def _string_type(schema: dict, rules: SizeRules) -> CelType:
    fmt = schema.get("format")
    longest = MAX_REQUEST_SIZE - 2  # subtract 2 for ""
    if fmt == "byte":
        bound = schema.get("maxLength")
        return CelType("bytes", max_elements=longest if bound is None else max(bound, 0), min_size=MIN_STRING_SIZE,
                       bounded=bound is not None)
    if fmt == "duration":
        return CelType("duration", max_elements=MAX_DURATION_SIZE_JSON, min_size=MIN_DURATION_SIZE_JSON)
    if fmt == "date":
        return CelType("timestamp", max_elements=JSON_DATE_SIZE, min_size=JSON_DATE_SIZE)
    if fmt == "date-time":
        return CelType("timestamp", max_elements=MAX_DATETIME_SIZE_JSON, min_size=MIN_DATETIME_SIZE_JSON)
    if schema.get("maxLength") is not None:
        bound = max(schema["maxLength"], 0) * rules.max_length_factor
    elif schema.get("enum") and rules.enum_bounds_strings:
        bound = max((len(value) for value in schema["enum"] if isinstance(value, str)), default=0)
    else:
        return CelType("string", max_elements=longest, min_size=MIN_STRING_SIZE, bounded=False)
    return CelType("string", max_elements=bound, min_size=MIN_STRING_SIZE)


def _with_type_and_object_meta(schema: dict) -> dict:
    """kind, apiVersion, metadata.name and metadata.generateName are readable at a resource's root, as
    unbounded strings unless the schema declares all four as strings."""
    props = schema.get("properties") or {}
    meta = props.get("metadata") or {}
    meta_props = meta.get("properties") or {}
    if (props.get("kind", {}).get("type") == "string" and props.get("apiVersion", {}).get("type") == "string"
            and meta.get("type") == "object" and meta_props.get("name", {}).get("type") == "string"
            and meta_props.get("generateName", {}).get("type") == "string"):
        return schema
    string = {"type": "string"}
    return {**schema, "properties": {**props, "kind": string, "apiVersion": string, "metadata": {
        "type": "object", "properties": {"name": string, "generateName": string}}}}


_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
             "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")


def escape(name: str) -> str | None:
    """A property's name in CEL (apiserver cel.Escape), None when it cannot be one."""
    if name in _RESERVED:
        return f"__{name}__"
    escaped = name.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__") \
        .replace("/", "__slash__")
    return escaped if _IDENT.match(escaped) else None


# --- the type check -------------------------------------------------------------------------------


class CelTypeError(ValueError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


_COMPARISONS = {"_<_": "less", "_<=_": "less_equals", "_>_": "greater", "_>=_": "greater_equals"}
_ARITHMETIC = {"_+_": "add", "_-_": "subtract", "_*_": "multiply", "_/_": "divide", "_%_": "modulo"}
_NUMERIC_SUFFIX = {"int": "int64", "uint": "uint64", "double": "double", "string": "string", "bytes": "bytes",
                   "list": "list", "timestamp": "timestamp", "duration": "duration", "bool": "bool"}
_CONVERSIONS = {"string": STRING, "int": INT, "uint": UINT, "double": DOUBLE, "bytes": BYTES, "bool": BOOL,
                "dyn": DYN, "duration": CelType("duration"), "timestamp": CelType("timestamp"),
                "type": CelType("type")}

# Member and global functions: name -> result type (from the receiver's or first argument's type).
_RESULTS = {
    "size": lambda t: INT, "matches": lambda t: BOOL, "contains": lambda t: BOOL, "startsWith": lambda t: BOOL,
    "endsWith": lambda t: BOOL, "isSorted": lambda t: BOOL, "indexOf": lambda t: INT, "lastIndexOf": lambda t: INT,
    "sum": lambda t: t.elem if t.kind == "list" and t.elem else DYN,
    "min": lambda t: t.elem if t.kind == "list" and t.elem else DYN,
    "max": lambda t: t.elem if t.kind == "list" and t.elem else DYN,
    "find": lambda t: STRING, "findAll": lambda t: CelType("list", elem=STRING),
    "charAt": lambda t: STRING, "lowerAscii": lambda t: STRING, "upperAscii": lambda t: STRING,
    "replace": lambda t: STRING, "substring": lambda t: STRING, "trim": lambda t: STRING,
    "split": lambda t: CelType("list", elem=STRING), "join": lambda t: STRING, "format": lambda t: STRING,
    "strings.quote": lambda t: STRING, "url": lambda t: CelType("opaque", name="kubernetes.URL"),
    "isURL": lambda t: BOOL, "getScheme": lambda t: STRING, "getHost": lambda t: STRING,
    "getHostname": lambda t: STRING, "getPort": lambda t: STRING, "getEscapedPath": lambda t: STRING,
    "getQuery": lambda t: CelType("map", key=STRING, elem=CelType("list", elem=STRING)),
    "quantity": lambda t: CelType("opaque", name="kubernetes.Quantity"), "isQuantity": lambda t: BOOL,
}


# The type identifiers every CEL environment declares (`type(self) == string`).
_TYPE_NAMES = {name: CelType("type") for name in ("int", "uint", "double", "bool", "string", "bytes", "list", "map",
                                                   "null_type", "type")}


class Checker:
    """Types every node of one expression (types and overloads keyed by node identity)."""

    def __init__(self, variables: dict[str, CelType], minimum: tuple[int, int] | None = None) -> None:
        self.scopes: list[dict[str, CelType]] = [dict(_TYPE_NAMES), dict(variables)]
        self.minimum = minimum
        self.types: dict[int, CelType] = {}
        self.overloads: dict[int, list[str]] = {}
        self.functions: set[str] = set()
        self.namespaced: set[int] = set()  # calls of namespaced functions (their "target" is the namespace)

    def type_of(self, expr: Expr) -> CelType:
        return self.types.get(id(expr), DYN)

    def check(self, expr: Expr) -> CelType:
        result = getattr(self, "_" + expr.kind)(expr)
        self.types[id(expr)] = result
        return result

    def _lookup(self, name: str) -> CelType | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def _literal(self, expr: Expr) -> CelType:
        return scalar(expr.literal_type)

    def _ident(self, expr: Expr) -> CelType:
        found = self._lookup(expr.value)
        if found is None:
            raise CelTypeError(f"undeclared reference to '{expr.value}' (in container '')", expr.offset)
        return found

    def _select(self, expr: Expr) -> CelType:
        operand = self.check(part(expr.operand))
        if expr.test_only:
            self._field(operand, expr)
            return BOOL
        return self._field(operand, expr)

    def _field(self, operand: CelType, expr: Expr) -> CelType:
        if operand.kind == "object":
            found = operand.fields.get(expr.value)
            if found is None:
                raise CelTypeError(f"undefined field '{expr.value}'", expr.offset)
            return found
        if operand.kind == "map":
            return operand.elem or DYN
        if operand.kind == "dyn":
            return DYN
        raise CelTypeError(f"type '{operand}' does not support field selection", expr.offset)

    def _list(self, expr: Expr) -> CelType:
        elements = [self.check(element) for element in expr.args]
        return CelType("list", elem=_common(elements))

    def _map(self, expr: Expr) -> CelType:
        keys = [self.check(key) for key, _ in expr.entries]
        values = [self.check(value) for _, value in expr.entries]
        return CelType("map", key=_common(keys), elem=_common(values))

    def _struct(self, expr: Expr) -> CelType:
        raise CelTypeError("object construction is not supported in CRD rules", expr.offset)

    def _comprehension(self, expr: Expr) -> CelType:
        iter_range = part(expr.iter_range)
        range_type = self.check(iter_range)
        init = self.check(part(expr.accu_init))
        if range_type.kind == "list":
            var_type = range_type.elem or DYN
        elif range_type.kind == "map":
            var_type = range_type.key or DYN
        elif range_type.kind == "dyn":
            var_type = DYN
        else:
            raise CelTypeError(f"expression of type '{range_type}' cannot be range of a comprehension "
                               "(must be list, map, or dynamic)", iter_range.offset)
        self.scopes.append({expr.accu_var: init})
        self.scopes.append({expr.iter_var: var_type})
        self.check(part(expr.loop_condition))
        step = self.check(part(expr.loop_step))
        self.scopes.pop()
        if init.kind == "list" and step.kind == "list":
            self.scopes[-1][expr.accu_var] = step  # the map macro's list takes its elements' type
        result = self.check(part(expr.result))
        self.scopes.pop()
        return result

    def _call(self, expr: Expr) -> CelType:
        name, receiver = self.function(expr)
        if receiver is None and expr.target is not None:
            self.namespaced.add(id(expr))
        target = self.check(receiver) if receiver is not None else None
        args = [self.check(arg) for arg in expr.args]
        result, overloads = self._resolve(expr, name, target, args)
        self.overloads[id(expr)] = overloads
        return result

    def function(self, expr: Expr) -> tuple[str, Expr | None]:
        """A call's function and receiver: `sets.contains(a, b)` is the function sets.contains, no receiver."""
        if id(expr) in self.namespaced or (
                expr.target is not None and expr.target.kind == "ident" and self._lookup(expr.target.value) is None):
            return f"{part(expr.target).value}.{expr.value}", None
        return expr.value, expr.target

    def _resolve(self, expr: Expr, name: str, target: CelType | None,
                 args: list[CelType]) -> tuple[CelType, list[str]]:
        if name in ("_&&_", "_||_", "!_", "@not_strictly_false"):
            return BOOL, [{"_&&_": "logical_and", "_||_": "logical_or", "!_": "logical_not",
                           "@not_strictly_false": "not_strictly_false"}[name]]
        if name == "_?_:_":
            return _common(args[1:]), ["conditional"]
        if name in ("_==_", "_!=_"):
            return BOOL, ["equals" if name == "_==_" else "not_equals"]
        if name in _COMPARISONS:
            return BOOL, [f"{_COMPARISONS[name]}_{_NUMERIC_SUFFIX.get(k, k)}" for k in _kinds(args[0])]
        if name in _ARITHMETIC:
            kinds = _kinds(args[0]) if args[0].kind != "dyn" else _kinds(args[1])
            result = args[0] if args[0].kind != "dyn" else args[1]
            if name == "_+_" and args[0].kind == "list" and args[1].kind == "list":
                result = CelType("list", elem=_common([args[0].elem or DYN, args[1].elem or DYN]))
            return result, [f"{_ARITHMETIC[name]}_{_NUMERIC_SUFFIX.get(k, k)}" for k in kinds]
        if name == "-_":
            return args[0], ["negate"]
        if name == "@in":
            kinds = _kinds(args[1], ("list", "map"))
            return BOOL, [f"in_{kind}" for kind in kinds]
        if name == "_[_]":
            container = args[0]
            if container.kind == "list":
                return container.elem or DYN, ["index_list"]
            if container.kind == "map":
                return container.elem or DYN, ["index_map"]
            return DYN, ["index_list", "index_map"]
        return self._function(expr, name, target, args)

    def _function(self, expr: Expr, name: str, target: CelType | None,
                  args: list[CelType]) -> tuple[CelType, list[str]]:
        first = cel_versions.FUNCTIONS.get(name)
        if first is None or (self.minimum is not None and first > self.minimum):
            raise CelTypeError(f"undeclared reference to '{name}' (in container '')", expr.offset)
        self.functions.add(name)
        if name in _CONVERSIONS and target is None:
            source = args[0].kind if args else "dyn"
            overload = {("bytes", "string"): "string_to_bytes", ("string", "bytes"): "bytes_to_string"}.get(
                (name, source), f"{source}_to_{name}")
            return _CONVERSIONS[name], [overload]
        receiver = target if target is not None else (args[0] if args else DYN)
        result = _RESULTS.get(name, lambda t: DYN)(receiver)
        overload = {"matches": "matches_string", "contains": "contains_string", "startsWith": "starts_with_string",
                    "endsWith": "ends_with_string", "format": "string_format", "strings.quote": "strings_quote",
                    "size": f"size_{receiver.kind}"}.get(name, name)
        if name == "matches" and target is None:
            overload = "matches"  # the global form: cel-go prices it as O(1)
        return result, [overload]


def _kinds(value: CelType, dyn_kinds: tuple[str, ...] = ("int", "uint", "double", "string", "bytes", "list",
                                                         "timestamp", "duration")) -> tuple[str, ...]:
    return dyn_kinds if value.kind == "dyn" else (value.kind,)


def _common(types: list[CelType]) -> CelType:
    if not types:
        return DYN
    first = types[0]
    if all(t.kind == first.kind and t.kind not in ("list", "map", "object") for t in types):
        return scalar(first.kind) if first.kind != "opaque" else first
    if all(t is first for t in types):
        return first
    if all(t.kind == "list" for t in types):
        return CelType("list", elem=_common([t.elem or DYN for t in types]))
    return DYN


__all__ = ["ACCUMULATOR", "CelType", "CelTypeError", "Checker", "SizeRules", "decl_type", "escape"]
