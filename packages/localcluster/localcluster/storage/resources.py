"""The kinds localcluster serves: built-in ones from a table, custom ones from CRDs.

A `ResourceType` is one (group, version, plural). Every version of a group/plural shares one
storage bucket (`storage_key`), as the real server stores one version and converts on read.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ScalePaths:
    """Where a kind's scale subresource reads and writes: a CRD version's `subresources.scale`, or a
    Deployment's fixed paths (`label_selector_path` None: the selector is `.spec.selector`, a LabelSelector)."""

    spec_replicas: str
    status_replicas: str
    label_selector_path: str | None = None


# A Deployment's and a ReplicaSet's (apps/v1 ScaleREST of each reads the same fields).
DEPLOYMENT_SCALE = ScalePaths(".spec.replicas", ".status.replicas")


@dataclass(eq=False)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    scale: ScalePaths | None = None
    # Built-in kinds accept strategic merge patch; custom resources do not (415, as the real server).
    strategic: bool = False
    # openAPIV3Schema of a CRD version; None for built-ins (validated by validation/builtins/ instead).
    schema: dict | None = None
    printer_columns: list[dict] = field(default_factory=list)
    # Whether a PUT on a missing object creates it (AllowCreateOnUpdate in the apiserver).
    create_on_update: bool = False
    crd_name: str | None = None
    # The verbs discovery lists; empty: every verb of a stored kind. Reviews are create-only and never stored.
    verbs: tuple[str, ...] = ()
    # Another (group, plural)'s bucket when the server stores this kind as that one (events.k8s.io Events
    # are core/v1 Events, converted on every read and write: event_apis.py).
    stored_as: tuple[str, str] | None = None
    # Whether a DELETE that removes the object at once answers with it (the registry's
    # ReturnDeletedObject); otherwise with a Status of kind Success.
    returns_deleted: bool = False
    # Whether the server keeps metadata.generation (1 on create, +1 on a spec change or a deletion mark):
    # the registry strategies of Pods, Deployments, Jobs, CronJobs, PodDisruptionBudgets and CRDs do, and
    # every custom resource; for other kinds it is whatever the create request gave, never changed after.
    tracks_generation: bool = False

    # Create-only subresources served by another kind (serviceaccounts/token: a TokenRequest): (name, group,
    # version, kind), listed in discovery.
    create_subresources: tuple[tuple[str, str, str, str], ...] = ()
    # The warning every request to a deprecated API version is answered with (apiserver's
    # deprecation.WarningMessage, from the type's prerelease-lifecycle tags); "" if it is not deprecated.
    deprecation: str = ""

    def __post_init__(self) -> None:
        if not self.singular:
            self.singular = self.kind.lower()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> tuple[str, str]:
        return self.stored_as or (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def patch_types(self) -> tuple[str, ...]:
        """The Content-Types a PATCH may have, in the apiserver's order (custom resources: no strategic merge)."""
        strategic = ("application/strategic-merge-patch+json",) if self.strategic else ()
        return ("application/json-patch+json", "application/merge-patch+json", *strategic,
                "application/apply-patch+yaml")

    @property
    def qualified_kind(self) -> str:
        """`Kind.group` as the apiserver names a kind in Invalid errors (just `Kind` in core)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def qualified_resource(self) -> str:
        """`plural.group` as the apiserver names a resource in NotFound/Conflict messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def discovery_entry(self) -> list[dict]:
        verbs = list(self.verbs) or ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                     "watch"]
        main = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": verbs,
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        entries = [main]
        if self.status_subresource:
            entries.append({
                "name": f"{self.plural}/status",
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": ["get", "patch", "update"],
            })
        if self.scale is not None:
            entries.append({
                "name": f"{self.plural}/scale",
                "singularName": "",
                "namespaced": self.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            })
        for name, group, version, kind in self.create_subresources:
            entries.append({"name": f"{self.plural}/{name}", "singularName": "", "namespaced": self.namespaced,
                            "group": group, "version": version, "kind": kind, "verbs": ["create"]})
        return entries


def _builtin(group: str, version: str, plural: str, kind: str, namespaced: bool = True, **kw) -> ResourceType:
    return ResourceType(group, version, plural, kind, namespaced, strategic=True, **kw)


