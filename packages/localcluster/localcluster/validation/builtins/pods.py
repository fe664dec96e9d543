"""Pods and their templates: defaults, validation, immutable specs, the initial status; priority classes."""

from __future__ import annotations

from .causes import Cause, forbidden, not_supported, quoted, required
from .metadata import name_errors

# --- pods ---------------------------------------------------------------------------------------

RESTART_POLICIES = ["Always", "OnFailure", "Never"]


def default_pod(pod: dict) -> None:
    default_pod_template(pod)
    pod["spec"].setdefault("enableServiceLinks", True)  # SetDefaults_Pod: pods only, not templates


def default_pod_template(template: dict) -> None:
    """SetDefaults_PodSpec and the containers' defaults: what a pod and a workload's pod template both get."""
    spec = template.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if account:  # v1 conversion: the deprecated serviceAccount mirrors serviceAccountName
        spec["serviceAccountName"] = spec["serviceAccount"] = account
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or ():
            container.setdefault("resources", {})  # a struct, never omitted from the JSON
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            image = container.get("image") or ""
            tagged = ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")
            container.setdefault("imagePullPolicy", "IfNotPresent" if tagged else "Always")
            for port in container.get("ports") or ():
                port.setdefault("protocol", "TCP")


def validate_pod(pod: dict) -> list[Cause]:
    spec = pod.get("spec") or {}
    out = []
    if not spec.get("containers"):
        out.append(required("spec.containers"))
    seen: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or ()):
            path = f"spec.{group}[{i}]"
            name = container.get("name")
            if not name:
                out.append(required(f"{path}.name"))
            else:
                out.extend(name_errors(name, f"{path}.name", "label"))
                if name in seen:
                    out.append(("FieldValueDuplicate", f"{path}.name", f"{path}.name: Duplicate value: {quoted(name)}"))
                seen.add(name)
            if not container.get("image"):
                out.append(required(f"{path}.image"))
    if spec.get("restartPolicy") not in RESTART_POLICIES:
        out.append(not_supported("spec.restartPolicy", spec.get("restartPolicy"), RESTART_POLICIES))
    return out


def _mutable_pod_spec_view(spec: dict) -> dict:
    """The pod spec minus the fields an update may change (images, deadlines, tolerations)."""
    view = dict(spec)
    for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates"):
        view.pop(key, None)
    for group in ("initContainers", "containers"):
        if group in view:
            view[group] = [{k: v for k, v in c.items() if k != "image"} for c in view[group]]
    return view


def validate_pod_update(new: dict, old: dict) -> list[Cause]:
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    # Binding sets nodeName once; after that it is as immutable as the rest.
    if not old_spec.get("nodeName"):
        old_spec = {**old_spec, "nodeName": new_spec.get("nodeName")}
        new_spec = {**new_spec, "nodeName": new_spec.get("nodeName")}
    if _mutable_pod_spec_view(new_spec) != _mutable_pod_spec_view(old_spec):
        return [forbidden("spec", "pod updates may not change fields other than `spec.containers[*].image`,"
                          "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                          "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                          "(allow it to be set to 1 if it was previously negative)")]
    return []


def initial_pod_status(pod: dict) -> dict:
    return {"phase": "Pending", "qosClass": _qos_class(pod)}


def _qos_class(pod: dict) -> str:
    containers = (pod.get("spec") or {}).get("containers") or []
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get("cpu") and (r.get("limits") or {}).get("memory")
        and (r.get("requests") or r.get("limits")) == r.get("limits")
        for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"


def default_priority_class(priority_class: dict) -> None:
    priority_class.setdefault("preemptionPolicy", "PreemptLowerPriority")


