"""The mutating admission plugins a kube-apiserver runs by default on every pod it creates.

- ServiceAccount (plugin/pkg/admission/serviceaccount): `serviceAccountName` defaults to `default`;
  the ServiceAccount must exist (403 "error looking up service account NS/NAME: serviceaccount
  "NAME" not found"); unless `automountServiceAccountToken` is false on the pod (else on the
  ServiceAccount), a projected volume `kube-api-access-<5 chars>` (a bound token, the namespace's
  kube-root-ca.crt and the namespace) mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount
  in every container and init container that has nothing mounted there; the ServiceAccount's
  imagePullSecrets when the pod has none.
- Priority (plugin/pkg/admission/priority): `priority` and `preemptionPolicy` from the pod's
  PriorityClass (403 "no PriorityClass with name X was found"), else from the global default one,
  else 0 and PreemptLowerPriority; a `priority` given that differs is refused.
- DefaultTolerationSeconds: tolerations of the not-ready and unreachable NoExecute taints for 300 s,
  unless the pod already tolerates them.

Pod runners do not mount volumes (their processes see the host's files), so the token file is not
provided; the projected volume's ConfigMap must exist for a pod to start, and it always does
(namespace_objects.py). The system PriorityClasses exist from the start (bootstrap.py).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ..auth.rbac import forbidden
from ..errors import ApiError

if TYPE_CHECKING:
    from ..api import Api

SERVICE_ACCOUNT, PRIORITY, DEFAULT_TOLERATION_SECONDS = "ServiceAccount", "Priority", "DefaultTolerationSeconds"
PLUGINS = (SERVICE_ACCOUNT, PRIORITY, DEFAULT_TOLERATION_SECONDS)
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_PREFIX = "kube-api-access-"
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # apiserver's SimpleNameGenerator
TOKEN_SECONDS = 3607  # WarnOnlyBoundTokenExpirationSeconds
MIRROR = "kubernetes.io/config.mirror"
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
SERVICE_ACCOUNTS, PRIORITY_CLASSES = ("", "serviceaccounts"), ("scheduling.k8s.io", "priorityclasses")


def admit(api: Api, pod: dict, disabled: frozenset[str] = frozenset()) -> None:
    """Mutate a pod being created as the default plugins do, in their order; ApiError 403 when one refuses."""
    if SERVICE_ACCOUNT not in disabled:
        _service_account(api, pod)
    if PRIORITY not in disabled:
        _priority(api, pod)
    if DEFAULT_TOLERATION_SECONDS not in disabled:
        _default_tolerations(pod)


def _refuse(pod: dict, message: str) -> ApiError:
    meta = pod["metadata"]
    return forbidden("", "pods", meta.get("name") or meta.get("generateName") or "Unknown", message)


def _service_account(api: Api, pod: dict) -> None:
    spec, meta = pod["spec"], pod["metadata"]
    if MIRROR in (meta.get("annotations") or {}):
        return
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = name  # v1 shows the deprecated field too
    account = api.store.get(SERVICE_ACCOUNTS, (meta.get("namespace") or "", name))
    if account is None:
        raise _refuse(pod, f"error looking up service account {meta.get('namespace')}/{name}: serviceaccount "
                           f'"{name}" not found')
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = account.get("automountServiceAccountToken")
    if automount is not False:
        _mount_token(spec)
    if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [dict(s) for s in account["imagePullSecrets"]]


def _mount_token(spec: dict) -> None:
    volumes = spec.get("volumes") or []
    existing = next((v["name"] for v in volumes if str(v.get("name", "")).startswith(VOLUME_PREFIX)), None)
    volume = existing or VOLUME_PREFIX + "".join(random.choices(NAME_CHARS, k=5))
    needed = False
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or ():
            mounts = container.get("volumeMounts") or []
            if any(m.get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, {"name": volume, "readOnly": True, "mountPath": MOUNT_PATH}]
            needed = True
    if needed and existing is None:
        spec["volumes"] = [*volumes, {"name": volume, "projected": token_volume_source()}]


def token_volume_source() -> dict:
    """serviceaccount.TokenVolumeSource: a bound token, the cluster's CA and the pod's namespace."""
    return {"sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_SECONDS, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ], "defaultMode": 420}


def _priority(api: Api, pod: dict) -> None:
    spec = pod["spec"]
    name = spec.get("priorityClassName")
    if name:
        found = api.store.get(PRIORITY_CLASSES, ("", name))
        if found is None:
            raise _refuse(pod, f"no PriorityClass with name {name} was found")
        value, policy = int(found.get("value") or 0), found.get("preemptionPolicy")
    else:
        defaults = [pc for pc in api.store.objects(PRIORITY_CLASSES) if pc.get("globalDefault")]
        if defaults:  # more than one: the lowest value wins
            chosen = min(defaults, key=lambda pc: int(pc.get("value") or 0))
            spec["priorityClassName"] = chosen["metadata"]["name"]
            value, policy = int(chosen.get("value") or 0), chosen.get("preemptionPolicy")
        else:
            value, policy = 0, "PreemptLowerPriority"
    if spec.get("priority") is not None and spec["priority"] != value:
        raise _refuse(pod, f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; "
                           f"priority admission controller computed {value} from the given PriorityClass name")
    spec["priority"] = value
    if policy is not None:
        if spec.get("preemptionPolicy") not in (None, policy):
            raise _refuse(pod, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be "
                               f"provided in pod spec; priority admission controller computed {policy} from the given "
                               f"PriorityClass name")
        spec["preemptionPolicy"] = policy


def _default_tolerations(pod: dict) -> None:
    spec = pod["spec"]
    tolerations = list(spec.get("tolerations") or [])

    def tolerated(key: str) -> bool:
        return any(t.get("key") in (key, None, "") and t.get("effect") in ("NoExecute", None, "") for t in tolerations)

    added = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
             for key in (NOT_READY, UNREACHABLE) if not tolerated(key)]
    if added:
        spec["tolerations"] = tolerations + added