def builtin_types() -> list[ResourceType]:
    """Kinds a controller, kubectl and the project's manifests touch."""
    return [
        _builtin("", "v1", "namespaces", "Namespace", False, short_names=("ns",), status_subresource=True,
                 returns_deleted=True),
        _builtin("", "v1", "nodes", "Node", False, short_names=("no",), status_subresource=True),
        _builtin("", "v1", "pods", "Pod", short_names=("po",), status_subresource=True, categories=("all",),
                 returns_deleted=True, tracks_generation=True),
        _builtin("", "v1", "services", "Service", short_names=("svc",), status_subresource=True,
                 categories=("all",), returns_deleted=True),
        # Kept by the endpoints controller (controllers/endpoints.py); deprecated since 1.33, reads warn.
        _builtin("", "v1", "endpoints", "Endpoints", singular="endpoints", short_names=("ep",),
                 deprecation="v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"),
        _builtin("", "v1", "events", "Event", short_names=("ev",), create_on_update=True),
        _builtin("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
        _builtin("", "v1", "secrets", "Secret"),
        _builtin("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",), returns_deleted=True,
                 create_subresources=(("token", "authentication.k8s.io", "v1", "TokenRequest"),)),
        _builtin("", "v1", "resourcequotas", "ResourceQuota", short_names=("quota",), status_subresource=True,
                 returns_deleted=True),
        _builtin("events.k8s.io", "v1", "events", "Event", short_names=("ev",), create_on_update=True,
                 stored_as=("", "events")),
        _builtin("coordination.k8s.io", "v1", "leases", "Lease"),
        _builtin("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
        _builtin("apps", "v1", "deployments", "Deployment", short_names=("deploy",),
                 status_subresource=True, categories=("all",), scale=DEPLOYMENT_SCALE, tracks_generation=True),
        # After deployments, as apps/v1 discovery lists them (`kubectl get all` prints in that order).
        _builtin("apps", "v1", "replicasets", "ReplicaSet", short_names=("rs",), status_subresource=True,
                 categories=("all",), scale=DEPLOYMENT_SCALE, tracks_generation=True),
        _builtin("batch", "v1", "jobs", "Job", status_subresource=True, categories=("all",), tracks_generation=True),
        _builtin("batch", "v1", "cronjobs", "CronJob", short_names=("cj",), status_subresource=True,
                 categories=("all",), tracks_generation=True),
        _builtin("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short_names=("pdb",),
                 status_subresource=True, tracks_generation=True),
        _builtin("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short_names=("pc",)),
        _builtin("rbac.authorization.k8s.io", "v1", "roles", "Role"),
        _builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
        _builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        _builtin("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
        _builtin("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy",
                 False, status_subresource=True, tracks_generation=True),
        _builtin("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
                 "ValidatingAdmissionPolicyBinding", False, tracks_generation=True),
        # Called by the webhook admission plugins (admission/webhooks.py); after the policies, as discovery lists them.
        _builtin("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                 "ValidatingWebhookConfiguration", False),
        _builtin("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                 "MutatingWebhookConfiguration", False),
        _builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                 False, short_names=("crd", "crds"), status_subresource=True, tracks_generation=True),
        _builtin("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False, verbs=("create",)),
        _builtin("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False,
                 verbs=("create",)),
        _builtin("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False,
                 verbs=("create",)),
        _builtin("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
                 verbs=("create",)),
        _builtin("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False,
                 verbs=("create",)),
    ]


def types_from_crd(crd: dict) -> list[ResourceType]:
    """One ResourceType per served version of a CRD."""
    spec = crd["spec"]
    names = spec["names"]
    out = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        scale = subresources.get("scale")
        out.append(ResourceType(
            group=spec["group"],
            version=version["name"],
            plural=names["plural"],
            kind=names["kind"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular") or names["kind"].lower(),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            status_subresource="status" in subresources,
            scale=ScalePaths(scale.get("specReplicasPath", ""), scale.get("statusReplicasPath", ""),
                             scale.get("labelSelectorPath") or "") if scale is not None else None,
            schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            printer_columns=list(version.get("additionalPrinterColumns") or []),
            crd_name=crd["metadata"]["name"],
            tracks_generation=True,
        ))
    return out


class Registry:
    """Lookup of served kinds by path segments, by kind, and for discovery."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        for rt in builtin_types():
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt

    def remove_crd(self, crd_name: str) -> list[ResourceType]:
        gone = [rt for rt in self._by_gvr.values() if rt.crd_name == crd_name]
        for rt in gone:
            del self._by_gvr[(rt.group, rt.version, rt.plural)]
        return gone

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def builtin(self, group: str, version: str, plural: str) -> ResourceType:
        """A built-in kind: always served (KeyError otherwise, a mistake of ours)."""
        return self._by_gvr[(group, version, plural)]

    def all(self) -> list[ResourceType]:
        return list(self._by_gvr.values())

    def for_storage(self, key: tuple[str, str]) -> ResourceType | None:
        """Any served version of a storage bucket (used by GC to name what it deletes)."""
        for rt in self._by_gvr.values():
            if rt.storage_key == key:
                return rt
        return None

    def builtin_storage(self, key: tuple[str, str]) -> ResourceType:
        """A built-in kind's storage bucket: always served (KeyError otherwise, a mistake of ours)."""
        rt = self.for_storage(key)
        if rt is None:
            raise KeyError(key)
        return rt

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for rt in self._by_gvr.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def groups(self) -> dict[str, list[str]]:
        """group -> served versions, preferred (first registered) first; core group excluded."""
        out: dict[str, list[str]] = {}
        for rt in self._by_gvr.values():
            if rt.group and rt.version not in out.setdefault(rt.group, []):
                out[rt.group].append(rt.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._by_gvr.values() if rt.group == group and rt.version == version]
