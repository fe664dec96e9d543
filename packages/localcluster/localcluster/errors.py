"""metav1.Status error bodies with the reasons, codes and messages of the real apiserver."""

from __future__ import annotations

import json

import orjson

from .validation import go_float


class ApiError(Exception):
    """Raised anywhere in a request; the server turns it into a Status response."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None,
                 headers: dict | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.warnings: list[str] = []  # what admission webhooks warned of before one refused

    def status(self) -> dict:
        return status_body(self.code, self.reason, self.message, self.details)


def status_body(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if not reason:  # StatusReasonUnknown is "", which metav1.Status omits (omitempty)
        del body["reason"]
    if details is not None:
        body["details"] = details
    return body


def _details(resource: str, name: str, group: str) -> dict:
    details = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return details


def not_found(qualified_resource: str, name: str, group: str = "", resource: str = "") -> ApiError:
    return ApiError(404, "NotFound", f'{qualified_resource} "{name}" not found',
                    _details(resource or qualified_resource, name, group))


def unknown_path() -> ApiError:
    """The NotFound of a path no API serves (an unknown group, resource or subresource): the real server's
    `details` is there and empty (NewNotFound of nothing), and clients read it. kubectl debug tells a missing
    `pods/ephemeralcontainers` from a missing pod by its empty `details.name`, and panics without `details`."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(qualified_resource: str, name: str, group: str = "", resource: str = "") -> ApiError:
    return ApiError(409, "AlreadyExists", f'{qualified_resource} "{name}" already exists',
                    _details(resource or qualified_resource, name, group))


def conflict(qualified_resource: str, name: str, why: str, group: str = "", resource: str = "") -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified_resource} "{name}": {why}',
                    _details(resource or qualified_resource, name, group))


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_large_resource_version(asked: int, current: int) -> ApiError:
    """A read at a revision the server has not reached (storage.NewTooLargeResourceVersionError)."""
    return ApiError(504, "Timeout", f"Too large resource version: {asked}, current: {current}",
                    {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                     "retryAfterSeconds": 1}, headers={"Retry-After": "1"})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(accepted: tuple[str, ...]) -> ApiError:
    """415 for a body type the endpoint does not take, listing those it does (negotiation's wording)."""
    return ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                    "media types include: " + ", ".join(accepted))


def apply_conflict(conflicts: list[tuple[str, str]]) -> ApiError:
    """409 for server-side apply conflicts, from (manager as printed, field path) pairs (NewConflictError)."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {manager}", "field": path}
              for manager, path in conflicts]
    if len(conflicts) == 1:
        manager, path = conflicts[0]
        return ApiError(409, "Conflict", f"Apply failed with 1 conflict: conflict with {manager}: {path}",
                        {"causes": causes})
    lines = []
    for manager in sorted({manager for manager, _ in conflicts}):
        lines.append(f"conflicts with {manager}:")
        lines += [f"- {path}" for other, path in conflicts if other == manager]
    return ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines),
                    {"causes": causes})


def too_many_requests(retry_after: int) -> ApiError:
    return ApiError(429, "TooManyRequests", "the server has received too many requests and has asked us "
                    "to try again later", {"retryAfterSeconds": retry_after},
                    headers={"Retry-After": str(retry_after)})


# etcd's --max-request-bytes by default: a write whose object is larger is refused by etcd.
ETCD_MAX_REQUEST_BYTES = 1536 * 1024


def etcd_request_too_large() -> ApiError:
    """What the apiserver answers when etcd refuses a write as too large: the storage error is no Status, so
    ErrorToAPIStatus makes it a 500 of reason Unknown (omitted) with etcd's message (kubernetes#112152)."""
    return ApiError(500, "", "etcdserver: request is too large")


def unreasoned_error(message: str) -> ApiError:
    """A plain Go error reaching the apiserver's handler (not an API status): ErrorToAPIStatus makes it a 500
    whose Status has no reason, which kubectl prints as `Error from server: MESSAGE`."""
    return ApiError(500, "", message)


def internal_error(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}",
                    {"causes": [{"message": message}]})


def invalid(qualified_kind: str, name: str, group: str, kind: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid from (reason, field, error string) triples, formatted as apierrors.NewInvalid."""
    strings = list(dict.fromkeys(text for _, _, text in causes))  # the apiserver drops repeated errors
    summary = strings[0] if len(strings) == 1 else "[" + ", ".join(strings) + "]"
    details = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": r, "message": _cause_message(f, t), "field": f} for r, f, t in causes],
    }
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {summary}', details)


def _cause_message(field: str, text: str) -> str:
    prefix = field + ": "
    return text[len(prefix):] if text.startswith(prefix) else text


def strict_patch_error(content_type: str, patch, patched: dict, unknown: str) -> ApiError:
    """A PATCH of a built-in kind whose result has unknown fields, under fieldValidation=Strict: the patch
    handlers' 422 with no kind or name, whose field `patch` holds the strategic merge patch as Go prints
    it (`%+v` of its map) or, for JSON and merge patches, the patched object's JSON (here with sorted
    keys, where Go writes a struct's fields in their declared order)."""
    if content_type == "application/strategic-merge-patch+json":
        shown = go_print(patch)
    else:
        shown = orjson.dumps(patched, option=orjson.OPT_SORT_KEYS).decode()
    text = f"patch: Invalid value: {_go_quote(shown)}: strict decoding error: {unknown}"
    return invalid("", "", "", "", [("FieldValueInvalid", "patch", text)])


def go_print(value) -> str:
    """fmt's %+v of what sigs.k8s.io/json decodes JSON into: map[k:v ...] with sorted keys, [a b], <nil>."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{go_print(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_print(item) for item in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value, printf=True)
    return str(value)


def _go_quote(text: str) -> str:
    """strconv.Quote, as field.Error prints a string value (control characters aside)."""
    return json.dumps(text, ensure_ascii=False)
