"""ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1): CEL validations run at admission.

As the kube-apiserver's ValidatingAdmissionPolicy plugin (k8s.io/apiserver/pkg/admission/plugin/policy/
validating), for what a policy without parameters does on CREATE and UPDATE: every binding names its policy;
a request matches when the policy's `matchConstraints` and the binding's `matchResources` take it (resource
rules with their operations, exclusions, namespace and object selectors) and every `matchCondition` holds;
then `variables` and `validations` are evaluated with `object`, `oldObject`, `request`, `namespaceObject`,
`variables` and `authorizer` (the Kubernetes authz library: `authorizer.group(g).resource(r).namespace(n)
.name(x).check(verb).allowed()`, `authorizer.requestResource`, `authorizer.path(p)`; checks are made for the
request's user by the cluster's RBAC). A binding with the `Deny` action refuses the request as the server
does: `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding '<binding>'
denied request: <message>`, with the validation's reason (Invalid, 422, by default) and the message as the
one cause. An evaluation error follows the policy's failurePolicy (Fail by default).

Not evaluated here (documented in docs/security.md): DELETE and CONNECT requests, `Warn` and `Audit`
actions (they change no outcome), audit annotations, and policies with `paramKind` (a request they
match meets their failurePolicy, as a binding whose parameters cannot be found does).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import celpy
from celpy import celtypes
from lark import Tree

from apimachinery.selectors import SelectorError

from ..auth.authentication import Attributes, User
from ..auth.rbac import forbidden
from ..validation import CEL_ERROR_REWRITES, invalid_value, label_selector_from_dict

GROUP = "admissionregistration.k8s.io"
POLICIES = (GROUP, "validatingadmissionpolicies")
BINDINGS = (GROUP, "validatingadmissionpolicybindings")
ROOTS = frozenset({"object", "oldObject", "request", "params", "namespaceObject", "authorizer", "variables"})
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}


# --- the authorizer library ----------------------------------------------------------------------

class _Authorizer(celtypes.MapType):
    """`authorizer`: checks made as the request's user."""

    def __init__(self, authorize: Callable[[Attributes], tuple[bool, str]], user: User,
                 request_resource: dict) -> None:
        super().__init__()
        self.authorize, self.user = authorize, user
        self[celtypes.StringType("requestResource")] = _ResourceCheck(self, request_resource)


class _ResourceCheck(celtypes.MapType):
    def __init__(self, authz: _Authorizer, attrs: dict) -> None:
        super().__init__()
        self.authz, self.attrs = authz, attrs

    def with_(self, **changes: str) -> _ResourceCheck:
        return _ResourceCheck(self.authz, {**self.attrs, **changes})


class _Decision(celtypes.MapType):
    def __init__(self, allowed: bool, reason: str) -> None:
        super().__init__()
        self.allowed, self.reason = allowed, reason


def _group(target: _Authorizer, group: str) -> _ResourceCheck:
    return _ResourceCheck(target, {"api_group": str(group)})


def _path(target: _Authorizer, path: str) -> _ResourceCheck:
    return _ResourceCheck(target, {"path": str(path)})


def _check(target: _ResourceCheck, verb: str) -> _Decision:
    attrs = target.attrs
    if "path" in attrs:
        request = Attributes(target.authz.user, str(verb), False, path=attrs["path"])
    else:  # as authz.go: any version of the group
        request = Attributes(target.authz.user, str(verb), True, api_group=attrs.get("api_group", ""),
                             api_version="*", resource=attrs.get("resource", ""),
                             subresource=attrs.get("subresource", ""), namespace=attrs.get("namespace", ""),
                             name=attrs.get("name", ""))
    allowed, reason = target.authz.authorize(request)
    return _Decision(allowed, reason)


FUNCTIONS: dict[str, Callable] = {
    "group": _group,
    "path": _path,
    "resource": lambda target, value: target.with_(resource=str(value)),
    "subresource": lambda target, value: target.with_(subresource=str(value)),
    "namespace": lambda target, value: target.with_(namespace=str(value)),
    "name": lambda target, value: target.with_(name=str(value)),
    "check": _check,
    "allowed": lambda decision: celtypes.BoolType(decision.allowed),
    "reason": lambda decision: celtypes.StringType(decision.reason),
    "errored": lambda decision: celtypes.BoolType(False),
    "error": lambda decision: celtypes.StringType(""),
}


# --- compiling ---------------------------------------------------------------------------------

@functools.cache
def _environment() -> celpy.Environment:
    return celpy.Environment()


@functools.lru_cache(maxsize=512)
def compile_expression(text: str) -> tuple[Any, str]:
    """(program, error): the program, or why it does not compile (a parse error, or a variable a policy
    has not, as cel-go's checker says `undeclared reference`)."""
    environment = _environment()
    try:
        ast = environment.compile(text)
    except celpy.CELParseError as err:
        return None, "compilation failed: " + " ".join(str(err).split())
    unknown = sorted(_root_identifiers(ast) - ROOTS)
    if unknown:
        return None, f"compilation failed: ERROR: <input>: undeclared reference to '{unknown[0]}'"
    return environment.program(ast, functions=FUNCTIONS), ""


