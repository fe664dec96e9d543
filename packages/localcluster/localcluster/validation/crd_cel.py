"""The CEL rules of a CRD when it is written, as apiextensions-apiserver's CRD validation checks them
(pkg/apis/apiextensions/validation: validation.go and cel_validation.go).

Every rule must compile against the schema's types (cel-go's messages), evaluate to a bool, use only
what the minimum supported Kubernetes version offers, and fit the cost budget: a rule's estimated cost
times the number of times it can run (the product of the maxItems and maxProperties above it) at most
StaticEstimatedCostLimit, and all of a CRD's rules together at most StaticEstimatedCRDCostLimit.

`rule_costs(crd)` lists every rule with its cost (tests print them); `errors(crd)` are the causes a
server answers a CRD with, as (reason, field, message) triples.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import cel_versions
from .cel_ast import CelSyntaxError, Expr, parse
from .cel_cost import K8S_1_28, Estimator, estimate
from .cel_types import MAX_REQUEST_SIZE, CelType, CelTypeError, Checker, decl_type

STATIC_ESTIMATED_COST_LIMIT = 10_000_000  # per rule (apiextensions validation StaticEstimatedCostLimit)
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000  # per CRD (StaticEstimatedCRDCostLimit)
U64 = 2**64 - 1
MINIMUM_VERSION = (1, 28)  # what localcluster stands for: the oldest Kubernetes the project supports
_CONTRIBUTED = "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
_HINT = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and "
         "strings are declared)")


@dataclass
class RuleCost:
    path: str  # field.Path of the rule, e.g. spec.validation.openAPIV3Schema.properties[spec]...rule
    rule: str
    cost: int  # the estimated cost times the cardinality: what counts against both limits
    cardinality: int
    error: str = ""  # a compile error (cel-go's text)
    unbounded: tuple[str, ...] = ()  # what the rule reads with no declared bound (sized by the request)
    kind: str = "rule"  # or messageExpression (priced once: the server does not multiply it by the cardinality)


def exceeds_message(name: str, cost: int, limit: int) -> str:
    """getCostErrorMessage: the factor printed as Go does."""
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return f"{name} exceeds budget by factor of {shown} {_HINT}"


def _schemas(crd: dict) -> list[tuple[str, dict]]:
    """(field path, openAPIV3Schema) as the internal API has them: one spec.validation when every version
    has the same schema, else each version's."""
    versions = (crd.get("spec") or {}).get("versions") or []
    schemas = [((v.get("schema") or {}).get("openAPIV3Schema")) for v in versions]
    found = [s for s in schemas if isinstance(s, dict)]
    if not found:
        return []
    if len(found) == len(schemas) and all(s == found[0] for s in found):
        return [("spec.validation.openAPIV3Schema", found[0])]
    return [(f"spec.versions[{i}].schema.openAPIV3Schema", s) for i, s in enumerate(schemas) if isinstance(s, dict)]


def rule_costs(crd: dict, estimator: Estimator = K8S_1_28,
               minimum: tuple[int, int] | None = MINIMUM_VERSION) -> list[tuple[str, list[RuleCost]]]:
    """Per schema (field path), every rule with its estimated cost, in the server's walk order."""
    out = []
    for path, schema in _schemas(crd):
        found: list[RuleCost] = []
        _walk(schema, path, 1, True, estimator, minimum, found)
        out.append((path, found))
    return out


