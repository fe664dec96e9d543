"""The structural schema check (apiextensions' structural schema rules) a CRD's schema must pass."""

from __future__ import annotations

from typing import Any

from .field_errors import go_quote
from .rules import cel_program

# --- structural schema check --------------------------------------------------------------------


def structural_problems(schema: Any, path: str, scope: str, problems: list[str]) -> None:
    where = f"{path}." if path else ""
    if not isinstance(schema, dict):
        problems.append(f"{path or '<root>'}: Invalid value: must be a schema object")
        return
    if not (schema.get("type") or schema.get("x-kubernetes-int-or-string")
            or schema.get("x-kubernetes-preserve-unknown-fields")):
        problems.append(f"{where}type: Required value: must not be empty {scope}")
    if schema.get("type") == "array" and not isinstance(schema.get("items"), dict):
        problems.append(f"{where}items: Required value: must be specified")
    if schema.get("x-kubernetes-list-type") == "map" and not schema.get("x-kubernetes-list-map-keys"):
        problems.append(f"{where}x-kubernetes-list-map-keys: Required value: "
                        "must not be empty if x-kubernetes-list-type is map")
    for index, rule in enumerate(schema.get("x-kubernetes-validations") or ()):
        text = (rule.get("rule") or "").strip() if isinstance(rule, dict) else ""
        error = cel_program(text)[1] if text else "rule must not be empty"
        if error:
            problems.append(f"{where}x-kubernetes-validations[{index}].rule: Invalid value: "
                            f"{go_quote(text)}: compilation failed: {error}")
    for name, child in (schema.get("properties") or {}).items():
        structural_problems(child, f"{where}properties[{name}]", "for specified object fields", problems)
    if "items" in schema:
        structural_problems(schema["items"], f"{where}items", "for specified array items", problems)
    if isinstance(schema.get("additionalProperties"), dict):
        structural_problems(schema["additionalProperties"], f"{where}additionalProperties",
                                     "for specified object fields", problems)
