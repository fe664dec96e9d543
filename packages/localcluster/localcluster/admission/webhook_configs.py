"""ValidatingWebhookConfiguration and MutatingWebhookConfiguration (admissionregistration.k8s.io/v1): the
server's defaulting and validation of the objects themselves (calling them: webhooks.py).

Defaults, as pkg/apis/admissionregistration/v1/defaults.go sets them on every webhook: failurePolicy Fail,
matchPolicy Equivalent, namespaceSelector and objectSelector `{}`, timeoutSeconds 10, every rule's scope
`*`, a service reference's port 443, and a mutating webhook's reinvocationPolicy Never. (sideEffects and
admissionReviewVersions have no default in v1: they are required.)

Validation, as pkg/apis/admissionregistration/validation does, with its messages: fully qualified webhook
names, unique in their configuration; rules (operations, apiGroups, apiVersions, resources with their
wildcard overlaps, scope); failurePolicy, matchPolicy, reinvocationPolicy; sideEffects None or NoneOnDryRun;
timeoutSeconds 1..30; the selectors; exactly one of clientConfig.url (https, a host, no user information,
fragment or query) and clientConfig.service (name, namespace, port, path); admissionReviewVersions (at least
one the server knows); matchConditions (unique qualified names, expressions that compile). An update is
held to the rules the stored object met (the server's ratcheting: a configuration stored with an unknown
review version keeps being accepted without one).
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse

from apimachinery.validation import SUBDOMAIN_MSG, qualified_name_errors

from ..errors import bad_request
from ..validation import (
    DNS1035_LABEL,
    DNS1035_MSG,
    DNS1123_SUBDOMAIN,
    LABEL_VALUE,
    LABEL_VALUE_MSG,
    Cause,
    forbidden,
    invalid_value,
    not_supported,
    required,
)

GROUP = "admissionregistration.k8s.io"
VALIDATING = (GROUP, "validatingwebhookconfigurations")
MUTATING = (GROUP, "mutatingwebhookconfigurations")
KINDS = (VALIDATING, MUTATING)

FAILURE_POLICIES = ["Fail", "Ignore"]
MATCH_POLICIES = ["Equivalent", "Exact"]
NO_SIDE_EFFECTS = ["None", "NoneOnDryRun"]
SIDE_EFFECTS = ["None", "NoneOnDryRun", "Some", "Unknown"]
OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
SCOPES = ["*", "Cluster", "Namespaced"]
REINVOCATION = ["IfNeeded", "Never"]
REVIEW_VERSIONS = ["v1", "v1beta1"]  # AcceptedAdmissionReviewVersions
MATCH_CONDITION_ROOTS = frozenset({"object", "oldObject", "request", "authorizer"})
URL_FORM = "; desired format: https://host[/path]"


# --- defaulting -------------------------------------------------------------------------------------

BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def _ca_bundle_error(kind: str, value) -> str | None:
    """What decoding a caBundle ([]byte: base64 in JSON) into the Go type says of one that is not base64."""
    if not isinstance(value, str):
        return None
    prefix = f'{kind} in version "v1" cannot be handled as a {kind}: '
    end = match.end() if (match := BASE64.match(value)) else 0  # it matches every string, if only its empty start
    if end != len(value):
        return f"{prefix}illegal base64 data at input byte {end}"
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        return f"{prefix}illegal base64 data at input byte {len(value) - len(value) % 4}"
    return None


def default(obj: dict, mutating: bool) -> None:
    """SetDefaults_ValidatingWebhook / SetDefaults_MutatingWebhook, SetDefaults_Rule,
    SetDefaults_ServiceReference, on the object in place (each webhook copied: the body may be shared).
    A caBundle that is not base64 is the decoder's 400, before any of it."""
    hooks = obj.get("webhooks")
    if not isinstance(hooks, list):
        return
    out = []
    for hook in hooks:
        if not isinstance(hook, dict):
            out.append(hook)
            continue
        problem = _ca_bundle_error(obj.get("kind", ""), (hook.get("clientConfig") or {}).get("caBundle"))
        if problem:
            raise bad_request(problem)
        hook = dict(hook)
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        if hook.get("namespaceSelector") is None:
            hook["namespaceSelector"] = {}
        if hook.get("objectSelector") is None:
            hook["objectSelector"] = {}
        hook.setdefault("timeoutSeconds", 10)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        if isinstance(hook.get("rules"), list):
            hook["rules"] = [{**rule, "scope": rule.get("scope") or "*"} if isinstance(rule, dict) else rule
                             for rule in hook["rules"]]
        config = hook.get("clientConfig")
        if isinstance(config, dict) and isinstance(config.get("service"), dict):
            service = config["service"]
            if service.get("port") is None:
                hook["clientConfig"] = {**config, "service": {**service, "port": 443}}
        out.append(hook)
    obj["webhooks"] = out


