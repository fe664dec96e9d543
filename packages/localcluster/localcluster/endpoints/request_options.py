"""Query parameters and DeleteOptions bodies decoded as kube-apiserver decodes them: a bad one is 400, not 500.

The apiserver converts a request's query into ListOptions or DeleteOptions with apimachinery's
runtime.ParameterCodec: an integer parameter goes through strconv.ParseInt, whose error is the whole
400 BadRequest message (`strconv.ParseInt: parsing "abc": invalid syntax`), so `limit=abc`,
`timeoutSeconds=nan` or `gracePeriodSeconds=1.5` are refused before anything is read or watched. A
DELETE with a body (handlers/delete.go) decodes only the body, as DeleteOptions, and ignores the query;
without one, the query. A body that is not JSON is 400 with the JSON serializer's message.
"""

from __future__ import annotations

import random
import re

import orjson
from aiohttp import web

from .. import errors
from . import protobuf

_INT64 = re.compile(r"[+-]?[0-9]+")
MIN_REQUEST_TIMEOUT = 1800  # seconds: kube-apiserver's --min-request-timeout default
# DeleteOptions' fields of a JSON type the body must match (sigs.k8s.io/json's error names the Go type).
_DELETE_FIELDS = {"gracePeriodSeconds": ((int,), "int64"), "propagationPolicy": ((str,), "string"),
                  "orphanDependents": ((bool,), "bool"), "dryRun": ((list,), "[]string"),
                  "preconditions": ((dict,), "v1.Preconditions"),
                  "ignoreStoreReadErrorWithClusterBreakingPotential": ((bool,), "bool")}
_JSON_TYPES = {list: "array", dict: "object", str: "string", bool: "bool", int: "number", float: "number"}
_FIND_KIND = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'


def go_quote(text: str) -> str:
    """Go's strconv.Quote: double quotes, with control characters and quotes escaped."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                        "\v": "\\v"}[char])
        elif char.isprintable() or char == " ":
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def int64_param(query, name: str) -> int | None:
    """A query parameter converted as Convert_Slice_string_To_int64 does (the first value); None if absent."""
    if name not in query:
        return None
    text = query.get(name)
    if not _INT64.fullmatch(text):
        raise errors.bad_request(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax")
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise errors.bad_request(f"strconv.ParseInt: parsing {go_quote(text)}: value out of range")
    return value


def list_limit(query) -> int:
    return int64_param(query, "limit") or 0


def watch_timeout(query) -> float:
    """A watch's length in seconds: timeoutSeconds, or when absent or 0 a random one between the
    minimum request timeout and twice it (handleWatch). A negative one ends the watch at once."""
    asked = int64_param(query, "timeoutSeconds")
    return asked if asked else MIN_REQUEST_TIMEOUT * (1 + random.random())


async def read_delete_options(request: web.Request, truthy) -> dict:
    """DeleteOptions from the body when there is one (JSON or protobuf), else from the query; validated."""
    return _validated(await _read_delete_options(request, truthy))


PROPAGATION = ("Foreground", "Background", "Orphan")


def _validated(options: dict) -> dict:
    """ValidateDeleteOptions' check of the propagation policy (the differential corpus found it missing:
    a delete with an unknown policy was carried out, the API server refuses it)."""
    policy = options.get("propagationPolicy")
    if policy is not None and policy not in PROPAGATION:
        supported = ", ".join(f'"{p}"' for p in (*PROPAGATION, "nil"))
        raise errors.invalid("DeleteOptions.meta.k8s.io", "", "meta.k8s.io", "DeleteOptions", [(
            "FieldValueNotSupported", "propagationPolicy",
            f'propagationPolicy: Unsupported value: "{policy}": supported values: {supported}')])
    return options


async def _read_delete_options(request: web.Request, truthy) -> dict:
    raw = await request.read() if request.can_read_body else b""
    if raw:
        if request.content_type == protobuf.MEDIA_TYPE:  # client-go's typed clients
            return protobuf.decode(raw, "meta.k8s.io/v1", "DeleteOptions")
        return _delete_options_json(raw)
    query = request.query
    options: dict = {}
    grace = int64_param(query, "gracePeriodSeconds")
    if grace is not None:
        options["gracePeriodSeconds"] = grace
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "orphanDependents" in query:
        options["orphanDependents"] = truthy(query["orphanDependents"])
    return options


def _delete_options_json(raw: bytes) -> dict:
    try:
        options = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"couldn't get version/kind; json parse error: {go_json_error(raw, exc)}") from None
    if not isinstance(options, dict):
        raise errors.bad_request(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                                 f"{_JSON_TYPES.get(type(options), 'value')} into Go value of type {_FIND_KIND}")
    for field, (kinds, go_type) in _DELETE_FIELDS.items():
        value = options.get(field)
        if value is None:
            continue
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            found = f"number {value}" if isinstance(value, float) else _JSON_TYPES.get(type(value), "value")
            raise errors.bad_request(f"json: cannot unmarshal {found} into Go struct field DeleteOptions.{field} "
                                     f"of type {go_type}")
    return options


def go_json_error(data: bytes, exc: orjson.JSONDecodeError) -> str:
    """encoding/json's message for the common cases (a bad character where a value, a literal or a separator
    was expected, a cut-off document, trailing data), from orjson's error and position."""
    text, pos = str(exc), exc.pos
    literal = re.match(r"invalid literal, expected '(\w+)'", text)
    if literal:
        word = literal.group(1)
        pos += next((i for i, want in enumerate(word.encode()) if data[pos + i:pos + i + 1] != bytes([want])), 0)
        if pos < len(data):
            expected = _go_char(word[pos - exc.pos])
            return f"invalid character {_go_char(data[pos])} in literal {word} (expecting {expected})"
    if pos >= len(data.rstrip()):
        return "unexpected end of JSON input"
    where = "looking for beginning of value"
    for hint, go_where in (("after document", "after top-level value"), ("expected ':'", "after object key"),
                           ("expected ',' or '}'", "after object key:value pair"),
                           ("expected ',' or ']'", "after array element"),
                           ("expected '\"'", "looking for beginning of object key string"),
                           ("expected a string key", "looking for beginning of object key string")):
        if hint in text:
            where = go_where
    return f"invalid character {_go_char(data[pos])} {where}"


def _go_char(char: int | str) -> str:
    """Go's quoteChar: 'x', with a quote or backslash escaped, a control character as '\\x00'."""
    char = chr(char) if isinstance(char, int) else char
    if char in "'\\":
        return "'\\" + char + "'"
    if char.isprintable() and ord(char) < 0x80:
        return "'" + char + "'"
    return f"'\\x{ord(char):02x}'" if ord(char) < 0x100 else repr(char)
