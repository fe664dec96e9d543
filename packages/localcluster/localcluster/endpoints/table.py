"""Server-side printing and other "as=" views: what `kubectl get` asks for in its Accept header.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...,application/json` and
prints the `meta.k8s.io` Table it gets back: column definitions, then one row of cells per object,
with the object's metadata embedded (`includeObject=Metadata`, the default) so that it can add
NAMESPACE, --show-labels and -L columns itself. Custom resources get the columns of their CRD
version's `additionalPrinterColumns`; built-in kinds get those of the apiserver's printers.
Metadata-only clients ask for `as=PartialObjectMetadata(List)` the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from ..kubelet import nodes
from ..storage.resources import ResourceType
from . import endpoint_cells, jsonpath

META_GROUP = "meta.k8s.io"
NAME_DOC = "Name must be unique within a namespace. More info: https://kubernetes.io/docs/concepts/overview/" \
           "working-with-objects/names#names"
AGE_DOC = "CreationTimestamp is a timestamp representing the server time when this object was created."


@dataclass(frozen=True, slots=True)
class View:
    """A negotiated representation: `as` is Table or PartialObjectMetadata, in meta.k8s.io/`version`."""

    kind: str
    version: str

    @property
    def api_version(self) -> str:
        return f"{META_GROUP}/{self.version}"


def negotiate(accept: str, is_list: bool) -> View | None:
    """The first media type of the Accept header that asks for a view; None for the plain object."""
    for media in accept.split(","):
        mime, *raw = (part.strip() for part in media.split(";"))
        params = dict(p.split("=", 1) for p in raw if "=" in p)
        as_kind = params.get("as")
        if not as_kind:
            if mime in ("application/json", "*/*", "application/*", ""):
                return None
            continue
        if mime != "application/json" or params.get("g") != META_GROUP or params.get("v") not in ("v1", "v1beta1"):
            continue
        if as_kind == "Table" or as_kind == ("PartialObjectMetadataList" if is_list else "PartialObjectMetadata"):
            return View("PartialObjectMetadata" if as_kind.startswith("Partial") else "Table", params["v"])
    return None


# --- formatting as the Go printers do -------------------------------------------------------


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: str | None) -> str:
    if not timestamp:
        return "<unknown>"
    try:  # metav1.Time, or metav1.MicroTime (an event's eventTime) with its fraction of a second
        then = datetime.strptime(timestamp.split(".")[0].removesuffix("Z") + "Z", "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=UTC)
    except ValueError:
        return "<invalid>"
    return human_duration((datetime.now(UTC) - then).total_seconds())


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:\d{2})", re.ASCII)


def date_cell(text: str) -> str:
    """A `date` column's cell: metav1.Time's query parameter form (RFC 3339; empty or `null` is no time) as the
    age since then."""
    if text in ("", "null"):
        return "<unknown>"
    match = _RFC3339.fullmatch(text)
    if match is None:
        return "<invalid>"
    *parts, _, zone = match.groups()
    if zone != "Z" and int(zone[4:]) > 59:
        return "<invalid>"
    offset = timedelta(0) if zone == "Z" else (1 if zone[0] == "+" else -1) * timedelta(
        hours=int(zone[1:3]), minutes=int(zone[4:]))
    try:
        year, month, day, hour, minute, second = map(int, parts)
        then = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
    except ValueError:
        return "<invalid>"
    if then == datetime(1, 1, 1, tzinfo=UTC):
        return "<unknown>"  # Go's zero time
    return human_duration((datetime.now(UTC) - then).total_seconds())


def _crd_cell(obj: dict, nodes: tuple, kind: str):
    """As apiextensions-apiserver's tableconvertor renders a printer column: the first value of the first result,
    none (or an error) an empty cell; a string column prints it as client-go's PrintResults does, the other
    types take it only if it is one of theirs."""
    try:
        results = jsonpath.find_results(nodes, obj)
    except jsonpath.Failed:
        return None
    if not results or not results[0]:
        return None
    value = results[0][0]
    if kind == "string":
        return jsonpath.print_result(value)
    value = jsonpath.number(value)
    if isinstance(value, bool):
        return value if kind == "boolean" else None
    if kind == "integer" and type(value) in (int, float):  # not a byte of a string: Go's uint8
        return int(value) if -jsonpath.INT64 <= value < jsonpath.INT64 else -jsonpath.INT64  # Go's int64(float)
    if kind == "number" and type(value) in (int, float):
        return float(value)
    if kind == "date" and isinstance(value, str):
        return date_cell(value)
    return None


# --- built-in printers ----------------------------------------------------------------------

Column = tuple[str, str, int, Callable[[dict], object]]  # name, type, priority, cell


def _col(name: str, cell: Callable[[dict], object], kind: str = "string", priority: int = 0) -> Column:
    return (name, kind, priority, cell)


def _get(obj: dict, *path: str, default=None):
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return default if value is None else value


def _age(obj: dict) -> str:
    return age(obj["metadata"].get("creationTimestamp"))


def _pod_status(pod: dict) -> str:
    """The STATUS of `kubectl get pods`, a shortened printPod of kubernetes/pkg/printers."""
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    for cs in reversed(status.get("containerStatuses") or []):
        state = cs.get("state") or {}
        if _get(state, "waiting", "reason"):
            reason = state["waiting"]["reason"]
        elif _get(state, "terminated", "reason"):
            reason = state["terminated"]["reason"]
        elif "terminated" in state:
            term = state["terminated"]
            reason = f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode', 0)}"
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason


def _pod_ready(pod: dict) -> str:
    statuses = _get(pod, "status", "containerStatuses", default=[])
    ready = sum(1 for cs in statuses if cs.get("ready"))
    return f"{ready}/{len(_get(pod, 'spec', 'containers', default=[]))}"


def _pod_restarts(pod: dict) -> str:
    statuses = _get(pod, "status", "containerStatuses", default=[])
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    finished = [_get(cs, "lastState", "terminated", "finishedAt") for cs in statuses]
    finished = [f for f in finished if f]
    return f"{restarts} ({age(max(finished))} ago)" if restarts and finished else str(restarts)


def _ports(svc: dict) -> str:
    ports = _get(svc, "spec", "ports", default=[])
    out = [f"{p.get('port')}:{p['nodePort']}/{p.get('protocol', 'TCP')}" if p.get("nodePort")
           else f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in ports]
    return ",".join(out) or "<none>"


def _selector(selector: dict | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((selector or {}).items())) or "<none>"


def _subjects(kind: str) -> Callable[[dict], str]:
    def cell(binding: dict) -> str:
        subjects = binding.get("subjects") or []
        names = [(f"{s.get('namespace')}/{s['name']}" if kind == "ServiceAccount" else s["name"])
                 for s in subjects if s.get("kind") == kind]
        return ", ".join(names)
    return cell


def _external_ip(svc: dict) -> str:
    ips = list(_get(svc, "spec", "externalIPs", default=[]))
    if _get(svc, "spec", "type") == "LoadBalancer":
        ingress = _get(svc, "status", "loadBalancer", "ingress", default=[])
        ips += [i.get("ip") or i.get("hostname") for i in ingress]
        return ",".join(ips) or "<pending>"
    return ",".join(ips) or "<none>"


def _readiness_gates(pod: dict) -> str:
    gates = {g.get("conditionType") for g in _get(pod, "spec", "readinessGates", default=[])}
    if not gates:
        return "<none>"
    met = sum(1 for c in _get(pod, "status", "conditions", default=[]) if c.get("type") in gates
              and c.get("status") == "True")
    return f"{met}/{len(gates)}"


def _event_object(event: dict) -> str:
    # core/v1 names it involvedObject, events.k8s.io/v1 regarding.
    ref = event.get("involvedObject") or event.get("regarding") or {}
    return f"{ref.get('kind', '').lower()}/{ref.get('name', '')}"


def _event_last_seen(event: dict) -> str:
    series = event.get("series") or {}
    return age(event.get("lastTimestamp") or event.get("deprecatedLastTimestamp") or series.get("lastObservedTime")
               or event.get("eventTime") or event["metadata"].get("creationTimestamp"))


def _containers(workload: dict, field: str) -> str:
    containers = _get(workload, "spec", "template", "spec", "containers", default=[])
    return ",".join(str(c.get(field, "")) for c in containers)


NAME: Column = ("Name", "string", 0, lambda o: o["metadata"]["name"])
AGE: Column = ("Age", "string", 0, _age)
CREATED_AT: Column = ("Created At", "date", 0, lambda o: o["metadata"].get("creationTimestamp", ""))
BINDING: list[Column] = [
    NAME, _col("Role", lambda b: f"{_get(b, 'roleRef', 'kind')}/{_get(b, 'roleRef', 'name')}"), AGE,
    _col("Users", _subjects("User"), priority=1), _col("Groups", _subjects("Group"), priority=1),
    _col("ServiceAccounts", _subjects("ServiceAccount"), priority=1)]
EVENT: list[Column] = [
    _col("Last Seen", _event_last_seen), _col("Type", lambda e: e.get("type", "")),
    _col("Reason", lambda e: e.get("reason", "")), _col("Object", _event_object),
    _col("Message", lambda e: (e.get("message") or e.get("note") or "").strip())]
BUILTIN_COLUMNS: dict[tuple[str, str], list[Column]] = {
    ("", "pods"): [
        NAME, _col("Ready", _pod_ready), _col("Status", _pod_status), _col("Restarts", _pod_restarts), AGE,
        _col("IP", lambda p: _get(p, "status", "podIP", default="<none>"), priority=1),
        _col("Node", lambda p: _get(p, "spec", "nodeName", default="<none>"), priority=1),
        _col("Nominated Node", lambda p: _get(p, "status", "nominatedNodeName", default="<none>"), priority=1),
        _col("Readiness Gates", _readiness_gates, priority=1)],
    ("", "nodes"): [
        NAME, _col("Status", nodes.status_cell), _col("Roles", nodes.roles_cell), AGE,
        _col("Version", lambda n: _get(n, "status", "nodeInfo", "kubeletVersion", default="")),
        _col("Internal-IP", nodes.address_cell("InternalIP"), priority=1),
        _col("External-IP", nodes.address_cell("ExternalIP"), priority=1),
        _col("OS-Image", nodes.info_cell("osImage"), priority=1),
        _col("Kernel-Version", nodes.info_cell("kernelVersion"), priority=1),
        _col("Container-Runtime", nodes.info_cell("containerRuntimeVersion"), priority=1)],
    ("", "namespaces"): [NAME, _col("Status", lambda n: _get(n, "status", "phase", default="")), AGE],
    ("", "services"): [
        NAME, _col("Type", lambda s: _get(s, "spec", "type", default="ClusterIP")),
        _col("Cluster-IP", lambda s: _get(s, "spec", "clusterIP", default="<none>")),
        _col("External-IP", _external_ip), _col("Port(s)", _ports), AGE,
        _col("Selector", lambda s: _selector(_get(s, "spec", "selector")), priority=1)],
    ("", "endpoints"): [NAME, _col("Endpoints", endpoint_cells.endpoints), AGE],
    ("discovery.k8s.io", "endpointslices"): [
        NAME, _col("AddressType", lambda s: s.get("addressType", "")), _col("Ports", endpoint_cells.slice_ports),
        _col("Endpoints", endpoint_cells.slice_endpoints), AGE],
    ("", "configmaps"): [
        NAME, _col("Data", lambda c: len(c.get("data") or {}) + len(c.get("binaryData") or {}), "integer"), AGE],
    ("", "secrets"): [NAME, _col("Type", lambda s: s.get("type", "Opaque")),
                      _col("Data", lambda s: len(s.get("data") or {}), "integer"), AGE],
    ("", "serviceaccounts"): [NAME, _col("Secrets", lambda s: len(s.get("secrets") or []), "integer"), AGE],
    ("", "events"): EVENT,
    ("coordination.k8s.io", "leases"): [NAME, _col("Holder", lambda s: _get(s, "spec", "holderIdentity",
                                                                            default="")), AGE],
    ("apps", "deployments"): [
        NAME, _col("Ready", lambda d: f"{_get(d, 'status', 'readyReplicas', default=0)}/"
                                      f"{_get(d, 'spec', 'replicas', default=1)}"),
        _col("Up-to-date", lambda d: _get(d, "status", "updatedReplicas", default=0), "integer"),
        _col("Available", lambda d: _get(d, "status", "availableReplicas", default=0), "integer"), AGE,
        _col("Containers", lambda d: _containers(d, "name"), priority=1),
        _col("Images", lambda d: _containers(d, "image"), priority=1),
        _col("Selector", lambda d: _selector(_get(d, "spec", "selector", "matchLabels")), priority=1)],
    ("apps", "replicasets"): [
        NAME, _col("Desired", lambda r: _get(r, "spec", "replicas", default=0), "integer"),
        _col("Current", lambda r: _get(r, "status", "replicas", default=0), "integer"),
        _col("Ready", lambda r: _get(r, "status", "readyReplicas", default=0), "integer"), AGE,
        _col("Containers", lambda r: _containers(r, "name"), priority=1),
        _col("Images", lambda r: _containers(r, "image"), priority=1),
        _col("Selector", lambda r: _selector(_get(r, "spec", "selector", "matchLabels")), priority=1)],
    ("scheduling.k8s.io", "priorityclasses"): [
        NAME, _col("Value", lambda p: int(p.get("value") or 0), "integer"),
        _col("Global-Default", lambda p: bool(p.get("globalDefault")), "boolean"), AGE,
        _col("PreemptionPolicy", lambda p: p.get("preemptionPolicy") or "PreemptLowerPriority")],
    ("rbac.authorization.k8s.io", "roles"): [NAME, CREATED_AT],
    ("rbac.authorization.k8s.io", "clusterroles"): [NAME, CREATED_AT],
    ("rbac.authorization.k8s.io", "rolebindings"): BINDING,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): BINDING,
    # Served by the apiserver's default table convertor: Name and Created At.
    ("apiextensions.k8s.io", "customresourcedefinitions"): [NAME, CREATED_AT],
}


CRD_COLUMN_DOC = "Custom resource definition column (in JSONPath format): {}"
DEFAULT_CRD_COLUMNS = [{"name": "Age", "type": "date", "description": AGE_DOC,
                        "jsonPath": ".metadata.creationTimestamp"}]


def _crd_columns(rt: ResourceType) -> list[tuple[dict, tuple]]:
    """The CRD version's printer columns (Age if it lists none) with their parsed paths. As tableconvertor.New,
    the columns stop before the first path client-go does not parse (kube-apiserver logs it and serves the
    columns before it)."""
    out = []
    for column in rt.printer_columns or DEFAULT_CRD_COLUMNS:
        try:
            out.append((column, jsonpath.parse("{" + str(column.get("jsonPath", "")) + "}")))
        except jsonpath.JSONPathError:
            break
    return out


def _columns(rt: ResourceType) -> list[Column]:
    if rt.crd_name is None:
        return BUILTIN_COLUMNS.get(rt.storage_key, [NAME, AGE])
    return [NAME, *((c["name"], c.get("type", "string"), int(c.get("priority") or 0),
                     lambda o, nodes=nodes, kind=c.get("type", "string"): _crd_cell(o, nodes, kind))
                    for c, nodes in _crd_columns(rt))]


def column_definitions(rt: ResourceType) -> list[dict]:
    if rt.crd_name is not None:
        return [{"name": "Name", "type": "string", "format": "name", "description": NAME_DOC, "priority": 0},
                *({"name": c["name"], "type": c.get("type", "string"), "format": c.get("format", ""),
                   "description": c.get("description") or CRD_COLUMN_DOC.format(c.get("jsonPath", "")),
                   "priority": int(c.get("priority") or 0)} for c, _ in _crd_columns(rt))]
    out = []
    for name, kind, priority, _ in _columns(rt):
        fmt = "name" if (name, kind) == ("Name", "string") else ""
        description = NAME_DOC if name == "Name" else AGE_DOC if name == "Age" else ""
        out.append({"name": name, "type": kind, "format": fmt, "description": description, "priority": priority})
    return out


# --- the views --------------------------------------------------------------------------------


def partial_metadata(obj: dict, view: View) -> dict:
    return {"kind": "PartialObjectMetadata", "apiVersion": view.api_version, "metadata": obj["metadata"]}


def table(rt: ResourceType, objects: list[dict], list_meta: dict, view: View, include_object: str = "Metadata",
          with_columns: bool = True) -> dict:
    """A meta.k8s.io Table of `objects` (already presented in `rt`'s version)."""
    columns = _columns(rt)
    rows = []
    for obj in objects:
        row: dict = {"cells": [cell(obj) for _, _, _, cell in columns]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = partial_metadata(obj, view)
        rows.append(row)
    return {"kind": "Table", "apiVersion": view.api_version, "metadata": list_meta,
            "columnDefinitions": column_definitions(rt) if with_columns else [], "rows": rows}


def render(rt: ResourceType, body: dict, view: View, is_list: bool, include_object: str = "Metadata",
           with_columns: bool = True) -> dict:
    """`body` (an object or a list of `rt`) as the negotiated view."""
    objects = body["items"] if is_list else [body]
    if view.kind == "Table":
        meta = dict(body["metadata"]) if is_list else {"resourceVersion": body["metadata"].get("resourceVersion",
                                                                                                 "")}
        return table(rt, objects, meta, view, include_object, with_columns)
    if is_list:
        return {"kind": "PartialObjectMetadataList", "apiVersion": view.api_version, "metadata": body["metadata"],
                "items": [partial_metadata(o, view) for o in objects]}
    return partial_metadata(body, view)


class EventRenderer:
    """Watch event objects in the negotiated view. As the apiserver's watch encoder does, a Table
    stream carries its column definitions in the first event only: kubectl reuses the last ones."""

    def __init__(self, rt: ResourceType, accept: str, include_object: str = "Metadata") -> None:
        self.rt = rt
        self.view = negotiate(accept, is_list=False)
        self.include_object = include_object
        self.columns_sent = False

    def render(self, obj: dict) -> dict:
        if self.view is None:
            return obj
        out = render(self.rt, obj, self.view, False, self.include_object, with_columns=not self.columns_sent)
        self.columns_sent = True
        return out

    def bookmark(self, obj: dict) -> dict:
        """Bookmarks carry only a resourceVersion: metadata views get it as metadata, Tables as is."""
        if self.view is None or self.view.kind == "Table":
            return obj
        return partial_metadata(obj, self.view)
