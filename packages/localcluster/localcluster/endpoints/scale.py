"""The scale subresource: an object's replica count read and written as an autoscaling/v1 Scale.

Served for Deployments and for custom resources whose CRD version declares `subresources.scale`, as
kube-apiserver's deployment ScaleREST and apiextensions-apiserver's scale storage serve it (what
`kubectl scale` and a HorizontalPodAutoscaler use): a GET builds the Scale from the object; a PUT or a
PATCH (applied to that Scale) changes the object's replicas and nothing else, with the Scale's
resourceVersion and uid as preconditions, and answers the Scale of the updated object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from apimachinery.selectors import SelectorError

from .. import errors
from ..admission.webhooks import View
from ..api import patched
from ..storage.resources import ResourceType, ScalePaths
from ..validation import label_selector_from_dict

if TYPE_CHECKING:
    from ..admission.webhook_steps import Steps
    from ..api import Api

API_VERSION = "autoscaling/v1"
# The Scale is a built-in kind, whatever it scales: strategic merge patch too.
SCALE_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                     "application/strategic-merge-patch+json")


def _steps(path: str) -> list[str]:
    return [step for step in path.split(".") if step]


def _read(obj: dict, path: str):
    value: Any = obj
    for step in _steps(path):
        if not isinstance(value, dict):
            return None
        value = value.get(step)
    return value


def _selector(obj: dict, paths: ScalePaths) -> str:
    if paths.label_selector_path is not None:
        found = _read(obj, paths.label_selector_path) if paths.label_selector_path else None
        return found if isinstance(found, str) else ""
    try:
        return str(label_selector_from_dict((obj.get("spec") or {}).get("selector")))
    except SelectorError as exc:  # the apiserver's Get answers 400 for a selector it cannot convert
        raise errors.bad_request(str(exc)) from exc


def scale_of(rt: ResourceType, obj: dict) -> dict:
    """scaleFromDeployment / scaleFromCustomResource: missing replica counts read as 0."""
    assert rt.scale is not None
    meta = obj["metadata"]
    spec_replicas = _read(obj, rt.scale.spec_replicas)
    status_replicas = _read(obj, rt.scale.status_replicas)
    spec = {"replicas": spec_replicas} if isinstance(spec_replicas, int) and spec_replicas else {}
    status: dict = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    selector = _selector(obj, rt.scale)
    if selector:
        status["selector"] = selector
    kept = {key: meta[key] for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in meta}
    return {"kind": "Scale", "apiVersion": API_VERSION, "metadata": kept, "spec": spec, "status": status}


def get(api: Api, rt: ResourceType, namespace: str | None, name: str) -> dict:
    return scale_of(rt, api.get(rt, namespace, name))


def update(api: Api, rt: ResourceType, namespace: str | None, name: str, body, dry_run: bool = False) -> Steps:
    """PUT of a Scale: its spec.replicas goes to the object (steps of Api.update_steps)."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request was not a JSON object")
    if body.get("kind") not in (None, "Scale") or body.get("apiVersion") not in (None, API_VERSION):
        raise errors.bad_request(f"the API version in the data ({body.get('apiVersion')}) does not match the "
                                 f"expected API version ({API_VERSION})")
    return (yield from _write(api, rt, namespace, name, api.get(rt, namespace, name), body, dry_run))


def patch(api: Api, rt: ResourceType, namespace: str | None, name: str, content_type: str, body,
          dry_run: bool = False) -> Steps:
    """PATCH of the Scale (JSON, merge or strategic merge patch): the patched Scale's spec.replicas goes to the
    object."""
    current = api.get(rt, namespace, name)
    return (yield from _write(api, rt, namespace, name, current, patched(scale_of(rt, current), content_type, body,
                                                                         "Scale", True, SCALE_PATCH_TYPES), dry_run))


def _write(api: Api, rt: ResourceType, namespace: str | None, name: str, current: dict, scale: dict,
           dry_run: bool) -> Steps:
    assert rt.scale is not None
    replicas = (scale.get("spec") or {}).get("replicas")
    if replicas is None:  # absent or null: Go's int32 stays 0
        replicas = 0
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise errors.bad_request(f'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
                                 f'{_json_type(replicas)} into Go struct field ScaleSpec.spec.replicas of type int32')
    if replicas < 0:
        raise errors.invalid("Scale.autoscaling", name, "autoscaling", "Scale", [
            ("FieldValueInvalid", "spec.replicas",
             f"spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0")])
    meta = scale.get("metadata") or {}
    uid = current["metadata"]["uid"]
    if meta.get("uid") and meta["uid"] != uid:
        resource = f"{rt.plural}/scale"
        raise errors.conflict(f"{resource}.{rt.group}" if rt.group else resource, name,
                              f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: {uid}",
                              rt.group, resource)
    obj = _with_replicas(current, rt.scale.spec_replicas, replicas)
    obj["metadata"] = {**current["metadata"],
                       "resourceVersion": meta.get("resourceVersion") or current["metadata"]["resourceVersion"]}
    return scale_of(rt, (yield from api.update_steps(rt, namespace, name, obj, None, dry_run, view=_view(rt))))


def _view(rt: ResourceType) -> View:
    """The scale subresource as admission webhooks see it: the object's Scale, a change of whose replicas
    changes the object's."""
    assert rt.scale is not None
    paths = rt.scale

    def take(obj: dict, changed: dict) -> dict:
        replicas = (changed.get("spec") or {}).get("replicas") or 0
        return _with_replicas(obj, paths.spec_replicas, replicas if isinstance(replicas, int) else 0)

    return View("autoscaling", "v1", "Scale", lambda obj: scale_of(rt, obj), take)


def _with_replicas(obj: dict, path: str, replicas: int) -> dict:
    """A copy of `obj` with `replicas` at `path`, copying only the maps on the way."""
    steps = _steps(path)
    top = dict(obj)
    node = top
    for step in steps[:-1]:
        child = node.get(step)
        node[step] = dict(child) if isinstance(child, dict) else {}
        node = node[step]
    node[steps[-1]] = replicas
    return top


def _json_type(value) -> str:
    """How Go's encoding/json names a JSON value's type in an UnmarshalTypeError."""
    if isinstance(value, float):
        return f"number {value!r}"
    return {bool: "bool", str: "string", list: "array", dict: "object"}.get(type(value), "null")