def _root_identifiers(ast) -> set[str]:
    """The variables an expression reads (`ident` nodes: members and function names are tokens of other
    nodes), less those a macro binds (x in `list.all(x, ...)`)."""
    roots = {str(node.children[0]) for node in ast.iter_subtrees_topdown() if node.data == "ident"}
    bound: set[str] = set()
    for node in ast.iter_subtrees_topdown():
        if node.data != "member_dot_arg" or len(node.children) < 3 or str(node.children[1]) not in MACROS:
            continue
        first = node.children[2].children[0] if node.children[2].children else None
        while isinstance(first, Tree) and first.data != "ident" and first.children:
            first = first.children[0]
        if isinstance(first, Tree) and first.data == "ident":
            bound.add(str(first.children[0]))
    return roots - bound


def policy_errors(policy: dict) -> list[tuple[str, str, str]]:
    """(reason, field, message) for each expression of a policy that does not compile: the server refuses it."""
    spec = policy.get("spec") or {}
    causes = []
    for section, keys in (("matchConditions", ("expression",)), ("variables", ("expression",)),
                          ("validations", ("expression", "messageExpression"))):
        for index, entry in enumerate(spec.get(section) or []):
            for key in keys:
                text = (entry or {}).get(key)
                if text is None:
                    continue
                _, error = compile_expression(text)
                if error:
                    causes.append(invalid_value(f"spec.{section}[{index}].{key}", text, error))
    return causes


# --- matching ----------------------------------------------------------------------------------

def _rule_matches(rule: dict, group: str, version: str, resource: str, subresource: str, operation: str,
                  namespaced: bool) -> bool:
    def among(values, value) -> bool:
        values = values or []
        return "*" in values or value in values

    if not (among(rule.get("apiGroups"), group) and among(rule.get("apiVersions"), version)
            and among(rule.get("operations"), operation)):
        return False
    scope = rule.get("scope") or "*"
    if scope != "*" and (scope == "Namespaced") != namespaced:
        return False
    wanted = f"{resource}/{subresource}" if subresource else resource
    for entry in rule.get("resources") or []:
        if entry == "*/*" or entry == wanted:
            return True
        if not subresource and entry == "*":
            return True
        if subresource and (entry == f"*/{subresource}" or entry == f"{resource}/*"):
            return True
    return False


def _selects(selector: dict | None, labels: dict | None) -> bool:
    if not selector:
        return True
    try:
        return label_selector_from_dict(selector).matches(labels or {})
    except SelectorError:
        return False


class ValidatingPolicies:
    """The plugin: reads policies and bindings from the store at each request (they take effect at once)."""

    def __init__(self, store, namespace_of: Callable[[str], dict | None]) -> None:
        self.store = store
        self.namespace_of = namespace_of

    def admit(self, user: User, authorize: Callable[[Attributes], tuple[bool, str]], rt, subresource: str | None,
              obj: dict, old: dict | None) -> None:
        bindings = self.store.objects(BINDINGS)
        if not bindings:
            return
        operation = "CREATE" if old is None else "UPDATE"
        policies = {p["metadata"]["name"]: p for p in self.store.objects(POLICIES)}
        request = _Request(rt, subresource or "", operation, obj, old, user, self.namespace_of)
        for binding in sorted(bindings, key=lambda b: b["metadata"]["name"]):
            spec = binding.get("spec") or {}
            policy = policies.get(spec.get("policyName", ""))
            if policy is None or "Deny" not in (spec.get("validationActions") or []):
                continue
            if not (request.matches((policy.get("spec") or {}).get("matchConstraints"))
                    and request.matches(spec.get("matchResources"), binding_level=True)):
                continue
            message, reason = self._evaluate(policy, request, authorize)
            if message is not None:
                raise _denied(rt, obj, policy["metadata"]["name"], binding["metadata"]["name"], message, reason)

    def _evaluate(self, policy: dict, request: _Request, authorize) -> tuple[str | None, str]:
        """(message, reason) of the first failed validation; (None, '') when the request passes."""
        spec = policy.get("spec") or {}
        fail = (spec.get("failurePolicy") or "Fail") == "Fail"
        if spec.get("paramKind"):
            return ("failed to configure binding: localcluster does not evaluate policies with paramKind"
                    if fail else None), ""
        activation = request.activation(authorize)
        variables = celtypes.MapType()
        activation["variables"] = variables
        for entry in spec.get("variables") or []:
            program, error = compile_expression(entry.get("expression", ""))
            # celpy keeps an error as a value until something reads it (its evaluation's Result, not a Value)
            value: Any = _run(program, activation) if program is not None else celpy.CELEvalError(error)
            variables[celtypes.StringType(entry.get("name", ""))] = value  # an error only if it is used
        for condition in spec.get("matchConditions") or []:
            text = condition.get("expression", "")
            result = _run(compile_expression(text)[0], activation)
            if isinstance(result, Exception):
                if fail:
                    return f"expression '{text}' resulted in error: {_error_text(result)}", ""
                return None, ""
            if result is not True and not (isinstance(result, celtypes.BoolType) and result):
                return None, ""  # the policy does not apply
        for validation in spec.get("validations") or []:
            text = validation.get("expression", "")
            result = _run(compile_expression(text)[0], activation)
            if isinstance(result, Exception):
                if fail:
                    return f"expression '{text}' resulted in error: {_error_text(result)}", ""
                continue
            if result is True or (isinstance(result, celtypes.BoolType) and result):
                continue
            return _message(validation, text, activation), validation.get("reason") or ""
        return None, ""