# --- validation -------------------------------------------------------------------------------------

def errors(obj: dict, old: dict | None, mutating: bool) -> list[Cause]:
    """The causes of a 422 (metadata aside: the caller checks it as for every built-in kind)."""
    old_hooks = [h for h in (old or {}).get("webhooks") or [] if isinstance(h, dict)]
    if old is None:
        no_side_effects = recognized_versions = unique_names = True
        stored_conditions = None
    else:  # ratcheting: what the stored configuration already met is still required, nothing more
        no_side_effects = all(h.get("sideEffects") in NO_SIDE_EFFECTS for h in old_hooks)
        recognized_versions = all(not h.get("admissionReviewVersions")
                                  or any(v in REVIEW_VERSIONS for v in h["admissionReviewVersions"])
                                  for h in old_hooks)
        names = [h.get("name") for h in old_hooks]
        unique_names = len(names) == len(set(names))
        stored_conditions = [h.get("matchConditions") for h in old_hooks]
    hooks = obj.get("webhooks") or []
    skip_conditions = stored_conditions is not None and stored_conditions == [
        h.get("matchConditions") for h in hooks if isinstance(h, dict)]
    out: list[Cause] = []
    seen: set[str] = set()
    for i, hook in enumerate(hooks):
        path = f"webhooks[{i}]"
        if not isinstance(hook, dict):
            out.append(invalid_value(path, str(hook), "must be an object"))
            continue
        out += _webhook_errors(hook, path, mutating, no_side_effects, skip_conditions)
        out += _review_version_errors(hook.get("admissionReviewVersions"), recognized_versions,
                                      f"{path}.admissionReviewVersions")
        name = hook.get("name")
        if unique_names and name:
            if name in seen:
                out.append(duplicate(f"{path}.name", name))
            seen.add(name)
    return out


def duplicate(field: str, value) -> Cause:
    return ("FieldValueDuplicate", field, f'{field}: Duplicate value: "{value}"')


def go_value(value) -> str:
    """How field.Invalid prints a bad value that is not a string or a number (`%#v` of a []string)."""
    if isinstance(value, list):
        return "[]string{" + ", ".join(f'"{v}"' for v in value) + "}"
    return str(value)


def _invalid_list(field: str, values: list, detail: str) -> Cause:
    return ("FieldValueInvalid", field, f"{field}: Invalid value: {go_value(values)}: {detail}")


def _subdomain_errors(name: str) -> list[str]:
    return _pattern_errors(name, 253, DNS1123_SUBDOMAIN, SUBDOMAIN_MSG)


def _pattern_errors(value: str, longest: int, pattern: re.Pattern, message: str) -> list[str]:
    """Go's validation of a name or value: its length, then its form, each said when broken."""
    out = [f"must be no more than {longest} characters"] if len(value) > longest else []
    return out + ([] if pattern.match(value) else [message])


def _fully_qualified_errors(name, field: str) -> list[Cause]:
    """utilvalidation.IsFullyQualifiedName."""
    if not name:
        return [required(field)]
    problems = _subdomain_errors(str(name))
    if problems:
        return [invalid_value(field, name, ",".join(problems))]
    if len(str(name).split(".")) < 3:
        return [invalid_value(field, name, "should be a domain with at least three segments separated by dots")]
    return []


