"""A CRD schema compiled once into a tree of nodes, its keywords read and its regexes and CEL rules
compiled; cached by the schema dict's identity."""

from __future__ import annotations

import re

from .field_errors import ABSENT
from .formats import FORMAT_CHECKS
from .memo import BySchema
from .rules import Rule

# --- compiled schemas ---------------------------------------------------------------------------


class Node:
    """One schema node with its keywords read, its regex and CEL rules compiled."""

    __slots__ = (
        "additional", "all_of", "any_of", "atomic_map", "default", "embedded", "enum",
        "exclusive_maximum", "exclusive_minimum", "format", "format_check", "has_defaults",
        "has_rules", "has_transition_rules", "items", "list_type", "map_keys", "max_items",
        "max_length", "max_properties", "maximum", "min_items", "min_length", "min_properties",
        "minimum", "multiple_of", "not_", "nullable", "one_of", "own_transition_rules", "pattern",
        "preserve_unknown", "properties", "regex", "required", "rules", "schema_type", "types",
        "unique_items",
    )

    def __init__(self, schema: dict) -> None:
        self._read_shape(schema)
        self._read_value_limits(schema)
        self._read_compositions(schema)
        self._read_rules(schema)
        self._summarize()

    def _read_shape(self, schema: dict) -> None:
        self.schema_type = schema.get("type") or ""
        if schema.get("x-kubernetes-int-or-string"):
            self.types: tuple[str, ...] = ("integer", "string")
        else:
            self.types = (self.schema_type,) if self.schema_type else ()
        self.nullable = bool(schema.get("nullable"))
        self.preserve_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        self.embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        self.atomic_map = schema.get("x-kubernetes-map-type") == "atomic"
        self.properties = {name: Node(sub) for name, sub in (schema.get("properties") or {}).items()}
        extra = schema.get("additionalProperties")
        self.additional: Node | bool | None = Node(extra) if isinstance(extra, dict) else extra
        items = schema.get("items")
        self.items = Node(items) if isinstance(items, dict) else None
        self.required = tuple(schema.get("required") or ())
        self.default = schema.get("default", ABSENT)
        self.list_type = schema.get("x-kubernetes-list-type")
        self.map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())

    def _read_value_limits(self, schema: dict) -> None:
        self.enum = schema.get("enum") or None  # kube-openapi ignores an empty enum
        self.minimum = schema.get("minimum")
        self.maximum = schema.get("maximum")
        self.exclusive_minimum = bool(schema.get("exclusiveMinimum"))
        self.exclusive_maximum = bool(schema.get("exclusiveMaximum"))
        self.multiple_of = schema.get("multipleOf")
        self.min_length = schema.get("minLength")
        self.max_length = schema.get("maxLength")
        self.pattern = schema.get("pattern")
        self.regex = None
        if self.pattern is not None:
            try:
                self.regex = re.compile(self.pattern)
            except re.error as err:  # never matches, and says why, as kube-openapi does
                self.pattern = f"{self.pattern}, but pattern is invalid: {err}"
        self.format = schema.get("format") or ""
        self.format_check = FORMAT_CHECKS.get(self.format.replace("-", ""))
        self.min_items = schema.get("minItems")
        self.max_items = schema.get("maxItems")
        self.unique_items = bool(schema.get("uniqueItems"))
        self.min_properties = schema.get("minProperties")
        self.max_properties = schema.get("maxProperties")

    def _read_compositions(self, schema: dict) -> None:
        self.all_of = tuple(Node(sub) for sub in schema.get("allOf") or ())
        self.any_of = tuple(Node(sub) for sub in schema.get("anyOf") or ())
        self.one_of = tuple(Node(sub) for sub in schema.get("oneOf") or ())
        self.not_ = Node(schema["not"]) if isinstance(schema.get("not"), dict) else None

    def _read_rules(self, schema: dict) -> None:
        self.rules = tuple(Rule.from_spec(spec) for spec in schema.get("x-kubernetes-validations") or ())
        self.own_transition_rules = any(rule.uses_old_self for rule in self.rules)

    def _summarize(self) -> None:
        """Subtree flags that let the walks skip whole branches."""
        extra = self.additional if isinstance(self.additional, Node) else None
        children = [child for child in (*self.properties.values(), self.items, extra) if child is not None]
        self.has_defaults: bool = any(child.default is not ABSENT or child.has_defaults for child in children)
        self.has_rules: bool = bool(self.rules) or any(c.has_rules for c in (*children, *self.all_of))
        self.has_transition_rules: bool = self.own_transition_rules or any(
            c.has_transition_rules for c in children)


compiled_node: BySchema[Node] = BySchema(Node)  # a schema dict's compiled form, built on first use


