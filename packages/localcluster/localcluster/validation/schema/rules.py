"""x-kubernetes-validations: CEL rules compiled, run against a value (and its old value, for
transition rules) and their failures worded as apiextensions-apiserver's CEL validator does."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import celpy
from celpy import celtypes

from .. import cel_lists
from .field_errors import (
    ABSENT,
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    OMITTED,
    REQUIRED,
    FieldError,
    field_error_path,
    format_path,
)

if TYPE_CHECKING:
    from .compiled import Node


# --- validation: CEL rules ------------------------------------------------------------------------

_REASONS = frozenset({REQUIRED, FORBIDDEN, DUPLICATE, INVALID})
CEL_ERROR_REWRITES = (  # celpy's wording of runtime errors -> cel-go's, which the server prints
    (re.compile(r"no such member in mapping: '(.*)'", re.DOTALL), r"no such key: \1"),
    (re.compile(r"found no matching overload.*", re.DOTALL), "no such overload"),
    (re.compile(r"modulus or divide by zero"), "division by zero"),
)


@functools.cache
def _cel_environment() -> celpy.Environment:
    return celpy.Environment()  # built on first use: it costs a tenth of a second


@functools.lru_cache(maxsize=2048)
def cel_program(expression: str) -> tuple[Any, str, bool]:
    """(program, compile error, whether it reads oldSelf), compiled once per expression text."""
    environment = _cel_environment()
    try:
        ast = environment.compile(expression)
    except celpy.CELParseError as err:
        return None, " ".join(str(err).split()), False
    names = ast.scan_values(lambda token: getattr(token, "type", None) == "IDENT")
    return environment.program(ast, functions=cel_lists.FUNCTIONS), "", any(name == "oldSelf" for name in names)


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    message: str
    message_program: Any
    field_path: str
    reason: str
    program: Any
    compile_error: str
    uses_old_self: bool

    @classmethod
    def from_spec(cls, spec: dict) -> Rule:
        text = (spec.get("rule") or "").strip()
        program, compile_error, uses_old_self = cel_program(text)
        expression = spec.get("messageExpression")
        reason = spec.get("reason")
        return cls(
            text=text,
            message=(spec.get("message") or "").strip(),
            message_program=cel_program(expression)[0] if expression else None,
            field_path=_normalized_field_path(spec.get("fieldPath") or ""),
            reason=reason if reason in _REASONS else INVALID,
            program=program,
            compile_error=compile_error,
            uses_old_self=uses_old_self,
        )


def _normalized_field_path(json_path: str) -> str:
    """`.spec['a.b'].c` -> `spec.a.b.c`: the server appends the rule's fieldPath as one child."""
    return re.sub(r"\['((?:[^'\\]|\\.)*)'\]", r".\1", json_path).lstrip(".")


def run_rules(node: Node, value: Any, path: tuple | None, old: Any, errors: list[FieldError],
               transition_only: bool) -> None:
    """Evaluates a node's rules on a non-null value. Rules reading oldSelf need an old value."""
    has_old = old is not ABSENT and old is not None
    activation = None
    for rule in node.rules:
        if (rule.uses_old_self and not has_old) or (transition_only and not rule.uses_old_self):
            continue
        if activation is None:
            activation = {"self": _to_cel(value)}
            if has_old and node.own_transition_rules:
                activation["oldSelf"] = _to_cel(old)
        error = _rule_error(rule, node, path, activation)
        if error is not None:
            errors.append(error)


def _to_cel(value: Any) -> Any:
    """celpy.json_to_cel, three times faster: JSON values need none of the checks of celtypes'
    constructors (which dominate the cost of a rule on a large object), so they are bypassed."""
    kind = type(value)
    if kind is str:
        return str.__new__(celtypes.StringType, value)
    if kind is dict:
        result = celtypes.MapType()
        dict.update(result, {str.__new__(celtypes.StringType, k): _to_cel(v) for k, v in value.items()})
        return result
    if kind is list:
        return celtypes.ListType([_to_cel(item) for item in value])
    if kind is int:
        return int.__new__(celtypes.IntType, value)
    if kind is float:
        return float.__new__(celtypes.DoubleType, value)
    return celpy.json_to_cel(value)  # bool and None


def _rule_error(rule: Rule, node: Node, path: tuple | None, activation: dict) -> FieldError | None:
    if rule.program is None:
        return FieldError(INVALID, field_error_path(path), f"rule compile error: {rule.compile_error}",
                          node.schema_type)
    try:
        result = rule.program.evaluate(activation)
    except Exception as err:  # celpy raises CELEvalError and, for odd inputs, plain Python errors
        return FieldError(INVALID, field_error_path(path), _evaluation_failure(err, rule), node.schema_type)
    if isinstance(result, celpy.CELEvalError):
        return FieldError(INVALID, field_error_path(path), _evaluation_failure(result, rule), node.schema_type)
    if result is True or (isinstance(result, celtypes.BoolType) and result):
        return None
    return _rule_violation(rule, node, path, activation)


def _rule_violation(rule: Rule, node: Node, path: tuple | None, activation: dict) -> FieldError:
    detail = _evaluated_message(rule, activation) or rule.message or f"failed rule: {rule.text}"
    base = format_path(path, brackets_for_keys=True)
    where = ".".join(part for part in (base, rule.field_path) if part) or "<nil>"
    if rule.reason in (REQUIRED, FORBIDDEN):
        return FieldError(rule.reason, where, detail)
    if rule.reason == DUPLICATE:
        return FieldError(DUPLICATE, where, "", node.schema_type)
    return FieldError(INVALID, where, detail, OMITTED)


def _evaluated_message(rule: Rule, activation: dict) -> str:
    """The messageExpression's text, or "" when it fails, for the server then falls back to message."""
    if rule.message_program is None:
        return ""
    try:
        result = rule.message_program.evaluate(activation)
    except Exception:  # any failure means: use the static message
        return ""
    text = result.strip() if isinstance(result, str) else ""
    return "" if "\n" in text else text


def _evaluation_failure(err: Exception, rule: Rule) -> str:
    text = str(err.args[0]) if err.args else str(err)
    text = text.split(" (in activation", 1)[0]
    for pattern, replacement in CEL_ERROR_REWRITES:
        text = pattern.sub(replacement, text)
    label = rule.message or rule.text
    if text.startswith("no such overload"):
        return (f"'{text}': call arguments did not match a supported operator, function or macro "
                f"signature for rule: {label}")
    return f"{text} evaluating rule: {label}"