def _walk(schema: dict, path: str, cardinality: int | None, root: bool, estimator: Estimator,
          minimum: tuple[int, int] | None, found: list[RuleCost]) -> None:
    def child_cardinality(bound: int | None) -> int | None:
        if cardinality is None or bound is None:
            return None
        return min(cardinality * max(bound, 0), U64)

    for name in sorted(schema.get("properties") or {}):
        child = schema["properties"][name]
        if isinstance(child, dict):
            _walk(child, f"{path}.properties[{name}]", child_cardinality(1), False, estimator, minimum, found)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        _walk(extra, f"{path}.additionalProperties", child_cardinality(schema.get("maxProperties")), False,
              estimator, minimum, found)
    items = schema.get("items")
    if isinstance(items, dict):
        _walk(items, f"{path}.items", child_cardinality(schema.get("maxItems")), False, estimator, minimum, found)
    rules = schema.get("x-kubernetes-validations") or []
    if not rules:
        return
    self_type = decl_type(schema, root or bool(schema.get("x-kubernetes-embedded-resource")), estimator.size_rules)
    times = cardinality if cardinality is not None else _unbounded_cardinality(self_type)
    for index, rule in enumerate(rules):
        text = (rule.get("rule") or "").strip() if isinstance(rule, dict) else ""
        where = f"{path}.x-kubernetes-validations[{index}].rule"
        if not text or self_type is None:
            continue
        unbounded: set[str] = set()
        try:
            cost, error = compile_cost(text, self_type, estimator, minimum, unbounded)
        except Exception as err:  # a gap in this port: said, never a crash of the server nor a silent pass
            cost, error = 0, f"ERROR: <input>:1:1: localcluster cannot check this rule: {err!r}"
        total = 0 if cost == 0 else min(cost * times, U64)
        found.append(RuleCost(where, text, total, times, error, tuple(sorted(unbounded))))
        message = (rule.get("messageExpression") or "").strip()
        if message and not error:
            cost, error = compile_cost(message, self_type, estimator, minimum, result="string")
            found.append(RuleCost(where.removesuffix(".rule") + ".messageExpression", message, cost, 1, error,
                                  kind="messageExpression"))


def _unbounded_cardinality(self_type: CelType | None) -> int:
    """MaxCardinality: how many times data of this node's smallest size fits in a request."""
    return MAX_REQUEST_SIZE // ((self_type.min_size if self_type else 0) + 1)


def compile_cost(text: str, self_type: CelType, estimator: Estimator, minimum: tuple[int, int] | None,
                 unbounded: set[str] | None = None, result: str = "bool") -> tuple[int, str]:
    """(max cost, compile error) of one rule (or messageExpression: result string) whose `self` is
    `self_type`."""
    try:
        expr = parse(text)
    except CelSyntaxError as err:
        return 0, f"ERROR: <input>:1:1: Syntax error: {err}"
    checker = Checker({"self": self_type, "oldSelf": self_type}, minimum)
    try:
        found = checker.check(expr)
    except CelTypeError as err:
        return 0, _located(text, err)
    except RecursionError:
        return 0, "ERROR: <input>:1:1: expression recursion limit exceeded"
    if found.kind not in (result, "dyn"):  # dyn: where this checker infers less than cel-go's
        return 0, ("cel expression must evaluate to a bool" if result == "bool"
                   else "messageExpression must evaluate to a string")
    return estimate(expr, checker, self_type, estimator, unbounded).hi, ""


def _located(text: str, err: CelTypeError) -> str:
    """cel-go's issue text: position, message, the source line and a caret."""
    before = text[:err.offset]
    line = before.count("\n") + 1
    column = err.offset - (before.rfind("\n") + 1)
    source = text.splitlines()[line - 1] if text else ""
    return f"ERROR: <input>:{line}:{column + 1}: {err}\n | {source}\n | {'.' * column}^"


