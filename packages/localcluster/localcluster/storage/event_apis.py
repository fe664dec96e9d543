"""Events: one store seen through two APIs, core/v1 and events.k8s.io/v1, as the apiserver serves them.

The apiserver keeps every Event as a core/v1 Event and converts an events.k8s.io/v1 request to it and
back (k8s.io/kubernetes pkg/apis/events/v1/conversion.go), so an Event written through one API is
listed, read and watched through the other, with one resourceVersion. The field names differ
(`note` is `message`, `regarding` is `involvedObject`, ...), and so do the rules: an events.k8s.io/v1
write is validated strictly (eventTime, reportingController, action... are required), a core/v1 write
only by the legacy rules (pkg/apis/core/validation/events.go). Field selectors are the Event
strategy's selectable fields (pkg/registry/core/event), named in events.k8s.io/v1 by that API's
field label conversion. Length limits count bytes of UTF-8, as Go's len() does: a `note` of 1,000
Chinese characters (3,000 bytes) is over the 1024 limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import orjson

from apimachinery.validation import qualified_name_errors

from .. import errors
from ..validation import Cause, FieldRequirement, FieldSelector, builtins

STORAGE = ("", "events")  # where both APIs keep their Events: core/v1's bucket
GROUP = "events.k8s.io"
CORE = "v1"

# (core/v1 field, events.k8s.io/v1 field), in core/v1's field order. Every field of either has a
# counterpart: the conversion loses nothing.
FIELDS = (
    ("involvedObject", "regarding"), ("reason", "reason"), ("message", "note"), ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"), ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"), ("type", "type"), ("eventTime", "eventTime"), ("series", "series"),
    ("action", "action"), ("related", "related"), ("reportingComponent", "reportingController"),
    ("reportingInstance", "reportingInstance"),
)
EVENTS_ORDER = ("eventTime", "series", "reportingController", "reportingInstance", "action", "reason", "regarding",
                "related", "note", "type", "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp",
                "deprecatedCount")
# How Go's encoder writes an unset field that `omitempty` does not drop: a struct as {}, a metav1.Time
# as null, a string without omitempty as "". Every other unset field is left out.
UNSET: dict[str, dict[str, object]] = {
    CORE: {"involvedObject": dict, "source": dict, "firstTimestamp": None, "lastTimestamp": None,
           "eventTime": None, "reportingComponent": "", "reportingInstance": ""},
    f"{GROUP}/v1": {"eventTime": None, "regarding": dict, "deprecatedSource": dict,
                    "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None},
}


def _unset(value) -> bool:
    return value is None or value == "" or (type(value) is int and value == 0)


def _names(version: str) -> tuple[str, ...]:
    """The fields of FIELDS as `version` names them."""
    return tuple(core if version == CORE else events for core, events in FIELDS)


def convert(event: dict, source: str, target: str) -> dict:
    """An Event written in apiVersion `source` as the apiserver renders it in apiVersion `target`.

    With `source` == `target` == "v1", what a core/v1 write is stored and read back as.
    """
    values = {}
    for name, renamed in zip(_names(source), _names(target), strict=True):
        value = event.get(name)
        if not _unset(value):
            values[renamed] = value
    unset = UNSET[target]
    out: dict = {"apiVersion": target, "kind": "Event", "metadata": event.get("metadata") or {}}
    for name in _names(CORE) if target == CORE else EVENTS_ORDER:
        if name in values:
            out[name] = values[name]
        elif name in unset:
            out[name] = {} if unset[name] is dict else unset[name]
    return out


# --- validation (pkg/apis/core/validation/events.go), on the stored core/v1 form ----------------------
# Errors name the fields as the internal type does: reportingController, message, involvedObject.

# Limits in bytes of UTF-8, as Go's len() counts them, though the messages say "characters".
REQUIRED_WITH_LIMIT = (("reportingInstance", 128), ("action", 128), ("reason", 128))
NOTE_LENGTH_LIMIT = 1024


def _length(value: str) -> int:
    """Go's len(string): bytes of UTF-8 (a lone surrogate, which Go's decoder makes U+FFFD, counts 3)."""
    return len(value.encode("utf-8", "surrogatepass"))

# (error path, stored field) of what an events.k8s.io/v1 update may not change, in the order checked.
IMMUTABLE = (("involvedObject", "involvedObject"), ("reason", "reason"), ("message", "message"),
             ("source", "source"), ("firstTimestamp", "firstTimestamp"), ("lastTimestamp", "lastTimestamp"),
             ("count", "count"), ("reason", "reason"), ("type", "type"), ("eventTime", "eventTime"),
             ("action", "action"), ("related", "related"), ("reportingController", "reportingComponent"),
             ("reportingInstance", "reportingInstance"))


def validate(event: dict, old: dict | None, strict: bool) -> list[Cause]:
    """Every write passes the legacy rules; one through events.k8s.io/v1 (`strict`) the strict ones too.

    The common metadata checks (a core/v1 Event's name need only be a path segment) come after, and
    only when the Event's own rules found nothing, as the generic registry runs them.
    """
    causes = _legacy(event)
    if strict:
        causes += _strict_create(event) if old is None else _strict_update(event, old)
    return causes or builtins.metadata_errors(event, "path")


def _legacy(event: dict) -> list[Cause]:
    namespace = (event.get("metadata") or {}).get("namespace") or ""
    regarding = (event.get("involvedObject") or {}).get("namespace") or ""
    mismatch = builtins.invalid_value("involvedObject.namespace", regarding, "does not match event.namespace")
    out: list[Cause] = []
    if _unset(event.get("eventTime")):  # an old-style Event
        if namespace != regarding if regarding else namespace not in ("", "default"):
            out.append(mismatch)
    else:
        if not regarding and namespace not in ("default", "kube-system"):
            out.append(mismatch)
        controller = event.get("reportingComponent") or ""
        if not controller:
            out.append(builtins.required("reportingController"))
        out += [builtins.invalid_value("reportingController", controller, problem)
                for problem in qualified_name_errors(controller)]
        for field, limit in REQUIRED_WITH_LIMIT:
            value = event.get(field) or ""
            if not value:
                out.append(builtins.required(field))
            if _length(value) > limit:
                out.append(builtins.invalid_value(field, "", f"can have at most {limit} characters"))
        if _length(event.get("message") or "") > NOTE_LENGTH_LIMIT:
            out.append(builtins.invalid_value("message", "", f"can have at most {NOTE_LENGTH_LIMIT} characters"))
    return out + builtins.name_errors(namespace, "namespace", "subdomain")


def _strict_create(event: dict) -> list[Cause]:
    out = builtins.metadata_errors(event, "subdomain") + _series(event)
    if _unset(event.get("eventTime")):
        out.append(builtins.required("eventTime"))
    if event.get("type") not in ("Normal", "Warning"):
        out.append(builtins.invalid_value("type", "", f"has invalid value: {event.get('type') or ''}"))
    for field in ("firstTimestamp", "lastTimestamp", "count"):
        if not _unset(event.get(field)):
            out.append(builtins.invalid_value(field, "", "needs to be unset"))
    source = event.get("source") or {}
    if source.get("component") or source.get("host"):
        out.append(builtins.invalid_value("source", "", "needs to be unset"))
    return out


def _series(event: dict) -> list[Cause]:
    series = event.get("series")
    if series is None:
        return []
    out = []
    if (series.get("count") or 0) < 2:
        out.append(builtins.invalid_value("series.count", "", "should be at least 2"))
    if _unset(series.get("lastObservedTime")):
        out.append(builtins.required("series.lastObservedTime"))
    return out


def _strict_update(event: dict, old: dict) -> list[Cause]:
    out = _series(event) if event.get("series") != old.get("series") else []
    for path, field in IMMUTABLE:
        value = event.get(field)
        if _comparable(field, value) != _comparable(field, old.get(field)):
            out.append(("FieldValueInvalid", path, f"{path}: Invalid value: {_go_value(field, value)}: "
                                                   f"field is immutable"))
    return out


TIMES = ("firstTimestamp", "lastTimestamp", "eventTime")
# The internal Go structs behind a field, with (Go field, JSON field) in declaration order: %#v prints them.
REFERENCE = ("core.ObjectReference", (("Kind", "kind"), ("Namespace", "namespace"), ("Name", "name"),
                                      ("UID", "uid"), ("APIVersion", "apiVersion"),
                                      ("ResourceVersion", "resourceVersion"), ("FieldPath", "fieldPath")))
GO_STRUCTS = {"involvedObject": REFERENCE, "related": REFERENCE,
              "source": ("core.EventSource", (("Component", "component"), ("Host", "host")))}


def _instant(value) -> datetime | None:
    if _unset(value):
        return None
    try:
        return datetime.fromisoformat(str(value)).astimezone(UTC)
    except ValueError:
        return None


def _comparable(field: str, value):
    """The value as the apiserver's semantic equality sees it: a time by its instant, a struct by its set fields."""
    if field in TIMES:
        return _instant(value)
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if not _unset(v)}
    return None if _unset(value) else value


