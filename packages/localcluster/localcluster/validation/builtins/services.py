"""Services: cluster IPs, port defaults and names, validation of a Service and of its update."""

from __future__ import annotations

import ipaddress
import itertools
import re

from .causes import Cause, forbidden, invalid_value, not_supported, quoted, required
from .metadata import name_errors

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
                out.append(("FieldValueDuplicate", f"{path}.name", f"{path}.name: Duplicate value: {quoted(name)}"))
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
                        f"{quoted(protocol)}, Port:{number}}}"))
        pairs.add(pair)
    return out


def validate_service_update(new: dict, old: dict) -> list[Cause]:
    old_ip, new_ip = (old.get("spec") or {}).get("clusterIP"), (new.get("spec") or {}).get("clusterIP")
    if new_ip and new_ip != old_ip:
        return [invalid_value("spec.clusterIPs[0]", new_ip, "field is immutable")]
    return []


