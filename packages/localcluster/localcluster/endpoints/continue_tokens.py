"""Continue tokens of paginated lists: shaped as kube-apiserver's, and bound to the list they continue.

kube-apiserver's token (k8s.io/apiserver/pkg/storage/continue.go) is base64url JSON
`{"v": "meta.k8s.io/v1", "rv": N, "start": KEY}`: the revision the first page was read at and the etcd
key to go on from, relative to the request's key prefix. The server keeps nothing: every page is a new
read of the request's own resource and namespace at revision N, filtered by the request's own
selectors, so a forged token can at worst restart a list the caller may read anyway.

localcluster reads pages the same way (Store.objects_at) and adds what the stateless design makes
unnecessary there but cheap here: an HMAC, under a key drawn at random for each server, over the
resource (its storage key, as etcd's key prefix), the namespace, both selectors (a `metadata.name`
field selector is what a list authorized by RBAC `resourceNames` carries), the revision and the start
key. A token is therefore unguessable, and one presented with another resource, namespace or selector
is refused with the server's 400 "continue key is not valid" instead of being reinterpreted.

The answers are kube-apiserver's: 400 "invalid continue token: continue key is not valid: ..." for a
token that does not decode (DecodeContinue's messages), 410 Expired once its revision is compacted,
with a token to go on at the latest revision (etcd3's handleCompactedErrorForPaging).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import posixpath
import re
import secrets
from dataclasses import dataclass

import orjson

from .. import errors
from ..errors import ApiError
from .request_options import go_json_error

VERSION = "meta.k8s.io/v1"
_INVALID = "invalid continue token: continue key is not valid"
_RAW_URL_B64 = re.compile(r"[A-Za-z0-9_-]")
_GO_TYPES = {list: "array", dict: "object", str: "string", bool: "bool", int: "number", float: "number"}
CONTINUE_EXPIRED = ("The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter.")
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list.")


@dataclass(frozen=True, slots=True)
class ListScope:
    """What a list reads, as a token is bound to it: the key prefix and the selectors."""

    storage_key: tuple[str, str]
    namespace: str | None
    label_selector: str
    field_selector: str
    spans_namespaces: bool  # a namespaced resource listed across namespaces: keys are "namespace/name"

    def key(self, obj: dict) -> str:
        """The object's etcd key relative to the list's prefix: pages follow this order, as etcd's do."""
        meta = obj["metadata"]
        return f"{meta.get('namespace', '')}/{meta['name']}" if self.spans_namespaces else meta["name"]


class ExpiredContinue(ApiError):
    """410 Expired carrying, in the Status's metadata, a token that goes on at the latest revision."""

    def __init__(self, token: str) -> None:
        super().__init__(410, "Expired", INCONSISTENT_CONTINUE)
        self.token = token

    def status(self) -> dict:
        body = super().status()
        body["metadata"] = {"continue": self.token}
        return body


class ContinueTokens:
    """Issues and opens the continue tokens of one server (its HMAC key dies with it)."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def issue(self, scope: ListScope, rv: int, start: str) -> str:
        """The token for the page starting at `start` (the last key served + "\\x00") of the list read at `rv`."""
        token = {"v": VERSION, "rv": rv, "start": start, "mac": self._mac(scope, rv, start)}
        return base64.urlsafe_b64encode(orjson.dumps(token)).decode().rstrip("=")

    def open(self, value: str, scope: ListScope) -> tuple[int, str]:
        """(revision, start key) of a token issued for `scope`; 400 for anything else."""
        token = _decode(value)
        start = token.get("start")
        if not isinstance(start, str) or not hmac.compare_digest(str(token.get("mac", "")),
                                                                 self._mac(scope, token["rv"], start)):
            raise errors.bad_request(f"{_INVALID}: the token was issued for another list (resource, "
                                     "namespace or selectors)")
        return token["rv"], start

    def expired(self, scope: ListScope, start: str) -> ExpiredContinue:
        """The 410 for a token whose revision is compacted: go on at the latest one (rv -1), or start over."""
        return ExpiredContinue(self.issue(scope, -1, start))

    def _mac(self, scope: ListScope, rv: object, start: str) -> str:
        bound = orjson.dumps([*scope.storage_key, scope.namespace, scope.label_selector, scope.field_selector,
                              rv, start])
        return base64.urlsafe_b64encode(hmac.new(self._key, bound, hashlib.sha256).digest()).decode().rstrip("=")


def _decode(value: str) -> dict:
    """DecodeContinue's checks and messages, in its order."""
    data = _raw_url_b64decode(value)
    try:
        token = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"{_INVALID}: {go_json_error(data, exc)}") from None
    if token is None:
        token = {}
    if not isinstance(token, dict):
        raise errors.bad_request(f"{_INVALID}: json: cannot unmarshal {_GO_TYPES[type(token)]} into Go value "
                                 "of type storage.continueToken")
    for field, kind, go_type in (("v", str, "string"), ("rv", int, "int64"), ("start", str, "string")):
        found = token.get(field)
        if found is not None and (not isinstance(found, kind) or isinstance(found, bool)):
            raise errors.bad_request(f"{_INVALID}: json: cannot unmarshal {_GO_TYPES.get(type(found), 'value')} "
                                     f"into Go struct field continueToken.{field} of type {go_type}")
    if token.get("v", "") != VERSION:
        raise errors.bad_request(f"{_INVALID}: server does not recognize this encoded version {token.get('v', '')}")
    if not token.get("rv"):
        raise errors.bad_request(f"{_INVALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    start = token.get("start") or ""
    if not start:
        raise errors.bad_request(f"{_INVALID}: encoded start key empty (version meta.k8s.io/v1)")
    rooted = start if start.startswith("/") else "/" + start
    if _go_path_clean(rooted) != rooted:  # path traversal out of the key prefix
        raise errors.bad_request(f"{_INVALID}: {start}")
    return token


def _raw_url_b64decode(value: str) -> bytes:
    """Go's base64.RawURLEncoding.DecodeString: no padding; its error names the first bad byte."""
    text = value.replace("\r", "").replace("\n", "")
    for index, char in enumerate(text):
        if not _RAW_URL_B64.fullmatch(char):
            raise errors.bad_request(f"{_INVALID}: illegal base64 data at input byte {index}")
    if len(text) % 4 == 1:
        raise errors.bad_request(f"{_INVALID}: illegal base64 data at input byte {len(text) - 1}")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _go_path_clean(path: str) -> str:
    """Go's path.Clean of a rooted path (posixpath.normpath keeps a leading "//", Go does not)."""
    cleaned = posixpath.normpath(path)
    return "/" + cleaned.lstrip("/")
