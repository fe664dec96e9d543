"""The Endpoints and EndpointSlices a Service's backends make, as kube-controller-manager's endpoints and
EndpointSlice controllers write them (pkg/controller/endpoint, pkg/controller/endpointslice): pure, from
the Service and its pods (service_endpoints.backends).

Ports: each Service port's targetPort, a number as it is, a name looked up among the pod's container
ports (and its sidecars': restartable init containers) of the same protocol (podutil.FindPort); a pod
without the named port gets no address for that port. A headless Service without ports gets bare
addresses. Keys are in the Go types' field order, as the apiserver writes them out.
"""

from __future__ import annotations

from .service_endpoints import Backend

# Labels (k8s.io/api/discovery/v1, core/v1 well_known_labels, the endpoints controller's LabelManagedBy).
SERVICE_NAME = "kubernetes.io/service-name"
SLICE_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"
ENDPOINTS_MANAGED_BY = "endpoints.kubernetes.io/managed-by"
ENDPOINTS_CONTROLLER = "endpoint-controller"
HEADLESS = "service.kubernetes.io/headless"
MAX_PER_SLICE = 100  # the controller's --max-endpoints-per-slice default


def find_port(pod: dict, service_port: dict) -> int | None:
    """podutil.FindPort: the container port a Service port's targetPort means on this pod, or None."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    protocol = service_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    for container in [*(spec.get("containers") or ()), *sidecars]:
        for port in container.get("ports") or ():
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return port.get("containerPort")
    return None


def headless(service: dict) -> bool:
    """Not helper.IsServiceIPSet: clusterIP None (or none given)."""
    return (service.get("spec") or {}).get("clusterIP") in (None, "", "None")


def _hostname(service: dict, pod: dict) -> str | None:
    """ShouldSetHostname: a pod whose subdomain names the Service is published under its hostname."""
    spec = pod.get("spec") or {}
    if spec.get("hostname") and spec.get("subdomain") == service["metadata"]["name"]:
        return spec["hostname"]
    return None


def _target_ref(pod: dict) -> dict:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta["name"], "uid": meta.get("uid")}


# --- core/v1 Endpoints ----------------------------------------------------------------------


def _address(service: dict, backend: Backend) -> dict:
    """podToEndpointAddressForService (nodeName is a pointer to the pod's, written even when empty)."""
    address: dict = {"ip": backend.ip}
    hostname = _hostname(service, backend.pod)
    if hostname:
        address["hostname"] = hostname
    address["nodeName"] = (backend.pod.get("spec") or {}).get("nodeName", "")
    address["targetRef"] = _target_ref(backend.pod)
    return address


def _core_port(service_port: dict, number: int) -> dict:
    port: dict = {"port": number, "protocol": service_port.get("protocol") or "TCP"}
    if service_port.get("name"):
        port = {"name": service_port["name"], **port}
    if service_port.get("appProtocol"):
        port["appProtocol"] = service_port["appProtocol"]
    return port


def subsets(service: dict, backends: list[Backend]) -> list[dict]:
    """The Endpoints' subsets after RepackSubsets: each port (or, headless without ports, none) maps to the
    addresses offering it, ready or not; ports offered by the same addresses share a subset."""
    spec = service.get("spec") or {}
    service_ports = spec.get("ports") or []
    by_port: dict[str, tuple[dict | None, dict[str, tuple[dict, bool]]]] = {}
    for backend in backends:
        address = _address(service, backend)
        key = (address["ip"], address["targetRef"]["uid"])
        if not service_ports:
            if headless(service):
                by_port.setdefault("", (None, {}))[1][str(key)] = (address, backend.ready)
            continue
        for service_port in service_ports:
            number = find_port(backend.pod, service_port)
            if number is None:
                continue
            port = _core_port(service_port, number)
            by_port.setdefault(str(sorted(port.items())), (port, {}))[1][str(key)] = (address, backend.ready)
    grouped: dict[tuple, tuple[list[dict], dict[str, tuple[dict, bool]]]] = {}
    for offered, addresses in by_port.values():
        entry = grouped.setdefault(tuple(sorted((k, ready) for k, (_, ready) in addresses.items())), ([], addresses))
        if offered is not None:
            entry[0].append(offered)
    out = []
    for ports, addresses in grouped.values():
        subset: dict = {}
        for field, ready in (("addresses", True), ("notReadyAddresses", False)):
            listed = sorted((a for a, r in addresses.values() if r is ready),
                            key=lambda a: (a["ip"], a["targetRef"]["uid"] or ""))
            if listed:
                subset[field] = listed
        if ports:
            subset["ports"] = sorted(ports, key=lambda p: (p.get("name", ""), p["port"], p["protocol"]))
        out.append(subset)
    return sorted(out, key=lambda s: str(s))


def endpoints_labels(service: dict) -> dict:
    """The Service's labels, the controller's own, and the headless label when the Service is headless."""
    labels = {k: v for k, v in (service["metadata"].get("labels") or {}).items() if k != HEADLESS}
    labels[ENDPOINTS_MANAGED_BY] = ENDPOINTS_CONTROLLER
    if headless(service):
        labels[HEADLESS] = ""
    return labels


# --- discovery.k8s.io/v1 EndpointSlice --------------------------------------------------------


def _slice_ports(service: dict, pod: dict) -> list[dict]:
    """getEndpointPorts: name (a pointer: "" written), protocol, port, appProtocol, per resolvable Service port."""
    out = []
    for service_port in (service.get("spec") or {}).get("ports") or ():
        number = find_port(pod, service_port)
        if number is None:
            continue
        port = {"name": service_port.get("name", ""), "protocol": service_port.get("protocol") or "TCP",
                "port": number}
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        out.append(port)
    return out


def _endpoint(service: dict, backend: Backend) -> dict:
    """podToEndpoint: its address, conditions, hostname, targetRef and nodeName (when it has one)."""
    endpoint: dict = {"addresses": [backend.ip],
                      "conditions": {"ready": backend.ready, "serving": backend.serving,
                                     "terminating": backend.terminating}}
    hostname = _hostname(service, backend.pod)
    if hostname:
        endpoint["hostname"] = hostname
    endpoint["targetRef"] = _target_ref(backend.pod)
    node = (backend.pod.get("spec") or {}).get("nodeName")
    if node:
        endpoint["nodeName"] = node
    return endpoint


def slice_contents(service: dict, backends: list[Backend]) -> list[tuple[list[dict] | None, list[dict] | None]]:
    """(ports, endpoints) of each slice: the endpoints grouped by their ports, at most MAX_PER_SLICE a
    slice; with no endpoints at all, one placeholder slice of neither (null both, as the API returns an
    empty list). Empty port lists are null too."""
    groups: dict[str, tuple[list[dict], list[dict]]] = {}
    for backend in backends:
        ports = _slice_ports(service, backend.pod)
        groups.setdefault(str(ports), (ports, []))[1].append(_endpoint(service, backend))
    out: list[tuple[list[dict] | None, list[dict] | None]] = []
    for ports, endpoints in groups.values():
        for start in range(0, len(endpoints), MAX_PER_SLICE):
            out.append((ports or None, endpoints[start:start + MAX_PER_SLICE]))
    return out or [(None, None)]


def slice_labels(service: dict) -> dict:
    """setEndpointSliceLabels: the Service's labels but the reserved ones, headless, service name, manager."""
    labels = {k: v for k, v in (service["metadata"].get("labels") or {}).items()
              if k not in (SERVICE_NAME, SLICE_MANAGED_BY, HEADLESS)}
    if headless(service):
        labels[HEADLESS] = ""
    labels[SERVICE_NAME] = service["metadata"]["name"]
    labels[SLICE_MANAGED_BY] = SLICE_CONTROLLER
    return labels
