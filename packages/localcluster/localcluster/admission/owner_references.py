"""Validating admission that depends on who writes: OwnerReferencesPermissionEnforcement.

As the kube-apiserver plugin (plugin/pkg/admission/gc): a create or update that changes an
object's ownerReferences needs `delete` on the object (updates only: a creator could have not
created it), and one that adds an ownerReference with blockOwnerDeletion=true, or turns it on,
needs `update` on the owner's `<plural>/finalizers` in the owner's group and the object's namespace.
Refused writes get 403 with the plugin's message, `, <nil>` included (its `%v, %v` of reason and error).
`validate` first runs RBAC's escalation checks (auth/escalation.py), which are not a plugin and cannot be
switched off.
"""

from __future__ import annotations

from ..auth.authentication import Attributes, User
from ..auth.escalation import Escalation
from ..auth.rbac import Authorizer, forbidden
from ..storage.resources import Registry, ResourceType
from .pod_admission import PLUGINS as POD_PLUGINS
from .webhooks import PLUGINS as WEBHOOK_PLUGINS

OWNER_REFERENCES = "OwnerReferencesPermissionEnforcement"
# and the mutating pod plugins of pod_admission.py, which Api applies to every pod created, and the webhook
# plugins (webhooks.py)
PLUGINS = (OWNER_REFERENCES, *POD_PLUGINS, *WEBHOOK_PLUGINS)


def _blocking(refs: list[dict]) -> list[dict]:
    return [r for r in refs if r.get("blockOwnerDeletion") is True]


def _new_blocking(obj: dict, old: dict | None) -> list[dict]:
    refs = _blocking(obj["metadata"].get("ownerReferences") or [])
    if old is None or not refs:
        return refs
    before = {r.get("uid"): r for r in old["metadata"].get("ownerReferences") or []}
    return [r for r in refs if r.get("uid") not in before or before[r.get("uid")].get("blockOwnerDeletion") is not True]


class Admission:
    def __init__(self, authorizer: Authorizer, registry: Registry, disabled: tuple[str, ...] = ()) -> None:
        unknown = set(disabled) - set(PLUGINS)
        if unknown:
            raise ValueError(f"unknown admission plugins: {sorted(unknown)}")
        self.authorizer = authorizer
        self.registry = registry
        self.owner_references = OWNER_REFERENCES not in disabled
        self.disabled = frozenset(disabled)
        self.escalation = Escalation(authorizer)

    def validate(self, user: User, rt: ResourceType, subresource: str | None, obj: dict, old: dict | None) -> None:
        # RBAC's escalation checks first: the server makes them in the RBAC kinds' storage, between mutating
        # and validating admission, and no --disable-admission-plugins turns them off.
        self.escalation.check(user, rt.storage_key, obj, old)
        if self.owner_references:
            self._owner_references(user, rt, subresource, obj, old)

    def _owner_references(self, user: User, rt: ResourceType, subresource: str | None, obj: dict,
                          old: dict | None) -> None:
        if rt.storage_key == ("", "pods") and subresource == "status":
            return  # the plugin's whitelist: the pod status strategy keeps ownerReferences
        refs = obj["metadata"].get("ownerReferences") or []
        old_refs = (old["metadata"].get("ownerReferences") or []) if old is not None else None
        if (old_refs is None and not refs) or (old_refs is not None and old_refs == refs):
            return
        meta = obj["metadata"]
        name = meta.get("name") or meta.get("generateName") or "Unknown"
        namespace = meta.get("namespace") or ""
        if old is not None:
            check = Attributes(user, "delete", True, api_group=rt.group, api_version=rt.version, resource=rt.plural,
                               subresource=subresource or "", namespace=namespace, name=meta.get("name", ""))
            allowed, reason = self.authorizer.authorize(check)
            if not allowed:
                raise forbidden(rt.group, rt.plural, name,
                                f"cannot set an ownerRef on a resource you can't delete: {reason}, <nil>")
        blocking = _new_blocking(obj, old)
        if not blocking:
            return
        anything = Attributes(user, "update", True, api_group="*", api_version="*", resource="*",
                              subresource="finalizers", name="*")
        if self.authorizer.authorize(anything)[0]:
            return
        for ref in blocking:
            group, _, version = (ref.get("apiVersion") or "").rpartition("/")
            owner = self.registry.by_kind(ref.get("apiVersion") or "", ref.get("kind") or "")
            if owner is None:
                raise forbidden(rt.group, rt.plural, name,
                                f"cannot set blockOwnerDeletion in this case because cannot find RESTMapping for "
                                f"APIVersion {ref.get('apiVersion')} Kind {ref.get('kind')}: no matches for kind "
                                f'"{ref.get("kind")}" in version "{ref.get("apiVersion")}"')
            check = Attributes(user, "update", True, api_group=group, api_version=version, resource=owner.plural,
                               subresource="finalizers", namespace=namespace, name=ref.get("name", ""))
            allowed, reason = self.authorizer.authorize(check)
            if not allowed:
                raise forbidden(rt.group, rt.plural, name,
                                "cannot set blockOwnerDeletion if an ownerReference refers to a resource you "
                                f"can't set finalizers on: {reason}, <nil>")
