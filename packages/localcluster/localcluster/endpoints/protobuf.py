"""Protobuf request bodies (`application/vnd.kubernetes.protobuf`), read as the JSON body they stand for.

client-go's typed clients (kubectl's `create` generators, `kubectl run`, `auth can-i`, controllers) send
built-in kinds as protobuf: the magic `k8s\\0`, then a runtime.Unknown whose `typeMeta` names the kind and
whose `raw` holds the message. The messages are those of k8s_protobuf.py, generated from Kubernetes'
published schema; the `protobuf` runtime parses the wire format against them. What comes out is the JSON
Go's encoding/json makes of the same Go object (the body a client sending JSON would have sent): JSON
names, omitempty and omitzero, nil pointers and slices as null, inlined structs, map keys sorted, int64
as numbers, bytes in base64, and the types with their own MarshalJSON (Time, MicroTime, Quantity,
IntOrString, FieldsV1).

A field this schema does not know (a newer client's) is a 400 naming it, where the real server's
decoder would drop it: never a silent loss.
"""

from __future__ import annotations

import base64
import functools
from datetime import UTC, datetime, timedelta

import orjson

from .. import errors
from ..validation import QuantityError, parse_quantity
from .k8s_protobuf import KINDS, PACKAGES, REF

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"
DELETE_OPTIONS = "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"
SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float"}
_OMIT = object()  # a field the JSON leaves out

def _full(type_: str, package: str) -> str:
    """A type of k8s_protobuf.py with its package: `[]Foo` in core/v1 -> `[]k8s.io.api.core.v1.Foo`."""
    if type_.startswith("map<"):
        key, value = type_[4:-1].split(",")
        return f"map<{key},{_full(value, package)}>"
    if type_.startswith("[]"):
        return "[]" + _full(type_[2:], package)
    return type_ if type_ in SCALARS or "." in type_ else f"{package}.{type_}"


# message full name -> (JSON form, fields with full type names)
SCHEMA: dict[str, tuple[str, tuple]] = {
    f"{package}.{name}": (form, tuple((n, p, _full(t, package), j, f) for n, p, t, j, f in fields))
    for package, messages in PACKAGES.items() for name, (form, fields) in messages.items()}


class DecodeError(Exception):
    """Why a body is not a valid message of its kind."""


def accepts(api_version: str, kind: str) -> bool:
    """Whether bodies of this kind may come as protobuf (the built-in kinds of Kubernetes' schema)."""
    return (api_version, kind) in KINDS


def decode(raw: bytes, api_version: str, kind: str) -> dict:
    """The object of a protobuf body sent to an endpoint of `kind`, as its JSON body would read.

    Raises a 400 worded as the apiserver's (protobuf.Serializer.Decode, then transformDecodeError).
    """
    sent: tuple[str, str] | None = None  # the envelope's (apiVersion, kind), the endpoint's where it has none
    try:
        if not raw:
            raise DecodeError("empty data")
        if not raw.startswith(MAGIC):
            raise DecodeError(f"provided data does not appear to be a protobuf message, expected prefix "
                              f"[{' '.join(map(str, MAGIC))}]")
        if raw == MAGIC:
            raise DecodeError("empty body")
        envelope = _parse(UNKNOWN, raw[len(MAGIC):])
        sent = (_text(envelope.typeMeta.apiVersion) or api_version, _text(envelope.typeMeta.kind) or kind)
        if envelope.contentEncoding:
            raise DecodeError(f"unsupported content encoding {envelope.contentEncoding!r}")
        message = DELETE_OPTIONS if sent[1] == "DeleteOptions" else KINDS.get(sent)
        if message is None:
            raise DecodeError(f'no kind "{sent[1]}" is registered for version "{sent[0]}"')
        try:
            obj = _render(_parse(message, envelope.raw), message, "")
        except UnicodeDecodeError as exc:  # the runtime reads a map's key that is not UTF-8 as str, and fails
            raise DecodeError(f"a string is not valid UTF-8: {exc}") from exc
    except DecodeError as exc:
        if sent is None:
            text = f"the object provided is unrecognized (must be of type {kind}): {exc} ({_summary(raw)})"
        else:
            text = f'{sent[1]} in version "{sent[0].rpartition("/")[2]}" cannot be handled as a {kind}: {exc}'
        raise errors.bad_request(text) from exc
    return {"kind": sent[1], "apiVersion": sent[0], **obj}


def _summary(data: bytes, limit: int = 30) -> str:
    """handlers.summarizeData: the start of a body, as text if it is JSON, else in hex."""
    if not data:
        return "<empty>"
    more = " ..." if len(data) > limit else ""
    if data[:1] == b"{":
        return data[:limit].decode(errors="replace") + more
    return data[:limit].hex() + more


# --- the protobuf runtime: message classes built from the schema ----------------------------------

