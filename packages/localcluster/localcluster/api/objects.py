"""The storage keys and names the verbs share, the time they stamp, and a PATCH body applied."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from .. import errors
from ..errors import ApiError
from ..storage import deletion
from ..validation import BySchema

NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
NAMESPACES = ("", "namespaces")
PODS = ("", "pods")
DEPLOYMENTS = ("apps", "deployments")
REPLICA_SETS = ("apps", "replicasets")
# The field manager of the cluster's own writes (bootstrap objects, default namespaces).
SERVER_MANAGER = "kube-apiserver"
APPLY_PATCH = "application/apply-patch+yaml"
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


_this_second: list = [0, ""]  # (epoch second, its RFC 3339 text): most writes format the same second


def now_rfc3339(delta: float = 0.0) -> str:
    if delta:
        return deletion.rfc3339(datetime.now(UTC) + timedelta(seconds=delta))
    second = int(time.time())
    if second != _this_second[0]:
        _this_second[:] = [second, deletion.rfc3339(datetime.fromtimestamp(second, UTC))]
    return _this_second[1]


def _status_only(schema: dict) -> dict:
    """A CRD's schema reduced to its status subtree (a /status write checks only that)."""
    reduced = {k: v for k, v in schema.items() if k not in ("required", "x-kubernetes-validations")}
    return {**reduced, "properties": {"status": schema["properties"]["status"]}}


status_schema: BySchema[dict] = BySchema(_status_only)


def without_keys(obj: dict, *keys: str) -> dict:
    return {k: v for k, v in obj.items() if k not in keys}


def patched(old: dict, content_type: str, patch, kind: str, strategic: bool, accepted: tuple[str, ...]) -> dict:
    """`old` with a PATCH body of `content_type` applied, or the apiserver's error: 415 listing the `accepted`
    types for a type the resource does not take (strategic merge patch needs a built-in kind), 422 or 400 for a
    patch that does not apply."""
    from ..fields import patch as patches

    try:
        if content_type == "application/json-patch+json":
            result = patches.json_patch(old, patch)
        elif content_type == "application/merge-patch+json":
            result = patches.json_merge_patch(old, patch)
        elif content_type == "application/strategic-merge-patch+json":
            if not strategic:
                raise errors.unsupported_media_type(accepted)
            result = patches.strategic_merge_patch(old, patch, kind)
        else:
            raise errors.unsupported_media_type(accepted)
    except patches.JsonPatchFailed as exc:
        raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request",
                       {"causes": [{"reason": "UnexpectedServerResponse", "message": str(exc)}]}) from exc
    except patches.PatchError as exc:
        raise ApiError(422 if content_type == "application/json-patch+json" else 400,
                       "Invalid" if content_type == "application/json-patch+json" else "BadRequest",
                       str(exc)) from exc
    if not isinstance(result, dict):
        raise errors.bad_request("the patch did not produce an object")
    return result