def _webhook_errors(hook: dict, path: str, mutating: bool, no_side_effects: bool,
                    skip_conditions: bool) -> list[Cause]:
    out = _fully_qualified_errors(hook.get("name"), f"{path}.name")
    for i, rule in enumerate(hook.get("rules") or []):
        out += _rule_errors(rule if isinstance(rule, dict) else {}, f"{path}.rules[{i}]")
    for key, allowed in (("failurePolicy", FAILURE_POLICIES), ("matchPolicy", MATCH_POLICIES)):
        if hook.get(key) is not None and hook[key] not in allowed:
            out.append(not_supported(f"{path}.{key}", hook[key], allowed))
    allowed = NO_SIDE_EFFECTS if no_side_effects else SIDE_EFFECTS
    if hook.get("sideEffects") is None:
        out.append(required(f"{path}.sideEffects", f"must specify one of {', '.join(allowed)}"))
    elif hook["sideEffects"] not in allowed:
        out.append(not_supported(f"{path}.sideEffects", hook["sideEffects"], allowed))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        out.append(invalid_value(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 "
                                 "seconds"))
    for key in ("namespaceSelector", "objectSelector"):
        if isinstance(hook.get(key), dict):
            out += selector_errors(hook[key], f"{path}.{key}")
    if mutating and hook.get("reinvocationPolicy") is not None and hook["reinvocationPolicy"] not in REINVOCATION:
        out.append(not_supported(f"{path}.reinvocationPolicy", hook["reinvocationPolicy"], REINVOCATION))
    out += _client_config_errors(hook.get("clientConfig") or {}, f"{path}.clientConfig")
    if not skip_conditions:
        out += _match_condition_errors(hook.get("matchConditions") or [], f"{path}.matchConditions")
    return out


