"""A webhook's matchConditions (admission/plugin/webhook/matchconditions): CEL expressions over `object`,
`oldObject`, `request` and `authorizer`, evaluated with the CEL of the ValidatingAdmissionPolicy plugin
(validating_policies.py). The webhook is called when all hold; one that is false skips it; errors (none
false) are the caller's to weigh against the failurePolicy."""

from __future__ import annotations

import celpy
from celpy import celtypes

from .validating_policies import _Authorizer, _error_text, _run, compile_expression


def evaluate(conditions: list, objects: tuple[dict | None, dict | None], request_body: dict, request) -> str | None:
    """None: every condition holds; "": one is false; else the error text (errors joined as Go's aggregate)."""
    obj, old = objects
    activation = {"object": celpy.json_to_cel(obj), "oldObject": celpy.json_to_cel(old),
                  "request": celpy.json_to_cel({**request_body, "dryRun": request.dry_run,
                                                "options": request.options})}
    if request.authorize is not None:
        rt = request.rt
        activation["authorizer"] = _Authorizer(request.authorize, request.user, {
            "api_group": rt.group, "resource": rt.plural, "subresource": request.subresource,
            "namespace": request.namespace, "name": request.name})
    failures = []
    for condition in conditions:
        text = str((condition or {}).get("expression") or "")
        program, error = compile_expression(text)
        result = _run(program, activation) if program is not None else Exception(error)
        if isinstance(result, Exception):
            failures.append(f"expression '{text}' resulted in error: {_error_text(result)}")
        elif result is False or (isinstance(result, celtypes.BoolType) and not result):
            return ""
        elif not isinstance(result, bool | celtypes.BoolType):
            failures.append(f"expression '{text}' resulted in error: no such overload")
    if not failures:
        return None
    return failures[0] if len(failures) == 1 else "[" + ", ".join(failures) + "]"
