"""Defaulting and validation of built-in kinds, as the apiserver's REST strategies do.

Only what a controller could notice is modelled: name formats, label values, the pod fields
a kubelet needs, immutable pod specs, Service cluster IPs and port defaults, CRD names.
Errors are (reason, field, text) triples, turned into a 422 by the caller.
"""

from __future__ import annotations

import ipaddress
import itertools
import re

import orjson

from apimachinery.validation import SUBDOMAIN_MSG, qualified_name_errors

Cause = tuple[str, str, str]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

LABEL1123_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                 "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
                 "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
               "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                   "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
                   "'my_value',  or '12345', regex used for validation is "
                   "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def _q(value) -> str:
    return '"' + str(value).replace('"', '\\"') + '"'


def required(field: str, detail: str = "") -> Cause:
    return ("FieldValueRequired", field, f"{field}: Required value" + (f": {detail}" if detail else ""))


def invalid_value(field: str, value, detail: str) -> Cause:
    shown = _q(value) if isinstance(value, str) else value
    return ("FieldValueInvalid", field, f"{field}: Invalid value: {shown}: {detail}")


def not_supported(field: str, value, supported: list[str]) -> Cause:
    options = ", ".join(_q(s) for s in supported)
    return ("FieldValueNotSupported", field, f"{field}: Unsupported value: {_q(value)}: supported values: {options}")


def forbidden(field: str, detail: str) -> Cause:
    return ("FieldValueForbidden", field, f"{field}: Forbidden: {detail}")


# --- names and metadata, for every kind ---------------------------------------------------------

def name_errors(name: str, field: str, style: str) -> list[Cause]:
    """Validate a name as a subdomain (most kinds), an RFC 1123 label, a DNS-1035 label (services) or a
    path segment (RBAC kinds: `system:aggregate-to-edit`)."""
    if style == "path":
        if name in (".", ".."):
            return [invalid_value(field, name, f"may not be '{name}'")]
        return [invalid_value(field, name, f"may not contain '{c}'") for c in ("/", "%") if c in name]
    limit, pattern, msg = {
        "subdomain": (253, DNS1123_SUBDOMAIN, SUBDOMAIN_MSG),
        "label": (63, DNS1123_LABEL, LABEL1123_MSG),
        "dns1035": (63, DNS1035_LABEL, DNS1035_MSG),
    }[style]
    out = []
    if len(name) > limit:
        out.append(invalid_value(field, name, f"must be no more than {limit} characters"))
    if not pattern.match(name):
        out.append(invalid_value(field, name, msg))
    return out


NAME_STYLE = {("", "services"): "dns1035", ("", "namespaces"): "label",
              **{("rbac.authorization.k8s.io", p): "path" for p in ("roles", "rolebindings", "clusterroles",
                                                                     "clusterrolebindings")}}


ANNOTATIONS_LIMIT = 256 * 1024  # TotalAnnotationSizeLimitB: keys and values, in bytes


def annotations_too_long(meta: dict) -> bool:
    """ValidateAnnotationsSize: a client-side `kubectl apply` keeps the whole object in an annotation, so this
    is what refuses an object too large for it."""
    annotations = meta.get("annotations") or {}
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items()) > ANNOTATIONS_LIMIT


def metadata_errors(obj: dict, style: str) -> list[Cause]:
    meta = obj.get("metadata") or {}
    out = []
    if annotations_too_long(meta):
        out.append(("FieldValueTooLong", "metadata.annotations",
                    f"metadata.annotations: Too long: may not be more than {ANNOTATIONS_LIMIT} bytes"))
    name = meta.get("name")
    if not name:
        out.append(required("metadata.name", "name or generateName is required"))
    else:
        out.extend(name_errors(name, "metadata.name", style))
    for key, value in (meta.get("labels") or {}).items():
        if not isinstance(value, str) or len(value) > 63:
            out.append(invalid_value("metadata.labels", value, "must be no more than 63 characters"))
        elif not LABEL_VALUE.match(value):
            out.append(invalid_value("metadata.labels", value, LABEL_VALUE_MSG))
        if not _valid_label_key(key):
            out.append(invalid_value("metadata.labels", key, "name part must consist of alphanumeric "
                                     "characters, '-', '_' or '.', and must start and end with an "
                                     "alphanumeric character"))
    for i, ref in enumerate(meta.get("ownerReferences") or ()):
        for part in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(part):
                out.append(required(f"metadata.ownerReferences[{i}].{part}"))
    if sum(1 for ref in meta.get("ownerReferences") or () if ref.get("controller")) > 1:
        out.append(invalid_value("metadata.ownerReferences", "", "Only one reference can have Controller set "
                                 "to true"))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:  # kept as given by kinds that track none
        out.append(invalid_value("metadata.generation", generation, "must be greater than or equal to 0"))
    return out


def _valid_label_key(key: str) -> bool:
    return not qualified_name_errors(key)


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
                    out.append(("FieldValueDuplicate", f"{path}.name", f"{path}.name: Duplicate value: {_q(name)}"))
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


# --- batch jobs and cron jobs ------------------------------------------------------------------