def _rule_errors(rule: dict, path: str) -> list[Cause]:
    """validateRuleWithOperations and validateRule (subresources allowed)."""
    operations = rule.get("operations") or []
    groups = rule.get("apiGroups") or []
    versions = rule.get("apiVersions") or []
    out = _listed_errors(operations, f"{path}.operations", "operations")
    out += [not_supported(f"{path}.operations[{i}]", operation, OPERATIONS)
            for i, operation in enumerate(operations) if operation not in OPERATIONS]
    out += _listed_errors(groups, f"{path}.apiGroups", "API groups")
    out += _listed_errors(versions, f"{path}.apiVersions", "API versions")
    out += [required(f"{path}.apiVersions[{i}]") for i, version in enumerate(versions) if version == ""]
    out += _resources_errors(rule.get("resources") or [], f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        out.append(not_supported(f"{path}.scope", scope, SCOPES))
    return out


def _listed_errors(values: list, field: str, what: str) -> list[Cause]:
    """A rule's list: required, and `*` stands alone."""
    out = [] if values else [required(field)]
    if len(values) > 1 and "*" in values:
        out.append(_invalid_list(field, values, f"if '*' is present, must not specify other {what}"))
    return out

def _resources_errors(resources: list, path: str) -> list[Cause]:
    """validateResources: `x/*` and `*/x` exclude what they cover; `*/*` stands alone; `*` takes no other
    resource without a subresource."""
    out: list[Cause] = []
    if not resources:
        out.append(required(path))
    any_sub: set[str] = set()  # x/*
    any_res: set[str] = set()  # */x
    double = single = plain = False
    for i, entry in enumerate(resources):
        if entry == "":
            out.append(required(f"{path}[{i}]"))
            continue
        double = double or entry == "*/*"
        single = single or entry == "*"
        if "/" not in entry:
            plain = entry != "*"
            continue
        res, sub = entry.split("/", 1)
        if res in any_sub:
            out.append(invalid_value(f"{path}[{i}]", entry, f"if '{res}/*' is present, must not specify {entry}"))
        if sub in any_res:
            out.append(invalid_value(f"{path}[{i}]", entry, f"if '*/{sub}' is present, must not specify {entry}"))
        if sub == "*":
            any_sub.add(res)
        if res == "*":
            any_res.add(sub)
    if len(resources) > 1 and double:
        out.append(_invalid_list(path, resources, "if '*/*' is present, must not specify other resources"))
    if single and plain:
        out.append(_invalid_list(path, resources, "if '*' is present, must not specify other resources without "
                                 "subresources"))
    return out


def selector_errors(selector: dict, path: str) -> list[Cause]:
    """metav1validation.ValidateLabelSelector (label values checked: AllowInvalidLabelValueInSelector off)."""
    out: list[Cause] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        out += [invalid_value(f"{path}.matchLabels", key, problem) for problem in qualified_name_errors(str(key))]
        out += [invalid_value(f"{path}.matchLabels", value, problem) for problem in _label_value_errors(value)]
    for i, expression in enumerate(selector.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{i}]"
        expression = expression if isinstance(expression, dict) else {}
        operator, values = expression.get("operator"), expression.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                out.append(required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                out.append(forbidden(f"{where}.values", "may not be specified when `operator` is 'Exists' or "
                                     "'DoesNotExist'"))
        else:
            out.append(invalid_value(f"{where}.operator", str(operator), "not a valid selector operator"))
        out += [invalid_value(f"{where}.key", expression.get("key", ""), problem)
                for problem in qualified_name_errors(str(expression.get("key", "")))]
        for j, value in enumerate(values):
            out += [invalid_value(f"{where}.values[{j}]", value, problem) for problem in _label_value_errors(value)]
    return out


def _label_value_errors(value) -> list[str]:
    return _pattern_errors(str(value), 63, LABEL_VALUE, LABEL_VALUE_MSG)


def _client_config_errors(config: dict, path: str) -> list[Cause]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        return url_errors(str(url), f"{path}.url")
    return _service_errors(service if isinstance(service, dict) else {}, f"{path}.service")


def url_errors(url: str, field: str) -> list[Cause]:
    """webhook.ValidateWebhookURL with https forced."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:
        return [required(field, f"url must be a valid URL: parse {url!r}: {exc}{URL_FORM}")]
    out = []
    if parts.scheme != "https":
        out.append(invalid_value(field, parts.scheme, "'https' is the only allowed URL scheme" + URL_FORM))
    host = parts.netloc.rpartition("@")[2]
    if not host:
        out.append(invalid_value(field, host, "host must be provided" + URL_FORM))
    if "@" in parts.netloc:
        out.append(invalid_value(field, parts.netloc.rpartition("@")[0], "user information is not permitted in the "
                                 "URL"))
    if parts.fragment:
        out.append(invalid_value(field, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        out.append(invalid_value(field, parts.query, "query parameters are not permitted in the URL"))
    return out


def _service_errors(service: dict, path: str) -> list[Cause]:
    """webhook.ValidateWebhookService."""
    out = []
    if not service.get("name"):
        out.append(required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        out.append(required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        out.append(invalid_value(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    url_path = service.get("path")
    if url_path is None or url_path in ("", "/"):
        return out
    if url_path == "//":
        return [*out, invalid_value(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        out.append(invalid_value(f"{path}.path", url_path, "must start with a '/'"))
    steps = url_path[1:]
    if steps.endswith("/"):
        steps = steps[:-1]
    for i, step in enumerate(steps.split("/")):
        if not step:
            out.append(invalid_value(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        out += [invalid_value(f"{path}.path", url_path, f"segment[{i}]: {problem}")
                for problem in _subdomain_errors(step)]
    return out


def _review_version_errors(versions, require_known: bool, path: str) -> list[Cause]:
    """validateAdmissionReviewVersions."""
    versions = versions or []
    if not versions:
        return [required(path, f"must specify one of {', '.join(REVIEW_VERSIONS)}")]
    out = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            out.append(invalid_value(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        if len(str(version)) > 63:
            out.append(invalid_value(f"{path}[{i}]", version, "must be no more than 63 characters"))
        if not DNS1035_LABEL.match(str(version)):
            out.append(invalid_value(f"{path}[{i}]", version, DNS1035_MSG))
    if require_known and not any(v in REVIEW_VERSIONS for v in versions):
        out.append(_invalid_list(path, versions, f"must include at least one of {', '.join(REVIEW_VERSIONS)}"))
    return out


def _match_condition_errors(conditions: list, path: str) -> list[Cause]:
    """validateMatchConditions: at most 64, unique qualified names, expressions that compile with the
    variables a webhook's conditions have (object, oldObject, request, authorizer)."""
    from .validating_policies import _root_identifiers, compile_expression

    out: list[Cause] = []
    if len(conditions) > 64:
        out.append(("FieldValueTooMany", path, f"{path}: Too many: {len(conditions)}: must have at most 64 items"))
    names: set[str] = set()
    for i, condition in enumerate(conditions):
        condition = condition if isinstance(condition, dict) else {}
        where = f"{path}[{i}]"
        expression = str(condition.get("expression") or "").strip()
        if not expression:
            out.append(required(f"{where}.expression"))
        else:
            _, error = compile_expression(expression)
            if not error:
                import celpy

                unknown = sorted(_root_identifiers(celpy.Environment().compile(expression)) - MATCH_CONDITION_ROOTS)
                if unknown:
                    error = f"compilation failed: ERROR: <input>: undeclared reference to '{unknown[0]}'"
            if error:
                out.append(invalid_value(f"{where}.expression", expression, error))
        name = condition.get("name")
        if not name:
            out.append(required(f"{where}.name"))
        else:
            out += [invalid_value(f"{where}.name", name, problem) for problem in qualified_name_errors(str(name))]
            if name in names:
                out.append(duplicate(f"{where}.name", name))
            names.add(name)
    return out
