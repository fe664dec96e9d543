"""The Api: reads, create, update, patch, apply and delete (each a generator of steps that meets admission
webhooks), the cluster's own writes, and the CRDs served."""

from __future__ import annotations

import random
import uuid

import orjson

from .. import errors
from ..admission import webhooks
from ..admission.webhook_steps import Steps, drive
from ..storage import deletion, event_apis, subresources
from ..storage.resources import ResourceType
from ..validation import builtins, meta_type_error
from .base import ApiBase
from .objects import APPLY_PATCH, CRD_KEY, DEPLOYMENTS, NAME_CHARS, NAMESPACES, PODS, now_rfc3339, patched, without_keys


class Api(ApiBase):
    """The verbs. Each write verb is a generator of steps (`create_steps`, ...: admission/webhook_steps.py)
    that yields where admission webhooks are to be awaited; `create` and the others run them at once, as the
    cluster's own writes, which meet no webhook, need; the HTTP layer runs them with `run`."""

    def ensure_namespace(self, name: str) -> None:
        if self.store.get(NAMESPACES, ("", name)) is None:
            self.create(self.registry.builtin("", "v1", "namespaces"), None,
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

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

    # --- update and patch -----------------------------------------------------------------

    def update(self, rt: ResourceType, namespace: str | None, name: str, body: dict,
               subresource: str | None = None, dry_run: bool = False) -> dict:
        return drive(self.update_steps(rt, namespace, name, body, subresource, dry_run))

    def put_steps(self, rt: ResourceType, namespace: str | None, name: str, body: dict,
                  subresource: str | None = None, dry_run: bool = False) -> Steps:
        """A PUT: update_steps' object and whether it created it (a kind whose registry allows create on update
        answers 201 then)."""
        creating = subresource is None and self.store.get(rt.storage_key, self._key(rt, namespace, name)) is None
        obj = yield from self.update_steps(rt, namespace, name, body, subresource, dry_run)
        return obj, creating

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
                # The registry creates at resourceVersion 0 whatever the body names (store.Update's creating
                # branch never compares it), under the URL's name.
                meta = {k: v for k, v in (body.get("metadata") or {}).items() if k != "resourceVersion"}
                meta.setdefault("name", name)
                return (yield from self.create_steps(rt, namespace, {**body, "metadata": meta}, dry_run))
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
            obj = without_keys(obj, "status")
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
        if (without_keys(obj, "metadata", "status") != without_keys(old, "metadata", "status")
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
        from ..fields import apply as applying

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
        if pre.get("uid") and pre["uid"] != meta["uid"]:  # the store's own check, worded with the kind (1.35)
            raise errors.conflict(rt.qualified_kind, name, f"the UID in the precondition ({pre['uid']}) does not "
                                  f"match the UID in record ({meta['uid']}). The object might have been deleted "
                                  "and then recreated", rt.group, rt.plural)
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

    def _unserve_crd(self, crd: dict) -> None:
        gone = self.registry.remove_crd(crd["metadata"]["name"])
        self._served_specs.pop(crd["metadata"]["name"], None)  # served again, it gets a new watch cache
        if not gone:
            return
        rt = gone[0]
        for obj in self.store.objects(rt.storage_key):
            self._remove(rt, obj, False)
        self.store.drop_bucket(rt.storage_key)

    def _admit_new_pod(self, pod: dict) -> None:
        """The default mutating admission plugins' pod defaults (pod_admission.py); the cluster's own pod creates
        (a controller's) go through them too. In a namespace that is missing or going, NamespaceLifecycle
        refuses first (_check_namespace)."""
        from ..admission import pod_admission

        ns = self.store.get(NAMESPACES, ("", pod["metadata"].get("namespace") or ""))
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return
        pod_admission.admit(self, pod, getattr(self.admission, "disabled", frozenset()))
