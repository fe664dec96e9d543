"""The API's verbs on objects, independent of HTTP: what kube-apiserver's generic registry does.

Used by the HTTP layer (http.py) and in-process by the garbage collector and pod runners.
Every method is synchronous and raises `ApiError` on failure.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from . import errors
from .admission import validating_policies, webhook_configs, webhooks
from .admission.webhook_steps import Steps, WebhookSteps, drive
from .errors import ApiError
from .fields import managedfields
from .storage import deletion, event_apis, subresources
from .storage.resources import Registry, ResourceType, types_from_crd
from .storage.store import ObjKey, Store
from .validation import builtin_schemas, builtins
from .validation.crd_schema_decode import decode_crd
from .validation.envelope import cannot_be_handled, meta_type_error
from .validation.quantity import QuantityError

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


# id(CRD schema) -> (that schema, the same schema reduced to its status subtree)
_status_schemas: dict[int, tuple[dict, dict]] = {}


def _without(obj: dict, *keys: str) -> dict:
    return {k: v for k, v in obj.items() if k not in keys}


def patched(old: dict, content_type: str, patch, kind: str, strategic: bool, accepted: tuple[str, ...]) -> dict:
    """`old` with a PATCH body of `content_type` applied, or the apiserver's error: 415 listing the `accepted`
    types for a type the resource does not take (strategic merge patch needs a built-in kind), 422 or 400 for a
    patch that does not apply."""
    from .fields import patch as patches

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
    except patches.PatchError as exc:
        raise ApiError(422 if content_type == "application/json-patch+json" else 400,
                       "Invalid" if content_type == "application/json-patch+json" else "BadRequest",
                       str(exc)) from exc
    if not isinstance(result, dict):
        raise errors.bad_request("the patch did not produce an object")
    return result


class Api(WebhookSteps):
    """The verbs. Each write verb is a generator of steps (`create_steps`, ...: admission/webhook_steps.py)
    that yields where admission webhooks are to be awaited; `create` and the others run them at once, as the
    cluster's own writes, which meet no webhook, need; the HTTP layer runs them with `run`."""

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

    def ensure_namespace(self, name: str) -> None:
        if self.store.get(NAMESPACES, ("", name)) is None:
            self.create(self.registry.builtin("", "v1", "namespaces"), None,
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

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
        status_only = _status_schemas.get(id(schema))
        if status_only is None or status_only[0] is not schema:
            reduced = {k: v for k, v in schema.items() if k not in ("required", "x-kubernetes-validations")}
            status_only = (schema, {**reduced, "properties": {"status": properties["status"]}})
            _status_schemas[id(schema)] = status_only
        view = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": obj["metadata"]}
        if "status" in obj:
            view["status"] = obj["status"]
        old_view = {"apiVersion": old["apiVersion"], "kind": old["kind"], "metadata": old["metadata"]}
        if "status" in old:
            old_view["status"] = old["status"]
        causes = self._admit(replace(rt, schema=status_only[1]), view, old_view, refuse)
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
            from .validation.crd_cel import errors as rule_errors

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
            from .validation.schema import admit

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

    # --- reads ----------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict:
        obj = self.store.get(rt.storage_key, self._key(rt, namespace, name))
        if obj is None:
            raise self._not_found(rt, name)
        return self.present(rt, obj)

    # --- create ---------------------------------------------------------------------------

    def create(self, rt: ResourceType, namespace: str | None, body: dict, dry_run: bool = False,
               applied: bool = False) -> dict:
        return drive(self.create_steps(rt, namespace, body, dry_run, applied))

    def create_steps(self, rt: ResourceType, namespace: str | None, body: dict, dry_run: bool = False,
                     applied: bool = False) -> Steps:
        """Create an object; `applied`: by server-side apply, which has set its managedFields already."""
        obj = self._check_body(rt, body)
        meta = obj["metadata"] = dict(obj.get("metadata") or {})
        if rt.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        requested_name = meta.get("name") or ""
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choices(NAME_CHARS, k=5))
        requested = meta.pop("managedFields", None)
        for transient in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(transient, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rt.tracks_generation:  # other kinds keep the generation the request gave, if any (BeforeCreate)
            meta["generation"] = 1
        self._initial_status(rt, obj)
        found = self._webhook_candidates(rt, None, "CREATE")
        deferred = self._admit(rt, obj, None, refuse=found is None or not found.mutating)
        self._check_namespace(rt, meta.get("namespace"))
        if found is None:
            self._validating_admission(rt, None, obj, None)
        if self.store.get(rt.storage_key, self._key(rt, meta.get("namespace"), meta["name"])) is not None:
            raise errors.already_exists(rt.qualified_resource, meta["name"], rt.group, rt.plural)
        if applied:
            meta["managedFields"] = requested
        else:
            self._track(rt, None, obj, requested, None, self.manager)
        if rt.storage_key == PODS:  # after the field manager, as in the create handler: no one owns what it adds
            self._admit_new_pod(obj)
        if found is not None:
            obj = yield from self._webhooks(found, rt, None, "CREATE", obj, None, requested_name, dry_run, deferred,
                                            lambda mutated, before: self._readmit(rt, mutated, before, None))
        return self.present(rt, self._commit(rt, obj, dry_run))

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

    def _admit_new_pod(self, pod: dict) -> None:
        """The default mutating admission plugins' pod defaults (pod_admission.py); the cluster's own pod creates
        (a controller's) go through them too. In a namespace that is missing or going, NamespaceLifecycle
        refuses first (_check_namespace)."""
        from .admission import pod_admission

        ns = self.store.get(NAMESPACES, ("", pod["metadata"].get("namespace") or ""))
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return
        pod_admission.admit(self, pod, getattr(self.admission, "disabled", frozenset()))

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

    # --- update and patch -----------------------------------------------------------------

    def update(self, rt: ResourceType, namespace: str | None, name: str, body: dict,
               subresource: str | None = None, dry_run: bool = False) -> dict:
        return drive(self.update_steps(rt, namespace, name, body, subresource, dry_run))

    def update_steps(self, rt: ResourceType, namespace: str | None, name: str, body: dict,
                     subresource: str | None = None, dry_run: bool = False,
                     view: webhooks.View | None = None) -> Steps:
        """`view`: how webhooks see a subresource's object (the scale subresource's Scale)."""
        okey = self._key(rt, namespace, name)
        old = self.store.get(rt.storage_key, okey)
        if old is None:
            if rt.create_on_update and subresource is None:
                if self.options is not None:  # the update handler's updateToCreateOptions
                    self.options = {**self.options, "kind": "CreateOptions"}
                return (yield from self.create_steps(rt, namespace, body, dry_run))
            raise self._not_found(rt, name)
        obj = self._check_body(rt, body)
        meta = dict(obj.get("metadata") or {})
        old_meta = old["metadata"]
        if meta.get("name", name) != name:
            raise errors.bad_request(f"the name of the object ({meta.get('name')}) does not match the name on "
                                     f"the URL ({name})")
        if meta.get("resourceVersion") and meta["resourceVersion"] != old_meta["resourceVersion"]:
            raise self._conflict(rt, name)
        if meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise self._conflict(rt, name, f"Precondition failed: UID in precondition: {meta['uid']}, UID in "
                                           f"object meta: {old_meta['uid']}")
        return (yield from self._replace(rt, old, obj, meta, subresource, dry_run, view=view))

    def _replace(self, rt: ResourceType, old: dict, obj: dict, meta: dict, subresource: str | None,
                 dry_run: bool, applied: bool = False, view: webhooks.View | None = None) -> Steps:
        old_meta = old["metadata"]
        requested = meta.get("managedFields")  # a status write ignores it, unless apply computed it
        if subresource == "status":
            obj, meta = subresources.status_write(rt, old, obj, meta)
        elif rt.status_subresource:
            obj = _without(obj, "status")
            if "status" in old:
                obj["status"] = old["status"]
        for fixed in ("name", "namespace", "uid", "creationTimestamp", "generation", "deletionTimestamp",
                      "deletionGracePeriodSeconds"):
            if fixed in old_meta:
                meta[fixed] = old_meta[fixed]
            else:
                meta.pop(fixed, None)
        meta.pop("managedFields", None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        obj["metadata"] = meta
        found = self._webhook_candidates(rt, "scale" if view is not None else subresource, "UPDATE")
        refuse = found is None or not found.mutating
        if subresource is None:
            deferred = self._admit(rt, obj, old, refuse)
        elif rt.schema is not None:
            deferred = self._admit_status(rt, obj, old, refuse)
        else:  # a built-in's status strategy may take the request's labels and annotations
            deferred = builtins.metadata_errors(obj, builtins.NAME_STYLE.get(rt.storage_key, "subdomain"))
            if refuse:
                self._refuse(rt, obj, deferred)
        if found is None:
            self._validating_admission(rt, subresource, obj, old)
        self._generation(rt, obj, old)
        if applied:
            if requested is not None:
                meta["managedFields"] = requested
        else:
            self._track(rt, old, obj, requested, subresource, self.manager)
        if found is not None:
            def readmit(mutated: dict, before: dict) -> dict:
                return self._readmit(rt, mutated, before, old, subresource)

            obj = yield from self._webhooks(found, rt, "scale" if view is not None else subresource, "UPDATE", obj,
                                            old, old_meta["name"], dry_run, deferred, readmit, view)
            meta = obj["metadata"]
            self._generation(rt, obj, old)
        if obj == old:
            return self.present(rt, old)  # a no-op update writes nothing, as etcd3's GuaranteedUpdate
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not self._waits_for_kubelet(rt, obj):
            return self.present(rt, self._remove(rt, old, dry_run))
        return self.present(rt, self._commit(rt, obj, dry_run))

    def _generation(self, rt: ResourceType, obj: dict, old: dict) -> None:
        """metadata.generation: one more than the stored one's when the object changed beyond its metadata and
        status (the deployment strategy also counts annotation changes: its rollback and change-cause
        annotations), else the stored one's."""
        if not rt.tracks_generation:
            return
        meta, old_meta = obj["metadata"], old["metadata"]
        if (_without(obj, "metadata", "status") != _without(old, "metadata", "status")
                or (rt.storage_key == DEPLOYMENTS and meta.get("annotations") != old_meta.get("annotations"))):
            meta["generation"] = old_meta.get("generation", 1) + 1
        elif "generation" in old_meta:
            meta["generation"] = old_meta["generation"]

    def patch(self, rt: ResourceType, namespace: str | None, name: str, content_type: str, patch,
              subresource: str | None = None, dry_run: bool = False) -> dict:
        return drive(self.patch_steps(rt, namespace, name, content_type, patch, subresource, dry_run))

    def patch_steps(self, rt: ResourceType, namespace: str | None, name: str, content_type: str, patch,
                    subresource: str | None = None, dry_run: bool = False) -> Steps:
        if content_type == APPLY_PATCH:
            return (yield from self.apply_steps(rt, namespace, name, patch, subresource, dry_run))[0]
        old = self.store.get(rt.storage_key, self._key(rt, namespace, name))
        if old is None:
            raise self._not_found(rt, name)
        seen = self.present(rt, old)  # a patch applies to the object in the request's version
        result = patched(seen, content_type, patch, rt.kind, rt.strategic, rt.patch_types)
        return (yield from self._replace_patched(rt, old, name, result, subresource, dry_run, applied=False,
                                                 patch=(content_type, patch)))

    def _replace_patched(self, rt: ResourceType, old: dict, name: str, result: dict, subresource: str | None,
                         dry_run: bool, applied: bool, patch: tuple[str, object] | None = None) -> Steps:
        if problem := meta_type_error(rt.kind, result):  # the result does not decode (applyPatchToCurrentObject)
            raise errors.invalid("", "", "", "", [builtins.invalid_value("patch", orjson.dumps(result).decode(),
                                                                         problem)])
        meta = dict(result.get("metadata") or {})
        if meta.get("resourceVersion") != old["metadata"]["resourceVersion"]:
            raise self._conflict(rt, name)
        if meta.get("uid") != old["metadata"]["uid"]:
            raise self._conflict(rt, name, f"Precondition failed: UID in precondition: {meta.get('uid')}, "
                                           f"UID in object meta: {old['metadata']['uid']}")
        if rt.namespaced and meta.get("namespace") not in (None, "", old["metadata"].get("namespace")):
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent on "
                                     "the request")
        if meta.get("name", name) != name:
            raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                     f"({name})")
        return (yield from self._replace(rt, old, self._check_body(rt, result, patch), meta, subresource, dry_run,
                                         applied))

    def apply(self, rt: ResourceType, namespace: str | None, name: str, config, subresource: str | None = None,
              dry_run: bool = False, force: bool = False) -> tuple[dict, bool]:
        return drive(self.apply_steps(rt, namespace, name, config, subresource, dry_run, force))

    def apply_steps(self, rt: ResourceType, namespace: str | None, name: str, config, subresource: str | None = None,
                    dry_run: bool = False, force: bool = False) -> Steps:
        """Server-side apply (apply.py); returns (object, created): a missing object is created by it."""
        from .fields import apply as applying

        old = self.store.get(rt.storage_key, self._key(rt, namespace, name))
        if old is None and subresource is not None:
            raise self._not_found(rt, name)  # subresources never create
        live = self.present(rt, old) if old is not None else None
        result = applying.apply(rt, live, config, self.manager, subresource, force, now_rfc3339())
        if old is not None:
            return (yield from self._replace_patched(rt, old, name, result, subresource, dry_run, applied=True)), False
        meta = result["metadata"]
        if meta.setdefault("name", name) != name:
            raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                     f"({name})")
        return (yield from self.create_steps(rt, namespace, result, dry_run, applied=True)), True

    # --- delete ---------------------------------------------------------------------------

    def delete(self, rt: ResourceType, namespace: str | None, name: str, options: dict | None = None,
               dry_run: bool = False) -> tuple[dict, bool]:
        return drive(self.delete_steps(rt, namespace, name, options, dry_run))

    def delete_steps(self, rt: ResourceType, namespace: str | None, name: str, options: dict | None = None,
                     dry_run: bool = False) -> Steps:
        """Delete or start deleting (deletion.py); returns (object, gone_now)."""
        options = options or {}
        old = self.store.get(rt.storage_key, self._key(rt, namespace, name))
        if old is None:
            raise self._not_found(rt, name)
        meta = old["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise self._conflict(rt, name, f"Precondition failed: UID in precondition: {pre['uid']}, UID in "
                                           f"object meta: {meta['uid']}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise self._conflict(rt, name, f"Precondition failed: ResourceVersion in precondition: "
                                           f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                                           f"{meta['resourceVersion']}")
        found = self._webhook_candidates(rt, None, "DELETE")
        if found is not None:
            yield from self._webhooks(found, rt, None, "DELETE", None, old, name, dry_run, [], None)
        if rt.storage_key == NAMESPACES:  # emptied by the namespace controller (gc.py), then removed
            finalizers = deletion.gc_finalizers(list(meta.get("finalizers") or ()), options)
            marked = deletion.mark(old, finalizers, None, new_generation=False)
            marked["status"] = {**(old.get("status") or {}), "phase": "Terminating"}
            return self.present(rt, old if marked == old else self._commit(rt, marked, dry_run)), False
        step = deletion.plan(old, options, graceful=rt.storage_key == PODS,
                             collected=rt.storage_key != event_apis.STORAGE)
        current = old
        if step.marked is not None and step.marked != old:
            current = self._commit(rt, step.marked, dry_run)
        if not step.remove:
            return self.present(rt, current), False
        return self.present(rt, self._remove(rt, current, dry_run)), True

    def _waits_for_kubelet(self, rt: ResourceType, obj: dict) -> bool:
        return rt.storage_key == ("", "pods") and (obj["metadata"].get("deletionGracePeriodSeconds") or 0) > 0

    def _remove(self, rt: ResourceType, old: dict, dry_run: bool) -> dict:
        if dry_run:
            return old
        rv = self.store.next_rv()
        final = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
        okey = (old["metadata"].get("namespace") or "", old["metadata"]["name"])
        self.store.remove(rt.storage_key, okey, final, rv)
        if rt.storage_key == CRD_KEY:
            self._unserve_crd(old)
        return final

    def system_write(self, rt: ResourceType, obj: dict, manager: str | None = None,
                     subresource: str | None = None) -> dict:
        """Store a new state without admission: what the scheduler, kubelet and GC may do. With a
        `manager`, its managedFields record the write as that component's (e.g. "kubelet" on "status").

        Writers build the new state from the stored one (`{**pod, "status": ...}`), so its metadata is
        the stored version's dict: it is copied before the new resourceVersion goes in, or the version
        already stored (and queued for watchers, and kept in the history) would change with it."""
        obj = {**obj, "metadata": dict(obj["metadata"])}
        if manager is not None:
            old = self.store.get(rt.storage_key, self._key(rt, obj["metadata"].get("namespace"),
                                                          obj["metadata"]["name"]))
            self._track(rt, old, obj, None, subresource, manager)
        return self._commit(rt, obj, False)

    def remove_now(self, rt: ResourceType, obj: dict) -> None:
        """Delete immediately whatever its state: for the kubelet, GC and namespace clean-up."""
        current = self.store.get(rt.storage_key, self._key(rt, obj["metadata"].get("namespace"),
                                                          obj["metadata"]["name"]))
        if current is not None:
            self._remove(rt, current, False)

    # --- CRDs -----------------------------------------------------------------------------

    def _serve_crd(self, crd: dict) -> None:
        self.registry.remove_crd(crd["metadata"]["name"])
        for rt in types_from_crd(crd):
            self.registry.add(rt)

    def _unserve_crd(self, crd: dict) -> None:
        gone = self.registry.remove_crd(crd["metadata"]["name"])
        if not gone:
            return
        rt = gone[0]
        for obj in self.store.objects(rt.storage_key):
            self._remove(rt, obj, False)
        self.store.drop_bucket(rt.storage_key)