JOB_RESTART_POLICIES = ["OnFailure", "Never"]


def default_job(job: dict, creating: bool) -> None:
    """SetDefaults_Job, and on create the selector the job strategy generates (unless manualSelector)."""
    spec = job.setdefault("spec", {})
    template = spec.setdefault("template", {})
    if "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2147483647 if "backoffLimitPerIndex" in spec else 6)
    labels = (template.get("metadata") or {}).get("labels")
    meta = job["metadata"]
    if labels and not meta.get("labels"):
        meta["labels"] = dict(labels)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "Failed" if "podFailurePolicy" in spec else "TerminatingOrFailed")
    spec.setdefault("manualSelector", False)
    default_pod_template(template)
    if creating and not spec["manualSelector"]:
        template_labels = template.setdefault("metadata", {}).setdefault("labels", {})
        for key, value in (("job-name", meta["name"]), ("batch.kubernetes.io/job-name", meta["name"]),
                           ("controller-uid", meta["uid"]), ("batch.kubernetes.io/controller-uid", meta["uid"])):
            template_labels.setdefault(key, value)
        selector = spec["selector"] = dict(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {})}
        selector["matchLabels"].setdefault("batch.kubernetes.io/controller-uid", meta["uid"])


def validate_job(job: dict, path: str = "spec") -> list[Cause]:
    """A job's pods run to completion: its template's restartPolicy is OnFailure or Never."""
    policy = (((job.get("spec") or {}).get("template") or {}).get("spec") or {}).get("restartPolicy")
    if policy not in JOB_RESTART_POLICIES:
        return [not_supported(f"{path}.template.spec.restartPolicy", policy, JOB_RESTART_POLICIES)]
    return []