@functools.cache
def _classes() -> dict[str, type]:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field_type = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()

    def typed(proto, type_: str) -> None:
        if type_ in SCALARS:
            proto.type = getattr(field_type, f"TYPE_{type_.upper()}")
        else:
            proto.type, proto.type_name = field_type.TYPE_MESSAGE, f".{type_}"

    for package, messages in PACKAGES.items():
        file = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package, syntax="proto2")
        needs = set()
        for name in messages:
            message = file.message_type.add(name=name)
            for number, proto_name, type_, _, _ in SCHEMA[f"{package}.{name}"][1]:
                proto = message.field.add(name=proto_name, number=number, label=field_type.LABEL_OPTIONAL)
                if type_.startswith("map<"):
                    key, value = type_[4:-1].split(",")
                    entry = message.nested_type.add(name=proto_name[0].upper() + proto_name[1:] + "Entry")
                    entry.options.map_entry = True
                    typed(entry.field.add(name="key", number=1, label=field_type.LABEL_OPTIONAL), key)
                    typed(entry.field.add(name="value", number=2, label=field_type.LABEL_OPTIONAL), value)
                    proto.label, proto.type = field_type.LABEL_REPEATED, field_type.TYPE_MESSAGE
                    proto.type_name = f".{package}.{name}.{entry.name}"
                    type_ = value
                elif type_.startswith("[]"):
                    proto.label = field_type.LABEL_REPEATED
                    type_ = type_[2:]
                    typed(proto, type_)
                else:
                    typed(proto, type_)
                if type_ not in SCALARS and not type_.startswith(f"{package}."):
                    needs.add(type_.rpartition(".")[0] + ".proto")
        file.dependency.extend(sorted(needs))
        pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name)) for name in SCHEMA}


def message_class(full_name: str) -> type:
    """The protobuf runtime's class of a message of the schema (to build bodies, in tests)."""
    return _classes()[full_name]


def _parse(full_name: str, data: bytes):
    from google.protobuf.message import DecodeError as WireError

    message = _classes()[full_name]()
    try:
        message.ParseFromString(data)
    except WireError as exc:
        raise DecodeError(f"{full_name}: {exc}") from exc
    return message


# --- Go's JSON of the parsed message ----------------------------------------------------------------

def _render(message, full_name: str, path: str):
    from google.protobuf.unknown_fields import UnknownFieldSet

    unknown = UnknownFieldSet(message)
    if len(unknown):
        first = unknown[0]
        where = f" at {path}" if path else ""
        raise DecodeError(f"unknown field number {first.field_number} (wire type {first.wire_type}) of "
                          f"{full_name}{where}: not in Kubernetes {REF}'s schema, which this server reads")
    form, fields = SCHEMA[full_name]
    if form != "struct":
        return _custom(message, form, path)
    out: dict = {}
    for _, proto_name, type_, json_name, flags in fields:
        value = _field(message, proto_name, type_, flags, f"{path}.{json_name}" if path else json_name)
        if value is _OMIT:
            continue
        if "i" in flags:
            if value is not None:
                out.update(value)
        else:
            out[json_name] = value
    return out


def _field(message, proto_name: str, type_: str, flags: str, path: str):
    empty = _OMIT if "e" in flags else None  # a nil pointer, slice or map
    if type_.startswith("map<"):
        entries = getattr(message, proto_name)
        if not entries:
            return empty
        value_type = type_[4:-1].split(",")[1]
        return {key: _element(entries[key], value_type, f"{path}[{key}]") for key in sorted(entries)}
    if type_.startswith("[]"):
        items = getattr(message, proto_name)
        if not items:
            return empty
        return [_element(item, type_[2:], f"{path}[{i}]") for i, item in enumerate(items)]
    present = message.HasField(proto_name)
    if "p" in flags and not present:
        return empty
    value = getattr(message, proto_name)
    if type_ in SCALARS:
        if type_ == "bytes" and not present:
            return empty  # a nil []byte
        if "e" in flags and "p" not in flags and not value:
            return _OMIT
        return _scalar(value, type_)
    rendered = _render(value, type_, path)
    if rendered is None and ("z" in flags or ("e" in flags and SCHEMA[type_][0] == "list")):
        return _OMIT  # omitzero of a zero Time; omitempty of an empty Go slice type
    return rendered


def _element(value, type_: str, path: str):
    return _scalar(value, type_) if type_ in SCALARS else _render(value, type_, path)


def _scalar(value, type_: str):
    if type_ == "bytes":
        return base64.b64encode(value).decode()
    return _text(value) if type_ == "string" else value


def _text(value):
    """A proto2 string field holding bytes that are not UTF-8 comes back as bytes: Go keeps them in its string,
    JSON writes them as U+FFFD."""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _custom(message, form: str, path: str):
    """The JSON of the Go types that marshal themselves."""
    if form == "list":  # a Go slice type (authentication's ExtraValue): nil is null
        return list(message.items) or None
    if form in ("time", "microtime"):
        if not message.ListFields():
            return None  # the zero Time (its protobuf form is empty)
        # Time keeps whole seconds, MicroTime microseconds (its nanos truncated), as their Unmarshal do.
        micros = int(message.nanos / 1000) if form == "microtime" else 0
        try:
            moment = datetime.fromtimestamp(message.seconds, UTC) + timedelta(microseconds=micros)
        except (OverflowError, OSError, ValueError) as exc:
            raise DecodeError(f"{path}: time out of range: {exc}") from exc
        text = f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}"
        return text + (f".{moment.microsecond:06d}Z" if form == "microtime" else "Z")
    if form == "quantity":
        if not message.HasField("string"):
            return "0"
        try:  # Quantity's protobuf Unmarshal: ParseQuantity of the string as it is (not trimmed)
            return str(parse_quantity(message.string))
        except QuantityError as exc:
            raise DecodeError(str(exc)) from exc
    if form == "intorstring":
        if message.type not in (0, 1):
            raise DecodeError(f"{path}: impossible IntOrString.Type")
        return message.strVal if message.type == 1 else message.intVal
    if form == "fieldsv1":
        if not message.HasField("Raw"):
            return None
        try:
            return orjson.loads(message.Raw)
        except orjson.JSONDecodeError as exc:
            raise DecodeError(f"{path}: {exc}") from exc
    raise DecodeError(f"{path}: a {form} cannot be part of an object")
