"""What the verbs share: keys and namespaces, the commit to storage and its size limit, and each kind's
admission (decoding, defaults, validation, the field manager, the built-in admission of pods)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import orjson

from .. import errors
from ..admission import validating_policies, webhook_configs, webhooks
from ..admission.webhook_steps import WebhookSteps
from ..errors import ApiError
from ..fields import managedfields
from ..storage import event_apis, subresources
from ..storage.resources import Registry, ResourceType, types_from_crd
from ..storage.store import ObjKey, Store
from ..storage.watch_cache import WatchCache
from ..validation import (
    QuantityError,
    builtin_schemas,
    builtins,
    cannot_be_handled,
    decode_crd,
    meta_type_error,
    rule_errors,
)
from .objects import (
    CRD_KEY,
    DEPLOYMENTS,
    NAMESPACES,
    REPLICA_SETS,
    SERVER_MANAGER,
    now_rfc3339,
    status_schema,
)


class ApiBase(WebhookSteps):
    """What the verbs (verbs.Api) share."""

    idle_manager = SERVER_MANAGER

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        # fieldValidation of the request being served (Ignore, Warn or Strict) and the warnings it
        # produced. Safe as plain attributes: a verb runs synchronously between awaits, and `run` puts
        # them aside while it awaits webhooks.
        self.field_validation = "Ignore"
        self.warnings: list[str] = []
        # The user of the HTTP request being served, for admission that depends on who writes
        # (admission.Admission); None for the cluster's own writes (GC, pod runners), which skip it.
        self.user = None
        self.admission = None
        # The field manager of the write being served (managedFields); the HTTP layer sets it per request.
        self.manager = SERVER_MANAGER
        # The largest object etcd stores (its --max-request-bytes); a test may lower it.
        self.max_object_bytes = errors.ETCD_MAX_REQUEST_BYTES
        self.policies = validating_policies.ValidatingPolicies(
            store, lambda name: store.get(NAMESPACES, ("", name)))
        # The request's options as admission webhooks see them (CreateOptions, ...); the HTTP layer sets them.
        self.options: dict | None = None
        self.webhooks = webhooks.WebhookAdmission(store, registry, self.present)
        # Which versions a watch may start from, resource by resource (the cachers' windows and starts).
        self.watch_cache = WatchCache()
        store.subscribe(self.watch_cache.on_event)
        self._served_specs: dict[str, dict] = {}

    # --- helpers ---------------------------------------------------------------------------

    def present(self, rt: ResourceType, obj: dict) -> dict:
        """The stored object as seen through `rt`'s version."""
        if obj.get("apiVersion") == rt.group_version:
            return obj
        if rt.storage_key == event_apis.STORAGE:
            return event_apis.convert(obj, event_apis.CORE, rt.group_version)
        return {**obj, "apiVersion": rt.group_version}

    def _key(self, rt: ResourceType, namespace: str | None, name: str) -> ObjKey:
        return (namespace or "" if rt.namespaced else "", name)

    def _not_found(self, rt: ResourceType, name: str) -> ApiError:
        return errors.not_found(rt.qualified_resource, name, rt.group, rt.plural)

    def _conflict(self, rt: ResourceType, name: str, why: str = errors.STALE) -> ApiError:
        return errors.conflict(rt.qualified_resource, name, why, rt.group, rt.plural)

    def _check_namespace(self, rt: ResourceType, namespace: str | None) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(NAMESPACES, ("", namespace or ""))
        if ns is None:
            raise errors.not_found("namespaces", namespace or "", "", "namespaces")
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(f'{rt.plural} "" is forbidden: unable to create new content in namespace '
                                   f"{namespace} because it is being terminated")

    def _commit(self, rt: ResourceType, obj: dict, dry_run: bool) -> dict:
        if dry_run:
            return obj  # a dry run never reaches etcd, nor its size limit
        self._check_size(obj)
        rv = self.store.next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        self.store.put(rt.storage_key, obj, rv)
        if rt.storage_key == CRD_KEY:
            self._serve_crd(obj)
        return obj

    def _check_size(self, obj: dict) -> None:
        """etcd refuses an object larger than its request limit. The handlers then try the write once more
        without managedFields (rest.go's isTooLargeError), and answer etcd's error if it is still too large.
        Measured as JSON: how custom resources are stored (built-ins are protobuf, smaller: stricter here)."""
        if len(orjson.dumps(obj)) <= self.max_object_bytes:
            return
        if obj["metadata"].pop("managedFields", None) is not None and len(orjson.dumps(obj)) <= self.max_object_bytes:
            return
        raise errors.etcd_request_too_large()

    # --- admission: defaults and validation per kind ---------------------------------------

    def _admit_status(self, rt: ResourceType, obj: dict, old: dict, refuse: bool = True) -> list:
        """A /status write keeps everything but status from the stored object, and validation ratcheting
        drops errors in unchanged parts, so only the status subtree is checked: the CRD's CEL rules on
        the spec are not re-run for every status write (they dominated the server's CPU under load)."""
        schema = rt.schema
        properties = (schema or {}).get("properties") or {}
        if schema is None or "status" not in properties:
            return []
        view = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": obj["metadata"]}
        if "status" in obj:
            view["status"] = obj["status"]
        old_view = {"apiVersion": old["apiVersion"], "kind": old["kind"], "metadata": old["metadata"]}
        if "status" in old:
            old_view["status"] = old["status"]
        causes = self._admit(replace(rt, schema=status_schema(schema)), view, old_view, refuse)
        if "status" in view:
            obj["status"] = view["status"]
        return causes

    def _admit(self, rt: ResourceType, obj: dict, old: dict | None, refuse: bool = True) -> list:
        """Default and validate (the kind's strategy); the errors are refused at once, or returned when
        `refuse` is off (a mutating webhook is still to be heard: it may fix them)."""
        key = rt.storage_key
        causes: list = []
        if key == ("", "pods"):
            builtins.default_pod(obj)
            causes += builtins.validate_pod(obj)
            if old is not None:
                causes += builtins.validate_pod_update(obj, old)
        elif key == ("", "services"):
            if old is not None and not (obj.get("spec") or {}).get("clusterIP"):
                obj.setdefault("spec", {})["clusterIP"] = (old.get("spec") or {}).get("clusterIP")
            builtins.default_service(obj)
            causes += builtins.validate_service(obj)
            if old is not None:
                causes += builtins.validate_service_update(obj, old)
        elif key == NAMESPACES:
            builtins.default_namespace(obj)
        elif key == ("", "secrets"):
            builtins.default_secret(obj)
        elif key == ("batch", "jobs"):
            builtins.default_job(obj, creating=old is None)
            causes += builtins.validate_job(obj)
        elif key == ("batch", "cronjobs"):
            builtins.default_cron_job(obj)
            causes += builtins.validate_cron_job(obj)
        elif key == ("scheduling.k8s.io", "priorityclasses"):
            builtins.default_priority_class(obj)
        elif key == DEPLOYMENTS:
            builtins.default_deployment(obj)
            causes += builtins.validate_deployment(obj)
        elif key == REPLICA_SETS:
            builtins.default_replica_set(obj)
            causes += builtins.validate_deployment(obj)
        elif key == CRD_KEY:
            decode_crd(obj)  # what decoding into JSONSchemaProps drops (omitempty), before validation
            causes += builtins.validate_crd(obj) + rule_errors(obj)
        elif key == validating_policies.POLICIES:
            causes += validating_policies.policy_errors(obj)
        elif key in webhook_configs.KINDS:
            webhook_configs.default(obj, mutating=key == webhook_configs.MUTATING)
            causes += webhook_configs.errors(obj, old, mutating=key == webhook_configs.MUTATING)
        elif key == event_apis.STORAGE:
            causes += event_apis.validate(obj, old, strict=rt.group == event_apis.GROUP)
        if rt.schema is not None:
            from ..validation import admit

            unknown: list[str] = []
            causes += [(e.reason, e.field, e.error_string()) for e in admit(obj, rt.schema, old=old, unknown=unknown)]
            self._unknown_fields(rt, unknown)
        elif key != event_apis.STORAGE:  # an Event's own checks end with the metadata's
            causes = builtins.metadata_errors(obj, builtins.NAME_STYLE.get(key, "subdomain")) + causes
        if refuse:
            self._refuse(rt, obj, causes)
        return causes

    def _policies(self, rt: ResourceType, subresource: str | None, obj: dict, old: dict | None) -> None:
        """The ValidatingAdmissionPolicy plugin, after the other validating admission (as the server orders
        them); never on the policies and bindings themselves, as the server exempts them."""
        if rt.group == validating_policies.GROUP:
            return
        self.policies.admit(self.user, self.admission.authorizer.authorize, rt, subresource, obj, old)

    def _refuse(self, rt: ResourceType, obj: dict, causes: list) -> None:
        """422 Invalid when there is anything wrong."""
        if causes:
            name = (obj.get("metadata") or {}).get("name") or ""
            raise errors.invalid(rt.qualified_kind, name, rt.group, rt.kind, causes)

    def _unknown_fields(self, rt: ResourceType, unknown: list[str],
                        patch: tuple[str, Any, dict] | None = None) -> None:
        """What the apiserver's decoder does with fields the schema prunes, per fieldValidation. A built-in
        kind's PATCH fails as the patch handlers fail it: 422, naming the patch (`patch` is its content
        type and body) and the patched object's unknown fields."""
        if not unknown or self.field_validation == "Ignore":
            return
        listed = ", ".join(f'unknown field "{path}"' for path in unknown)
        if self.field_validation == "Strict" and patch is not None:
            content_type, body, patched = patch
            raise errors.strict_patch_error(content_type, body, patched, listed)
        if self.field_validation == "Strict":
            raise errors.bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                                     f"strict decoding error: {listed}")
        self.warnings.extend(f'unknown field "{path}"' for path in unknown)

    def _decode(self, rt: ResourceType, body: dict, patch: tuple[str, object] | None) -> dict:
        """What decoding a built-in object into its Go type does (builtin_schemas.py): every Quantity in its
        canonical form, one that does not parse a 400 for the whole body (before defaulting and
        validation), fields the type lacks reported per fieldValidation. Custom resources are pruned
        by their schema at admission instead."""
        if rt.crd_name is not None:  # its metadata is an ObjectMeta; the rest is pruned by its schema at admission
            decoded, unknown = builtin_schemas.decode_metadata(body)
            self._unknown_fields(rt, unknown)
            return decoded
        if not builtin_schemas.has_kind(rt.group, rt.version, rt.kind):
            return body
        try:
            decoded, unknown = builtin_schemas.decode(body, rt.group, rt.version, rt.kind)
        except (QuantityError, builtin_schemas.JsonTypeError) as exc:
            raise errors.bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                                     f"{exc}") from exc
        self._unknown_fields(rt, unknown, patch and (*patch, body))
        return decoded

    def _initial_status(self, rt: ResourceType, obj: dict) -> None:
        key = rt.storage_key
        if key == ("", "pods"):
            obj["status"] = builtins.initial_pod_status(obj)
        elif key == ("", "services"):
            obj["status"] = {"loadBalancer": {}}
        elif key == NAMESPACES:
            obj["status"] = {"phase": "Active"}
        elif key == CRD_KEY:
            obj["status"] = builtins.crd_status(obj, now_rfc3339())
        elif rt.status_subresource:
            obj.pop("status", None)

    def _readmit(self, rt: ResourceType, obj: dict, before: dict, old: dict | None,
                 subresource: str | None = None) -> dict:
        """`obj`, which a mutating webhook made of `before`, decoded and admitted again (its errors refused now)."""
        before = before["metadata"]
        obj = self._check_body(rt, obj)
        meta = obj["metadata"] = dict(obj.get("metadata") or {})
        for fixed in ("name", "namespace", "uid", "creationTimestamp", "resourceVersion", "deletionTimestamp",
                      "deletionGracePeriodSeconds"):  # what no admission may change
            if fixed in before:
                meta[fixed] = before[fixed]
        if subresource is None and old is None:
            self._initial_status(rt, obj)
        elif subresource is None and rt.status_subresource and old is not None:  # the strategy keeps the status
            obj.pop("status", None)
            if "status" in old:
                obj["status"] = old["status"]
        if subresource == "status" and old is not None:
            obj, _ = subresources.status_write(rt, old, obj, obj["metadata"])  # the status strategy keeps the rest
            if rt.schema is not None:
                self._admit_status(rt, obj, old)
        elif subresource is None:
            self._admit(rt, obj, old)
        return obj

    def _track(self, rt: ResourceType, old: dict | None, obj: dict, requested, subresource: str | None,
               manager: str) -> None:
        """Set obj's managedFields for a create or update by `manager` (managedfields.on_write)."""
        entries = managedfields.on_write(rt, old, obj, requested, manager, subresource, now_rfc3339())
        if entries is None:
            obj["metadata"].pop("managedFields", None)
        else:
            obj["metadata"]["managedFields"] = entries

    def _check_body(self, rt: ResourceType, body, patch: tuple[str, object] | None = None) -> dict:
        """The body as the kind's decoder leaves it; `patch` (content type, body) when it is a PATCH's result."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request was not a JSON object")
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if problem := meta_type_error(rt.kind, body):  # a patch's result is checked by _replace_patched
            raise errors.bad_request(cannot_be_handled(rt.kind, rt.group_version, problem))
        if kind and kind != rt.kind and api_version == rt.group_version:
            name = (body.get("metadata") or {}).get("name") or ""
            if rt.crd_name is not None:  # the custom resource decoder accepts any kind; its validation refuses it
                raise errors.invalid(f"{kind}.{rt.group}", name, rt.group, kind,
                                     [("FieldValueInvalid", "kind", f'kind: Invalid value: "{kind}": must be '
                                                                    f'{rt.kind}')])
            raise errors.bad_request(f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: no kind '
                                     f'"{kind}" is registered for version "{rt.group_version}" in scheme '
                                     '"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"')
        if kind and kind != rt.kind:
            raise errors.bad_request(f"the API version in the data ({api_version}) does not match the "
                                     f"expected API version ({rt.group_version})" if api_version else
                                     f"kind {kind} does not match {rt.kind}")
        body = self._decode(rt, body, patch)
        if rt.storage_key == event_apis.STORAGE:  # stored as core/v1, whichever API wrote it
            return event_apis.convert(body, rt.group_version, event_apis.CORE)
        obj = dict(body)
        obj["apiVersion"] = rt.group_version
        obj["kind"] = rt.kind
        return obj

    def _serve_crd(self, crd: dict) -> None:
        name = crd["metadata"]["name"]
        self.registry.remove_crd(name)
        for rt in types_from_crd(crd):
            self.registry.add(rt)
        if self._served_specs.get(name) != crd["spec"]:  # a status write keeps the storage, a spec change not
            self._served_specs[name] = copy.deepcopy(crd["spec"])
            self.watch_cache.restart_resource((crd["spec"]["group"], crd["spec"]["names"]["plural"]),
                                              int(crd["metadata"]["resourceVersion"]))