def _go_rule(rule: dict) -> str:
    """A ValidationRule as Go's %#v prints it (field.Invalid's value)."""
    def quoted(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    reason = "(*apiextensions.FieldValueErrorReason)(nil)" if rule.get("reason") is None else \
        "(*apiextensions.FieldValueErrorReason)(0xc000000000)"
    old_self = "(*bool)(nil)" if rule.get("optionalOldSelf") is None else "(*bool)(0xc000000001)"
    return (f"apiextensions.ValidationRule{{Rule:{quoted(rule.get('rule') or '')}, "
            f"Message:{quoted(rule.get('message') or '')}, "
            f"MessageExpression:{quoted(rule.get('messageExpression') or '')}, "
            f"Reason:{reason}, FieldPath:{quoted(rule.get('fieldPath') or '')}, OptionalOldSelf:{old_self}}}")


def errors(crd: dict, estimator: Estimator = K8S_1_28,
           minimum: tuple[int, int] | None = MINIMUM_VERSION) -> list[tuple[str, str, str]]:
    """What the server refuses a CRD's rules with: compile errors, rules or a schema over budget, and
    rule fields the minimum version does not have."""
    out: list[tuple[str, str, str]] = []
    for path, costs in rule_costs(crd, estimator, minimum):
        out += _field_errors(crd, path, minimum)
        total = 0
        expensive: list[RuleCost] = []
        for cost in costs:
            if cost.cost > STATIC_ESTIMATED_COST_LIMIT:
                name = "estimated rule cost" if cost.kind == "rule" else "estimated messageExpression cost"
                message = exceeds_message(name, cost.cost, STATIC_ESTIMATED_COST_LIMIT)
                out.append(("FieldValueForbidden", cost.path, f"{cost.path}: Forbidden: {message}"))
            total = min(total + cost.cost, U64)
            if cost.cost >= STATIC_ESTIMATED_CRD_COST_LIMIT // 100:
                expensive = sorted([*expensive, cost], key=lambda c: -c.cost)[:4]
            if cost.error:
                rule = _rule_at(crd, path, cost.path)
                detail = cost.error if cost.error.startswith(("cel expression", "messageExpression must")) else \
                    f"{'' if cost.kind == 'rule' else 'messageExpression '}compilation failed: {cost.error}"
                out.append(("FieldValueInvalid", cost.path,
                            f"{cost.path}: Invalid value: {_go_rule(rule)}: {detail}"))
        if total > STATIC_ESTIMATED_CRD_COST_LIMIT:
            for cost in expensive:
                out.append(("FieldValueForbidden", cost.path, f"{cost.path}: Forbidden: {_CONTRIBUTED}"))
            message = exceeds_message("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                                      total, STATIC_ESTIMATED_CRD_COST_LIMIT)
            out.append(("FieldValueForbidden", path, f"{path}: Forbidden: {message}"))
    return out


def _rule_at(crd: dict, schema_path: str, rule_path: str) -> dict:
    schema = dict(_schemas(crd))[schema_path]
    rest = rule_path[len(schema_path):].removesuffix(".rule").removesuffix(".messageExpression")
    node: dict = schema
    for part in rest.strip(".").replace("].", "]\0").replace(".", "\0").split("\0"):
        if not part:
            continue
        if part.startswith("properties["):
            node = node["properties"][part[len("properties["):-1]]
        elif part.startswith("x-kubernetes-validations["):
            return node["x-kubernetes-validations"][int(part[len("x-kubernetes-validations["):-1])]
        else:
            node = node[part]
    return node


def _field_errors(crd: dict, schema_path: str, minimum: tuple[int, int] | None) -> list[tuple[str, str, str]]:
    """Rules without a rule, and rule fields a server of the minimum version drops as unknown: refused
    here, since a rule that loses its fieldPath or reason on that server says something else there."""
    schema = dict(_schemas(crd))[schema_path]
    out: list[tuple[str, str, str]] = []
    _rule_fields(schema, schema_path, minimum, out)
    return out


def _rule_fields(schema: dict, path: str, minimum: tuple[int, int] | None, out: list) -> None:
    for name in sorted(schema.get("properties") or {}):
        if isinstance(schema["properties"][name], dict):
            _rule_fields(schema["properties"][name], f"{path}.properties[{name}]", minimum, out)
    for key in ("additionalProperties", "items"):
        if isinstance(schema.get(key), dict):
            _rule_fields(schema[key], f"{path}.{key}", minimum, out)
    for index, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        if not (rule.get("rule") or "").strip() if isinstance(rule, dict) else True:
            where = f"{path}.x-kubernetes-validations[{index}].rule"
            out.append(("FieldValueRequired", where, f"{where}: Required value: rule is not specified"))
        if not isinstance(rule, dict) or minimum is None:
            continue
        for key in rule:
            first = cel_versions.RULE_FIELDS.get(key)
            if first is not None and first > minimum:
                where = f"{path}.x-kubernetes-validations[{index}].{key}"
                out.append(("FieldValueForbidden", where, f"{where}: Forbidden: not supported before Kubernetes "
                            f"{cel_versions.version_text(first)}, the oldest version supported"))


__all__ = ["Expr", "RuleCost", "errors", "exceeds_message", "rule_costs"]