def _run(program, activation: dict) -> Any:
    if program is None:
        return celpy.CELEvalError("compilation failed")
    try:
        return program.evaluate(activation)
    except Exception as err:  # celpy raises CELEvalError and, for odd inputs, plain Python errors
        return err


def _error_text(err: Exception) -> str:
    """cel-go's wording of an evaluation error (as the CRD rules' messages, validation/schema/rules.py)."""
    text = str(err.args[0]) if getattr(err, "args", None) else str(err)
    text = text.split(" (in activation", 1)[0]
    for pattern, replacement in CEL_ERROR_REWRITES:
        text = pattern.sub(replacement, text)
    if text == "no such key" and len(err.args) > 2 and err.args[2]:  # an index: celpy keeps the key apart
        text = f"no such key: {err.args[2][0]}"
    return " ".join(text.split())


def _message(validation: dict, text: str, activation: dict) -> str:
    expression = validation.get("messageExpression")
    if expression:
        value = _run(compile_expression(expression)[0], activation)
        if isinstance(value, str) and value.strip() and "\n" not in value:
            return str(value)
    return validation.get("message") or f"failed expression: {text}"


def _denied(rt, obj: dict, policy: str, binding: str, message: str, reason: str):
    cause = f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {message}"
    err = forbidden(rt.group, rt.plural, (obj.get("metadata") or {}).get("name", ""), cause)
    err.reason = reason or "Invalid"
    err.code = _CODES.get(err.reason, 422)
    err.details = {**(err.details or {}), "causes": [{"message": cause}]}
    return err


class _Request:
    def __init__(self, rt, subresource: str, operation: str, obj: dict, old: dict | None, user: User,
                 namespace_of: Callable[[str], dict | None]) -> None:
        self.rt, self.subresource, self.operation, self.obj, self.old, self.user = (rt, subresource, operation,
                                                                                     obj, old, user)
        self.namespace_of = namespace_of
        self.namespace = (obj.get("metadata") or {}).get("namespace", "") if rt.namespaced else ""

    def matches(self, constraints: dict | None, binding_level: bool = False) -> bool:
        """The policy's matchConstraints (which must name resources) or the binding's matchResources
        (absent: everything the policy matches)."""
        if constraints is None:
            return binding_level
        rt = self.rt
        args = (rt.group, rt.version, rt.plural, self.subresource, self.operation, rt.namespaced)
        rules = constraints.get("resourceRules")
        if rules is not None or not binding_level:
            if not any(_rule_matches(rule, *args) for rule in rules or []):
                return False
        if any(_rule_matches(rule, *args) for rule in constraints.get("excludeResourceRules") or []):
            return False
        if self.namespace and constraints.get("namespaceSelector"):
            labels = ((self.namespace_of(self.namespace) or {}).get("metadata") or {}).get("labels")
            if not _selects(constraints["namespaceSelector"], labels):
                return False
        selector = constraints.get("objectSelector")
        if selector and not (_selects(selector, self.obj["metadata"].get("labels"))
                             or (self.old is not None and _selects(selector, self.old["metadata"].get("labels")))):
            return False
        return True

    def activation(self, authorize) -> dict:
        rt, meta = self.rt, self.obj.get("metadata") or {}
        namespace = self.namespace_of(self.namespace) if self.namespace else None
        resource = {"group": rt.group, "version": rt.version, "resource": rt.plural}
        request = {
            "uid": "", "kind": {"group": rt.group, "version": rt.version, "kind": rt.kind}, "resource": resource,
            "subResource": self.subresource, "requestKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
            "requestResource": resource, "name": meta.get("name", ""), "namespace": self.namespace,
            "operation": self.operation,
            "userInfo": {"username": self.user.name, "uid": self.user.uid, "groups": list(self.user.groups)},
            "dryRun": False,
        }
        authz = _Authorizer(authorize, self.user, {"api_group": rt.group, "resource": rt.plural,
                                                   "subresource": self.subresource, "namespace": self.namespace,
                                                   "name": meta.get("name", "")})
        return {"object": celpy.json_to_cel(self.obj), "oldObject": celpy.json_to_cel(self.old),
                "request": celpy.json_to_cel(request), "params": celpy.json_to_cel(None),
                "namespaceObject": celpy.json_to_cel(namespace), "authorizer": authz}