def default_cron_job(cron_job: dict) -> None:
    """SetDefaults_CronJob, and the pod defaults of its job template's pod template."""
    spec = cron_job.setdefault("spec", {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    default_pod_template(spec.setdefault("jobTemplate", {}).setdefault("spec", {}).setdefault("template", {}))


def validate_cron_job(cron_job: dict) -> list[Cause]:
    spec = cron_job.get("spec") or {}
    out = [] if spec.get("schedule") else [required("spec.schedule")]
    return out + validate_job(spec.get("jobTemplate") or {}, "spec.jobTemplate.spec")


def default_priority_class(priority_class: dict) -> None:
    priority_class.setdefault("preemptionPolicy", "PreemptLowerPriority")


# --- services -----------------------------------------------------------------------------------

_service_ips = (str(ip) for ip in itertools.islice(ipaddress.ip_network("10.96.0.0/12").hosts(), 1, None))


def default_service(svc: dict) -> None:
    spec = svc.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if not spec.get("clusterIP"):
        spec["clusterIP"] = next(_service_ips)
    spec["clusterIPs"] = [spec["clusterIP"]]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or ():
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")


PORT_PROTOCOLS = ["SCTP", "TCP", "UDP"]
PORT_RANGE_MSG = "must be between 1 and 65535, inclusive"
_PORT_NAME_CHARS = re.compile(r"^[-a-z0-9]+$")


def port_name_problems(name: str) -> list[str]:
    """validation.IsValidPortName: an IANA_SVC_NAME (a named container port, or a targetPort by name)."""
    out = []
    if len(name) > 15:
        out.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.match(name):
        out.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        out.append("must contain at least one letter (a-z)")
    if "--" in name:
        out.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        out.append("must not begin or end with a hyphen")
    return out


def _valid_port_number(number) -> bool:
    return isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= 65535


def validate_service(svc: dict) -> list[Cause]:
    """ValidateService's port checks (after defaulting): names DNS-1123 labels, unique, required when
    there are several; port and targetPort numbers in range (targetPort may be an IANA_SVC_NAME);
    protocol TCP, UDP or SCTP; no (port, protocol) twice; no nodePort on a ClusterIP Service."""
    spec = svc.get("spec") or {}
    out = []
    ports = spec.get("ports") or []
    if not ports and spec.get("clusterIP") != "None":
        out.append(required("spec.ports"))
    names = set()
    pairs = set()
    for i, port in enumerate(ports):
        path = f"spec.ports[{i}]"
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            out.append(required(f"{path}.name"))
        elif name:
            out.extend(name_errors(name, f"{path}.name", "label"))
            if name in names:
                out.append(("FieldValueDuplicate", f"{path}.name", f"{path}.name: Duplicate value: {_q(name)}"))
            names.add(name)
        number = port.get("port")
        if not _valid_port_number(number):
            out.append(invalid_value(f"{path}.port", number, PORT_RANGE_MSG))
        protocol = port.get("protocol")
        if not protocol:
            out.append(required(f"{path}.protocol"))
        elif protocol not in PORT_PROTOCOLS:
            out.append(not_supported(f"{path}.protocol", protocol, PORT_PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, str):
            out.extend(invalid_value(f"{path}.targetPort", target, msg) for msg in port_name_problems(target))
        elif not _valid_port_number(target):
            out.append(invalid_value(f"{path}.targetPort", target, PORT_RANGE_MSG))
        if port.get("nodePort") and spec.get("type", "ClusterIP") == "ClusterIP":
            out.append(forbidden(f"{path}.nodePort", "may not be used when `type` is 'ClusterIP'"))
        pair = (protocol, number)
        if pair in pairs:
            out.append(("FieldValueDuplicate", path, f"{path}: Duplicate value: core.ServicePort{{Protocol:"
                        f"{_q(protocol)}, Port:{number}}}"))
        pairs.add(pair)
    return out


def validate_service_update(new: dict, old: dict) -> list[Cause]:
    old_ip, new_ip = (old.get("spec") or {}).get("clusterIP"), (new.get("spec") or {}).get("clusterIP")
    if new_ip and new_ip != old_ip:
        return [invalid_value("spec.clusterIPs[0]", new_ip, "field is immutable")]
    return []


# --- secrets ------------------------------------------------------------------------------------

def default_secret(secret: dict) -> None:
    """stringData is write-only: the apiserver folds it into base64 `data`."""
    import base64

    string_data = secret.pop("stringData", None) or {}
    if string_data:
        data = dict(secret.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        secret["data"] = data
    secret.setdefault("type", "Opaque")


# --- deployments ------------------------------------------------------------------------------------

def default_deployment(deployment: dict) -> None:
    """apps/v1 SetDefaults_Deployment, and the pod defaults of its template (SetDefaults_PodSpec and the
    containers' run on every PodTemplateSpec the apiserver decodes)."""
    spec = deployment.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    default_pod_template(spec.setdefault("template", {}))


def default_replica_set(replica_set: dict) -> None:
    """apps/v1 SetDefaults_ReplicaSet (replicas 1), and the pod defaults of its template."""
    spec = replica_set.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    default_pod_template(spec.setdefault("template", {}))


def validate_deployment(deployment: dict) -> list[Cause]:
    """What the deployment and ReplicaSet controllers rely on (ValidateDeploymentSpec, ValidateReplicaSetSpec):
    a selector that selects the template's labels, pods that restart (`Always`), a replica count that is not
    negative."""
    from apimachinery.selectors import SelectorError
    from localcluster.validation.selectors import label_selector_from_dict

    spec = deployment.get("spec") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    out = []
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        out.append(invalid_value("spec.replicas", replicas, "must be greater than or equal to 0"))
    if spec.get("selector") is None:
        out.append(required("spec.selector"))
    else:
        try:
            selects = label_selector_from_dict(spec["selector"]).matches(labels)
        except SelectorError as exc:
            out.append(invalid_value("spec.selector", "", str(exc)))
        else:
            if not selects:
                shown = "map[string]string{" + ", ".join(f"{_q(k)}:{_q(v)}" for k, v in sorted(labels.items())) + "}"
                out.append(("FieldValueInvalid", "spec.template.metadata.labels",
                            f"spec.template.metadata.labels: Invalid value: {shown}: `selector` does not match "
                            f"template `labels`"))
    strategy = spec.get("strategy") or {}
    if strategy.get("type") == "Recreate" and strategy.get("rollingUpdate") is not None:  # a Deployment's only
        out.append(forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"))
    policy = (template.get("spec") or {}).get("restartPolicy", "Always")
    if policy != "Always":
        out.append(not_supported("spec.template.spec.restartPolicy", policy, ["Always"]))
    # The template must make a valid pod, as the controller's pod creates would otherwise all be refused.
    as_pod = {"spec": orjson.loads(orjson.dumps(template.get("spec") or {}))}
    default_pod(as_pod)
    out += [(reason, "spec.template." + field, "spec.template." + text) for reason, field, text in validate_pod(as_pod)
            if field != "spec.restartPolicy"]
    return out


# --- namespaces and CRDs ------------------------------------------------------------------------

def default_namespace(ns: dict) -> None:
    ns.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    ns["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = ns["metadata"]["name"]


def validate_crd(crd: dict) -> list[Cause]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out = []
    for field in ("group", "names", "scope", "versions"):
        if not spec.get(field):
            out.append(required(f"spec.{field}"))
    for field in ("plural", "kind"):
        if not names.get(field):
            out.append(required(f"spec.names.{field}"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        out.append(not_supported("spec.scope", spec.get("scope"), ["Cluster", "Namespaced"]))
    expected = f"{names.get('plural')}.{spec.get('group')}"
    if crd.get("metadata", {}).get("name") != expected:
        out.append(invalid_value("metadata.name", crd.get("metadata", {}).get("name"),
                                 "must be spec.names.plural+\".\"+spec.group"))
    versions = spec.get("versions") or []
    if versions and sum(1 for v in versions if v.get("storage")) != 1:
        out.append(invalid_value("spec.versions", "", "must have exactly one version marked as storage version"))
    return out


def crd_status(crd: dict, now: str) -> dict:
    spec = crd["spec"]
    cond = {"lastTransitionTime": now, "status": "True"}
    return {
        "acceptedNames": dict(spec["names"]),
        "conditions": [
            {**cond, "type": "NamesAccepted", "reason": "NoConflicts", "message": "no conflicts found"},
            {**cond, "type": "Established", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"},
        ],
        "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
    }
