"""Decoding of the Kubernetes protobuf encoding, for the review kinds only.

client-go's typed clients (kubectl auth can-i, auth whoami) send built-in kinds as
`application/vnd.kubernetes.protobuf`: the magic `k8s\\0`, then a runtime.Unknown whose `raw` field
holds the object. The reviews' request fields are strings, so a small wire-format reader does.
"""

from __future__ import annotations

from .errors import bad_request

MAGIC = b"k8s\x00"

# message -> field number -> (JSON name, nested message or None for a string, repeated)
MESSAGES: dict[str, dict[int, tuple[str, str | None, bool]]] = {
    "ResourceAttributes": {1: ("namespace", None, False), 2: ("verb", None, False), 3: ("group", None, False),
                           4: ("version", None, False), 5: ("resource", None, False),
                           6: ("subresource", None, False), 7: ("name", None, False)},
    "NonResourceAttributes": {1: ("path", None, False), 2: ("verb", None, False)},
    "SelfSubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes", False),
                                    2: ("nonResourceAttributes", "NonResourceAttributes", False)},
    "SubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes", False),
                                2: ("nonResourceAttributes", "NonResourceAttributes", False),
                                3: ("user", None, False), 4: ("groups", None, True), 6: ("uid", None, False)},
    "TokenReviewSpec": {1: ("token", None, False), 2: ("audiences", None, True)},
    "SelfSubjectRulesReviewSpec": {1: ("namespace", None, False)},
    "ObjectMeta": {1: ("name", None, False), 2: ("generateName", None, False), 3: ("namespace", None, False)},
}
TOP = {kind: {1: ("metadata", "ObjectMeta", False), 2: ("spec", f"{kind}Spec", False)}
       for kind in ("SelfSubjectAccessReview", "SubjectAccessReview", "TokenReview", "SelfSubjectRulesReview")}
TOP["SelfSubjectReview"] = {1: ("metadata", "ObjectMeta", False)}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes):
    """(field number, wire type, value) for each field; value is bytes for length-delimited fields."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos:pos + size], pos + size
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, wire, value


def _message(data: bytes, schema: dict[int, tuple[str, str | None, bool]]) -> dict:
    out: dict = {}
    for number, wire, value in _fields(data):
        known = schema.get(number)
        if known is None or wire != 2:
            continue
        name, nested, repeated = known
        item = _message(value, MESSAGES[nested]) if nested else value.decode()
        if repeated:
            out.setdefault(name, []).append(item)
        else:
            out[name] = item
    return out


def decode_review(raw: bytes, kind: str) -> dict:
    """A review object from its protobuf encoding, as the JSON one would read."""
    try:
        if not raw.startswith(MAGIC):
            raise ValueError("no k8s protobuf magic number")
        unknown = {n: v for n, w, v in _fields(raw[len(MAGIC):]) if w == 2}
        type_meta = {n: v.decode() for n, w, v in _fields(unknown.get(1, b"")) if w == 2}
        obj = _message(unknown.get(2, b""), TOP[kind])
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"the body of the request could not be decoded as protobuf: {exc}") from exc
    obj["apiVersion"] = type_meta.get(1, "")
    obj["kind"] = type_meta.get(2, kind)
    return obj