def _quote(text: str) -> str:
    return orjson.dumps(text).decode()


def _go_value(field: str, value) -> str:
    """A value as field.Invalid prints it: strings quoted, times by time.Time.String, structs by %#v."""
    if field in TIMES:
        at = _instant(value) or datetime(1, 1, 1, tzinfo=UTC)
        fraction = f"{at.microsecond:06d}".rstrip("0")
        return at.strftime("%Y-%m-%d %H:%M:%S") + (f".{fraction}" if fraction else "") + " +0000 UTC"
    if field in GO_STRUCTS:
        if value is None:
            return "null"
        go_type, fields = GO_STRUCTS[field]
        return go_type + "{" + ", ".join(f"{go}:{_quote(str(value.get(name) or ''))}" for go, name in fields) + "}"
    if field == "count":
        return str(value or 0)
    return _quote(value or "")


# --- field selectors ---------------------------------------------------------------------------------

CORE_LABELS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
               "reason", "reportingComponent", "source", "type", "metadata.namespace", "metadata.name")
# events.k8s.io/v1's field label conversion: its labels, as the core/v1 labels they select by.
EVENTS_LABELS = {"reason": "reason", "reportingController": "reportingComponent", "source": "source",
                 "type": "type", "metadata.namespace": "metadata.namespace", "metadata.name": "metadata.name",
                 **{f"regarding.{f}": f"involvedObject.{f}" for f in ("kind", "namespace", "name", "uid",
                                                                      "apiVersion", "resourceVersion",
                                                                      "fieldPath")}}


class EventFieldSelector(FieldSelector):
    """A field selector by core/v1 labels, matched against the fields the Event strategy makes selectable."""

    __slots__ = ()

    def matches(self, event: Mapping) -> bool:
        meta = event.get("metadata") or {}
        source = (event.get("source") or {}).get("component") or event.get("reportingComponent") or ""
        return super().matches({
            "metadata": {"name": meta.get("name", ""), "namespace": meta.get("namespace", "")},
            "involvedObject": event.get("involvedObject") or {}, "reason": event.get("reason", ""),
            "reportingComponent": event.get("reportingComponent", ""), "source": source,
            "type": event.get("type", "")})


def field_selector(selector: FieldSelector, group: str) -> EventFieldSelector:
    """The selector of a request to `group`'s Events, by core/v1 labels; 400 for a label the API has not."""
    requirements = []
    for requirement in selector.requirements:
        label = EVENTS_LABELS.get(requirement.field) if group == GROUP else (
            requirement.field if requirement.field in CORE_LABELS else None)
        if label is None:
            raise errors.bad_request(f"field label not supported: {requirement.field}")
        requirements.append(FieldRequirement(label, requirement.operator, requirement.value))
    return EventFieldSelector(requirements)
